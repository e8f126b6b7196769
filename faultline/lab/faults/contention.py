"""CPU contention on one node: `load_balancer_overload`, `sender_resource_contention`, `receiver_resource_contention`.

A namespace is no container, so the node gets a container-like CPU cap (a cgroup v1 `cpu` group at 5 % of one
CPU, kept by `cgroup_join.py`) with a CPU hog inside it (PARTIAL/SUBSTITUTE); the recipe, the symptom and how it
is undone: docs/lab.md#cpu-contention-faults.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import ClassVar

from faultline.lab import teardown
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, helper_alive, poll, start_helper, stop_helper
from faultline.lab.faults.cgroup_join import management, uncapped
from faultline.lab.services import main_ip
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.parse_cgroup import CPU_HIERARCHY
from faultline.network.probes import ProbeContext, run_probe

CPU_ROOT = Path(CPU_HIERARCHY)
PREFIX = "faultline_cpu_"  # only groups made here (web.py's cgroups use faultline_web_)
PERIOD_US = 100_000
QUOTA_US = 5_000  # 5 % of one CPU, as NIKA v2's 0.02-0.05 CPU cap
STRESS = ("stress-ng", "--cpu", "2", "--timeout", "600s")  # NIKA: 600 s (300 s for the load balancer)
WORKLOAD = ("sha256sum", "/dev/zero")  # an ordinary job that never ends: a checksum over an endless input
LOADS = {"standard": STRESS, "workload": WORKLOAD}
JOINER = Path(__file__).with_name("cgroup_join.py")
SAMPLES = 5  # HTTP requests per measurement (median)
SLOW_FACTOR = 3.0  # "slow": median at least 3x the baseline ...
SLOW_EXTRA_MS = 20.0  # ... and 20 ms above it


# --- the cgroup, from the root side -----------------------------------------------------------


def group_path(fault_id: str, lab_prefix: str = "") -> Path:
    # the lab prefix keeps two labs' fault f1 apart: cgroups are machine-wide, fault ids per lab
    return CPU_ROOT / f"{PREFIX}{lab_prefix}{fault_id}"


def procs(group: Path) -> list[int]:
    """PIDs in `group` (empty when it does not exist)."""
    try:
        return [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def move(pids: list[int], group: Path) -> list[int]:
    """Write each PID into `group` (the PIDs that exited meanwhile are skipped); returns those moved."""
    moved = []
    for pid in pids:
        try:
            (group / "cgroup.procs").write_text(str(pid))
            moved.append(pid)
        except OSError:
            pass
    return moved


def create_group(group: Path, lab_prefix: str = "") -> None:
    """A cpu group capped at QUOTA_US per PERIOD_US; empty groups of this lab left by a crash are removed first."""
    if not (CPU_ROOT / "cgroup.procs").exists():
        raise FaultError(f"no cgroup v1 cpu controller at {CPU_ROOT}", fix="mount the cpu controller (cgroup v1)")
    for stale in CPU_ROOT.glob(f"{PREFIX}{lab_prefix}*"):
        if stale.is_dir() and stale != group and not procs(stale):
            try:
                stale.rmdir()
            except OSError:
                pass
    group.mkdir(exist_ok=True)
    (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    (group / "cpu.cfs_quota_us").write_text(str(QUOTA_US))


def remove_group(group: Path, timeout: float = 3.0) -> None:
    """Move whatever is left back to the root group and delete `group`; gone already is fine."""
    if group.parent != CPU_ROOT or not group.name.startswith(PREFIX):
        raise FaultError(f"refusing to remove {group}: not a faultline CPU-contention cgroup")
    deadline = time.monotonic() + timeout
    while group.exists():
        move(procs(group), CPU_ROOT)
        try:
            group.rmdir()
        except OSError:
            if time.monotonic() >= deadline:
                raise FaultError(f"cgroup {group} still holds processes {procs(group)}",
                                 fix="stop them, then recover again") from None
            time.sleep(0.1)


def stop_load(pid: int | None, group: Path, program: str = STRESS[0]) -> None:
    """Kill the load started for the fault (its process group) and any of its workers left in `group`."""
    def ours(p: int) -> bool:
        return teardown.alive(p) and teardown.comm(p).startswith(program[:15])  # comm keeps 15 characters

    if pid and ours(pid):
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    left = [p for p in procs(group) if ours(p)]
    teardown.kill_pids(left, grace=3.0)
    _reap(pid)


def _reap(pid: int | None) -> None:
    """Collect the exit status when the load is our own child (inject and recover in one process)."""
    if not pid:
        return
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.05)


# --- measuring through the probe API -------------------------------------------------------------


def http_median_ms(ctx: ProbeContext, src: str, url: str, samples: int = SAMPLES) -> tuple[float | None, list]:
    """(median `time_total` in ms of the answered requests or None when none answered, all samples)."""
    times: list[float | None] = []
    for _ in range(samples):
        res = run_probe(ctx, "http_get", src=src, url=url, timeout_s=15).record
        times.append(round(res.time_total_s * 1000, 1) if res.status == "ok" and res.time_total_s is not None else None)
    answered = [t for t in times if t is not None]
    return (statistics.median(answered) if answered else None), times


def _end_hosts(topo: Topology, roles: tuple[str, ...]) -> list[str]:
    return sorted(n.name for n in topo.nodes.values() if n.role in roles and n.addresses)


class CpuContention(Fault):
    """A CPU-capped node with a CPU hog in it; subclasses choose the target role and the HTTP path."""

    symptom_timeout = 20.0
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "stress-ng --cpu 2 inside the node, in a CPU-limited group (NIKA v2: container quota + stress-ng)",
        "workload": "an ordinary job (a checksum over an endless input, one process) inside the node, in the same "
                    "CPU-limited group: no stress tool, the kind of work a real server runs out of its limit with",
    }

    # the HTTP request that shows the symptom: (source device, URL) for a target, None when there is none
    @classmethod
    def http_path(cls, topo: Topology, target: str) -> tuple[str, str] | None:
        clients = [n for n in _end_hosts(topo, ("host", "client")) if n != target]
        if not clients:
            return None
        return clients[0], f"http://{main_ip(topo.nodes[target])}/"

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if cls.http_path(topo, n) is not None]

    @classmethod
    def needs(cls) -> str:
        return f"a device with role {'/'.join(cls.roles)} and an HTTP path to measure"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        path = self.http_path(topo, rec.target)
        assert path is not None  # targets() only lists devices with one
        src, url = path
        ns = state.device(rec.target).namespace
        for other in state.faults:  # two keepers would fight over the node's processes
            if other.get("target") == rec.target and "cgroup" in (other.get("params") or {}):
                raise FaultError(f"{rec.target} is already CPU-capped by fault {other['id']} ({other['label']})",
                                 fix="recover that fault first")
        baseline, samples = http_median_ms(ProbeContext(directory=state), src, url)
        if baseline is None:
            raise FaultError(f"{url} from {src} does not answer before injection ({samples})",
                             fix="check the lab with `faultline lab status`; the service must be up")
        group = group_path(rec.id, state.prefix)
        marker = f"job-{rec.id}-{uuid.uuid4().hex[:8]}"
        load = LOADS[rec.mechanism_id]
        rec.params = {"cgroup": str(group), "quota_us": QUOTA_US, "period_us": PERIOD_US, "src": src, "url": url,
                      "load": list(load),
                      "baseline_ms": baseline, "baseline_samples": samples, "helper_pid": None,
                      "helper_marker": marker, "load_pid": None, "moved": []}
        state.extra_paths.append(str(group))  # recorded first: `lab down` removes it whatever happens next
        state.save()
        try:
            create_group(group, state.prefix)
            # the management network's sshd is the host's, not the capped service's (faultline.lab.mgmt)
            spare = {p.pid for p in state.processes if p.device == rec.target and p.name == "sshd"}
            rec.params["moved"] = move([p for p in teardown.namespace_pids(ns)
                                        if uncapped(p) and not management(p, spare)], group)
            rec.params["helper_pid"] = start_helper(
                [sys.executable, "-I", str(JOINER), "--netns", ns, "--cgroup", str(group), "--tag", marker,
                 *(arg for pid in sorted(spare) for arg in ("--spare", str(pid)))])
            # the shell joins the group first, so the load never runs a moment uncapped
            script = 'g=$1; ns=$2; shift 2; echo $$ > "$g/cgroup.procs" && exec ip netns exec "$ns" "$@"'
            rec.params["load_pid"] = start_helper(["sh", "-c", script, "sh", str(group), ns, *load])
            # a host that runs nothing else has no process in the group until the load's exec lands there
            if poll(lambda: None if rec.params["load_pid"] in teardown.namespace_pids(ns) else "not yet", 5.0):
                raise FaultError(f"the load (pid {rec.params['load_pid']}) did not start inside {rec.target}")
        except (OSError, FaultError) as exc:
            self.undo(state, topo, rec)
            raise FaultError(f"{self.label} on {rec.target}: {exc}",
                             fix=f"check /sys/fs/cgroup/cpu and {load[0]}") from exc
        rec.mechanism = (f"PARTIAL/SUBSTITUTE: {' '.join(load)} inside {rec.target}, whose processes "
                         f"(and any started there later) are held in cgroup v1 cpu group {group.name} capped at "
                         f"{100 * QUOTA_US // PERIOD_US}% of one CPU (NIKA: unconfined stress-ng mix; v2: container "
                         f"CPU quota + stress-ng); HTTP {src} -> {url} baseline {baseline} ms")

    # --- verify --------------------------------------------------------------------------------

    def _group(self, ctx: ProbeContext, rec: FaultRecord):
        path = "/" + Path(rec.params["cgroup"]).name
        groups = run_probe(ctx, "cgroup_cpu", dev=rec.target).record.groups
        return next((g for g in groups if g.path == path), None)

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        group = self._group(ctx, rec)
        name = Path(rec.params["cgroup"]).name
        if group is None:
            return f"no process of {rec.target} is in cgroup {name}"
        if group.cfs_quota_us != rec.params["quota_us"]:
            return f"cgroup {name} has quota {group.cfs_quota_us} us, not {rec.params['quota_us']}"
        load = rec.params.get("load_pid")
        running = {p.pid: p for p in run_probe(ctx, "processes", dev=rec.target).record.processes}
        program = _load(rec)[0]
        if load not in running or not running[load].comm.startswith(program[:15]):
            return f"the load ({program}, pid {load}) is not running on {rec.target}"
        if load not in group.pids:
            return f"the load (pid {load}) is not in cgroup {name}"
        if not helper_alive(rec.params.get("helper_pid"), rec.params["helper_marker"]):
            return f"the cgroup keeper (pid {rec.params.get('helper_pid')}) is not running"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        group = self._group(ctx, rec)
        if group is None or not group.nr_throttled:
            return f"cgroup {Path(rec.params['cgroup']).name} shows no throttling on {rec.target}"
        baseline = rec.params["baseline_ms"]
        median, samples = http_median_ms(ctx, rec.params["src"], rec.params["url"])
        if median is None:  # nothing answered at all: slower than any threshold
            return None
        if median >= max(SLOW_FACTOR * baseline, baseline + SLOW_EXTRA_MS):
            return None
        return (f"HTTP {rec.params['src']} -> {rec.params['url']}: median {median} ms {samples}, "
                f"baseline {baseline} ms")

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        group = Path(rec.params.get("cgroup", str(group_path(rec.id, state.prefix))))
        stop_helper(rec.params.get("helper_pid"), rec.params.get("helper_marker", f"job-{rec.id}"))
        stop_load(rec.params.get("load_pid"), group, _load(rec)[0])
        remove_group(group)
        state.extra_paths = [p for p in state.extra_paths if p != str(group)]


def _load(rec: FaultRecord) -> list[str]:
    """The load's argument vector (a record from before the mechanisms kept none: stress-ng)."""
    return rec.params.get("load") or list(STRESS)


class LoadBalancerOverload(CpuContention):
    """`load_balancer_overload`: the load balancer's nginx starved of CPU; HTTP to it from a client."""

    label = "load_balancer_overload"
    roles = ("lb",)


class SenderResourceContention(CpuContention):
    """`sender_resource_contention`: a web server's nginx starved of CPU; HTTP to it from a client."""

    label = "sender_resource_contention"
    roles = ("web",)


class ReceiverResourceContention(CpuContention):
    """`receiver_resource_contention`: a client host starved of CPU; HTTP from it to a web server is slow."""

    label = "receiver_resource_contention"
    roles = ("host", "client")

    @classmethod
    def http_path(cls, topo: Topology, target: str) -> tuple[str, str] | None:
        servers = _end_hosts(topo, ("web",)) or _end_hosts(topo, ("lb",))
        return (target, f"http://{main_ip(topo.nodes[servers[0]])}/") if servers else None
