"""One incident's ground truth, as every evaluation reads it (never shown to an analysis)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from faultline.nika.answers import RootCause


class Truth(BaseModel):
    """What really happened in one incident: NIKA's v1 form (anomaly, devices, labels) and its v2 pairs."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    is_faulty: bool
    labels: list[str] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list)
    root_causes: list[RootCause] = Field(default_factory=list)
    scenario: str | None = None
    size: str | None = None
