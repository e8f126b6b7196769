"""Evidence mapping: tie every claim to a verbatim passage of the sources its own agent read, and check it.

The sources are `AgentOutput.sources` (the log lines in scope, the resolved tickets' texts, the documentation
sections), never the agent's prose (`AgentOutput.text`), which with an LLM analyst is the model's own writing.
`validate` accepts a proposed quote only when it overlaps the sources in contiguous runs of words and names no
identifier they lack, else falls back to a keyword window over them; it sets a confidence and the status VERIFIED,
UNVERIFIED or REFERENCE (`status_for`). The check and its thresholds: docs/astra.md#evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra import lexical
from faultline.astra.records import AgentOutput, Claim, Evidence, EvidenceStatus

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

VERBATIM_THRESHOLD = 0.6
RUN = 3  # words a contiguous run needs before it counts as quoted
MAX_WINDOW = 3  # sentences in a keyword window
RULES_VERSION = "evidence-rules-3"  # 3: quotes checked against the sources, not the prose
INCIDENT_SOURCES: frozenset[str] = frozenset({"log"})  # agents whose output is about this incident
SOURCE_PROMPT_CHARS = 12_000  # the sources shown to an LLM mapper (the log agent's excerpt cap)


def quote_overlap(quote: str, source: str) -> float:
    """Share of the quote's words found in the source in contiguous in-order runs of >= 3 words."""
    q, s = lexical.words(quote), lexical.words(source)
    if not q or not s:
        return 0.0
    if len(q) < RUN:
        return 1.0 if _contains(s, q) else 0.0
    grams = _grams(source)
    covered = [False] * len(q)
    for i in range(len(q) - RUN + 1):
        if tuple(q[i:i + RUN]) in grams:
            for j in range(i, i + RUN):
                covered[j] = True
    return sum(covered) / len(q)


@lru_cache(maxsize=8)
def _grams(source: str) -> frozenset[tuple[str, ...]]:
    # a log agent's sources run to a few thousand lines, and every claim is checked against them: cut them once
    s = lexical.words(source)
    return frozenset(tuple(s[i:i + RUN]) for i in range(len(s) - RUN + 1))


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    key: str  # normalised words
    words: frozenset[str]
    grams: frozenset[tuple[str, ...]]


@lru_cache(maxsize=8)
def _sentences(source: str) -> tuple[_Sentence, ...]:
    out = []
    for a, b in lexical.sentence_spans(source):
        w = lexical.words(source[a:b])
        out.append(_Sentence(a, b, " ".join(w), frozenset(w), frozenset(tuple(w[i:i + RUN])
                                                                         for i in range(len(w) - RUN + 1))))
    return tuple(out)


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def foreign_identifiers(text: str, source: str) -> set[str]:
    """Identifiers in `text` that never occur in `source` (the fabricated-detail signal)."""
    return lexical.identifiers(text) - _vocabulary(source)


@lru_cache(maxsize=32)
def _vocabulary(source: str) -> frozenset[str]:
    # every claim of an agent is checked against that agent's whole sources, twice: tokenise them once
    return frozenset(lexical.identifiers(source)) | frozenset(lexical.words(source))


def _keywords(claim_text: str) -> dict[str, float]:
    weights: dict[str, float] = {}
    for word in lexical.content_words(claim_text):
        weights[word] = 2.0 if lexical.is_identifier(word) else 1.0
    return weights


def support(claim_text: str, quote: str) -> float:
    """Weighted share of the claim's keywords present in the quote (identifiers weigh double)."""
    weights = _keywords(claim_text)
    if not weights:
        return 0.0
    present = set(lexical.words(quote))
    return sum(w for k, w in weights.items() if k in present) / sum(weights.values())


