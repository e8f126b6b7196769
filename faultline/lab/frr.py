"""FRR, one instance per router: its configuration rendered and written split per daemon, and its daemons started.

Every file of an instance lives in the lab's run dir (none in /etc/frr or /var/run/frr) and every daemon logs to
the lab's syslog collector; how and why: docs/lab.md#frr-per-router.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import time
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.lab.builder import run
from faultline.lab.namespaces import namespace_name
from faultline.lab.syslog import logging_prefix
from faultline.lab.topology import Topology

FRR_BIN = Path("/usr/lib/frr")
FRR_TMP = Path("/var/tmp/frr")
PROTOCOL_DAEMONS = {"bgp": ("bgpd",), "ospf": ("ospfd",), "rip": ("ripd",)}
# what operators put at the top of every daemon's config: the logging goes to the device's syslog
LOG_LINES = ("log syslog informational",)


def router_dir(run_dir: Path, router: str) -> Path:
    """Where one router's daemon configs, pid files and vty sockets live."""
    return run_dir / "frr" / namespace_name(router)


def vtysh_args(run_dir: Path, router: str) -> list[str]:
    """The argument list prefix for talking to `router`'s daemons with vtysh."""
    # no -N here: with a pathspace vtysh would look for the sockets in a subdir of --vty_socket
    return ["vtysh", "--vty_socket", str(router_dir(run_dir, router))]


def vtysh_env() -> dict[str, str]:
    """vtysh's environment: no history file in root's home."""
    return {**os.environ, "VTYSH_HISTFILE": "/dev/null"}


def render_bgp(topo: Topology, router: str) -> str:
    """frr.conf for an eBGP router: one neighbour per link, its LANs announced with `network`."""
    node = topo.nodes[router]
    assert node.asn is not None and node.loopback
    router_id = node.loopback.split("/")[0]
    lines = ["frr defaults datacenter", f"hostname {router}", *LOG_LINES, "!", f"router bgp {node.asn}",
             f" bgp router-id {router_id}", " bgp log-neighbor-changes", " no bgp ebgp-requires-policy",
             " bgp bestpath as-path multipath-relax"]
    # routers sharing an AS (NIKA's super-spines, all AS 65000) must accept each other's prefixes
    shared_as = sum(1 for n in topo.routers() if n.asn == node.asn) > 1
    for _local, remote in topo.neighbours(router):
        peer = remote.address.split("/")[0]
        lines += [f" neighbor {peer} remote-as {topo.nodes[remote.node].asn}",
                  # fast timers: a lab converges in seconds (above ~150 routers use 3/9: docs/lab.md#routing-timers)
                  f" neighbor {peer} timers 1 3", f" neighbor {peer} timers connect 2",
                  f" neighbor {peer} advertisement-interval 0"]
    lines += [" address-family ipv4 unicast", f"  network {node.loopback}"]
    if shared_as:
        lines += [f"  neighbor {remote.address.split('/')[0]} allowas-in 1" for _, remote in topo.neighbours(router)]
    for lan in topo.lans:
        if lan.router == router:
            lines.append(f"  network {lan.subnet}")
    if node.static_routes:
        lines.append("  redistribute static")
    lines += ["  maximum-paths 16", " exit-address-family", "!", *_static_lines(topo, router), "!", ""]
    return "\n".join(lines)


def _static_lines(topo: Topology, router: str) -> list[str]:
    return [f"ip route {prefix} {via}" for prefix, via in topo.nodes[router].static_routes]


def _lan_gateways(topo: Topology, router: str) -> list[tuple[str, str, int]]:
    """(interface, subnet, area) of every LAN `router` is the gateway of."""
    return [(lan.gateway.name, lan.subnet, lan.area) for lan in topo.lans if lan.router == router]


