"""The fault-analysis report: identification (symptom -> evidence -> root cause) and resolution (fix + verification).

A claim is written by its evidence status (a fact, what a reference says, or hedged); label, category and
devices come from the agents, the log agent first. `write_deterministic` (templates) and `write_llm` (prompt
``astra/report``) produce the same `Report`, rendered by `render_markdown`. The rules: docs/astra.md#the-report.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra import lexical
from faultline.astra.claims import technical_score
from faultline.astra.records import AgentOutput, Claim, Evidence, Incident, Report

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

REPORT_PROMPT = "astra/report"
HEDGE = "Possibly (unconfirmed): "
NO_ROOT_CAUSE = "Root cause not determined from the available evidence."
NO_FIX = "No fix is supported by the evidence gathered so far."
MAX_EVIDENCE = 8
_AGENT_ORDER = ("log", "domain", "similarity")
_FIX = re.compile(r"(?i)\b(fix\w*|delet\w*|remov\w*|restor\w*|restart\w*|re-?enabl\w*|re-?add\w*|reconfigur\w*|"
                  r"roll ?back|replac\w*|re-?appl\w*|flush\w*|set |configure|no network|ip route|vtysh|nft )")
_VERIFY = re.compile(r"(?i)\b(verif\w*|confirm\w*|re-?established|reconverged|came back|recovered|passes|"
                     r"succeed\w*|restored|check that|show )")


REFERENCE_UNCONFIRMED = " (its quote was not confirmed)"
_TIER = {"VERIFIED": 0, "REFERENCE": 1}  # then UNVERIFIED (or no evidence)
_DOC_SECTION = re.compile(r"^(?P<title>[^:]+? > [^:]+?):\s+(?P<body>\S.*)$", re.DOTALL)
_TICKET_LEAD = re.compile(r"^(?i:in\s+(?:a\s+)?(?:(?:similar|resolved)\s+)*(?:ticket\s+)?)?(?P<id>[A-Z][A-Z0-9]*-\d+)\b"
                          r"\s*(?P<sep>[:,]?)\s*(?P<rest>.*)$", re.DOTALL)
_ALREADY_REFERENCE = re.compile(r"(?i)^(?:the (?:runbook|documentation|docs)\b"
                                r"|(?:the )?similar (?:resolved )?tickets?\b)")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def as_reference(claim: Claim) -> str:
    """A reference claim as what its source says: the runbook/documentation section, or the resolved ticket."""
    text = _sentence(claim.text)
    if _ALREADY_REFERENCE.match(text):
        return text
    if claim.agent == "domain":
        section = _DOC_SECTION.match(text)
        if section is None:
            return f"The documentation says: {text}"
        book, _, rest = section["title"].partition(" > ")
        source = f"The runbook ({rest})" if "runbook" in book.lower() else f"The documentation ({section['title']})"
        return f"{source} says: {section['body']}"
    lead = _TICKET_LEAD.match(text)
    if lead is None:
        return f"In a similar resolved ticket: {text}"
    joiner = " " if lead["rest"].startswith("(") else ": "
    return f"In resolved ticket {lead['id']}{joiner}{lead['rest']}"


def stated(claim: Claim, ev: Evidence | None) -> str:
    """A claim as the report writes it: a fact (VERIFIED), reference (REFERENCE) or hedged (UNVERIFIED)."""
    if ev is not None and ev.status == "VERIFIED":
        return _sentence(claim.text)
    if ev is not None and ev.status == "REFERENCE":
        text = as_reference(claim)
        return text if ev.confidence != "low" else text[:-1] + REFERENCE_UNCONFIRMED + "."
    return HEDGE + _sentence(claim.text)


def pick_label(outputs: dict[str, AgentOutput]) -> tuple[str | None, str | None]:
    """(label, category) named by the log agent, else the domain agent, else the similarity hint."""
    for name in _AGENT_ORDER:
        out = outputs.get(name)
        if out is not None and (out.label or out.category):
            return out.label, out.category or _category_of(out.label)
    return None, None


def _category_of(label: str | None) -> str | None:
    from faultline.nika.labels import category_of

    return category_of(label) if label else None


def pick_devices(incident: Incident, outputs: dict[str, AgentOutput]) -> list[str]:
    """Devices the log and domain agents name, then similarity devices only if the ticket names them too."""
    ticket_words = set(lexical.words(f"{incident.title}\n{incident.description}\n{incident.environment}"))
    devices: list[str] = []
    for name in _AGENT_ORDER:
        out = outputs.get(name)
        for device in out.devices if out else []:
            if device in devices or (name == "similarity" and device.lower() not in ticket_words):
                continue
            devices.append(device)
    return devices


def pick_components(outputs: dict[str, AgentOutput]) -> list[str]:
    """Fault-area components: what an agent states in ``data["components"]``, else similar tickets' by score."""
    for name in _AGENT_ORDER:
        out = outputs.get(name)
        named = out.data.get("components") if out else None
        if isinstance(named, list) and named and all(isinstance(c, str) for c in named):
            return list(dict.fromkeys(named))
    votes: dict[str, float] = {}
    sim = outputs.get("similarity")
    for ticket in (sim.data.get("tickets") or []) if sim else []:
        if isinstance(ticket, dict):
            for component in ticket.get("components") or []:
                votes[component] = votes.get(component, 0.0) + float(ticket.get("score") or 0.0)
    return [c for c, _ in sorted(votes.items(), key=lambda kv: -kv[1])][:1]


