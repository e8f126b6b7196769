"""Typed records of an ASTRA analysis: agent outputs, claims, evidence, reports, judge scores, rounds.

The boundary between the agents (`agents/`), the claim/evidence step, the report writer, the judge,
the orchestrator and storage (`astra_rounds`, `claims`, `evidence`, `judge_scores`,
`followup_queries`). Both implementations of every LLM step (litellm and the deterministic analyst)
produce exactly these records.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

AgentName = Literal["similarity", "log", "domain"]
# VERIFIED / UNVERIFIED: a source about this incident (its logs); REFERENCE: documentation or other incidents
EvidenceStatus = Literal["VERIFIED", "UNVERIFIED", "REFERENCE"]
CRITERIA: tuple[str, ...] = ("root_cause_identification", "resolution_specificity", "evidence_grounding",
                             "coverage", "focus")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Incident(_Closed):
    """What an analysis may see of one incident: the ticket text and when it was opened (never its truth)."""

    incident_id: str
    ticket_id: str | None = None
    title: str
    description: str = ""
    environment: str = ""
    opened_at: str | None = None  # ISO timestamp; only history resolved before it is eligible
    components: list[str] = Field(default_factory=list)  # empty when withheld (fault-area benchmark)


class SimilarTicket(_Closed):
    """A resolved ticket the pre-fetch kept, with its score and (top 2 only) its resolution trail."""

    ticket_id: str
    title: str
    score: float
    resolved_at: str | None = None
    components: list[str] = Field(default_factory=list)
    resolution_trail: str | None = None


class AgentTask(_Closed):
    """One request to an agent: the incident, the query text, the round, and anything pre-fetched."""

    incident: Incident
    query: str
    round: int = 1
    prefetched: list[SimilarTicket] = Field(default_factory=list)
    context: dict[str, Any] = Field(default_factory=dict)  # e.g. other agents' outputs for the domain agent


class Finding(_Closed):
    """One statement an agent makes, with the verbatim lines of its own sources that support it."""

    text: str
    aspect: Literal["identification", "resolution", "symptom", "cause", "context"] = "identification"
    quotes: list[str] = Field(default_factory=list)


class AgentOutput(_Closed):
    """What an agent returned for one task: its prose (`text`, what claims are extracted from) and, apart from it,
    the verbatim passages of the sources it read (`sources`, the only text a claim's quote is checked against)."""

    agent: AgentName
    round: int
    query: str
    text: str
    # log lines in scope (log agent), resolved tickets' texts (similarity), documentation sections (domain);
    # never the agent's or a model's own words. Not serialised: the lines are stored as the round's log excerpt
    # and scope, and a thousand log lines would swell every stored output.
    sources: list[str] = Field(default_factory=list, exclude=True)
    findings: list[Finding] = Field(default_factory=list)
    category: str | None = None  # root-cause category from the taxonomy, when the agent names one
    label: str | None = None  # fault label from the taxonomy, when the agent names one
    devices: list[str] = Field(default_factory=list)
    data: dict[str, Any] = Field(default_factory=dict)  # agent-specific structure (tickets, templates, doc ids)
    missing: str | None = None  # "<source>: <why>" when the agent's source was unavailable (no index, no lines)
    elapsed_s: float = 0.0


class Claim(_Closed):
    """One claim extracted from one agent's output (never attributed to another agent)."""

    claim_id: str
    incident_id: str
    round: int
    agent: AgentName
    text: str
    tag: Literal["CAUSAL", "SYMPTOMATIC"] | None = None


class Evidence(_Closed):
    """The verbatim quote backing a claim, from the sources its own agent read (`AgentOutput.sources`), and how
    it was validated."""

    claim_id: str
    source: AgentName
    quote: str
    method: Literal["verbatim", "keyword_window", "none"]
    overlap: float  # share of the quote's words found in the sources (>= 0.6 to count as verbatim)
    confidence: Literal["high", "medium", "low"]
    status: EvidenceStatus  # see `faultline.astra.evidence` for the rule


class Report(_Closed):
    """One round's fault-analysis report: identification (symptom -> evidence -> root cause) and resolution."""

    incident_id: str
    round: int
    symptom: str
    evidence: list[str]  # facts (verified claims), reference statements and hedged ones (unverified), as written
    root_cause: str
    fix: str
    verification: str
    label: str | None = None  # taxonomy label the report names, if any
    category: str | None = None
    devices: list[str] = Field(default_factory=list)
    components: list[str] = Field(default_factory=list)  # fault area (JIRA components) the report names
    scope: list[str] = Field(default_factory=list)  # which log lines the round read, and why (log_scopes in words)
    missing: list[str] = Field(default_factory=list)  # "<source>: <why>" per source the analysis did without
    text: str  # the whole report as Markdown


class JudgeScore(_Closed):
    """One criterion's score (1-5) for one report, with who judged and why."""

    incident_id: str
    round: int
    criterion: str  # one of CRITERIA
    score: int = Field(ge=1, le=5)
    reason: str
    judge: str  # e.g. "deterministic-judge" or "llm:<model>"
    version: str  # prompt/rules hash


class FollowupQuery(_Closed):
    """A targeted follow-up the orchestrator sent to one agent after a round."""

    incident_id: str
    round: int  # the round whose judgement asked for it (answered in round + 1)
    agent: AgentName
    query: str
    criterion: str  # the low criterion it addresses


class AstraRound(_Closed):
    """One round: the report, its scores, and the follow-ups that lead to the next round."""

    incident_id: str
    round: int
    report: Report
    scores: list[JudgeScore]
    followups: list[FollowupQuery] = Field(default_factory=list)
    revise: bool  # any criterion <= 3 (and rounds remain)
    elapsed_s: float = 0.0


class AstraResult(_Closed):
    """A finished ASTRA analysis: all agent outputs, claims, evidence and rounds (the last is the answer)."""

    incident_id: str
    analyst: str  # "deterministic" or "llm:<model>"
    outputs: list[AgentOutput]
    claims: list[Claim]
    evidence: list[Evidence]
    rounds: list[AstraRound]
    elapsed_s: float = 0.0