def render_ospf(topo: Topology, router: str) -> str:
    """frr.conf for an OSPF router: point-to-point links, passive LANs, fast lab timers, static routes."""
    node = topo.nodes[router]
    assert node.loopback
    lines = ["frr defaults traditional", f"hostname {router}", *LOG_LINES, "!"]
    links = [(local, remote, link.area) for link in topo.links
             for local, remote in ((link.a, link.b), (link.b, link.a)) if local.node == router]
    for local, _, _ in links:
        lines += [f"interface {local.name}", " ip ospf network point-to-point",
                  " ip ospf hello-interval 1", " ip ospf dead-interval 4", "!"]
    lans = _lan_gateways(topo, router)
    for ifname, _, _ in lans:
        lines += [f"interface {ifname}", " ip ospf passive", "!"]
    # fast SPF/LSA throttles: adjacencies Full in ~1 s instead of ~6 s (docs/lab.md#routing-timers)
    lines += ["router ospf", f" ospf router-id {node.loopback.split('/')[0]}", " log-adjacency-changes detail",
              " timers throttle spf 0 50 500", " timers throttle lsa all 0", " timers lsa min-arrival 0",
              f" network {node.loopback} area {node.area}"]
    for local, _, area in links:
        lines.append(f" network {ipaddress.ip_interface(local.address).network} area {area}")
    for _, subnet, area in lans:
        lines.append(f" network {subnet} area {area}")
    if node.static_routes:
        lines.append(" redistribute static")
    lines += ["!", *_static_lines(topo, router), "!", ""]
    return "\n".join(lines)


def render_rip(topo: Topology, router: str) -> str:
    """frr.conf for a RIPv2 router: RIP on its links, LANs passive, loopback and statics redistributed."""
    node = topo.nodes[router]
    lines = ["frr defaults traditional", f"hostname {router}", *LOG_LINES, "!", "router rip", " version 2",
             # update 5 s, timeout 15 s, garbage 10 s: a lost route shows up within seconds
             " timers basic 5 15 10"]
    for local, _ in topo.neighbours(router):
        lines.append(f" network {local.name}")
    for ifname, subnet, _ in _lan_gateways(topo, router):
        lines += [f" network {subnet}", f" passive-interface {ifname}"]
    lines.append(" redistribute connected route-map FL-LOOPBACK")
    if node.static_routes:
        lines.append(" redistribute static")
    lines += ["!", f"ip prefix-list FL-LOOPBACK seq 5 permit {node.loopback}",
              "route-map FL-LOOPBACK permit 10", " match ip address prefix-list FL-LOOPBACK", "!",
              *_static_lines(topo, router), "!", ""]
    return "\n".join(lines)


RENDERERS = {"bgp": render_bgp, "ospf": render_ospf, "rip": render_rip}


# top-level config blocks -> the daemon that understands them ("" = every daemon)
_BLOCK_OWNERS = (("frr defaults", ""), ("hostname", ""), ("log ", ""), ("router bgp", "bgpd"),
                 ("router ospf", "ospfd"), ("router rip", "ripd"), ("ip route", "staticd"),
                 ("ip prefix-list", "protocol"), ("route-map", "protocol"), ("interface", "protocol"))


def split_config(text: str, protocol: str) -> dict[str, str]:
    """One router's whole configuration, split into each daemon's own file (zebra, protocol, staticd).

    Settings every daemon takes (`frr defaults`, `hostname`, `log`) go to all of them; interface
    stanzas, prefix lists and route maps belong to the protocol daemon, static routes to staticd.
    """
    proto = PROTOCOL_DAEMONS[protocol][0]
    common: list[str] = []
    blocks: dict[str, list[str]] = {"zebra": [], proto: [], "staticd": []}
    owner, head = "", ""
    for line in text.splitlines():
        if not line.strip() or line.strip() == "!":
            continue
        if not line.startswith(" "):
            found = next((o for prefix, o in _BLOCK_OWNERS if line.startswith(prefix)), None)
            if found is None:
                raise FaultlineError(f"no FRR daemon owns the config line {line!r}", fix="extend frr._BLOCK_OWNERS")
            owner = proto if found == "protocol" else found
            # a "!" between blocks, not between lines of a list (ip route, ip route, ...)
            if owner and blocks[owner] and line.split()[:2] != head.split()[:2]:
                blocks[owner].append("!")
            head = line
        (blocks[owner] if owner else common).append(line)
    return {daemon: "\n".join(common + ["!"] + own + (["!"] if own else []) + [""])
            for daemon, own in blocks.items()}


