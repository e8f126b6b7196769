"""What every fault shares: the record kept in the lab state, ground truth, the Fault base class.

A fault *mechanism* is one class (e.g. an nftables filter); several NIKA labels may share it with
different parameters. One instance handles one injection: `inject` fills `self.record`, `verify`
checks the artifact and the symptom through the probe API, `recover` undoes the artifact. A record
is plain JSON so a later process (`faultline lab verify`, `lab recover`) can rebuild the fault.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from faultline.errors import FaultlineError
from faultline.lab.scenarios import SIZES, build_topology, scenario_names
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import END_HOST_ROLES
from faultline.nika.labels import label_info


class FaultNotVerified(FaultlineError):
    """An injected fault whose artifact or symptom is not there: the injection did not land."""


class FaultError(FaultlineError):
    """A fault could not be injected or recovered (bad target, a command failed)."""


@dataclass
class FaultRecord:
    """One injected fault, as stored in `LabState.faults`."""

    id: str  # "f1", "f2", ... unique within the lab
    label: str  # NIKA v1 root_cause_name
    category: str  # NIKA v1 root-cause category
    target: str  # the device the fault was put on
    faulty_devices: list[str]  # v1 ground truth
    resource_id: str  # v2: node/x, interface/x/eth0, link/a:eth0--b:eth1
    fault_type: str  # v2 failure id
    mechanism: str  # what was really done, in words (says so when it substitutes NIKA's mechanism)
    params: dict[str, Any] = field(default_factory=dict)  # what `recover` needs (tables, pids, config lines)
    injected_at: str = ""
    mechanism_id: str = "standard"  # which of the label's mechanisms (`Fault.mechanisms`) was used

    def ground_truth(self) -> dict[str, Any]:
        """This fault's ground truth in NIKA v1 and v2 form plus the root-cause category."""
        return {
            "v1": {"is_anomaly": True, "faulty_devices": list(self.faulty_devices), "root_cause_name": self.label},
            "v2": {"resource_id": self.resource_id, "fault_type": self.fault_type},
            "category": self.category,
            "mechanism_id": self.mechanism_id,
        }


def now() -> str:
    """UTC timestamp, seconds precision."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def lab_topology(state: LabState) -> Topology:
    """The running lab's topology (rebuilt deterministically from scenario and size)."""
    return build_topology(state.scenario, state.size)


