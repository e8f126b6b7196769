"""Typed records of a SADE diagnosis: flags, steps, its submission (in NIKA's two answer forms), the diagnosis.

These are the boundary between the engine (scans, policy, matcher), storage (`sade_steps`,
`sade_flags`, `submissions`), scoring and the CLI/MCP surfaces.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.nika.answers import SubmissionV1, SubmissionV2

Phase = Literal["initial", "A", "B", "C", "D", "submit"]
PHASES: tuple[str, ...] = ("initial", "A", "B", "C", "D", "submit")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Flag(_Closed):
    """One anomaly a scan found: on which device, what it saw, and the fault family it points at."""

    scan: str  # the scan that raised it, e.g. "l2_snapshot"
    phase: Phase
    device: str | None  # None for lab-wide observations (a reachability pattern)
    kind: str  # machine name, e.g. "interface_down", "nft_drop_rule", "unreachable_dst"
    evidence: str  # verbatim probe output (or a compact quote of it) that shows the anomaly
    family: str | None = None  # suggested skill family, e.g. "link", "acl"; None = no suggestion
    strength: Literal["strong", "weak"] = "strong"
    vs_baseline: bool = False  # True when the flag comes from a difference against the healthy baseline
    attrs: dict[str, Any] = Field(default_factory=dict)  # structured details (ifname, protocol, peer, ...)


class Step(_Closed):
    """One tool call of a diagnosis (a probe, or a scan that bundles probes), in order."""

    seq: int
    phase: Phase
    tool: str  # probe or scan name
    args: dict[str, Any] = Field(default_factory=dict)
    output_digest: str = ""  # sha256 of the outputs the step saw (empty when it saw none)
    flags: list[str] = Field(default_factory=list)  # kinds of the flags this step raised
    probe_calls: int = 0  # device-level probe calls this step made
    elapsed_ms: float = 0.0
    note: str = ""  # why the policy took this step / what it concluded


class Submission(_Closed):
    """One answer in both NIKA forms, plus which skill and fingerprint produced it."""

    v1: SubmissionV1
    v2: SubmissionV2
    families: list[str] = Field(default_factory=list)
    fingerprints: list[str] = Field(default_factory=list)  # "<family>/<fingerprint id>" that matched
    summary: str = ""


class Diagnosis(_Closed):
    """What one diagnosis run did and answered. `submission` is None when it ended without submitting."""

    incident_id: str
    method: Literal["sade", "flat"]
    policy: str  # deterministic | llm:<model>
    backend: Literal["snapshot", "lab", "mcp", "ssh"]
    submission: Submission | None
    steps: list[Step]
    flags: list[Flag]
    probe_calls: int  # device-level probe calls (run_probe invocations) on the incident network
    tool_calls: int  # steps (a scan over several devices is one tool call, as SADE counts helpers)
    elapsed_s: float
    status: Literal["submitted", "no_submission", "error"] = "submitted"
    error: str | None = None