def keyword_window(claim_text: str, source: str) -> str:
    """The 1-3 consecutive source sentences covering most claim keywords; "" when none shares a keyword."""
    weights = _keywords(claim_text)
    spans = _sentences(source)
    best: tuple[float, int, int] = (0.0, 0, 0)  # (score, -length, start index) packed below
    best_span: tuple[int, int] | None = None
    for i in range(len(spans)):
        seen: set[str] = set()
        for size in range(1, MAX_WINDOW + 1):
            if i + size > len(spans):
                break
            seen |= spans[i + size - 1].words
            score = sum(w for k, w in weights.items() if k in seen)
            if score > best[0] or (score == best[0] and score > 0 and -size > best[1]):
                best = (score, -size, i)
                best_span = (spans[i].start, spans[i + size - 1].end)
    if best_span is None:
        return ""
    return source[best_span[0]:best_span[1]]


def best_sentence(claim_text: str, source: str) -> str:
    """The single source sentence that shares most keywords with the claim."""
    weights = _keywords(claim_text)
    target = lexical.normalise(claim_text)
    best, best_score = "", 0.0
    for sentence in _sentences(source):
        if target and target in sentence.key:
            return source[sentence.start:sentence.end]
        score = sum(w for k, w in weights.items() if k in sentence.words)
        if score > best_score:
            best, best_score = source[sentence.start:sentence.end], score
    return best


def restating_sentences(claim_text: str, source: str) -> str:
    """The source sentences the claim restates, in source order, one a line (the deterministic quote proposal).

    A claim made of source lines (a log line with its device, a chain of log lines, a ticket's title and its cause
    sentence) is backed by those lines: greedily, the sentence covering most still-uncovered claim words in runs of
    >= 3 words, while one adds at least a run. A claim no sentence restates gets `best_sentence`.
    """
    target = lexical.normalise(claim_text)
    claim_words = target.split()
    claim_grams = [tuple(claim_words[i:i + RUN]) for i in range(len(claim_words) - RUN + 1)]
    wanted = set(claim_grams)
    candidates = [s for s in _sentences(source) if s.grams & wanted or (target and target in s.key)]
    if any(target and target in s.key for s in candidates):
        return best_sentence(claim_text, source)

    def covers(sentence: _Sentence) -> set[int]:
        return {j for i, gram in enumerate(claim_grams) if gram in sentence.grams for j in range(i, i + RUN)}

    uncovered, chosen = set(range(len(claim_words))), []
    while candidates:
        best = max(candidates, key=lambda s: len(covers(s) & uncovered))
        gain = covers(best) & uncovered
        if len(gain) < RUN:
            break
        chosen.append(best)
        uncovered -= gain
        candidates.remove(best)
    if not chosen:
        return best_sentence(claim_text, source)
    return "\n".join(source[s.start:s.end] for s in sorted(chosen, key=lambda s: s.start))


def source_text(output: AgentOutput) -> str:
    """The sources an agent read, one passage per line block: what its claims' quotes are checked against."""
    return "\n".join(output.sources)


def validate(claim: Claim, quote: str, output: AgentOutput, *, claimed_confidence: str | None = None) -> Evidence:
    """Check a proposed quote against the sources the claim's own agent read (never its prose); fall back to a
    keyword window over those sources if it fails. An output without sources can back no claim."""
    if output.agent != claim.agent:
        raise ValueError(f"claim {claim.claim_id} belongs to {claim.agent}, not {output.agent}")
    source = source_text(output)
    overlap = quote_overlap(quote, source) if quote.strip() else 0.0
    verbatim = overlap >= VERBATIM_THRESHOLD and not foreign_identifiers(quote, source)
    if verbatim:
        method = "verbatim"
    else:
        quote = keyword_window(claim.text, source)
        method = "keyword_window" if quote else "none"
        overlap = quote_overlap(quote, source) if quote else 0.0
    confidence = _confidence(claim.text, quote, source, method, overlap)
    if claimed_confidence in ("medium", "low") and _rank(claimed_confidence) < _rank(confidence):
        confidence = claimed_confidence  # an LLM mapper that says its own evidence is weak is believed
    return Evidence(claim_id=claim.claim_id, source=claim.agent, quote=quote, method=method,
                    overlap=round(overlap, 4), confidence=confidence, status=status_for(claim.agent, confidence))


