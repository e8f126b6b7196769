"""Rerankers for the ASTRA pre-fetch: score a batch of candidate tickets against an incident (0-1).

`LexicalReranker` (deterministic, the default) mixes a reciprocal-rank prior, title-to-title embedding
similarity, cross-field lexical coverage and identifier matches, caching candidate vectors per process;
`LLMReranker` asks a model (prompt ``astra/rerank``). The signals and weights: docs/astra.md#pre-fetch-and-rerank.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.lexical import content_words, identifiers
from faultline.astra.records import Incident

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

WEIGHTS = {"hybrid": 0.35, "embedding": 0.30, "lexical": 0.20, "identifiers": 0.15}
FIELD_WEIGHTS = {"title": 0.40, "description": 0.35, "resolution": 0.25}
LLM_TEXT_CHARS = 600  # per candidate in the LLM prompt: enough for the gist, 20 fit one request
RRF_K = 60  # the reciprocal-rank constant of Cormack, Clarke & Buettcher (SIGIR 2009), as in retrieval.search
EMBED_CHARS = 1000
GUIDE_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)  # what a grammar lets a model choose from
CACHE_SIZE = 50_000  # candidate vectors kept per process (384 floats each: about 75 MB at most)

_VECTORS: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
_VECTORS_LOCK = threading.Lock()


@dataclass
class Candidate:
    """A resolved ticket from the hybrid search, with the text a reranker may read."""

    ticket_id: str
    title: str
    description: str
    resolution_note: str
    components: list[str]
    resolved_at: str | None
    comments: list[dict[str, Any]] = field(default_factory=list)
    hybrid_score: float = 0.0
    hybrid_rank: int = 0  # 1-based place in the hybrid search's list; 0 = unknown (the score is used)

    @property
    def full_text(self) -> str:
        return "\n".join((self.title, self.description, self.resolution_note))


class Reranker(Protocol):
    """Scores candidates for one incident; a missing id counts as 0."""

    name: str

    def score(self, incident: Incident, batch: list[Candidate]) -> dict[str, float]: ...


def _incident_text(incident: Incident) -> str:
    return "\n".join(p for p in (incident.title, incident.description, incident.environment) if p)


def _embedder_key(embedder: Any) -> str:
    name = getattr(embedder, "model_name", None)
    return str(name) if isinstance(name, str) and name else f"{type(embedder).__qualname__}@{id(embedder)}"


def cached_vectors(embedder: Any, items: list[tuple[str, str]]) -> list[Any]:
    """Vectors of ``(ticket_id, text)`` pairs, embedding only those this process has not seen.

    The key holds a hash of the text, so a ticket whose text changed is embedded afresh.
    """
    model = _embedder_key(embedder)
    keys = [(model, tid, hashlib.sha1(text.encode("utf-8")).hexdigest()) for tid, text in items]
    with _VECTORS_LOCK:
        found = {k: _VECTORS[k] for k in keys if k in _VECTORS}
        for k in found:
            _VECTORS.move_to_end(k)
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        texts = {k: text for k, (_, text) in zip(keys, items)}
        fresh = dict(zip(missing, embedder.embed([texts[k] for k in missing])))
        found.update(fresh)
        with _VECTORS_LOCK:
            _VECTORS.update(fresh)
            while len(_VECTORS) > CACHE_SIZE:
                _VECTORS.popitem(last=False)
    return [found[k] for k in keys]


def clear_vector_cache() -> None:
    """Forget every cached candidate vector (tests; a process that swaps models)."""
    with _VECTORS_LOCK:
        _VECTORS.clear()


def _prior(cand: Candidate) -> float:
    if cand.hybrid_rank > 0:
        return (RRF_K + 1) / (RRF_K + cand.hybrid_rank)
    return max(0.0, min(1.0, cand.hybrid_score))


def _coverage(query: Counter[str], idf: dict[str, float], text: str) -> float:
    present = set(content_words(text))
    total = sum(idf[w] for w in query)
    return sum(idf[w] for w in query if w in present) / total if total else 0.0


class LexicalReranker:
    """The deterministic reranker (docs/astra.md#pre-fetch-and-rerank); embeds with the shared MiniLM model."""

    name = "lexical-embedding"

    def __init__(self, settings: Settings, embedder: Any = None) -> None:
        if embedder is None:
            from faultline.retrieval.embed import Embedder

            embedder = Embedder(settings)
        self.embedder = embedder

    def signals(self, incident: Incident, batch: list[Candidate]) -> dict[str, dict[str, float]]:
        """Each candidate's four signals (for inspection and tests)."""
        if not batch:
            return {}
        query_text = _incident_text(incident)
        query = Counter(content_words(query_text))
        docs = [set(content_words(c.full_text)) for c in batch]
        idf = {w: math.log(1 + (len(batch) + 1) / (1 + sum(w in d for d in docs))) for w in query}
        query_ids = identifiers(query_text)
        # why titles: same field on both sides; a ticket without a title falls back to its full text
        query_vec = self.embedder.embed([(incident.title.strip() or query_text)[:EMBED_CHARS]])[0]
        cand_vecs = cached_vectors(self.embedder, [(c.ticket_id, (c.title.strip() or c.full_text)[:EMBED_CHARS])
                                                   for c in batch])
        out: dict[str, dict[str, float]] = {}
        for n, cand in enumerate(batch):
            lexical = (FIELD_WEIGHTS["title"] * _coverage(query, idf, cand.title)
                       + FIELD_WEIGHTS["description"] * _coverage(query, idf, cand.description)
                       + FIELD_WEIGHTS["resolution"] * _coverage(query, idf, cand.resolution_note))
            ids = len(query_ids & identifiers(cand.full_text)) / len(query_ids) if query_ids else 0.0
            cosine = float(query_vec @ cand_vecs[n])
            out[cand.ticket_id] = {"hybrid": _prior(cand),
                                   "embedding": max(0.0, cosine), "lexical": lexical, "identifiers": ids}
        return out

    def score(self, incident: Incident, batch: list[Candidate]) -> dict[str, float]:
        return {tid: sum(WEIGHTS[k] * v for k, v in sig.items())
                for tid, sig in self.signals(incident, batch).items()}


class _Scored(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ticket_id: str
    score: float = Field(ge=0.0, le=1.0)
    reason: str = ""


class RerankAnswer(BaseModel):
    """What the LLM reranker must return."""

    model_config = ConfigDict(extra="forbid")
    scores: list[_Scored]


class LLMReranker:
    """Scores each batch with one model call (prompt ``astra/rerank``); ids the model invents are ignored.

    With a `fallback` reranker, a batch whose call fails (`LLMError`) is scored by it instead and the failure is
    kept in `fallbacks` ("<why>; ..."), so a failing model degrades the pre-fetch rather than sinking it.
    """

    def __init__(self, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str, *,
                 incident_id: str | None = None, run_id: str | None = None, fallback: Reranker | None = None) -> None:
        self.settings, self.conn, self.model = settings, conn, model
        self.incident_id, self.run_id = incident_id, run_id
        self.name = f"llm:{model}"
        self.fallback = fallback
        self.fallbacks: list[str] = []

    def score(self, incident: Incident, batch: list[Candidate]) -> dict[str, float]:
        from faultline.llm import LLMError, complete_json

        if not batch:
            return {}
        listing = "\n".join(json.dumps({"ticket_id": c.ticket_id, "title": c.title,
                                        "text": f"{c.description}\nResolution: {c.resolution_note}"[:LLM_TEXT_CHARS]},
                                       ensure_ascii=False) for c in batch)
        try:
            answer = complete_json(self.settings, self.conn, model=self.model, prompt="astra/rerank",
                                   variables={"title": incident.title, "description": incident.description,
                                              "candidates": listing},
                                   schema=RerankAnswer, stage="astra.rerank", guide=batch_guide(batch),
                                   incident_id=self.incident_id or incident.incident_id, run_id=self.run_id)
        except LLMError as exc:
            if self.fallback is None:
                raise
            from faultline.astra.agents import model_failure

            self.fallbacks.append(f"reranker: {model_failure(exc)}; {len(batch)} similar-ticket candidates were "
                                  f"reranked by the deterministic reranker ({self.fallback.name}) instead")
            return self.fallback.score(incident, batch)
        wanted = {c.ticket_id for c in batch}
        return {s["ticket_id"]: float(s["score"]) for s in answer["scores"] if s["ticket_id"] in wanted}


def batch_guide(batch: list[Candidate]) -> dict[str, Any]:
    """The answer's schema for a model that takes one: one score per candidate, in the batch's order, each naming
    its ticket id (so a grammar cannot skip, repeat or invent one), the score one of five grades."""
    def item(ticket_id: str) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["ticket_id", "score", "reason"],
                "properties": {"ticket_id": {"const": ticket_id},
                               "score": {"enum": list(GUIDE_SCORES)},
                               "reason": {"type": "string", "maxLength": 200}}}
    return {"type": "object", "additionalProperties": False, "required": ["scores"],
            "properties": {"scores": {"type": "array", "prefixItems": [item(c.ticket_id) for c in batch],
                                      "items": False, "minItems": len(batch), "maxItems": len(batch)}}}


def make_reranker(settings: Settings, conn: duckdb.DuckDBPyConnection, model: str | None, *, embedder: Any = None,
                  incident_id: str | None = None, run_id: str | None = None) -> Reranker:
    """The pre-fetch's reranker: `settings.astra_reranker` ``llm`` with a model gives an `LLMReranker` that falls
    back to the deterministic one batch by batch; otherwise the deterministic `LexicalReranker`."""
    lexical = LexicalReranker(settings, embedder=embedder)
    if settings.astra_reranker == "llm" and model is not None:
        return LLMReranker(settings, conn, model, incident_id=incident_id, run_id=run_id, fallback=lexical)
    return lexical
