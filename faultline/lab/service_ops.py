"""Service control on a running lab (for faults and recovery): stop, start, reconfigure, signal, by PID.

A service's PID lives in `LabState.processes` (name dnsmasq / nginx / udhcpc, device = its node);
stopping one removes that entry, starting one adds the new PID, and the state is saved each time,
so a later `lab down` or `lab recover` knows exactly what runs.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from faultline.lab import teardown
from faultline.lab.scenarios import build_topology
from faultline.lab.services import (
    SERVICE_ROLES,
    service_argv,
    service_dir,
    start_service,
)
from faultline.lab.state import LabProcess, LabState

SERVICE_NAMES = ("dnsmasq", "nginx", "udhcpc")


def service_process(state: LabState, node: str) -> LabProcess | None:
    """The recorded service process of `node` (None when it runs none or it was stopped)."""
    for proc in state.processes:
        if proc.device == node and proc.name in SERVICE_NAMES:
            return proc
    return None


def service_running(state: LabState, node: str) -> bool:
    """True when `node`'s recorded service process is alive."""
    proc = service_process(state, node)
    return proc is not None and teardown.alive(proc.pid)


def config_path(state: LabState, node: str) -> Path:
    """The config file of `node`'s service (dnsmasq.conf, nginx.conf or udhcpc.sh)."""
    spec = service_argv(build_topology(state.scenario, state.size), Path(state.run_dir), node)
    if spec is None:
        raise KeyError(f"{node} runs no service")
    name = {"dnsmasq": "dnsmasq.conf", "nginx": "nginx.conf", "udhcpc": "udhcpc.sh"}[spec[0]]
    return service_dir(Path(state.run_dir), node) / name


def stop_service(state: LabState, node: str) -> int | None:
    """Stop `node`'s service by PID (nginx's workers go with their master); returns the PID stopped."""
    proc = service_process(state, node)
    if proc is None:
        return None
    teardown.kill_pids([proc.pid])
    state.processes = [p for p in state.processes if p is not proc]
    state.save()
    return proc.pid


def start_recorded(state: LabState, node: str) -> LabProcess:
    """Start `node`'s service from its config file as it is now and record the PID."""
    if service_running(state, node):
        raise RuntimeError(f"{node}'s service already runs")
    stale = service_process(state, node)
    if stale is not None:
        state.processes = [p for p in state.processes if p is not stale]
    topo = build_topology(state.scenario, state.size)
    started = start_service(topo, Path(state.run_dir), node)
    if started is None:
        raise KeyError(f"{node} runs no service")
    proc = LabProcess(started[1], started[0], node, state.device(node).namespace)
    state.processes.append(proc)
    state.save()
    return proc


def restart_service(state: LabState, node: str) -> LabProcess:
    """Stop and start `node`'s service (how dnsmasq re-reads its config)."""
    stop_service(state, node)
    return start_recorded(state, node)


def signal_service(state: LabState, node: str, sig: signal.Signals) -> None:
    """Send `sig` to `node`'s service (SIGHUP: dnsmasq re-reads hosts; udhcpc SIGUSR1 renew, SIGUSR2 release)."""
    proc = service_process(state, node)
    if proc is None or not teardown.alive(proc.pid):
        raise ProcessLookupError(f"{node} has no running service")
    os.kill(proc.pid, sig)


def reload_nginx(state: LabState, node: str) -> None:
    """nginx re-reads its config on SIGHUP (new workers, no dropped listener)."""
    signal_service(state, node, signal.SIGHUP)


def service_nodes_with_role(state: LabState, *roles: str) -> list[str]:
    """The lab's nodes with one of `roles` that run a service (e.g. "dns", "web")."""
    return [d.name for d in state.devices() if d.role in roles and d.role in SERVICE_ROLES]
