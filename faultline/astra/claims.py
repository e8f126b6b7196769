"""Claim extraction: 5-10 self-contained diagnostic claims per agent, from that agent's output only.

`not_a_claim` says which sentences never are claims ("nothing found", bookkeeping, headings); `tag_for` tags a
claim CAUSAL or SYMPTOMATIC only when unambiguous; `extract_deterministic` ranks findings and sentences by
technical content, `extract_llm` asks a model (prompt ``astra/claims``). The rules: docs/astra.md#claims.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra import lexical
from faultline.astra.records import AgentOutput, Claim

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

MIN_CLAIMS, MAX_CLAIMS = 5, 10
CLAIMS_PROMPT = "astra/claims"

_EXPLICIT_CAUSE = re.compile(r"(?i)\b(root[ -]cause|caused by|because|due to|triggered by|as a result of|"
                             r"led to|leads to|resulting in)\b")
_CAUSE = re.compile(r"(?i)\b(misconfigur\w*|firewall|acl|nft\w*|blackhol\w*|block(?:ed|s|ing)?|"
                    r"removed|deleted|missing|wrong|incorrect|killed|stopped|disabled|hijack\w*|spoof\w*|"
                    r"poison\w*|overload\w*|throttl\w*|conflict\w*|mismatch\w*|leak\w*)\b")
_SYMPTOM = re.compile(r"(?i)\b(unreachable|packet loss|\d+% (packet )?loss|lost reachability|can'?t reach|cannot reach|"
                      r"no reply|no replies|timed? ?out|timeouts?|expired|went down|is down|\bdown\b|flap\w*|slow|"
                      r"latency|refused|fails?|failing|failed|no lease|unresponsive|errors?)\b")
_RESOLUTION = re.compile(r"(?i)\b(fix\w*|resolv\w*|restor\w*|re-?enabl\w*|restart\w*|re-?apply|remov\w*|delet\w*|"
                         r"rollback|roll back|reconfigur\w*|recover\w*|replac\w*|verif\w*|confirm\w*)\b")
_FIX_STATEMENT = re.compile(r"(?i)^\W*(fix|fixed|resolution|resolved|workaround|remedy|solution|check|compare|"
                            r"verify|run|set|delete|remove|restart|restore)\b")
_TAG_PREFIX = re.compile(r"^\s*\[(CAUSAL|SYMPTOMATIC)\]\s*", re.IGNORECASE)
_MIN_WORDS = 4

# sources the analysis reads: a "nothing found" statement is about them, not about the network
_SOURCE = (r"(?:logs?|log lines?|lines|tickets?|history|documentation|docs|sections?|runbook|labels?|taxonomy"
           r"|excerpt|scope)")
_NOTHING_FOUND = re.compile(
    r"(?i)\bsays? nothing\b|\bnothing (?:was |were )?(?:found|matched|matches|named)\b"
    r"|\b(?:found|matched|showed) nothing\b"
    r"|\b(?:match(?:es|ed)?|names?|named) no (?:fault |taxonomy )?(?:label|category|ticket|section)\b"
    r"|\bno (?:fault |taxonomy )?label (?:is |was )?(?:named|of the taxonomy|from the taxonomy)\b"
    r"|\bdo(?:es)? not agree\b|\bno agreement\b"
    r"|\bhas no (?:section|ticket|log|match|entry)|\bno resolution recorded\b"
    r"|\bno (?:device )?logs? (?:were|was) ingested\b"
    rf"|^(?:there (?:are|were|is|was) )?(?:no|none of|nothing)\b(?=.*\b{_SOURCE}\b)"
    r"(?=.*\b(?:found|ingested|matched|matching"
    r"|available|returned|retrieved|recorded|in (?:this|the) incident's scope|similar enough)\b)")
_SUMMARY = re.compile(r"(?i)^log analysis\b.*\blog lines from\b|\b\d+ log lines from \d+ sources?\b"
                      r"|\bthe filter kept \d+ lines\b|^\d+ similar resolved tickets?\b|^documentation consulted\b")
# a list under one of these headings is bookkeeping of the analysis, not statements about the fault
_BOOKKEEPING_HEADINGS = ("logs read (scope):",)
_HEADING_WORDS = 15


def not_a_claim(text: str) -> str | None:
    """Why a sentence of an agent's output is never a claim ("heading", "nothing found", "summary"), else None."""
    text = " ".join(text.split())
    if text.endswith(":") and len(text.split()) <= _HEADING_WORDS:  # a cut-off log line also ends with ':'
        return "heading"
    if _NOTHING_FOUND.search(text):
        return "nothing found"
    if _SUMMARY.search(text):
        return "summary"
    return None


def claimable_text(output: AgentOutput) -> str:
    """The agent's text without its bookkeeping lists (the log agent's "Logs read (scope):" block)."""
    kept: list[str] = []
    skipping = False
    for line in output.text.splitlines():
        stripped = line.strip()
        if stripped.lower() in _BOOKKEEPING_HEADINGS:
            skipping = True
            continue
        if skipping and (stripped.startswith("-") or line[:1].isspace()):
            continue
        skipping = False
        kept.append(line)
    scope = {lexical.normalise(str(s)) for s in output.data.get("scope") or []}
    return "\n".join(line for line in kept if lexical.normalise(line.strip().lstrip("- ")) not in scope)


