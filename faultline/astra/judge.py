"""The judge: five criteria, 1-5 each; any score <= 3 asks for a revision.

`judge_deterministic` scores by rules over the report, the claims, their evidence and the agents' outputs (never
the ground truth), then caps scores by the consistency findings of `faultline.astra.consistency`; `judge_llm` has
a model score the same criteria (prompt ``judge/judge``), and `judge_llm_or_rules` falls back to the rules when the
model fails. The criteria and checks: docs/astra.md#the-judge.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra import consistency, lexical
from faultline.astra.consistency import Consistency
from faultline.astra.identifiers import find_identifiers, untraceable
from faultline.astra.records import (
    CRITERIA,
    AgentOutput,
    Claim,
    Evidence,
    Incident,
    JudgeScore,
    Report,
)
from faultline.astra.report import HEDGE, NO_FIX, NO_ROOT_CAUSE, claims_block

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

JUDGE_PROMPT = "judge/judge"
REVISE_AT = 3  # a score at or below this on any criterion asks for another round
DETERMINISTIC_JUDGE = "deterministic-judge"
FALLBACK_JUDGE = "deterministic fallback"  # the judge of scores given by the rules because the model judge failed
# the deterministic judge's rules (docs/astra.md#the-judge) as stored in judge_scores.version: give it a new value
# whenever a rule changes (it was a hash of the module's old docstring, which held the rules; kept so stored
# scores still name the rules they were given by)
RULES_VERSION = "rules-1b885b84ebf4"
_COMMAND = re.compile(r"(?i)\b(vtysh|nft|iptables|ip (?:route|addr|address|link|neigh)|systemctl|dnsmasq|nginx|"
                      r"frr|bgpd|ospfd|zebra|tc qdisc|firewall table|table|rule|route|neighbor|network \S+|"
                      r"remote-as|area \d+|config\w*|dhcp-range|dhcp-option|resolv\.conf|mtu|acl|filter|"
                      r"interface|address|daemon|process|service)\b")
_CHECK = re.compile(r"(?i)\b(ping|curl|dig|nslookup|traceroute|show \w+|ip route|wget|udhcpc|lease|status)\b")


def needs_revision(scores: list[JudgeScore]) -> bool:
    """True when any criterion scored at or below 3."""
    return any(s.score <= REVISE_AT for s in scores)


def _band(share: float, cuts: tuple[float, float, float, float]) -> int:
    return 5 - next((i for i, cut in enumerate(cuts) if share >= cut), 4)


def grounding(report: Report, incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim] | None = None,
              evidence: list[Evidence] | None = None) -> tuple[int, str]:
    """evidence_grounding: traceable share of the report's identifiers (docs/astra.md#the-judge)."""
    found = find_identifiers(report.text.split("\n", 1)[-1])  # the title line only repeats the incident id
    if not found:
        return 2, "the report names no checkable identifier"
    sources = [o.text for o in outputs.values()] + [incident.title, incident.description, incident.environment]
    missing = untraceable(found, sources)
    share = 1 - len(missing) / len(found)
    score = _band(share, (0.98, 0.9, 0.75, 0.5))
    reason = f"{len(found) - len(missing)}/{len(found)} identifiers traceable to agent outputs or the ticket"
    if missing:
        reason += f"; untraceable: {', '.join(sorted({m.value for m in missing})[:5])}"
    facts = sum(1 for s in report.evidence
                if not s.startswith(HEDGE) and not consistency.is_reference(s, claims or [], evidence or []))
    if report.evidence and facts * 2 < len(report.evidence) and score > 3:
        score, reason = 3, f"{reason}; only {facts}/{len(report.evidence)} evidence statements are verified facts"
    return score, reason


def _label_words(label: str | None) -> set[str]:
    return {w for w in re.split(r"[_\W]+", (label or "").lower()) if len(w) >= 3 or w in ("ip",)}


def _mentions(text: str, stems: set[str]) -> bool:
    """True when a word of `text` starts with one of `stems` (``blocked`` mentions ``block``)."""
    return any(word.startswith(stem) for word in lexical.words(text) for stem in stems)


def root_cause(report: Report, claims: list[Claim], evidence: list[Evidence]) -> tuple[int, str]:
    """root_cause_identification: label named and backed by a verified causal claim (docs/astra.md#the-judge)."""
    if not report.root_cause.strip() or report.root_cause == NO_ROOT_CAUSE:
        return 1, "no root cause stated"
    ok = {e.claim_id for e in evidence if str(e.status) == "VERIFIED"}
    devices = {d.lower() for d in report.devices}
    words_of_label = _label_words(report.label or report.category)
    support = [c for c in claims
               if c.tag == "CAUSAL" and c.claim_id in ok and c.agent not in consistency.REFERENCE_AGENTS]
    linked = [c for c in support if set(lexical.words(c.text)) & devices or _mentions(c.text, words_of_label)]
    device_linked = [c for c in support if set(lexical.words(c.text)) & devices]
    named = report.label or report.category
    if report.label and devices and device_linked:
        return 5, f"{report.label} on {', '.join(report.devices)}, backed by a verified causal claim"
    if report.label and linked:
        return 4, f"{report.label} backed by a verified causal claim, but not tied to a device"
    if named and not report.root_cause.startswith(HEDGE):
        return 3, f"{named} named without a verified causal claim tying it to the devices"
    if support and not named:
        return 3, "a verified causal claim, but no label or category from the taxonomy"
    if report.root_cause.startswith(HEDGE):
        return 2, "the root cause is only hedged"
    return 2, "no label or category, and no verified causal claim about this incident"