def sh(argv: list[str], what: str, *, check: bool = True, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
    """Run an injection command (an argument vector); FaultError naming `what` when it fails."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise FaultError(f"{what} failed: {' '.join(argv)}: {(proc.stderr or proc.stdout).strip()[:300]}",
                         fix="check the lab with `faultline lab status`")
    return proc


def in_ns(namespace: str, *argv: str) -> list[str]:
    """`ip netns exec NAMESPACE argv...`."""
    return ["ip", "netns", "exec", namespace, *argv]


def poll(check: Callable[[], str | None], timeout: float, interval: float = 0.25) -> str | None:
    """Call `check` (None = passed, else the reason it failed) until it passes or `timeout` expires.

    Returns None on success, else the last reason.
    """
    deadline = time.monotonic() + timeout
    while True:
        reason = check()
        if reason is None or time.monotonic() >= deadline:
            return reason
        time.sleep(interval)


def reachability_problem(ctx: ProbeContext, device: str | None = None, count: int = 2) -> str | None:
    """None when some reachability row (involving `device`, when given) is not ok, else why not."""
    rows = run_probe(ctx, "reachability", count=count).record.rows
    bad = [r for r in rows if r.status != "ok" and (device is None or device in (r.src, r.dst))]
    if bad:
        return None
    return f"reachability shows no loss{'' if device is None else f' involving {device}'} ({len(rows)} rows ok)"


class Fault:
    """Base class of a fault mechanism; subclasses set the class attributes and the three hooks.

    A subclass names its NIKA `label`; its `category` and v2 `fault_type` come from the label
    catalogue (`faultline/nika/labels.yml`), so the two can never disagree.
    """

    label: ClassVar[str]
    category: ClassVar[str]  # from the catalogue
    fault_type: ClassVar[str]  # NIKA v2 id, from the catalogue
    roles: ClassVar[tuple[str, ...]] = ("host",)  # device roles a target is drawn from
    protocols: ClassVar[tuple[str, ...]] = ()  # routing protocols the lab must run (empty: any)
    host_lan: ClassVar[bool] = False  # the target must be the gateway of a LAN with hosts
    symptom_timeout: ClassVar[float] = 10.0  # how long verify waits for the symptom to appear
    # the ways this label can be caused, the first the standard one: {name: what it does, in words}
    mechanisms: ClassVar[dict[str, str]] = {"standard": "the label's one mechanism (see the catalogue)"}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "label" in cls.__dict__:
            info = label_info(cls.label)
            if info is None:
                raise TypeError(f"{cls.__name__}: {cls.label!r} is not a label of faultline/nika/labels.yml")
            cls.category, cls.fault_type = info.category, info.fault_type

    def __init__(self, record: FaultRecord | None = None) -> None:
        self.record = record

    # --- the public API ---------------------------------------------------------------------

    @classmethod
    def check_mechanism(cls, name: str) -> None:
        """FaultError unless `name` is one of this label's mechanisms."""
        if name not in cls.mechanisms:
            raise FaultError(f"{cls.label} has no mechanism {name!r}",
                             fix=f"choose one of: {', '.join(cls.mechanisms)}")

    def inject(self, state: LabState, target: str | None, rng: random.Random,
               mechanism_id: str = "standard") -> FaultRecord:
        """Put the fault on `target` (or a device drawn from `rng`) by mechanism `mechanism_id`; record it in
        `state` and save it."""
        self.check_mechanism(mechanism_id)
        topo = lab_topology(state)
        device = self.pick_target(state, topo, target, rng)
        state.fault_counter += 1
        record = FaultRecord(id=f"f{state.fault_counter}", label=self.label, category=self.category, target=device,
                             faulty_devices=[device], resource_id=f"node/{device}", fault_type=self.fault_type,
                             mechanism="", injected_at=now(), mechanism_id=mechanism_id)
        self.record = record
        self.apply(state, topo, record, rng)
        state.faults.append(asdict(record))
        state.save()
        return record

    def verify(self, ctx: ProbeContext) -> None:
        """Raise FaultNotVerified unless the artifact is there and the symptom shows through the probes."""
        rec = self._rec()
        problem = self.artifact_problem(ctx, rec)
        if problem:
            raise FaultNotVerified(f"{rec.label} on {rec.target} ({rec.id}): artifact missing: {problem}",
                                   fix="the injection did not land or was undone; recover and inject again")
        problem = poll(lambda: self.symptom_problem(ctx, rec), self.symptom_timeout)
        if problem:
            raise FaultNotVerified(f"{rec.label} on {rec.target} ({rec.id}): no symptom: {problem}",
                                   fix="the fault is in place but has no observable effect; check the target")

    def recover(self, state: LabState) -> None:
        """Undo the fault and drop it from `state` (idempotent: an artifact already gone is fine)."""
        rec = self._rec()
        self.undo(state, lab_topology(state), rec)
        state.faults = [f for f in state.faults if f.get("id") != rec.id]
        state.save()

    # --- hooks ------------------------------------------------------------------------------

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        """Devices of `topo` this fault can be put on, sorted; empty when it does not apply to `topo`.

        Default: every device with one of `roles` (and a host LAN behind it, with `host_lan`), in a
        lab running one of `protocols`. A fault with further needs (a second host on the same bridge)
        narrows this list.
        """
        if cls.protocols and topo.protocol not in cls.protocols:
            return []
        gateways = {lan.router for lan in topo.lans if lan.hosts}
        return sorted(n.name for n in topo.nodes.values()
                      if n.role in cls.roles and (not cls.host_lan or n.name in gateways))

    @classmethod
    def needs(cls) -> str:
        """What a target must be, in words (for error messages)."""
        lan = " with an attached host LAN" if cls.host_lan else ""
        return f"a device with role {'/'.join(cls.roles)}{lan}"

    @classmethod
    def where_applicable(cls) -> str:
        """Where this fault finds a target, in words for an error's fix: "ospf_enterprise_static (s, m, l), ..."."""
        found = []
        for name in scenario_names():
            sizes = [size for size in SIZES if cls.targets(build_topology(name, size))]
            if sizes:
                found.append(f"{name} ({', '.join(sizes)})")
        return "a scenario/size where it applies: " + (", ".join(found) if found else "none registered yet")

    def pick_target(self, state: LabState, topo: Topology, target: str | None, rng: random.Random) -> str:
        """The target device: the one given (checked) or a seeded draw from `targets(topo)`."""
        names = self.targets(topo)
        if self.protocols and topo.protocol not in self.protocols:
            wanted = " or ".join(p.upper() for p in self.protocols)
            raise FaultError(f"{self.label} needs a{'n' if wanted[0] in 'AEIOU' else ''} {wanted} lab; "
                             f"{state.scenario} runs {topo.protocol}", fix=f"use {self.where_applicable()}")
        if not names:
            raise FaultError(f"{self.label} needs {self.needs()}; {state.scenario} ({state.size}) has none",
                             fix=f"use {self.where_applicable()}")
        if target is not None:
            if target not in names:
                raise FaultError(f"{self.label} cannot target {target!r}", fix=f"choose one of: {', '.join(names)}")
            return target
        return rng.choice(names)

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        """Create the artifact; fill `rec.mechanism`, `rec.params` and (if needed) the ground truth."""
        raise NotImplementedError

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        """None when the artifact is in place, else what is missing."""
        raise NotImplementedError

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        """None when the symptom is observable through the probe API, else why not (polled).

        Default: a reachability row involving the target is not ok (any row, for a router target).
        """
        end_host = ctx.directory.device(rec.target).role in END_HOST_ROLES
        return reachability_problem(ctx, rec.target if end_host else None)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        """Remove the artifact."""
        raise NotImplementedError

    def _rec(self) -> FaultRecord:
        if self.record is None:
            raise FaultError(f"{self.label}: no injection recorded", fix="inject the fault first")
        return self.record


# --- helper processes outside the lab's namespaces ----------------------------------------------
# A fault may need a process of its own (a link toggler) that runs in the root namespace, where
# `lab down`'s per-namespace sweep cannot see it. Its record keeps `helper_pid` and `helper_marker`
# (a string in its command line) so it is stopped by PID, and only if the PID is still that process.


def start_helper(argv: list[str]) -> int:
    """Start a helper in a session of its own (its process group = its PID); returns the PID."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return proc.pid


def helper_alive(pid: int | None, marker: str) -> bool:
    """True when `pid` runs and its command line contains `marker` (guards against PID reuse)."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/stat") as fh:
            zombie = fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False
    return not zombie and marker in cmdline


def stop_helper(pid: int | None, marker: str, grace: float = 3.0) -> bool:
    """Stop a helper's process group by PID (SIGTERM, then SIGKILL); True when one was stopped."""
    import os
    import signal

    if not helper_alive(pid, marker):
        _reap(pid)
        return False
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not helper_alive(pid, marker):
                return True
            time.sleep(0.05)
    return True


def stop_fault_helpers(faults: list[dict[str, Any]]) -> list[int]:
    """Stop every helper recorded in fault records (plain dicts from the lab state); returns their PIDs."""
    stopped = []
    for data in faults:
        params = data.get("params") or {}
        pairs = [(params.get("helper_pid"), params.get("helper_marker"))]
        pairs += [(pid, marker) for _, pid, marker in params.get("helpers") or []]  # a fault with several
        for pid, marker in dict.fromkeys(pairs):
            if pid and marker and stop_helper(pid, marker):
                stopped.append(pid)
    return stopped


def _reap(pid: int | None) -> None:
    import os

    if not pid:
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
