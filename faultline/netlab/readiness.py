"""Readiness: poll until routing has converged and every host reaches every other host.

Never a fixed sleep: each check is repeated until it passes or a deadline expires, and a timeout
names exactly what was not ready.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.netlab.devices import namespace_name
from faultline.netlab.frr import vtysh_args, vtysh_env
from faultline.netlab.topology import Topology

_POLL = 0.2


def bgp_not_established(topo: Topology, run_dir: Path) -> list[str]:
    """'router -> peer: State' for every BGP session of `topo` that is not Established."""
    problems = []
    for node in topo.routers():
        expected = [remote.address.split("/")[0] for _, remote in topo.neighbours(node.name)]
        if not expected:
            continue
        proc = subprocess.run(
            vtysh_args(run_dir, node.name) + ["-c", "show bgp ipv4 unicast summary json"],
            capture_output=True, text=True, timeout=10, env=vtysh_env(),
        )
        try:
            peers = json.loads(proc.stdout or "{}").get("peers", {})
        except ValueError:
            peers = {}
        for peer in expected:
            state = peers.get(peer, {}).get("state", "absent")
            if state != "Established":
                problems.append(f"{node.name} -> {peer}: {state}")
    return problems


def host_pairs(topo: Topology) -> list[tuple[str, str, str]]:
    """(source host, destination host, destination address) for every ordered pair of hosts."""
    hosts = topo.hosts()
    return [(a.name, b.name, b.addresses[0].split("/")[0]) for a in hosts for b in hosts if a is not b]


def _ping(src: str, dst_ip: str) -> bool:
    proc = subprocess.run(
        ["ip", "netns", "exec", namespace_name(src), "ping", "-n", "-q", "-c", "1", "-W", "1", dst_ip],
        capture_output=True, text=True, timeout=10,
    )
    return proc.returncode == 0


def unreachable(pairs: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The pairs whose one-packet ping fails (pinged in parallel)."""
    if not pairs:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(pairs))) as pool:
        results = list(pool.map(lambda p: _ping(p[0], p[2]), pairs))
    return [pair for pair, ok in zip(pairs, results) if not ok]


def wait_ready(topo: Topology, run_dir: Path, timeout: float = 60.0) -> dict[str, float]:
    """Block until the lab is healthy; returns seconds spent per phase. Raises on timeout."""
    start = time.monotonic()
    deadline = start + timeout
    timings: dict[str, float] = {}
    if topo.protocol == "bgp":
        while problems := bgp_not_established(topo, run_dir):
            _check_deadline(deadline, timeout, "BGP sessions not Established", problems)
            time.sleep(_POLL)
    timings["routing_converged_s"] = round(time.monotonic() - start, 2)
    # only failing pairs are retried, so a large lab does not re-ping what already works
    pending = host_pairs(topo)
    while pending := unreachable(pending):
        _check_deadline(deadline, timeout, "hosts cannot reach each other",
                        [f"{s} -> {d} ({ip})" for s, d, ip in pending])
        time.sleep(_POLL)
    timings["reachability_s"] = round(time.monotonic() - start, 2)
    return timings


def _check_deadline(deadline: float, timeout: float, what: str, items: list[str]) -> None:
    if time.monotonic() <= deadline:
        return
    shown = "; ".join(items[:10]) + (f"; ... ({len(items)} in all)" if len(items) > 10 else "")
    raise FaultlineError(
        f"the lab was not ready after {timeout:.0f} s: {what}: {shown}",
        fix="check the FRR logs in the lab dir, then `faultline lab down --all`",
    )
