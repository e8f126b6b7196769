"""Readiness: poll until routing has converged, the services answer and the end hosts reach each other.

Never a fixed sleep; a timeout names exactly what was not ready. The checks, in order: docs/lab.md#readiness.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.lab.frr import vtysh_args, vtysh_env
from faultline.lab.namespaces import namespace_name
from faultline.lab.services import SERVICE_ROLES, service_problems
from faultline.lab.topology import Topology

_POLL = 0.2
_WORKERS = 16
# above this many ordered host pairs, readiness pings a covering sample instead of every pair
FULL_PAIRS_LIMIT = 600


def vtysh_json(run_dir: Path, router: str, command: str) -> dict:
    """`command` (a `show ... json`) on `router`, parsed; {} when the daemon does not answer."""
    proc = subprocess.run(vtysh_args(run_dir, router) + ["-c", command],
                          capture_output=True, text=True, timeout=10, env=vtysh_env())
    try:
        data = json.loads(proc.stdout or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _each_router(topo: Topology, check: Callable[[str], list[str]]) -> list[str]:
    routers = [n.name for n in topo.routers()]
    with ThreadPoolExecutor(max_workers=min(_WORKERS, max(1, len(routers)))) as pool:
        return [item for items in pool.map(check, routers) for item in items]


def bgp_not_established(topo: Topology, run_dir: Path) -> list[str]:
    """'router -> peer: State' for every BGP session of `topo` that is not Established."""
    def check(router: str) -> list[str]:
        expected = [remote.address.split("/")[0] for _, remote in topo.neighbours(router)]
        if not expected:
            return []
        peers = vtysh_json(run_dir, router, "show bgp ipv4 unicast summary json").get("peers", {})
        return [f"{router} -> {peer}: {peers.get(peer, {}).get('state', 'absent')}"
                for peer in expected if peers.get(peer, {}).get("state") != "Established"]
    return _each_router(topo, check)


def ospf_not_full(topo: Topology, run_dir: Path) -> list[str]:
    """'router -> neighbour-id: state' for every OSPF adjacency of `topo` that is not Full."""
    def check(router: str) -> list[str]:
        expected = [topo.nodes[remote.node].loopback or "" for _, remote in topo.neighbours(router)]
        found = vtysh_json(run_dir, router, "show ip ospf neighbor json").get("neighbors", {})
        problems = []
        for rid in (e.split("/")[0] for e in expected):
            entries = found.get(rid, [])
            states = [str(e.get("nbrState", e.get("state", "?"))) for e in entries] or ["absent"]
            if not any(s.startswith("Full") for s in states):
                problems.append(f"{router} -> {rid}: {states[0]}")
        return problems
    return _each_router(topo, check)


def lans_missing(topo: Topology, run_dir: Path) -> list[str]:
    """'router: no route to LAN' for every router lacking a route to some LAN of `topo`."""
    subnets = [lan.subnet for lan in topo.routed_lans()]

    def check(router: str) -> list[str]:
        table = vtysh_json(run_dir, router, "show ip route json")
        return [f"{router}: no route to {s}" for s in subnets if not table.get(s)]
    return _each_router(topo, check)


def routing_problems(topo: Topology, run_dir: Path) -> tuple[str, list[str]]:
    """(what is being waited for, what is not there yet) for the topology's protocol; [] when converged."""
    if topo.protocol == "bgp":
        return "BGP sessions not Established", bgp_not_established(topo, run_dir)
    if topo.protocol == "ospf":
        problems = ospf_not_full(topo, run_dir)
        if problems:
            return "OSPF adjacencies not Full", problems
        return "OSPF routes missing", lans_missing(topo, run_dir)
    if topo.protocol == "rip":
        return "RIP routes missing", lans_missing(topo, run_dir)
    raise FaultlineError(f"no readiness check for protocol {topo.protocol!r}", fix="use bgp, ospf or rip")


def _reachable_hosts(topo: Topology) -> list:
    # LB backends sit on a private LAN: only their load balancer is meant to reach them
    return [n for n in topo.end_hosts() if not n.private]


def host_pairs(topo: Topology) -> list[tuple[str, str, str]]:
    """(source, destination, destination address) for every ordered pair of reachable end hosts."""
    hosts = _reachable_hosts(topo)
    return [(a.name, b.name, b.addresses[0].split("/")[0]) for a in hosts for b in hosts if a is not b]


def readiness_pairs(topo: Topology, limit: int = FULL_PAIRS_LIMIT) -> list[tuple[str, str, str]]:
    """All host pairs when there are at most `limit`; else every host to one host of every LAN.

    The sampled host of a LAN rotates with the source's position, so every host is also pinged,
    and every path class (same LAN, every pair of LANs) is covered.
    """
    pairs = host_pairs(topo)
    if len(pairs) <= limit:
        return pairs
    sample = []
    for position, src in enumerate(_reachable_hosts(topo)):
        for lan in topo.routed_lans():
            members = [h for h in lan.hosts if h.node != src.name]
            if members:
                dst = members[position % len(members)]
                sample.append((src.name, dst.node, dst.address.split("/")[0]))
    return sample


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
    with ThreadPoolExecutor(max_workers=min(_WORKERS, len(pairs))) as pool:
        results = list(pool.map(lambda p: _ping(p[0], p[2]), pairs))
    return [pair for pair, ok in zip(pairs, results) if not ok]


def wait_ready(topo: Topology, run_dir: Path, timeout: float = 60.0) -> dict[str, float]:
    """Block until the lab is healthy; returns seconds spent per phase. Raises on timeout."""
    start = time.monotonic()
    deadline = start + timeout
    timings: dict[str, float] = {}
    while True:
        what, problems = routing_problems(topo, run_dir)
        if not problems:
            break
        _check_deadline(deadline, timeout, what, problems)
        time.sleep(_POLL)
    timings["routing_converged_s"] = round(time.monotonic() - start, 2)
    if topo.zones or any(n.role in SERVICE_ROLES or n.dhcp for n in topo.nodes.values()):
        while problems := service_problems(topo):
            _check_deadline(deadline, timeout, "services not answering", problems)
            time.sleep(_POLL)
        timings["services_s"] = round(time.monotonic() - start, 2)
    # only failing pairs are retried, so a large lab does not re-ping what already works
    pending = readiness_pairs(topo)
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
        fix="check the devices' syslog in <lab_dir>/syslog/<device>/messages, then `faultline lab down --all`",
    )