def resolution(report: Report) -> tuple[int, str]:
    """resolution_specificity: device, command/config object, concrete verification (docs/astra.md#the-judge)."""
    if not report.fix.strip() or report.fix == NO_FIX:
        return 1, "no fix stated"
    fix_words = set(lexical.words(report.fix))
    device = any(d.lower() in fix_words for d in report.devices) or \
        any(i.kind == "device" for i in find_identifiers(report.fix))
    command = bool(_COMMAND.search(report.fix))
    check_text = report.verification.split(": ", 1)[-1]
    check = bool(_CHECK.search(report.verification)) or bool(find_identifiers(check_text))
    hedged = HEDGE in report.fix
    score = max(1, min(5, 2 + device + command + check - hedged))
    parts = [f"device {'named' if device else 'missing'}", f"command/config {'named' if command else 'missing'}",
             f"verification {'concrete' if check else 'generic'}"] + (["fix unconfirmed"] if hedged else [])
    return score, "; ".join(parts)


def coverage(report: Report, found: Consistency | None = None) -> tuple[int, str]:
    """coverage: symptom, evidence, root cause, fix + verification, each present and consistent
    (docs/astra.md#the-judge)."""
    present = {
        "symptom": bool(report.symptom.strip()),
        "evidence": any(not s.startswith(HEDGE) for s in report.evidence) and not (found and found.evidence_off),
        "root cause": bool(report.root_cause.strip()) and report.root_cause != NO_ROOT_CAUSE and
        not (found and (not found.named or found.unlabelled_reference or found.symptom_unexplained)),
        "fix/verification": report.fix != NO_FIX and bool(report.fix.strip()) and bool(report.verification.strip())
        and not (found and (found.fix_devices_outside or found.fix_other_family)),
    }
    n = sum(present.values())
    missing = [k for k, v in present.items() if not v]
    observed = "Observed:" in report.symptom
    score = 5 if n == 4 and observed else 4 if n == 4 else {3: 3, 2: 2}.get(n, 1)
    reason = f"{n}/4 dimensions" + (f"; missing or inconsistent: {', '.join(missing)}" if missing else "")
    return score, reason + ("" if observed or n < 4 else "; the symptom is only the reported one")


def focus(report: Report, incident: Incident) -> tuple[int, str]:
    """focus: share of statements anchored on the incident (docs/astra.md#the-judge)."""
    anchors = {d.lower() for d in report.devices}
    anchors |= {report.label.lower()} if report.label else set()
    anchors |= lexical.identifiers(f"{incident.title}\n{incident.description}")
    stems = _label_words(report.label)
    statements = [*report.evidence, report.root_cause, report.fix]
    if not anchors and not stems:
        return 2, "nothing in the report or ticket anchors the incident (no device, label or identifier)"
    on_topic = sum(1 for s in statements if set(lexical.words(s)) & anchors or _mentions(s, stems))
    share = on_topic / len(statements)
    return _band(share, (0.8, 0.6, 0.4, 0.2)), f"{on_topic}/{len(statements)} statements about the incident"


def caps(found: Consistency) -> list[tuple[str, int, str]]:
    """(criterion, ceiling, why) for every failed consistency check (checks N R S A F E of docs/astra.md#the-judge)."""
    out: list[tuple[str, int, str]] = []
    if not found.named:
        why = "the report names no label or category"
        out += [("root_cause_identification", 2, why), ("resolution_specificity", 3, why),
                ("evidence_grounding", 3, why), ("focus", 3, why)]
    if found.unlabelled_reference:
        out.append(("root_cause_identification", 2, "the root cause quotes reference material, not this incident"))
    if found.symptom_unexplained:
        why = f"{found.family} explains neither the ticket's symptom nor what the logs showed"
        out += [("root_cause_identification", 3, why), ("focus", 3, why)]
    if found.sources_disagree:
        out.append(("root_cause_identification", 3, "the agents do not agree on " + str(found.family)))
    if found.fix_devices_outside:
        where = ", ".join(found.fix_devices_outside)
        out.append(("resolution_specificity", 2, f"the fix acts on {where}, not the root cause's devices"))
    if found.fix_other_family:
        out.append(("resolution_specificity", 3, f"the fix is about {found.fix_family}, the root cause {found.family}"))
    if found.evidence_off:
        why = f"{found.evidence_off_target}/{found.evidence_with_devices} device statements are about other devices"
        out += [("evidence_grounding", 3, why), ("focus", 3, why)]
    return out