def tag_for(text: str, aspect: str | None = None) -> Literal["CAUSAL", "SYMPTOMATIC"] | None:
    """CAUSAL / SYMPTOMATIC when unambiguous, else None (forcing a label adds noise)."""
    if aspect == "resolution" or _FIX_STATEMENT.match(text):
        return None  # a fix is neither the cause nor a symptom
    if aspect == "cause" or _EXPLICIT_CAUSE.search(text):
        return "CAUSAL"
    if aspect == "symptom":
        return "SYMPTOMATIC"
    cause, symptom = bool(_CAUSE.search(text)), bool(_SYMPTOM.search(text))
    if cause and not symptom:
        return "CAUSAL"
    if symptom and not cause:
        return "SYMPTOMATIC"
    return None


def technical_score(text: str) -> float:
    """How much checkable technical content a sentence carries (identifiers, fault terms, actions)."""
    return (3 * len(lexical.identifiers(text)) + 2 * len(lexical.fault_terms_pattern().findall(text))
            + (1 if _RESOLUTION.search(text) else 0))


def claim_id(incident_id: str, round_: int, agent: str, index: int) -> str:
    """Stable id of the index-th claim an agent's output yielded in a round."""
    return f"{incident_id}:r{round_}:{agent}:{index:02d}"


def extract_deterministic(output: AgentOutput, *, incident_id: str, round_: int | None = None,
                          exclude: set[str] | None = None) -> list[Claim]:
    """Extractive claims from one agent output: its best-ranked findings and sentences (docs/astra.md#claims).

    `exclude` holds normalised texts already claimed in earlier rounds (so a follow-up adds only new claims).
    """
    round_ = output.round if round_ is None else round_
    seen = set(exclude or ())
    candidates: list[tuple[float, int, str, str | None]] = []  # (score, position, text, aspect)
    position = 0
    for finding in output.findings:
        text = " ".join(finding.text.split())
        key = lexical.normalise(text)
        if len(lexical.words(text)) >= _MIN_WORDS and key not in seen and not not_a_claim(text):
            seen.add(key)
            candidates.append((technical_score(text) + 2, position, text, finding.aspect))
            position += 1
    for sentence in lexical.sentences(claimable_text(output)):
        key = lexical.normalise(sentence)
        if len(lexical.words(sentence)) < _MIN_WORDS or key in seen or not_a_claim(sentence):
            continue
        seen.add(key)
        candidates.append((technical_score(sentence), position, sentence, None))
        position += 1
    # the findings that say what caused the fault come first: their log lines, not the analysis's own summary of
    # them, are what can verify the cause (docs/astra.md#evidence), so they are never crowded out by symptoms
    ranked = sorted(candidates, key=lambda c: (c[3] != "cause", -c[0], c[1]))
    chosen = [c for c in ranked if c[0] > 0][:MAX_CLAIMS]
    if len(chosen) < MIN_CLAIMS:
        chosen = ranked[:MIN_CLAIMS]
    chosen.sort(key=lambda c: c[1])
    return [Claim(claim_id=claim_id(incident_id, round_, output.agent, i), incident_id=incident_id, round=round_,
                  agent=output.agent, text=text, tag=tag_for(text, aspect))
            for i, (_, _, text, aspect) in enumerate(chosen, start=1)]


class LLMClaim(BaseModel):
    """One claim as the model returns it."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    tag: Literal["CAUSAL", "SYMPTOMATIC"] | None = None


class LLMClaims(BaseModel):
    """The claim-extraction answer: claims from one agent output."""

    model_config = ConfigDict(extra="forbid")
    claims: list[LLMClaim] = Field(min_length=1, max_length=MAX_CLAIMS + 5)


_ATTRIBUTION = {
    "similarity": "Claims describe what the retrieved historical tickets show, naming their ticket ids and scores.",
    "log": "Claims reference only log entries and analysis visible in this log-analysis output.",
    "domain": "Claims cite only content that appears in the retrieved documentation passages.",
}


def extract_llm(output: AgentOutput, *, incident_id: str, ticket: str, settings: Settings,
                conn: duckdb.DuckDBPyConnection, model: str, run_id: str | None = None,
                round_: int | None = None, exclude: set[str] | None = None) -> list[Claim]:
    """Claims from one agent output by an LLM through the gateway (prompt ``astra/claims``), at most ten."""
    from faultline.llm import complete_json

    round_ = output.round if round_ is None else round_
    answer = complete_json(settings, conn, model=model, prompt=CLAIMS_PROMPT, schema=LLMClaims,
                           stage="astra.claims", incident_id=incident_id, run_id=run_id,
                           variables={"agent": output.agent, "attribution_rule": _ATTRIBUTION[output.agent],
                                      "ticket": ticket, "agent_output": output.text})
    parsed = LLMClaims.model_validate(answer)
    seen = set(exclude or ())
    claims: list[Claim] = []
    for item in parsed.claims:
        text, tag = item.text.strip(), item.tag
        prefix = _TAG_PREFIX.match(text)
        if prefix:
            tag, text = tag or prefix.group(1).upper(), text[prefix.end():].strip()
        key = lexical.normalise(text)
        if not key or key in seen or not_a_claim(text):
            continue
        seen.add(key)
        claims.append(Claim(claim_id=claim_id(incident_id, round_, output.agent, len(claims) + 1),
                            incident_id=incident_id, round=round_, agent=output.agent, text=text, tag=tag))
        if len(claims) == MAX_CLAIMS:
            break
    return claims
