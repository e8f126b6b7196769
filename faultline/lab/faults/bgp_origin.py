"""BGP faults that make a router originate a prefix it does not own: `bgp_blackhole_route_leak`, `bgp_hijacking`.

Live through vtysh on BGP scenarios; how each makes the prefix routable and what the network then does:
docs/lab.md#routing-faults.
"""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path
from typing import ClassVar

from faultline.lab import frr, teardown
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, in_ns, reachability_problem, sh
from faultline.lab.faults.l2 import end_hosts, lan_of
from faultline.lab.faults.routing import _wait, bgp_block, mechanism_of, vtysh
from faultline.lab.services import main_ip
from faultline.lab.state import LabProcess, LabState
from faultline.lab.topology import Lan, Topology
from faultline.network.probes import ProbeContext, run_probe

AF = "address-family ipv4 unicast"


def start_staticd(state: LabState, router: str) -> int | None:
    """Start staticd on `router` unless one runs; its PID (recorded in the lab state), None if one ran."""
    if any(p.device == router and p.name == "staticd" and teardown.alive(p.pid) for p in state.processes):
        return None
    run_dir = Path(state.run_dir)
    rdir = frr.router_dir(run_dir, router)
    pidfile = rdir / "staticd.pid"
    old = pidfile.read_text().strip() if pidfile.exists() else ""
    frr.start_daemon(run_dir, router, "staticd")
    _wait(lambda: pidfile.exists() and pidfile.read_text().strip() not in ("", old),
          f"staticd on {router} did not write its pid file")
    pid = int(pidfile.read_text().strip())
    state.processes.append(LabProcess(pid, "staticd", router, state.device(router).namespace))
    state.extra_paths.append(frr.crash_buffers("staticd", pid))
    state.save()  # recorded before use: `lab down` stops it whatever happens next
    _wait(lambda: (rdir / "staticd.vty").exists(), f"staticd on {router} did not open its vty socket")
    return pid


def stop_staticd(state: LabState, pid: int | None) -> None:
    """Stop a staticd this module started (by PID, only if it still is staticd) and forget it."""
    if pid is None:
        return
    if teardown.alive(pid) and teardown.comm(pid) == "staticd":
        teardown.kill_pids([pid])
    state.processes = [p for p in state.processes if not (p.pid == pid and p.name == "staticd")]


def running_config(ctx: ProbeContext, router: str) -> str:
    """`show running-config` through the probe API."""
    return run_probe(ctx, "vtysh_show", dev=router, command="show running-config").raw


class BgpOrigination(Fault):
    """Base: make P routable on the router (`originate`), then `network P` under `router bgp`."""

    roles = ("router",)
    protocols = ("bgp",)

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        victim, prefix = self.victim(topo, rec.target, rng)
        block = bgp_block(vtysh(state, rec.target, "show running-config"))
        rec.params = {"victim": victim, "prefix": prefix, "head": block[0]}
        announce = self.announcement(rec)
        # a line the router already had (the lab's own `redistribute static`) stays when the fault is recovered
        rec.params.update(announce=announce, announce_preexisting=announce in {ln.strip() for ln in block})
        what = self.originate(state, rec)
        if not rec.params["announce_preexisting"]:
            vtysh(state, rec.target, "configure terminal", block[0], AF, announce)
        rec.mechanism = f"{what}; vtysh on {rec.target}: {block[0]} / {announce} (victim {victim})"

    def announcement(self, rec: FaultRecord) -> str:
        """The line under `address-family ipv4 unicast` that announces P."""
        return f"network {rec.params['prefix']}"

    def victim(self, topo: Topology, router: str, rng: random.Random) -> tuple[str, str]:
        """(victim host, prefix P to announce)."""
        raise NotImplementedError

    def originate(self, state: LabState, rec: FaultRecord) -> str:
        """Give the router a route for P (import-check); returns what was done, in words."""
        raise NotImplementedError

    def origin_problem(self, ctx: ProbeContext, rec: FaultRecord, config: str) -> str | None:
        """None when the router's own route for P is in place."""
        raise NotImplementedError

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        config = running_config(ctx, rec.target)
        announce = rec.params.get("announce") or f"network {rec.params['prefix']}"
        if announce not in {line.strip() for line in config.splitlines()}:
            return f"`{announce}` is not under router bgp on {rec.target}"
        return self.origin_problem(ctx, rec, config)

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return reachability_problem(ctx, rec.params["victim"])

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        announce = rec.params.get("announce") or f"network {rec.params['prefix']}"
        lines = {line.strip() for line in vtysh(state, rec.target, "show running-config").splitlines()}
        if announce in lines and not rec.params.get("announce_preexisting"):
            vtysh(state, rec.target, "configure terminal", rec.params["head"], AF, f"no {announce}")
        self.withdraw(state, rec, lines)

    def withdraw(self, state: LabState, rec: FaultRecord, config_lines: set[str]) -> None:
        """Remove the router's own route for P (already gone is fine)."""
        raise NotImplementedError