def fits_label(text: str, label: str | None) -> bool:
    """Whether a fix statement is about the report's fault: without a label any precedent may serve (tickets
    outside the taxonomy); with one, only a statement that reads as a label of the same family (`classify_text`),
    so a report never borrows the fix of another fault."""
    if not label:
        return True
    from faultline.astra.labels import classify_text
    from faultline.truth.taxonomy import taxonomy as rubric

    ranked = classify_text(text)
    family = rubric().family_of(ranked[0][0]) if ranked else None
    return family is not None and family == rubric().family_of(label)


def _relevance(claim: Claim, focus: set[str]) -> float:
    ids = lexical.identifiers(claim.text)
    return technical_score(claim.text) + 4 * len(ids & focus)


def write_deterministic(incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
                        evidence: list[Evidence], *, round_: int) -> Report:
    """A template report over all claims so far (original and follow-up), the best grounded first."""
    ev = {e.claim_id: e for e in evidence}
    label, category = pick_label(outputs)
    devices = pick_devices(incident, outputs)
    focus = {d.lower() for d in devices} | ({label.lower()} if label else set())
    focus |= lexical.identifiers(f"{incident.title} {incident.description}")

    def status(c: Claim) -> str:
        return ev[c.claim_id].status if c.claim_id in ev else "UNVERIFIED"

    def tier(c: Claim) -> int:
        return _TIER.get(status(c), len(_TIER))

    def rank(c: Claim) -> tuple[int, int, float, int]:
        return (tier(c), _AGENT_ORDER.index(c.agent), -_relevance(c, focus), c.round)

    ordered = sorted(claims, key=rank)
    symptoms = [c for c in ordered if c.tag == "SYMPTOMATIC" and status(c) != "REFERENCE"]  # observed here
    causes = [c for c in ordered if c.tag == "CAUSAL" and c.agent != "similarity"] or \
             [c for c in ordered if c.tag == "CAUSAL"]
    fixes = sorted((c for c in ordered if _FIX.search(c.text) and c.agent in ("domain", "similarity")
                    and fits_label(c.text, label)), key=lambda c: (tier(c), -_relevance(c, focus)))
    checks = [c for c in ordered if _VERIFY.search(c.text) and c not in fixes[:1]]

    symptom = f"Reported: {incident.title.strip()}."
    if symptoms:
        symptom += " Observed: " + stated(symptoms[0], ev.get(symptoms[0].claim_id))
    chosen = _spread(ordered, MAX_EVIDENCE)
    statements = [stated(c, ev.get(c.claim_id)) for c in chosen]

    if label or category:
        name = label or category
        where = f" on {', '.join(devices)}" if devices else ""
        root = f"{name}{f' ({category})' if label and category else ''}{where}."
        if causes:
            lead = {"VERIFIED": "Supported by: ", "REFERENCE": "For reference: "}.get(status(causes[0]),
                                                                                    "Not yet confirmed; ")
            root += " " + lead + stated(causes[0], ev.get(causes[0].claim_id))
        else:
            root = HEDGE + root + " No causal claim supports it yet."
    elif causes:
        root = stated(causes[0], ev.get(causes[0].claim_id))
    else:
        root = NO_ROOT_CAUSE
    chain = event_chain_of(outputs, label)
    if chain:
        root += " " + chain_sentence(chain)
    fix = stated(fixes[0], ev.get(fixes[0].claim_id)) if fixes else (generic_guidance(chain) if chain else NO_FIX)
    if fixes and devices and not any(d.lower() in lexical.words(fix) for d in devices):
        # a reference fix already names its ticket or runbook section
        precedent = " (as in a similar resolved ticket)" if fixes[0].agent == "similarity" and \
            status(fixes[0]) != "REFERENCE" else ""
        fix = f"On {devices[0]}{precedent}: {fix}"
    verification = f"Repeat the failing check from the ticket and confirm it passes: {incident.title.strip()}."
    if checks:
        verification += " " + stated(checks[0], ev.get(checks[0].claim_id))
    report = Report(incident_id=incident.incident_id, round=round_, symptom=symptom, evidence=statements,
                    root_cause=root, fix=fix, verification=verification, label=label, category=category,
                    devices=devices, components=pick_components(outputs), scope=_scope_of(outputs),
                    missing=missing_sources(outputs), text="")
    return report.model_copy(update={"text": render_markdown(report)})


