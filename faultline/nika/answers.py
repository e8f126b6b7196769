"""NIKA's two answer forms: v1's submit(is_anomaly, faulty_devices, root_cause_name) and v2's (resource, fault
type) pairs. A diagnosis submits them, a ground truth is written in them, the verdict answers in them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RootCause(_Closed):
    """NIKA v2: one (resource, fault type) pair; resource ids look like node/x, interface/x/eth0, link/a:if--b:if."""

    resource_id: str
    fault_type: str


class SubmissionV1(_Closed):
    """NIKA v1's submit(is_anomaly, faulty_devices, root_cause_name)."""

    is_anomaly: bool
    faulty_devices: list[str] = Field(default_factory=list)
    root_cause_name: list[str] = Field(default_factory=list)


class SubmissionV2(_Closed):
    """NIKA v2's submission: root causes as (resource_id, fault_type) pairs."""

    is_anomaly: bool
    root_causes: list[RootCause] = Field(default_factory=list)
