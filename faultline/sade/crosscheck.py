"""A targeted second look: does the network show the fault another source names, on the devices it names?

`cross_check` runs the label's skills' probes on the named devices present in the network, in order, matching after
each (stop and submit): *confirmed* as soon as a fingerprint of exactly that label matches, else, after every
probe, *refuted*. Nothing here knows how a fault was caused. The verdict's use:
docs/verdict.md#refinement-the-network-is-asked-about-what-the-logs-point-at.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.network.backend import Backend
from faultline.sade.records import Flag, Step

MAX_DEVICES = 4  # a lead names a few devices; a fleet-wide log reading is not a target list

Outcome = Literal["confirmed", "refuted", "not_checked"]


class CrossCheck(BaseModel):
    """One targeted check: what was asked, on which devices, what the network answered."""

    model_config = ConfigDict(extra="forbid")

    label: str
    asked_devices: list[str]
    checked_devices: list[str] = Field(default_factory=list)
    outcome: Outcome
    reason: str
    matched_devices: list[str] = Field(default_factory=list)
    resources: list[str] = Field(default_factory=list)  # NIKA v2 resource ids of the confirming match
    flags: list[Flag] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)

    @property
    def probe_calls(self) -> int:
        return sum(s.probe_calls for s in self.steps)


def _skills_for(label: str) -> list:
    from faultline.sade.skills import load_skills

    return [sk for sk in load_skills() if label in sk.labels]


def cross_check(backend: Backend, *, label: str, devices: list[str], why: str = "") -> CrossCheck:
    """Probe `devices` for `label` with its skills' checks (see the module docstring); never raises on a
    device or label the network does not know: that is a `not_checked` result with the reason."""
    from faultline.sade.matcher import match
    from faultline.sade.scans import run_check
    from faultline.sade.session import Session

    asked = list(dict.fromkeys(devices))
    skills = _skills_for(label)
    if not skills:
        return CrossCheck(label=label, asked_devices=asked, outcome="not_checked",
                          reason=f"no skill of the library can name {label}")
    session = Session(backend)
    known = {d.name: d.role for d in session.devices()}
    present = [d for d in asked if d in known]
    if not present:
        return CrossCheck(label=label, asked_devices=asked, outcome="not_checked",
                          reason="none of the devices named is in this network")
    if len(present) > MAX_DEVICES:
        return CrossCheck(label=label, asked_devices=asked, outcome="not_checked",
                          reason=f"{len(present)} devices named: too many for a targeted check")
    checks = list(dict.fromkeys(p.check for sk in skills for p in sk.probes))
    ran: list[str] = []
    found: list = []
    for check in checks:  # stop and submit: the skill's checks in order until the label matches
        ran.append(check)
        for name in present:
            run_check(session, check, name, f"cross-check {label} on {name}{f' ({why})' if why else ''}")
        found = [m for m in match(session.flags, roles=known) if m.label == label and not m.fallback]
        if found:
            break
    tried = ", ".join(c.replace("_", " ") for c in ran) + " checks"  # words, not identifiers
    if found:
        devices_found = list(dict.fromkeys(d for m in found for d in m.devices))
        resources = list(dict.fromkeys(r for m in found for r in m.resources))
        evidence = next((e for m in found for e in m.evidence), "")
        return CrossCheck(label=label, asked_devices=asked, checked_devices=present, outcome="confirmed",
                          reason=f"{found[0].family}/{found[0].fingerprint} matched on {', '.join(devices_found)}"
                                 f" ({tried}): {evidence}",
                          matched_devices=devices_found, resources=resources, flags=list(session.flags),
                          steps=list(session.steps))
    seen = "; ".join(sorted({f"{f.kind} on {f.device}" for f in session.flags if f.device})) or "no anomaly"
    return CrossCheck(label=label, asked_devices=asked, checked_devices=present, outcome="refuted",
                      reason=f"no fingerprint of {label} matched after {tried} on {', '.join(present)} "
                             f"(the probes saw: {seen})",
                      flags=list(session.flags), steps=list(session.steps))


__all__ = ["CrossCheck", "cross_check"]