def event_chain_of(outputs: dict[str, AgentOutput], label: str | None) -> dict | None:
    """The log agent's event chain (`data.event_chain`), when it is the chain of `label`."""
    log = outputs.get("log")
    chain = log.data.get("event_chain") if log else None
    return chain if isinstance(chain, dict) and label and chain.get("label") == label else None


def chain_sentence(chain: dict) -> str:
    """The event chain in one or two sentences: the root event where it happened, the far end, what is missing."""
    root = chain["root"]
    what = "The root event" if root["role"] == "root" else "No root event was logged; what the logs show"
    where = " ".join(p for p in (root.get("iface"), f"at {root['at']}" if root.get("at") else None) if p)
    device = root.get("device") or "a device"
    text = f"{what}: {root['cls'].replace('_', ' ')} on {device}{' ' + where if where else ''}"
    if chain.get("affected_peers"):
        text += f"; affected peer{'s' if len(chain['affected_peers']) > 1 else ''} (far end): " \
                f"{', '.join(chain['affected_peers'])}"
    text += "."
    if chain.get("missing"):
        text += f" Missing: {chain['missing']}."
    return text


def generic_guidance(chain: dict) -> str:
    """The catalogue's next check for the chain's event (every class has one), said to be generic guidance with its
    source."""
    check = chain["next_check"]
    text = (f"Generic guidance for {chain['label'].replace('_', ' ')} (no resolved ticket or runbook section fits; "
            f"from the vendor event catalogue, not from this incident): {check['text']}")
    for platform in check.get("commands") or []:
        text += f" On {platform['platform']}: " + ", ".join(f"`{c}`" for c in platform["commands"]) + \
                f" ({platform['source']})."
    return text + f" [Source: {check['source']}]"


def _spread(ordered: list[Claim], limit: int) -> list[Claim]:
    """The first `limit` claims, taking each agent's best claim before anyone's second."""
    firsts = []
    for name in _AGENT_ORDER:
        first = next((c for c in ordered if c.agent == name), None)
        if first is not None:
            firsts.append(first)
    rest = [c for c in ordered if c not in firsts]
    return (firsts + rest)[:limit]