def status_for(source: str, confidence: str) -> EvidenceStatus:
    """VERIFIED or UNVERIFIED (by confidence) for the log agent; REFERENCE for documentation and similar tickets."""
    if source not in INCIDENT_SOURCES:
        return "REFERENCE"
    return "VERIFIED" if confidence in ("high", "medium") else "UNVERIFIED"


def _rank(confidence: str) -> int:
    return {"low": 0, "medium": 1, "high": 2}[confidence]


def _confidence(claim_text: str, quote: str, source: str, method: str, overlap: float) -> str:
    if method == "none" or not quote:
        return "low"
    share = support(claim_text, quote)
    if method == "verbatim" and overlap >= 0.9 and share >= 0.6:
        level = "high"
    elif share >= (0.3 if method == "verbatim" else 0.6):
        level = "medium"
    else:
        level = "low"
    claim_ids = lexical.identifiers(claim_text)
    if foreign_identifiers(claim_text, source):
        return "low"
    if claim_ids - set(lexical.words(quote)) - lexical.identifiers(quote) and level == "high":
        return "medium"
    return level


def map_deterministic(claims: list[Claim], outputs: dict[str, AgentOutput]) -> list[Evidence]:
    """The deterministic analyst's mapping: propose the source sentences the claim restates, then `validate` them."""
    mapped = []
    for claim in claims:
        output = outputs[claim.agent]
        mapped.append(validate(claim, restating_sentences(claim.text, source_text(output)), output))
    return mapped


EVIDENCE_PROMPT = "astra/evidence"


class LLMEvidenceItem(BaseModel):
    """The passage the model quotes for one claim (by its number in the prompt)."""

    model_config = ConfigDict(extra="forbid")
    claim: int = Field(ge=1)
    evidence: str
    status: Literal["supported", "weak"]
    confidence: Literal["high", "medium", "low"]
    missing: str = ""


class LLMEvidence(BaseModel):
    """The evidence-mapping answer for one agent's claims."""

    model_config = ConfigDict(extra="forbid")
    items: list[LLMEvidenceItem]


def map_llm(claims: list[Claim], outputs: dict[str, AgentOutput], *, incident_id: str, settings: Settings,
            conn: duckdb.DuckDBPyConnection, model: str, run_id: str | None = None) -> list[Evidence]:
    """Quotes proposed by an LLM (prompt ``astra/evidence``, one call per agent), each then `validate`d.

    The model is shown the agent's sources, not its prose, and never gets the last word: its quote passes only
    the verbatim check against those sources, a "weak" answer or a claim it skipped falls back to the keyword
    window, and its own confidence can only lower ours.
    """
    from faultline.astra.agents.base import cap
    from faultline.llm import complete_json

    mapped: dict[str, Evidence] = {}
    for agent in dict.fromkeys(c.agent for c in claims):
        mine = [c for c in claims if c.agent == agent]
        listing = "\n".join(f"{i}. {c.text}" for i, c in enumerate(mine, start=1))
        answer = complete_json(settings, conn, model=model, prompt=EVIDENCE_PROMPT, schema=LLMEvidence,
                               stage="astra.evidence", incident_id=incident_id, run_id=run_id,
                               variables={"agent": agent, "claims": listing,
                                          "sources": cap(source_text(outputs[agent]), SOURCE_PROMPT_CHARS)})
        items = {item.claim: item for item in LLMEvidence.model_validate(answer).items}
        for i, claim in enumerate(mine, start=1):
            item = items.get(i)
            quote = item.evidence if item is not None and item.status == "supported" else ""
            mapped[claim.claim_id] = validate(claim, quote, outputs[agent],
                                              claimed_confidence=item.confidence if item else "low")
    return [mapped[c.claim_id] for c in claims]