class BgpBlackholeRouteLeak(BgpOrigination):
    """`bgp_blackhole_route_leak`: `ip route P Null0` + `network P`, P = a remote host's /30."""

    label = "bgp_blackhole_route_leak"
    host_lan = True
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "static `ip route P Null0` announced with `network P`",
        "redistribute_static": "static `ip route P Null0` announced by `redistribute static` (a discard route "
                               "meant to stay local leaks through redistribution)",
    }

    def announcement(self, rec: FaultRecord) -> str:
        return "redistribute static" if rec.mechanism_id == "redistribute_static" else super().announcement(rec)

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        # NIKA: a router with an attached host, and some host behind another router to blackhole
        with_hosts = {lan.router for lan in topo.lans if end_hosts(topo, lan)}
        return [r for r in super().targets(topo) if with_hosts - {r}]

    @classmethod
    def needs(cls) -> str:
        return "two BGP routers with attached host LANs"

    def victim(self, topo: Topology, router: str, rng: random.Random) -> tuple[str, str]:
        remote = sorted((i.node, i.address) for lan in topo.lans if lan.router != router
                        for i in lan.hosts if i.node in end_hosts(topo, lan))
        host, address = rng.choice(remote)
        return host, str(ipaddress.ip_network(f"{address.split('/')[0]}/30", strict=False))

    def originate(self, state: LabState, rec: FaultRecord) -> str:
        pid = start_staticd(state, rec.target)
        rec.params["staticd_pid"] = pid
        vtysh(state, rec.target, "configure terminal", f"ip route {rec.params['prefix']} Null0")
        started = f"staticd started (pid {pid}); " if pid else ""
        return f"{started}vtysh on {rec.target}: ip route {rec.params['prefix']} Null0"

    def origin_problem(self, ctx: ProbeContext, rec: FaultRecord, config: str) -> str | None:
        prefix = rec.params["prefix"]
        if f"ip route {prefix} Null0" not in config.splitlines():
            return f"no `ip route {prefix} Null0` on {rec.target}"
        routes = run_probe(ctx, "ip_route", dev=rec.target).record.routes
        if not any(r.dst == prefix and r.type == "blackhole" for r in routes):
            return f"no blackhole route for {prefix} in {rec.target}'s kernel"
        return None

    def withdraw(self, state: LabState, rec: FaultRecord, config_lines: set[str]) -> None:
        if f"ip route {rec.params['prefix']} Null0" in config_lines:
            vtysh(state, rec.target, "configure terminal", f"no ip route {rec.params['prefix']} Null0")
        stop_staticd(state, rec.params.get("staticd_pid"))


class BgpHijacking(BgpOrigination):
    """`bgp_hijacking`: the first /25 of the victim's LAN on `lo` + `network` under `router bgp`."""

    label = "bgp_hijacking"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the first /25 of the victim's /24 on lo, announced with `network`",
        "host_route": "the victim's own address as a /32 on lo, announced with `network` (a more specific "
                      "hijack of one host)",
    }

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        found = victim_lan(topo)
        return [r for r in super().targets(topo) if found and r != found[1].router]

    @classmethod
    def needs(cls) -> str:
        return "a BGP router other than the gateway of the last web server (or last host)"

    def victim(self, topo: Topology, router: str, rng: random.Random) -> tuple[str, str]:
        found = victim_lan(topo)
        if found is None:
            raise FaultError(f"{topo.scenario} has no web server or host on a LAN to hijack")
        host, lan = found
        if mechanism_of(self) == "host_route":
            return host, f"{main_ip(topo.nodes[host])}/32"
        return host, str(next(ipaddress.ip_network(lan.subnet).subnets(new_prefix=25)))

    def originate(self, state: LabState, rec: FaultRecord) -> str:
        ns = state.device(rec.target).namespace
        sh(in_ns(ns, "ip", "addr", "replace", rec.params["prefix"], "dev", "lo"), "lo address")
        return f"ip addr replace {rec.params['prefix']} dev lo on {rec.target}"

    def origin_problem(self, ctx: ProbeContext, rec: FaultRecord, config: str) -> str | None:
        for iface in run_probe(ctx, "ip_addr", dev=rec.target).record.interfaces:
            if iface.ifname == "lo" and rec.params["prefix"] in iface.addresses:
                return None
        return f"{rec.target} lo does not carry {rec.params['prefix']}"

    def withdraw(self, state: LabState, rec: FaultRecord, config_lines: set[str]) -> None:
        ns = state.device(rec.target).namespace
        sh(in_ns(ns, "ip", "addr", "del", rec.params["prefix"], "dev", "lo"), "lo address delete", check=False)


def victim_lan(topo: Topology) -> tuple[str, Lan] | None:
    """NIKA's hijack victim: the last node with role web, else the last host; with its LAN."""
    webs = [n.name for n in topo.nodes.values() if n.role == "web"]
    hosts = webs or [n.name for n in topo.nodes.values() if n.role == "host"]
    found = lan_of(topo, hosts[-1]) if hosts else None
    return (hosts[-1], found[0]) if found else None