def router_daemons(topo: Topology, router: str) -> tuple[str, ...]:
    """The daemons `router` runs besides zebra: its protocol's, plus staticd if it has static routes."""
    return PROTOCOL_DAEMONS[topo.protocol] + (("staticd",) if topo.nodes[router].static_routes else ())


def check_reachable_by_frr(run_dir: Path) -> None:
    """FRR daemons run as the frr user, so every parent of the run dir must be traversable by others."""
    for parent in run_dir.resolve().parents:
        if not parent.stat().st_mode & 0o001:
            raise FaultlineError(
                f"the FRR daemons (user frr) cannot reach the lab dir: {parent} is not searchable",
                fix=f"choose a lab_dir whose parents are world-searchable, or `chmod o+x {parent}`",
            )


def write_configs(topo: Topology, run_dir: Path) -> None:
    """Write every router's frr.conf; the dirs belong to the frr user, which the daemons run as."""
    check_reachable_by_frr(run_dir)
    for node in topo.routers():
        rdir = router_dir(run_dir, node.name)
        rdir.mkdir(parents=True, exist_ok=True)
        if topo.protocol not in RENDERERS:
            raise FaultlineError(f"unknown routing protocol {topo.protocol!r}", fix="use bgp, ospf or rip")
        whole = RENDERERS[topo.protocol](topo, node.name)
        for daemon, text in split_config(whole, topo.protocol).items():
            (rdir / f"{daemon}.conf").write_text(text)
        # split config: `write` in vtysh has each daemon write its own file
        (rdir / "vtysh.conf").write_text("no service integrated-vtysh-config\n")
        shutil.chown(rdir, "frr", "frr")
        for child in rdir.iterdir():
            shutil.chown(child, "frr", "frr")
    # the frr user must be able to reach the router dirs
    for path in (run_dir, run_dir / "frr"):
        path.chmod(0o755)


def start_daemon(run_dir: Path, router: str, daemon: str) -> None:
    """Start one FRR daemon of `router` with the lab's command line (also used to restart one)."""
    ns = namespace_name(router)
    rdir = router_dir(run_dir, router)
    # --log syslog: what a daemon says before its config is read goes to syslog as well
    run(["ip", "netns", "exec", ns, *logging_prefix(run_dir, router), str(FRR_BIN / daemon), "-d", "-N", ns,
         "-P", "0", "-f", str(rdir / f"{daemon}.conf"), "-i", str(rdir / f"{daemon}.pid"),
         "--vty_socket", str(rdir), "-z", str(rdir / "zserv.api"), "--log", "syslog", "--log-level", "informational"])


def _wait_for(paths: list[Path], what: str, timeout: float, *, nonempty: bool = False) -> None:
    deadline = time.monotonic() + timeout
    while True:
        # pid files exist (empty) a moment before the daemon writes its PID into them
        missing = [p for p in paths if not p.exists() or (nonempty and p.stat().st_size == 0)]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise FaultlineError(
                f"{what} did not appear within {timeout:.0f} s: {', '.join(str(p) for p in missing[:5])}",
                fix="look at the devices' syslog in <lab_dir>/syslog/, then `faultline lab down --all`",
            )
        time.sleep(0.05)


def start_routers(topo: Topology, run_dir: Path, timeout: float = 20.0) -> list[tuple[str, str, int]]:
    """Start zebra everywhere, wait for every zserv socket, then the protocol daemons.

    Returns (router, daemon, pid) for every daemon started.
    """
    routers = [n.name for n in topo.routers()]
    for r in routers:
        start_daemon(run_dir, r, "zebra")
    _wait_for([router_dir(run_dir, r) / "zserv.api" for r in routers], "zebra sockets", timeout)
    for r in routers:
        for d in router_daemons(topo, r):
            start_daemon(run_dir, r, d)
    pidfiles = [(r, d, router_dir(run_dir, r) / f"{d}.pid")
                for r in routers for d in ("zebra", *router_daemons(topo, r))]
    _wait_for([p for _, _, p in pidfiles], "FRR pid files", timeout, nonempty=True)
    return [(r, d, int(p.read_text().strip())) for r, d, p in pidfiles]


def crash_buffers(daemon: str, pid: int) -> str:
    """FRR's per-process crash-log buffer dir (outside the run dir; removed on down)."""
    return str(FRR_TMP / f"{daemon}.{pid}")
