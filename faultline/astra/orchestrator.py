"""The orchestrator: turn low judge scores into targeted follow-up queries for the agents that can fill the gap.

`plan_deterministic` routes each criterion scored <= 3 to the agents that can answer it, round-robin, at most
four queries a round and never one already asked of the same agent; `plan_llm` lets a model plan them (prompt
``orchestrator/followups``) under the same cap and deduplication. The routing: docs/astra.md#the-orchestrator.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra import lexical
from faultline.astra.judge import REVISE_AT
from faultline.astra.records import (
    AgentName,
    Claim,
    Evidence,
    FollowupQuery,
    Incident,
    JudgeScore,
    Report,
)
from faultline.astra.report import NO_FIX, NO_ROOT_CAUSE

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

MIN_QUERIES, MAX_QUERIES = 2, 4
FOLLOWUPS_PROMPT = "orchestrator/followups"
Candidate = tuple[AgentName, str]


def query_key(agent: str, query: str) -> str:
    """The dedup key of a query: its agent and its normalised words."""
    return f"{agent}|{lexical.normalise(query)}"


def _subject(report: Report, incident: Incident) -> str:
    named = report.label or report.category
    return named if named else f'the fault behind "{incident.title.strip()}"'



def _targets(report: Report, claims: list[Claim]) -> list[str]:
    """Devices to ask about: the report's, else those the claims name."""
    if report.devices:
        return list(report.devices)
    from faultline.astra.identifiers import find_identifiers

    found = [i.value for c in claims for i in find_identifiers(c.text) if i.kind == "device"]
    return list(dict.fromkeys(found))[:4]


def _root_cause(report: Report, incident: Incident, claims: list[Claim]) -> Iterator[Candidate]:
    subject = _subject(report, incident)
    for device in _targets(report, claims) or ["the affected devices"]:
        yield "log", (f"Which log lines on {device} show what triggered the fault "
                      f"(errors, drops, state changes, sessions going down)?")
    yield "domain", f"What mechanism causes {subject}, and which component or setting is responsible?"
    yield "similarity", f"Which resolved tickets confirm {subject} as the root cause, and what did they find?"
    for device in _targets(report, claims):
        yield "domain", f"How does {subject} show on {device}, and what would confirm it there?"


def _resolution(report: Report, incident: Incident, claims: list[Claim]) -> Iterator[Candidate]:
    subject = _subject(report, incident)
    devices = _targets(report, claims)
    where = f" on {devices[0]}" if devices else ""
    yield "domain", f"Which exact command or configuration change fixes {subject}{where}, and how is the fix verified?"
    yield "similarity", f"What exact fix steps and verification did similar resolved tickets apply for {subject}?"
    for device in devices[1:]:
        yield "domain", f"Which exact command or configuration change fixes {subject} on {device}?"


def _grounding(report: Report, unverified: list[Claim]) -> Iterator[Candidate]:
    for claim in unverified:
        yield claim.agent, f"Quote the exact lines that support: {claim.text[:160]}"
    for device in report.devices:
        yield "log", f"Quote every log line that mentions {device}."


def _coverage(report: Report, incident: Incident, claims: list[Claim]) -> Iterator[Candidate]:
    if "Observed:" not in report.symptom or not report.evidence:
        yield "log", f"Which log lines show the first observable symptom of: {incident.title.strip()}?"
    if report.root_cause == NO_ROOT_CAUSE:
        yield from _root_cause(report, incident, claims)
    if report.fix == NO_FIX:
        yield from _resolution(report, incident, claims)


def _focus(report: Report, incident: Incident, claims: list[Claim]) -> Iterator[Candidate]:
    subject = _subject(report, incident)
    for device in _targets(report, claims):
        yield "log", f"Only for {device}: which lines concern {subject}?"
        yield "domain", f"Documentation about {subject} that applies to {device} only."


def plan_deterministic(incident: Incident, report: Report, scores: list[JudgeScore], claims: list[Claim],
                       evidence: list[Evidence], asked: set[str]) -> list[FollowupQuery]:
    """Rule-based follow-ups for the criteria scored <= 3; `asked` holds the keys of all earlier queries."""
    low = sorted((s for s in scores if s.score <= REVISE_AT), key=lambda s: s.score)
    ok = {e.claim_id for e in evidence if e.status != "UNVERIFIED"}  # REFERENCE claims need no grounding
    unverified = [c for c in claims if c.claim_id not in ok]
    generators: dict[str, Iterable[Candidate]] = {
        "root_cause_identification": _root_cause(report, incident, claims),
        "resolution_specificity": _resolution(report, incident, claims),
        "evidence_grounding": _grounding(report, unverified),
        "coverage": _coverage(report, incident, claims),
        "focus": _focus(report, incident, claims),
    }
    streams = [(s.criterion, iter(generators.get(s.criterion, ()))) for s in low]
    return _round_robin(incident.incident_id, report.round, streams, asked)


def _round_robin(incident_id: str, round_: int, streams: list[tuple[str, Iterator[Candidate]]],
                 asked: set[str]) -> list[FollowupQuery]:
    chosen: list[FollowupQuery] = []
    seen = set(asked)
    live = list(streams)
    while live and len(chosen) < MAX_QUERIES:
        for criterion, stream in list(live):
            if len(chosen) >= MAX_QUERIES:
                break
            for agent, query in stream:
                key = query_key(agent, query)
                if key not in seen:
                    seen.add(key)
                    chosen.append(FollowupQuery(incident_id=incident_id, round=round_, agent=agent, query=query,
                                                criterion=criterion))
                    break
            else:
                live.remove((criterion, stream))
    return chosen


class LLMAgentQuery(BaseModel):
    """One follow-up the model plans."""

    model_config = ConfigDict(extra="forbid")
    agent_name: Literal["similarity", "log", "domain"]
    query: str = Field(min_length=3)
    purpose: str


class LLMPlan(BaseModel):
    """The orchestrator's plan."""

    model_config = ConfigDict(extra="forbid")
    revision_needed: bool
    reasoning: str = ""
    agent_queries: list[LLMAgentQuery] = Field(default_factory=list)
    expected_outcome: str = ""


def plan_llm(incident: Incident, report: Report, scores: list[JudgeScore], asked_queries: list[FollowupQuery],
             *, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str,
             run_id: str | None = None) -> list[FollowupQuery]:
    """Follow-ups planned by an LLM (prompt ``orchestrator/followups``), deduplicated against earlier rounds."""
    from faultline.llm import complete_json

    judgement = "\n".join(f"- {s.criterion}: {s.score}/5 - {s.reason}" for s in scores)
    previous = "\n".join(f"- ({q.agent}) {q.query}" for q in asked_queries) or "none"
    answer = complete_json(settings, conn, model=model, prompt=FOLLOWUPS_PROMPT, schema=LLMPlan,
                           stage="astra.orchestrator", incident_id=incident.incident_id, run_id=run_id,
                           variables={"ticket": f"{incident.title}\n{incident.description}".strip(),
                                      "report": report.text, "judgement": judgement, "previous_queries": previous})
    plan = LLMPlan.model_validate(answer)
    if not plan.revision_needed:
        return []
    low = {s.criterion for s in scores if s.score <= REVISE_AT}
    fallback = min(scores, key=lambda s: s.score).criterion
    streams = [(q.purpose if q.purpose in low else fallback, iter([(q.agent_name, q.query)]))
               for q in plan.agent_queries]
    return _round_robin(incident.incident_id, report.round, streams,
                        {query_key(q.agent, q.query) for q in asked_queries})
