"""Rerankers for the ASTRA pre-fetch: score a batch of candidate tickets against an incident (0-1).

`LexicalReranker` (deterministic, the default) combines four signals, each in [0, 1]:

* the hybrid search score the candidate came with (what retrieval already knew),
* embedding similarity between the incident and the candidate's *title + resolution note* (the
  index embeds title + description; the resolution says what the fault was, a different view),
* cross-field lexical coverage: the share of the incident's content words, weighted by how rare
  they are in the batch, found in the candidate's title, description and resolution,
* identifier matches: the share of the incident's technical identifiers (IPs, interfaces, device
  names, FRR codes, labels) that the candidate mentions anywhere.

`LLMReranker` asks a model through the gateway with the prompt file ``astra/rerank``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
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

    @property
    def full_text(self) -> str:
        return "\n".join((self.title, self.description, self.resolution_note))


class Reranker(Protocol):
    """Scores candidates for one incident; a missing id counts as 0."""

    name: str

    def score(self, incident: Incident, batch: list[Candidate]) -> dict[str, float]: ...


def _incident_text(incident: Incident) -> str:
    return "\n".join(p for p in (incident.title, incident.description, incident.environment) if p)


def _coverage(query: Counter[str], idf: dict[str, float], text: str) -> float:
    present = set(content_words(text))
    total = sum(idf[w] for w in query)
    return sum(idf[w] for w in query if w in present) / total if total else 0.0


class LexicalReranker:
    """The deterministic reranker (see the module docstring); embeds with the shared MiniLM model."""

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
        vectors = self.embedder.embed([query_text[:1000]] + [f"{c.title}\n{c.resolution_note}"[:1000] for c in batch])
        out: dict[str, dict[str, float]] = {}
        for n, cand in enumerate(batch):
            lexical = (FIELD_WEIGHTS["title"] * _coverage(query, idf, cand.title)
                       + FIELD_WEIGHTS["description"] * _coverage(query, idf, cand.description)
                       + FIELD_WEIGHTS["resolution"] * _coverage(query, idf, cand.resolution_note))
            ids = len(query_ids & identifiers(cand.full_text)) / len(query_ids) if query_ids else 0.0
            cosine = float(vectors[0] @ vectors[n + 1])
            out[cand.ticket_id] = {"hybrid": max(0.0, min(1.0, cand.hybrid_score)),
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
    """Scores each batch with one model call (prompt ``astra/rerank``); ids the model invents are ignored."""

    def __init__(self, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str, *,
                 incident_id: str | None = None, run_id: str | None = None) -> None:
        self.settings, self.conn, self.model = settings, conn, model
        self.incident_id, self.run_id = incident_id, run_id
        self.name = f"llm:{model}"

    def score(self, incident: Incident, batch: list[Candidate]) -> dict[str, float]:
        from faultline.llm import complete_json

        if not batch:
            return {}
        listing = "\n".join(json.dumps({"ticket_id": c.ticket_id, "title": c.title,
                                        "text": f"{c.description}\nResolution: {c.resolution_note}"[:LLM_TEXT_CHARS]},
                                       ensure_ascii=False) for c in batch)
        answer = complete_json(self.settings, self.conn, model=self.model, prompt="astra/rerank",
                               variables={"title": incident.title, "description": incident.description,
                                          "candidates": listing},
                               schema=RerankAnswer, stage="astra.rerank",
                               incident_id=self.incident_id or incident.incident_id, run_id=self.run_id)
        wanted = {c.ticket_id for c in batch}
        return {s["ticket_id"]: float(s["score"]) for s in answer["scores"] if s["ticket_id"] in wanted}