def _scope_of(outputs: dict[str, AgentOutput]) -> list[str]:
    log = outputs.get("log")
    return list(log.data.get("scope") or []) if log else []


def missing_sources(outputs: dict[str, AgentOutput]) -> list[str]:
    """The sources the agents had to do without ("<source>: <why>"), in report order."""
    found = (outputs.get(name) for name in _AGENT_ORDER)
    return [output.missing for output in found if output is not None and output.missing]


def render_markdown(report: Report) -> str:
    """The report as Markdown: identification, then resolution, then the fields."""
    lines = [f"# Fault analysis: {report.incident_id} (round {report.round})", "", "## Identification", "",
             f"**Symptom.** {report.symptom}", "", "**Evidence.**", ""]
    lines += [f"- {s}" for s in report.evidence] or ["- (none)"]
    lines += ["", f"**Root cause.** {report.root_cause}", "", "## Resolution", "", f"**Fix.** {report.fix}", "",
              f"**Verification.** {report.verification}", ""]
    fields = [("Label", report.label), ("Category", report.category), ("Devices", ", ".join(report.devices)),
              ("Components", ", ".join(report.components))]
    lines += [f"- {k}: {v}" for k, v in fields if v]
    if report.scope:
        lines += ["", "## Logs read", ""] + [f"- {s}" for s in report.scope]
    if report.missing:
        lines += ["", "## Sources missing", ""] + [f"- {s}" for s in report.missing]
    return "\n".join(lines).rstrip() + "\n"


class LLMReport(BaseModel):
    """The report fields as the model returns them."""

    model_config = ConfigDict(extra="forbid")
    symptom: str
    evidence: list[str] = Field(default_factory=list)
    root_cause: str
    fix: str
    verification: str
    label: str | None = None
    category: str | None = None
    devices: list[str] = Field(default_factory=list)
    components: list[str] = Field(default_factory=list)


def claims_block(claims: list[Claim], evidence: list[Evidence]) -> str:
    """The claim-evidence mapping as the report and judge prompts see it: one line per claim, led by its
    status (VERIFIED, UNVERIFIED or REFERENCE; UNVERIFIED when it has no evidence row)."""
    ev = {e.claim_id: e for e in evidence}
    lines = []
    for c in claims:
        e = ev.get(c.claim_id)
        status = e.status if e else "UNVERIFIED"
        tag = f"[{c.tag}] " if c.tag else ""
        quote = f' | evidence ({e.confidence}): "{e.quote}"' if e and e.quote else ""
        lines.append(f"[{status}] ({c.agent}) {tag}{c.text}{quote}")
    return "\n".join(lines)


def write_llm(incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim], evidence: list[Evidence],
              *, round_: int, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str,
              run_id: str | None = None, previous: Report | None = None, critique: str = "") -> Report:
    """A report written by an LLM from the claim-evidence mapping (prompt ``astra/report``)."""
    from faultline.llm import complete_json

    sim = outputs.get("similarity")
    hint = (sim.label or sim.category or "") if sim else ""
    answer = complete_json(settings, conn, model=model, prompt=REPORT_PROMPT, schema=LLMReport,
                           stage="astra.report", incident_id=incident.incident_id, run_id=run_id,
                           variables={"ticket": f"{incident.title}\n{incident.description}".strip(),
                                      "claims": claims_block(claims, evidence), "similarity_hint": hint or "none",
                                      "previous_report": previous.text if previous else "none",
                                      "critique": critique or "none"})
    parsed = LLMReport.model_validate(answer)
    report = Report(incident_id=incident.incident_id, round=round_, text="", scope=_scope_of(outputs),
                    missing=missing_sources(outputs), **parsed.model_dump())
    if not report.components:
        report = report.model_copy(update={"components": pick_components(outputs)})
    return report.model_copy(update={"text": render_markdown(report)})
