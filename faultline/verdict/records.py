"""Typed records of a verdict: each source's opinion, the claims with what they cite, and the verdict itself.

The boundary between gathering (`sources`), weighing (`rules`), the fix finder (`fixes`), the report writer
(`report`), storage (`verdicts`, `verdict_claims`) and scoring (`evaluate`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SourceName = Literal["ticket", "network", "logs", "history", "docs"]
Section = Literal["symptom", "evidence", "chain", "root_cause", "fix", "verification", "disagreement"]
# VERIFIED: the quoted source is about this incident (its ticket, its logs in scope, its network's probe output);
# REFERENCE: about other incidents or faults of this kind (resolved tickets, documentation): how such a fault is
# found or fixed, never proof that it happened here.
Status = Literal["VERIFIED", "REFERENCE"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Opinion(_Closed):
    """What one source says the fault is (None: it names none), and how firmly."""

    source: SourceName
    labels: list[str] = Field(default_factory=list)
    healthy: bool = False  # the source looked and found no fault (the network answered "no anomaly")
    devices: list[str] = Field(default_factory=list)
    strength: Literal["strong", "weak", "none"] = "none"
    note: str = ""  # how the opinion was read, in words (for the disagreement section)


class Citation(_Closed):
    """Where a quote comes from, precisely enough for a reader to find it again."""

    source: SourceName
    ref: str  # ticket id; file:line; probe step (tool, device, output digest); ticket id of a precedent; doc chunk id
    device: str | None = None
    detail: str = ""  # probe name, doc section title, resolved date, ...


class VerdictClaim(_Closed):
    """One statement of the verdict report with the verbatim quote it rests on."""

    seq: int
    section: Section
    text: str
    quote: str
    citation: Citation
    status: Status


class VerdictCheck(_Closed):
    """A follow-up the verdict asked of the network: probe the devices another source points at for its label."""

    label: str
    source: SourceName  # whose reading was checked (the logs)
    asked_devices: list[str]
    checked_devices: list[str] = Field(default_factory=list)
    outcome: Literal["confirmed", "refuted", "not_checked"]
    reason: str
    matched_devices: list[str] = Field(default_factory=list)
    probes: list[str] = Field(default_factory=list)  # "step N: tool on device, output <digest>"
    probe_calls: int = 0


class VerdictRound(_Closed):
    """The verdict after one round: round 1 fuses the stored analyses, round 2 adds the network's follow-ups."""

    round: int
    status: Literal["fault", "healthy", "undetermined"]
    labels: list[str] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list)
    confidence: float
    rule: str
    action: str = ""  # what this round did, in words


class Verdict(_Closed):
    """One answer per incident: the fault (or none), where, how sure, and the report that says why."""

    incident_id: str
    status: Literal["fault", "healthy", "undetermined"]
    labels: list[str] = Field(default_factory=list)
    category: str | None = None
    devices: list[str] = Field(default_factory=list)
    interfaces: list[str] = Field(default_factory=list)  # "device:ifname"
    confidence: float = Field(ge=0.0, le=1.0)
    rule: str  # the id of the weighing rule that decided (rules.yml)
    rule_text: str  # that rule's wording
    sources_used: list[SourceName] = Field(default_factory=list)  # sources that had something to say
    agreeing: list[SourceName] = Field(default_factory=list)  # sources whose labels agree with the verdict
    disagreeing: list[SourceName] = Field(default_factory=list)
    opinions: list[Opinion] = Field(default_factory=list)
    without_network: str | None = None  # why no network evidence was available (an imported ticket, ...)
    fix_known: bool = False
    symptom: str
    root_cause: str
    fix: str
    verification: str
    disagreement: str = ""  # when sources disagreed: who said what and why the winner won
    claims: list[VerdictClaim] = Field(default_factory=list)
    astra_analyst: str | None = None
    sade_method: str | None = None
    checks: list[VerdictCheck] = Field(default_factory=list)  # the round-2 follow-ups on the network
    rounds: list[VerdictRound] = Field(default_factory=list)
    text: str = ""  # the report as Markdown