def judge_deterministic(incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
                        evidence: list[Evidence], report: Report) -> list[JudgeScore]:
    """Score one report on the five criteria by the documented rules."""
    found = consistency.check(report, incident, outputs, claims, evidence)
    results = {
        "root_cause_identification": root_cause(report, claims, evidence),
        "resolution_specificity": resolution(report),
        "evidence_grounding": grounding(report, incident, outputs, claims, evidence),
        "coverage": coverage(report, found),
        "focus": focus(report, incident),
    }
    for criterion, ceiling, why in caps(found):
        score, reason = results[criterion]
        if score > ceiling:
            results[criterion] = ceiling, f"{reason}; capped at {ceiling}: {why}"
    return [JudgeScore(incident_id=incident.incident_id, round=report.round, criterion=c, score=results[c][0],
                       reason=results[c][1], judge=DETERMINISTIC_JUDGE, version=RULES_VERSION) for c in CRITERIA]


class LLMScore(BaseModel):
    """One criterion as the model scores it."""

    model_config = ConfigDict(extra="forbid")
    criterion: Literal[CRITERIA]  # type: ignore[valid-type]  # an enum in the schema: a grammar spells it right
    score: int = Field(ge=1, le=5)
    reason: str


class LLMJudgement(BaseModel):
    """The judge's answer: one score per criterion."""

    model_config = ConfigDict(extra="forbid")
    scores: list[LLMScore] = Field(min_length=len(CRITERIA), max_length=len(CRITERIA))


def _guide() -> dict[str, Any]:
    """`LLMJudgement` as a server's grammar should write it: the five criteria once each, in order."""
    score = LLMScore.model_json_schema()
    items = [{**score, "properties": {**score["properties"], "criterion": {"const": c}}} for c in CRITERIA]
    return {"type": "object", "additionalProperties": False, "required": ["scores"],
            "properties": {"scores": {"type": "array", "prefixItems": items, "minItems": len(CRITERIA),
                                      "maxItems": len(CRITERIA)}}}


def judge_llm(incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim], evidence: list[Evidence],
              report: Report, *, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str,
              run_id: str | None = None) -> list[JudgeScore]:
    """Score one report with an LLM judge (prompt ``judge/judge``); a criterion it skips is an invalid answer
    (`LLMError`, as when the model gives none)."""
    from faultline.llm import LLMError, complete_json, load_prompt

    agent_text = "\n\n".join(f"## {name} agent\n{o.text}" for name, o in outputs.items())
    answer = complete_json(settings, conn, model=model, prompt=JUDGE_PROMPT, schema=LLMJudgement, guide=_guide(),
                           stage="astra.judge", incident_id=incident.incident_id, run_id=run_id,
                           variables={"ticket": f"{incident.title}\n{incident.description}".strip(),
                                      "agent_outputs": agent_text, "claims": claims_block(claims, evidence),
                                      "report": report.text})
    by_name = {s.criterion: s for s in LLMJudgement.model_validate(answer).scores}
    missing = [c for c in CRITERIA if c not in by_name]
    if missing:
        raise LLMError(f"the LLM judge {model} did not score {missing}",
                       fix="check prompts/judge/judge.md lists all five criteria, or use another model")
    version = load_prompt(JUDGE_PROMPT).sha256[:12]
    return [JudgeScore(incident_id=incident.incident_id, round=report.round, criterion=c, score=by_name[c].score,
                       reason=by_name[c].reason, judge=f"llm:{model}", version=version) for c in CRITERIA]


def fallback_judge(failure: str) -> str:
    """The `judge` of scores the deterministic judge gave because the model judge failed (`failure` says how)."""
    return f"{FALLBACK_JUDGE} ({failure})"


def judge_llm_or_rules(incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
                       evidence: list[Evidence], report: Report, *, settings: Settings,
                       conn: duckdb.DuckDBPyConnection, model: str, run_id: str | None = None) -> list[JudgeScore]:
    """`judge_llm`; when the model gives no valid answer (`LLMError`), the deterministic judge's scores, each
    saying so in its `judge`: ``deterministic fallback (model failed: <reason>)`` (docs/llm.md#when-a-model-fails)."""
    from faultline.astra.agents.base import model_failure
    from faultline.llm import LLMError

    try:
        return judge_llm(incident, outputs, claims, evidence, report, settings=settings, conn=conn, model=model,
                         run_id=run_id)
    except LLMError as exc:
        name = fallback_judge(model_failure(exc))
    return [s.model_copy(update={"judge": name})
            for s in judge_deterministic(incident, outputs, claims, evidence, report)]
