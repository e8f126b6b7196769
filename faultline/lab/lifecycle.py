"""The lab's lifecycle: `up` and `down`. Root only (network namespaces).

`status` and `probe_context` (what a running lab offers its users) live in `faultline.lab.access`
and are re-exported here for the lab's own commands.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.lab import teardown
from faultline.lab.access import FRR_DAEMONS, probe_context, status
from faultline.lab.builder import build_network, raise_neigh_limits, restore_neigh_limits
from faultline.lab.frr import crash_buffers, start_routers, write_configs
from faultline.lab.namespaces import namespace_name
from faultline.lab.readiness import wait_ready
from faultline.lab.scenarios import build_topology
from faultline.lab.services import start_services
from faultline.lab.state import STATE_FILE, LabProcess, LabState, load_state
from faultline.network.devices import Device


def require_root() -> None:
    """Refuse clearly when not root."""
    if os.geteuid() != 0:
        raise FaultlineError(
            "the lab needs root (network namespaces)",
            fix="run the lab commands as root, e.g. `sudo .venv/bin/faultline lab up simple_bgp`",
        )


def up(scenario: str, size: str, settings: Settings, timeout: float = 60.0) -> LabState:
    """Build `scenario` at `size`, start its routers and wait until it is healthy.

    On any failure everything built so far is torn down before the error is raised.
    """
    topo = build_topology(scenario, size)  # validate names before needing root
    require_root()
    run_dir = Path(settings.lab_dir).resolve()
    if load_state(run_dir) is not None or teardown.lab_namespaces():
        raise FaultlineError("a lab is already up (or left over from a crash)",
                             fix="run `faultline lab down --all` first")
    _clear_run_dir(run_dir)
    t0 = time.monotonic()
    state = LabState(scenario=scenario, size=size, run_dir=str(run_dir),
                     started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    state.device_list = [Device(n.name, n.role, namespace_name(n.name), n.addresses)
                         for n in topo.nodes.values()]
    state.save()
    try:
        def record(ns: str) -> None:
            state.namespaces.append(ns)
            state.extra_paths.extend(teardown.per_namespace_paths(ns))
        # the ARP table is shared by all namespaces: a large lab needs the root namespace's limits raised
        state.neigh_limits = raise_neigh_limits(topo)
        state.save()
        build_network(topo, record)
        state.save()
        state.timings["network_s"] = round(time.monotonic() - t0, 2)
        write_configs(topo, run_dir)
        for router, daemon, pid in start_routers(topo, run_dir):
            state.processes.append(LabProcess(pid, daemon, router, namespace_name(router)))
            state.extra_paths.append(crash_buffers(daemon, pid))
        state.save()
        for node, name, pid in start_services(topo, run_dir):
            state.processes.append(LabProcess(pid, name, node, namespace_name(node)))
        state.save()
        state.timings["daemons_started_s"] = round(time.monotonic() - t0, 2)
        phases = wait_ready(topo, run_dir, timeout)
        state.timings.update({k: round(v + state.timings["daemons_started_s"], 2) for k, v in phases.items()})
        state.timings["healthy_s"] = round(time.monotonic() - t0, 2)
        state.status = "healthy"
        state.save()
        return state
    except BaseException:
        # a half-built lab is never left behind
        _remove(state, list(state.namespaces))
        raise


def down(settings: Settings, all: bool = False) -> dict[str, object]:
    """Tear the lab down; with `all`, also everything with the lab prefix, state file or not.

    Returns what was removed: namespaces, killed PIDs, seconds taken.
    """
    require_root()
    t0 = time.monotonic()
    run_dir = Path(settings.lab_dir).resolve()
    state = load_state(run_dir)
    namespaces = list(state.namespaces) if state else []
    if all:
        namespaces = sorted(set(namespaces) | set(teardown.lab_namespaces()))
    killed: list[int] = []
    if state is not None:
        killed += _remove(state, namespaces)
    elif namespaces:
        killed += _remove(None, namespaces)
    if all:
        _clear_run_dir(run_dir)
    return {"namespaces": namespaces, "killed_pids": killed, "seconds": round(time.monotonic() - t0, 2)}


def _remove(state: LabState | None, namespaces: list[str]) -> list[int]:
    """Kill lab processes by PID, delete the namespaces, remove the lab's files. Returns PIDs killed."""
    pids: set[int] = set()
    extra: list[str] = []
    if state is not None:
        # fault helpers living outside the lab's namespaces (a link toggler) go first, by PID
        from faultline.lab.faults.base import stop_fault_helpers

        stop_fault_helpers(state.faults)
        # a recorded PID is only ours if it still runs inside one of the lab's namespaces
        for proc in state.processes:
            if proc.namespace in namespaces and proc.pid in teardown.namespace_pids(proc.namespace):
                pids.add(proc.pid)
        extra += state.extra_paths
    existing = set(teardown.lab_namespaces())
    for ns in namespaces:
        if ns in existing:
            for pid in teardown.namespace_pids(ns):
                pids.add(pid)
                name = teardown.comm(pid)
                if name in FRR_DAEMONS:
                    extra.append(crash_buffers(name, pid))
        extra += teardown.per_namespace_paths(ns)
    killed = teardown.kill_pids(sorted(pids))
    teardown.delete_namespaces(namespaces)
    teardown.remove_paths(extra)
    if state is not None:
        restore_neigh_limits(state.neigh_limits)
    if state is not None:
        _clear_run_dir(Path(state.run_dir))
    return killed


def _clear_run_dir(run_dir: Path) -> None:
    """Remove only what the lab writes in its run dir (lab_dir may be shared with other files)."""
    for name in ("frr", "svc", STATE_FILE, STATE_FILE.replace(".json", ".tmp")):
        teardown.remove_paths([str(run_dir / name)])
    if run_dir.is_dir() and not any(run_dir.iterdir()):
        run_dir.rmdir()


__all__ = ["down", "probe_context", "require_root", "status", "up"]
