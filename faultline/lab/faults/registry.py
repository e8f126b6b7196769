"""The fault registry and the lab-level operations: inject, verify, recover, ground truth.

Labels are NIKA v1 `root_cause_name`s; each maps to a mechanism class. Injected faults live in
`LabState.faults`, so `verify` and `recover` work from a later process too (the CLI).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from faultline.lab.faults.base import Fault, FaultError, FaultRecord, lab_topology
from faultline.lab.faults.bgp_origin import BgpBlackholeRouteLeak, BgpHijacking
from faultline.lab.faults.contention import LoadBalancerOverload, ReceiverResourceContention, SenderResourceContention
from faultline.lab.faults.delay import DnsLookupLatency
from faultline.lab.faults.dhcp_config import DhcpMissingSubnet, DhcpSpoofedDns, DhcpSpoofedGateway
from faultline.lab.faults.dns_dhcp import (
    DhcpServiceDown,
    DnsPortBlocked,
    DnsRecordError,
    DnsServiceDown,
    HostIncorrectDns,
)
from faultline.lab.faults.host import (
    HostIncorrectGateway,
    HostIncorrectIp,
    HostIncorrectNetmask,
    HostIpConflict,
    HostMissingIp,
)
from faultline.lab.faults.host_crash import HostCrash
from faultline.lab.faults.incast import IncastTraffic
from faultline.lab.faults.l2 import ArpCachePoisoning, MacAddressConflict
from faultline.lab.faults.link import LinkDetach, LinkDown, LinkFlap
from faultline.lab.faults.nft import ArpAclBlock, BgpAclBlock, IcmpAclBlock, LinkFragmentationDisabled, NftRandomLoss
from faultline.lab.faults.ospf import OspfAclBlock, OspfAreaMisconfiguration, OspfNeighborMissing
from faultline.lab.faults.routing import BgpAsnMisconfig, BgpConfigChange, FrrServiceDown, HostStaticBlackhole
from faultline.lab.faults.shaping import TbfThrottle
from faultline.lab.faults.web import HttpAclBlock, SenderApplicationDelay, WebDosAttack
from faultline.lab.readiness import wait_ready
from faultline.lab.state import LabState
from faultline.network.probes import ProbeContext

FAULTS: dict[str, type[Fault]] = {}


def register_fault(cls: type[Fault]) -> type[Fault]:
    """Make `cls` injectable under its label; FaultError when another class already has that label."""
    if cls.label in FAULTS:
        raise FaultError(f"two fault classes for {cls.label!r}: {FAULTS[cls.label].__name__} and {cls.__name__}",
                         fix="one mechanism class per label")
    FAULTS[cls.label] = cls
    return cls


for _cls in (
    LinkDown, FrrServiceDown, BgpConfigChange, BgpAsnMisconfig, BgpAclBlock, IcmpAclBlock, NftRandomLoss, TbfThrottle,
    HostMissingIp, HostIncorrectIp, HostIncorrectGateway, HostIncorrectNetmask, HostIpConflict, LinkFlap, LinkDetach,
    OspfAclBlock, OspfNeighborMissing, OspfAreaMisconfiguration,
    HostStaticBlackhole, ArpAclBlock, LinkFragmentationDisabled, HostCrash,
    BgpBlackholeRouteLeak, BgpHijacking, ArpCachePoisoning, MacAddressConflict,
    HttpAclBlock, WebDosAttack, SenderApplicationDelay, IncastTraffic,
    HostIncorrectDns, DnsRecordError, DnsServiceDown, DnsPortBlocked,
    DhcpServiceDown, DhcpMissingSubnet, DhcpSpoofedGateway, DhcpSpoofedDns,
    LoadBalancerOverload, SenderResourceContention, ReceiverResourceContention, DnsLookupLatency,
):
    register_fault(_cls)


def fault_labels() -> list[str]:
    """Every label that can be injected now, sorted."""
    return sorted(FAULTS)


def fault_class(label: str) -> type[Fault]:
    """The mechanism class of `label`; FaultError naming the supported labels otherwise."""
    if label not in FAULTS:
        raise FaultError(f"unsupported fault label {label!r}", fix=f"supported: {', '.join(fault_labels())}")
    return FAULTS[label]


def records(state: LabState) -> list[FaultRecord]:
    """The faults currently injected in the lab, in injection order."""
    return [FaultRecord(**data) for data in state.faults]


def rebuild(record: FaultRecord) -> Fault:
    """The fault object for a stored record (to verify or recover it)."""
    return fault_class(record.label)(record)


def inject(state: LabState, label: str, target: str | None = None, seed: int | None = None,
           mechanism: str | None = None) -> FaultRecord:
    """Inject `label` on `target` (or a device drawn deterministically from `seed`) by `mechanism` (or, without
    one, the mechanism `choose_mechanism` draws from the seed); returns its record.

    The seed also fixes every other random choice (interface, load source). The record is saved in
    the lab state before this returns.
    """
    cls = fault_class(label)
    if state.status != "healthy":
        raise FaultError(f"the lab is {state.status}, not healthy", fix="bring it up again before injecting")
    return cls().inject(state, target, _rng(label, seed), mechanism or choose_mechanism(label, seed))


def choose_mechanism(label: str, seed: int | None = None) -> str:
    """The mechanism used when none is asked for: the standard one without a seed, else a seeded draw among the
    label's mechanisms (a stream of its own: the target and the other choices stay what they were)."""
    names = list(fault_class(label).mechanisms)
    if seed is None or len(names) == 1:
        return names[0]
    return random.Random(f"{label}:{seed}:mechanism").choice(names)


