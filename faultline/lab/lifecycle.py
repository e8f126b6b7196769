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
from faultline.lab import locks, mgmt, syslog, teardown
from faultline.lab.access import FRR_DAEMONS, probe_context, status
from faultline.lab.builder import build_network, raise_neigh_limits, restore_neigh_limits
from faultline.lab.frr import crash_buffers, router_dir, start_routers, write_configs
from faultline.lab.namespaces import namespace_name, use_prefix
from faultline.lab.readiness import wait_ready
from faultline.lab.scenarios import build_topology
from faultline.lab.services import start_services
from faultline.lab.state import STATE_FILE, LabProcess, LabState, load_state
from faultline.lab.topology import Topology
from faultline.network.devices import Device


def require_root() -> None:
    """Refuse clearly when not root."""
    if os.geteuid() != 0:
        raise FaultlineError(
            "the lab needs root (network namespaces)",
            fix="run the lab commands as root, e.g. `sudo .venv/bin/faultline lab up simple_bgp`",
        )


def up(scenario: str, size: str, settings: Settings, timeout: float = 60.0, mgmt: bool = False) -> LabState:
    """Build `scenario` at `size`, start its routers and wait until it is healthy.

    `mgmt` adds the management network (`faultline.lab.mgmt`, subnet `lab_mgmt_subnet`): every node
    reachable over SSH from the root namespace. On any failure everything built so far is torn down
    before the error is raised.
    """
    topo = build_topology(scenario, size)  # validate names before needing root
    require_root()
    run_dir = Path(settings.lab_dir).resolve()
    prefix = settings.lab_prefix
    use_prefix(prefix)
    check_socket_paths(topo, run_dir)
    with locks.holding(locks.prefix_lock(prefix), wait=False, what=f"the lab with prefix {prefix}"):
        return _up(topo, run_dir, prefix, timeout, settings.lab_mgmt_subnet if mgmt else None)


