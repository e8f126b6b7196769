"""The fault area of an incident outside the network taxonomy: which tracker component(s) it belongs to.

`infer_components` mixes the components of the similar tickets the similarity agent kept (by rerank score) with
a naive-Bayes term -> component lexicon learned from tickets resolved before the incident, never its own
components; `report_components` names the best. The model and its constants: docs/astra.md#the-fault-area.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from faultline.astra.records import AgentOutput, Incident

if TYPE_CHECKING:
    import duckdb

HISTORY_SQL = """
SELECT ticket_id, title, coalesce(description, ''), coalesce(environment, ''), components
FROM tickets
WHERE resolved_at IS NOT NULL AND len(coalesce(components, [])) > 0 AND ticket_id IS DISTINCT FROM ?
  AND (CAST(? AS TIMESTAMPTZ) IS NULL OR resolved_at < CAST(? AS TIMESTAMPTZ))
"""
LEXICON_ALPHA = 0.1
PRECEDENT_WEIGHT = 0.4
TEMPERATURE_FLOOR = 8  # words; below this the lexicon's tempering stops growing sharper
_SPLIT = re.compile(r"[./_:-]+")


class ComponentVote(BaseModel):
    """One candidate component with its combined score and the evidence behind it."""

    model_config = ConfigDict(extra="forbid")

    component: str
    score: float
    precedent: float  # share of the similar tickets' weight carrying this component
    lexicon: float  # tempered naive-Bayes posterior from the terms
    terms: list[str]  # the incident's words that point here most strongly
    tickets: list[str]  # similar tickets carrying this component


@lru_cache(maxsize=8192)
def _terms(text: str) -> frozenset[str]:
    from faultline.astra.lexical import content_words

    found: set[str] = set()
    for word in content_words(text):
        found.add(word)
        parts = [p for p in _SPLIT.split(word) if len(p) >= 3 and not p.isdigit()]
        if len(parts) > 1:
            found.update(parts[:8])
    return frozenset(found)


@dataclass
class ComponentLexicon:
    """Per-component document frequencies of terms over a history of resolved tickets."""

    prior: Counter = field(default_factory=Counter)  # component -> tickets
    counts: dict[str, Counter] = field(default_factory=dict)  # component -> term -> tickets
    totals: Counter = field(default_factory=Counter)  # component -> term occurrences (one per ticket)
    vocabulary: set[str] = field(default_factory=set)

    def add(self, text: str, components: Iterable[str]) -> None:
        terms = _terms(text)
        self.vocabulary |= terms
        for component in components:
            self.prior[component] += 1
            self.counts.setdefault(component, Counter()).update(terms)
            self.totals[component] += len(terms)

    def posterior(self, terms: set[str]) -> tuple[dict[str, float], dict[str, list[str]]]:
        """Tempered posterior per component, and each component's most indicative terms."""
        seen = sorted(t for t in terms if t in self.vocabulary)
        if not self.prior:
            return {}, {}
        total = sum(self.prior.values())
        logs: dict[str, float] = {}
        best_terms: dict[str, list[str]] = {}
        size = len(self.vocabulary) + 1
        for comp, n in self.prior.items():
            counts, denominator = self.counts[comp], self.totals[comp] + LEXICON_ALPHA * size
            gains = {t: math.log((counts[t] + LEXICON_ALPHA) / denominator) for t in seen}
            logs[comp] = math.log(n / total) + sum(gains.values())
            best_terms[comp] = [t for t, _ in sorted(gains.items(), key=lambda kv: -kv[1])[:5] if counts[t]]
        scale = max(len(seen), TEMPERATURE_FLOOR) / TEMPERATURE_FLOOR
        top = max(logs.values())
        weights = {c: math.exp((v - top) / scale) for c, v in logs.items()}
        norm = sum(weights.values())
        return {c: w / norm for c, w in weights.items()}, best_terms


def load_lexicon(conn: duckdb.DuckDBPyConnection, incident: Incident) -> ComponentLexicon:
    """The lexicon over tickets resolved before the incident was opened (never its own ticket)."""
    lexicon = ComponentLexicon()
    rows = conn.execute(HISTORY_SQL, [incident.ticket_id, incident.opened_at, incident.opened_at]).fetchall()
    for _, title, description, environment, components in rows:
        lexicon.add(f"{title}\n{description}\n{environment}", components)
    return lexicon


def _precedents(outputs: dict[str, AgentOutput]) -> list[dict[str, Any]]:
    sim = outputs.get("similarity")
    tickets = (sim.data.get("tickets") or sim.data.get("similar") or []) if sim else []
    return [t for t in tickets if isinstance(t, dict)]


def _agent_text(incident: Incident, outputs: dict[str, AgentOutput]) -> str:
    parts = [incident.title, incident.description, incident.environment]
    for name in ("log", "domain"):  # findings quoting the incident's own logs and the docs
        out = outputs.get(name)
        if out is not None:
            parts += [f.text for f in out.findings] + [q for f in out.findings for q in f.quotes]
    return "\n".join(p for p in parts if p)


def infer_components(conn: duckdb.DuckDBPyConnection, incident: Incident, outputs: dict[str, AgentOutput], *,
                     lexicon: ComponentLexicon | None = None) -> list[ComponentVote]:
    """Candidate components, best first, from the agents' outputs (docs/astra.md#the-fault-area)."""
    lexicon = lexicon if lexicon is not None else load_lexicon(conn, incident)
    posterior, indicative = lexicon.posterior(set(_terms(_agent_text(incident, outputs))))
    weights: Counter = Counter()
    carriers: dict[str, list[str]] = {}
    for ticket in _precedents(outputs):
        for comp in ticket.get("components") or []:
            weights[comp] += max(float(ticket.get("score") or 0.0), 0.0) or 1e-6
            carriers.setdefault(comp, []).append(str(ticket.get("ticket_id") or ticket.get("id") or ""))
    total = sum(weights.values())
    votes = []
    for comp in set(posterior) | set(weights):
        share = weights[comp] / total if total else 0.0
        lex = posterior.get(comp, 0.0)
        w = PRECEDENT_WEIGHT if total else 0.0
        votes.append(ComponentVote(component=comp, score=round(w * share + (1 - w) * lex, 6), precedent=share,
                                   lexicon=lex, terms=indicative.get(comp, []), tickets=carriers.get(comp, [])))
    return sorted(votes, key=lambda v: (-v.score, v.component))


def report_components(conn: duckdb.DuckDBPyConnection, incident: Incident, outputs: dict[str, AgentOutput],
                      *, top: int = 1) -> list[str]:
    """The component(s) a report names as its fault area: the best `top` votes ([] without any evidence)."""
    return [v.component for v in infer_components(conn, incident, outputs)[:top]]