def choose_target(state: LabState, label: str, seed: int | None = None) -> str:
    """The device `inject(state, label, seed=seed)` would pick when no target is given."""
    return fault_class(label)().pick_target(state, lab_topology(state), None, _rng(label, seed))


def plan_target(scenario: str, size: str, label: str, target: str | None = None, seed: int | None = None) -> str:
    """The device `inject` would use in a fresh lab of (scenario, size), decided without a lab: the target given
    (checked) or the seeded draw; FaultError when the label does not apply there or cannot target it."""
    from faultline.lab.scenarios import build_topology
    from faultline.lab.state import LabState

    state = LabState(scenario=scenario, size=size, run_dir="", started_at="", status="healthy")
    return fault_class(label)().pick_target(state, build_topology(scenario, size), target, _rng(label, seed))


def _rng(label: str, seed: int | None) -> random.Random:
    # one stream per (label, seed): the same seed gives the same target and choices on any machine
    return random.Random(f"{label}:{0 if seed is None else seed}")


def verify(state: LabState, ctx: ProbeContext, fault_id: str | None = None) -> list[FaultRecord]:
    """Verify every injected fault (or one); FaultNotVerified for the first that did not land."""
    todo = [r for r in records(state) if fault_id is None or r.id == fault_id]
    if fault_id is not None and not todo:
        raise FaultError(f"no injected fault {fault_id!r}", fix="see `faultline lab status --json`")
    for rec in todo:
        rebuild(rec).verify(ctx)
    return todo


def recover(state: LabState, fault_id: str | None = None, wait: bool = True, timeout: float = 30.0) -> dict[str, Any]:
    """Undo every injected fault (newest first) or one, then wait until the lab is healthy again.

    Returns the recovered ids and the seconds spent undoing and reconverging.
    """
    t0 = time.monotonic()
    todo = [r for r in reversed(records(state)) if fault_id is None or r.id == fault_id]
    for rec in todo:
        rebuild(rec).recover(state)
    undone = time.monotonic()
    if wait:
        wait_ready(lab_topology(state), Path(state.run_dir), timeout)
    return {"recovered": [r.id for r in todo], "undo_s": round(undone - t0, 2),
            "healthy_s": round(time.monotonic() - t0, 2)}


def ground_truth(state: LabState) -> dict[str, Any]:
    """The incident's ground truth: per fault, and combined as NIKA does (multiple_faults = union)."""
    recs = records(state)
    per_fault = [{"id": r.id, "target": r.target, "mechanism": r.mechanism, **r.ground_truth()} for r in recs]
    devices = sorted({d for r in recs for d in r.faulty_devices})
    if not recs:
        v1 = {"is_anomaly": False, "faulty_devices": [], "root_cause_name": []}
    else:
        name = recs[0].label if len(recs) == 1 else "multiple_faults"
        v1 = {"is_anomaly": True, "faulty_devices": devices, "root_cause_name": name,
              "root_cause_names": [r.label for r in recs]}
    return {"v1": v1, "v2": [r.ground_truth()["v2"] for r in recs], "faults": per_fault}