def _up(topo: Topology, run_dir: Path, prefix: str, timeout: float, mgmt_subnet: str | None) -> LabState:
    scenario, size = topo.scenario, topo.size
    if load_state(run_dir) is not None or teardown.lab_namespaces(prefix):
        raise FaultlineError(f"a lab with prefix {prefix} is already up in {run_dir} (or left over from a crash)",
                             fix="run `faultline lab down --all` first (with the same lab_prefix and lab_dir)")
    plan = mgmt.plan(list(topo.nodes), mgmt_subnet, prefix, run_dir) if mgmt_subnet else None
    if plan is not None:
        mgmt.check_free(plan)
    _clear_run_dir(run_dir)
    t0 = time.monotonic()
    state = LabState(scenario=scenario, size=size, run_dir=str(run_dir), prefix=prefix,
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
        if plan is not None:
            state.mgmt = plan  # recorded before it exists: a failure below removes it
            state.save()
            _build_mgmt(state)
        state.timings["network_s"] = round(time.monotonic() - t0, 2)
        write_configs(topo, run_dir)
        # every daemon logs to the collector from its first line: it starts before them (faultline.lab.syslog)
        syslog.start_collector(run_dir, topo.nodes)
        for router, daemon, pid in start_routers(topo, run_dir):
            state.processes.append(LabProcess(pid, daemon, router, namespace_name(router)))
            state.extra_paths.append(crash_buffers(daemon, pid))
        state.save()
        for node, name, pid in start_services(topo, run_dir):
            state.processes.append(LabProcess(pid, name, node, namespace_name(node)))
        state.save()
        if state.mgmt is not None:
            state.processes += mgmt.start_all(state.mgmt, {d.name: d.namespace for d in state.devices()})
            state.save()
        state.timings["daemons_started_s"] = round(time.monotonic() - t0, 2)
        phases = wait_ready(topo, run_dir, timeout)
        state.timings.update({k: round(v + state.timings["daemons_started_s"], 2) for k, v in phases.items()})
        if state.mgmt is not None:
            silent = mgmt.not_answering(state.mgmt)
            if silent:
                raise FaultlineError(f"sshd does not answer on the management network of {', '.join(silent)}",
                                     fix=f"see {state.mgmt['ssh_dir']}/<device>/sshd.log")
            state.timings["mgmt_ready_s"] = round(time.monotonic() - t0, 2)
        state.timings["healthy_s"] = round(time.monotonic() - t0, 2)
        state.status = "healthy"
        state.save()
        return state
    except BaseException:
        # a half-built lab is never left behind
        _remove(state, list(state.namespaces))
        if state.mgmt is not None:
            mgmt.remove_network(prefix)
        raise


def down(settings: Settings, all: bool = False) -> dict[str, object]:
    """Tear the lab down; with `all`, also everything with the lab's prefix, state file or not.

    Only this lab's prefix is touched: labs with other prefixes keep running. Returns what was
    removed: namespaces, killed PIDs, the root namespace's management links, seconds taken.
    """
    require_root()
    run_dir = Path(settings.lab_dir).resolve()
    state = load_state(run_dir)
    prefix = state.prefix if state else settings.lab_prefix
    use_prefix(prefix)
    with locks.holding(locks.prefix_lock(prefix), what=f"the lab with prefix {prefix}"):
        return _down(run_dir, load_state(run_dir), prefix, all)


def _down(run_dir: Path, state: LabState | None, prefix: str, all: bool) -> dict[str, object]:
    t0 = time.monotonic()
    namespaces = list(state.namespaces) if state else []
    if all:
        namespaces = sorted(set(namespaces) | set(teardown.lab_namespaces(prefix)))
    killed: list[int] = []
    if state is not None:
        killed += _remove(state, namespaces)
    elif namespaces:
        killed += _remove(None, namespaces)
    links: list[str] = []
    if all or (state is not None and state.mgmt is not None):
        # with --all also a management bridge left over from a lab whose state is lost (this prefix's names only)
        links = mgmt.remove_network(prefix)
    if all:
        _clear_run_dir(run_dir)
    return {"namespaces": namespaces, "killed_pids": killed, "mgmt_links": links,
            "seconds": round(time.monotonic() - t0, 2)}


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
    existing = set(teardown.all_namespaces())
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
    # the ARP limits are machine-wide: while another lab (or any namespace) is left, they stay raised
    if state is not None and not teardown.all_namespaces():
        restore_neigh_limits(state.neigh_limits)
    if state is not None:
        _clear_run_dir(Path(state.run_dir))
    return killed


# a unix socket path (sun_path) holds 107 bytes and a NUL; FRR's vty sockets live under the router dirs
SOCKET_PATH_MAX = 107
_LONGEST_SOCKET = "staticd.vty"


def check_socket_paths(topo: Topology, run_dir: Path) -> None:
    """Refuse a lab whose FRR sockets (`<run_dir>/frr/<prefix><router>/staticd.vty`) would not fit a unix socket path.

    The only lab names whose length the prefix and run dir change: namespace names have no such
    limit and interfaces are named inside the lab's namespaces (see faultline.lab.namespaces).
    """
    paths = [router_dir(run_dir, r.name) / _LONGEST_SOCKET for r in topo.routers()]
    longest = max(paths, key=lambda p: len(str(p)), default=None)
    if longest is not None and len(str(longest)) > SOCKET_PATH_MAX:
        raise FaultlineError(
            f"the FRR socket path {longest} is {len(str(longest))} bytes, over the {SOCKET_PATH_MAX} a unix socket "
            "path can hold", fix="use a shorter lab_dir (e.g. /tmp/fl-lab) or a shorter lab_prefix")


def _clear_run_dir(run_dir: Path) -> None:
    """Remove only what the lab writes in its run dir (lab_dir may be shared with other files)."""
    syslog.stop_collector(run_dir)  # by PID, after the daemons: their last lines are filed first
    # ssh-inventory: the SSH inventory `faultline corpus generate` writes for a management lab
    for name in ("frr", "svc", "syslog", "ssh", "ssh-inventory", STATE_FILE, STATE_FILE.replace(".json", ".tmp")):
        teardown.remove_paths([str(run_dir / name)])
    if run_dir.is_dir() and not any(run_dir.iterdir()):
        run_dir.rmdir()


def _build_mgmt(state: LabState) -> None:
    """The management network and its sshd files (`faultline.lab.mgmt`); the daemons start with the services."""
    assert state.mgmt is not None
    mgmt.build_network(state.mgmt, {d.name: d.namespace for d in state.devices()})
    mgmt.write_ssh_files(state.mgmt, Path(state.run_dir))
    state.save()


__all__ = ["down", "probe_context", "require_root", "status", "up"]
