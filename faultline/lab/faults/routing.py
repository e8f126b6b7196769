"""Routing faults on FRR routers: the whole instance stopped, live BGP misconfigurations, a kernel blackhole.

`frr_service_down` kills the daemons by PID (there is no systemd); `bgp_missing_route_advertisement` and
`bgp_asn_misconfig` are live `vtysh` changes whose inverse is recorded; `host_static_blackhole` replaces a LAN's
connected route. Recipes: docs/lab.md#routing-faults.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from faultline.errors import FaultlineError
from faultline.lab import frr, teardown
from faultline.lab.faults import freeze
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, in_ns, lab_topology, reachability_problem, sh
from faultline.lab.frr import crash_buffers, router_dir, vtysh_args, vtysh_env
from faultline.lab.state import LabProcess, LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


def vtysh(state: LabState, router: str, *commands: str) -> str:
    """Run vtysh commands against `router`'s instance; FaultError on any error line."""
    argv = vtysh_args(Path(state.run_dir), router)
    for cmd in commands:
        argv += ["-c", cmd]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=vtysh_env())
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("%")]
    if proc.returncode != 0 or errors:
        raise FaultError(f"vtysh on {router} failed: {'; '.join(errors) or proc.stderr.strip()[:300]}")
    return proc.stdout


def mechanism_of(fault: Fault) -> str:
    """The mechanism of the injection `fault` is making ("standard" when it has no record, as in a dry edit)."""
    return fault.record.mechanism_id if fault.record is not None else "standard"


def bgp_block(running_config: str) -> list[str]:
    """The `router bgp N` block of a running config, from its first line to its closing `exit`."""
    return config_block(running_config, "router bgp ")


def config_block(running_config: str, head: str) -> list[str]:
    """The block of a running config whose first line starts with `head`, up to its closing `exit`."""
    lines = running_config.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(head)), None)
    if start is None:
        raise FaultError(f"no `{head.strip()}` block in the running config")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] in ("exit", "!"))
    return lines[start:end + 1]


def peer_down_problem(ctx: ProbeContext, topo: Topology, router: str) -> str | None:
    """None when some neighbour router's BGP session towards `router` is not Established."""
    for local, remote in topo.neighbours(router):
        addr = local.address.split("/")[0]
        rec = run_probe(ctx, "vtysh_show", dev=remote.node, command="show bgp ipv4 unicast summary json").record
        state = next((p.state for p in rec.bgp_peers if p.peer == addr), "absent")
        if state != "Established":
            return None
    return f"every neighbour of {router} still has an Established session with it"


def adjacency_lost_problem(ctx: ProbeContext, topo: Topology, router: str) -> str | None:
    """None when some neighbour router no longer has a Full OSPF adjacency with `router`."""
    checked = 0
    for local, remote in topo.neighbours(router):
        addr = local.address.split("/")[0]
        rec = run_probe(ctx, "vtysh_show", dev=remote.node, command="show ip ospf neighbor json").record
        state = next((n.state for n in rec.ospf_neighbors if n.address == addr), "absent")
        if not state.startswith("Full"):
            return None
        checked += 1
    return f"all {checked} neighbours of {router} still have a Full OSPF adjacency with it"


def lan_hosts(topo: Topology, router: str) -> list[str]:
    """Hosts on the LANs behind `router`."""
    return [h.node for lan in topo.lans if lan.router == router for h in lan.hosts]


def lan_reachability_problem(ctx: ProbeContext, topo: Topology, router: str) -> str | None:
    """None when a reachability row touching a host behind `router` is not ok."""
    for host in lan_hosts(topo, router):
        if reachability_problem(ctx, host) is None:
            return None
    return f"hosts behind {router} ({', '.join(lan_hosts(topo, router))}) reach everything"


def _wait(cond: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise FaultError(f"{what} within {timeout:.0f} s")
        time.sleep(0.05)


FRR_DAEMONS = ("zebra", "mgmtd", "staticd", "bgpd", "ospfd", "ripd")


class FrrServiceDown(Fault):
    """`frr_service_down`: the router's FRR daemons killed by PID (standard), frozen, or its protocol daemon alone
    killed while zebra keeps running."""

    label = "frr_service_down"
    roles = ("router",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "every FRR daemon of the router killed by PID (NIKA: systemctl stop frr)",
        "frozen": "every FRR daemon of the router stopped with SIGSTOP: the processes stay, nothing answers "
                  "(a hung routing stack); resumed with SIGCONT",
        "protocol_daemon": "only the routing protocol's daemon (bgpd, ospfd or ripd) killed; zebra and the "
                           "kernel routes it installed stay (a daemon crash)",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        # neither the management sshd (lab up --mgmt) nor a DHCP relay (dnsmasq) is part of the routing stack
        procs = [p for p in state.processes if p.device == rec.target and p.name in FRR_DAEMONS]
        if not procs:
            raise FaultError(f"{rec.target} runs no FRR daemons")
        if rec.mechanism_id == "protocol_daemon":
            procs = [p for p in procs if p.name in frr.PROTOCOL_DAEMONS[topo.protocol]]
        live = set(teardown.namespace_pids(procs[0].namespace))
        pids = [p.pid for p in procs if p.pid in live]
        listed = ", ".join(f"{p.name}[{p.pid}]" for p in procs)
        rec.params = {"daemons": {p.name: p.pid for p in procs}, "namespace": procs[0].namespace}
        if rec.mechanism_id == "frozen":
            freeze.freeze(pids)
            rec.mechanism = f"SIGSTOP to {listed} on {rec.target} (frozen; SIGCONT on recover)"
            return
        teardown.kill_pids(pids)
        rec.mechanism = f"killed {listed} on {rec.target}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        table = run_probe(ctx, "processes", dev=rec.target).record.processes
        daemons = rec.params["daemons"]
        alive = [p for p in table if p.comm in daemons and "<defunct>" not in p.args]
        if rec.mechanism_id == "frozen":
            pids = list(daemons.values())
            if sorted(p.pid for p in alive) != sorted(pids):
                return f"FRR daemons of {rec.target} gone or replaced: {sorted(p.pid for p in alive)} vs {pids}"
            problem = freeze.not_frozen(pids)
            return f"FRR daemons of {rec.target} {problem}" if problem else None
        running = [f"{p.comm}[{p.pid}]" for p in alive]
        return f"FRR daemons still running on {rec.target}: {', '.join(running)}" if running else None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        topo = _topo(ctx, rec)
        if topo.protocol == "ospf" and topo.neighbours(rec.target):  # no BGP session: the adjacencies go instead
            return adjacency_lost_problem(ctx, topo, rec.target)
        return peer_down_problem(ctx, topo, rec.target)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.mechanism_id == "frozen":
            freeze.thaw(list(rec.params["daemons"].values()))
            return
        ns, run_dir = rec.params["namespace"], Path(state.run_dir)
        rdir = router_dir(run_dir, rec.target)
        if any(teardown.alive(pid) and teardown.comm(pid) == name for name, pid in rec.params["daemons"].items()):
            return  # still (or again) running: nothing to undo
        killed = rec.params["daemons"]
        order = (["zebra"] if "zebra" in killed else []) + sorted(d for d in killed if d != "zebra")
        if "zebra" in killed:
            (rdir / "zserv.api").unlink(missing_ok=True)
        new: dict[str, int] = {}
        for daemon in order:
            old = killed[daemon]
            try:
                frr.start_daemon(run_dir, rec.target, daemon)
            except FaultlineError as exc:
                raise FaultError(f"restarting {daemon} on {rec.target} failed: {exc.message}") from exc
            pidfile = rdir / f"{daemon}.pid"
            _wait(lambda pidfile=pidfile, old=old:
                  pidfile.exists() and pidfile.read_text().strip() not in ("", str(old)),
                  f"{daemon} on {rec.target} did not write a new pid file")
            new[daemon] = int(pidfile.read_text().strip())
            if daemon == "zebra":
                _wait(lambda: (rdir / "zserv.api").exists(), f"zebra on {rec.target} did not open its socket")
        state.processes = [p for p in state.processes if p.device != rec.target or p.name not in killed]
        for daemon, pid in new.items():
            state.processes.append(LabProcess(pid, daemon, rec.target, ns))
            state.extra_paths.append(crash_buffers(daemon, pid))


class BgpConfigChange(Fault):
    """A live BGP configuration change with its recorded inverse (`bgp_missing_route_advertisement`)."""

    label = "bgp_missing_route_advertisement"
    roles = ("router",)
    protocols = ("bgp",)
    host_lan = True  # a spine announces only its loopback: removing that shows no symptom (docs/lab.md#routing-faults)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "`no network ...` for every prefix the router announces",
        "outbound_filter": "an outbound prefix-list on every neighbour denies the router's own prefixes (transit "
                           "routes still pass): the networks stay configured, the peers never hear of them",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        block = self.block(vtysh(state, rec.target, "show running-config"))
        forward, backward = self.change(block)
        vtysh(state, rec.target, "configure terminal", *forward)
        if rec.mechanism_id == "outbound_filter":
            vtysh(state, rec.target, "clear bgp ipv4 unicast * soft out")
        rec.params = {"forward": forward, "backward": backward}
        rec.mechanism = f"vtysh on {rec.target}: {'; '.join(c.strip() for c in forward if c.strip())[:300]}"

    def block(self, running_config: str) -> list[str]:
        """The part of the running config this change edits (the `router bgp` block)."""
        return bgp_block(running_config)

    def change(self, block: list[str]) -> tuple[list[str], list[str]]:
        """(commands that inject, commands that undo), both run from `configure terminal`."""
        head = block[0]
        nets = [line.strip() for line in block if line.strip().startswith("network ")]
        if not nets:
            raise FaultError("this router announces no prefix (NIKA: pick a router with `network` lines)")
        af = "address-family ipv4 unicast"
        if mechanism_of(self) == "outbound_filter":
            plist = [f"ip prefix-list {EXPORT_LIST} seq {5 * (i + 1)} deny {n.split()[1]}" for i, n in enumerate(nets)]
            plist.append(f"ip prefix-list {EXPORT_LIST} seq 1000 permit 0.0.0.0/0 le 32")
            bound = [f"neighbor {peer} prefix-list {EXPORT_LIST} out" for peer in bgp_peers(block)]
            return ([*plist, head, af, *bound],
                    [head, af, *[f"no {b}" for b in bound], "exit-address-family", "exit",
                     f"no ip prefix-list {EXPORT_LIST}"])
        return [head, af, *[f"no {n}" for n in nets]], [head, af, *nets]

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        text = run_probe(ctx, "vtysh_show", dev=rec.target, command="show running-config").raw
        try:
            block = self.block(text)
        except FaultError as exc:
            return str(exc)
        return self.check_block(block, rec)

    def check_block(self, block: list[str], rec: FaultRecord) -> str | None:
        """None when the running `router bgp` block carries the change."""
        present = {line.strip() for line in block}
        if rec.mechanism_id == "outbound_filter":
            missing = [c for c in rec.params["forward"] if c.startswith("neighbor ") and c not in present]
            return f"not bound on {rec.target}: {', '.join(missing)}" if missing else None
        still = [c for c in rec.params["backward"] if c.startswith("network ") and c in present]
        return f"still announced on {rec.target}: {', '.join(still)}" if still else None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return lan_reachability_problem(ctx, _topo(ctx, rec), rec.target)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if self.check_block(self.block(vtysh(state, rec.target, "show running-config")), rec) is not None:
            return  # the change is no longer in the running config: nothing to undo
        vtysh(state, rec.target, "configure terminal", *rec.params["backward"])


EXPORT_LIST = "EXPORT"  # the outbound prefix-list an operator would name after its direction


def bgp_peers(block: list[str]) -> list[str]:
    """The neighbour addresses of a `router bgp` block (from its `neighbor X remote-as N` lines)."""
    return [line.split()[1] for line in block if line.strip().startswith("neighbor ") and " remote-as " in line]


class BgpAsnMisconfig(BgpConfigChange):
    """`bgp_asn_misconfig`: the router's BGP instance re-created under AS + 600 (standard), or every neighbour's
    remote AS on the router set 600 off."""

    label = "bgp_asn_misconfig"
    host_lan = False
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the router's `router bgp N` re-created as N + 600 (its own AS wrong)",
        "remote_as": "`neighbor X remote-as` of every peer on the router set to the peer's AS + 600 (the AS it "
                     "expects of its peers wrong): each OPEN is refused with Bad Peer AS",
    }

    def change(self, block: list[str]) -> tuple[list[str], list[str]]:
        asn = int(block[0].split()[2])
        if mechanism_of(self) == "remote_as":
            right = [line.strip() for line in block if line.strip().startswith("neighbor ") and " remote-as " in line]
            wrong = [f"{' '.join(r.split()[:3])} {int(r.split()[3]) + 600}" for r in right if r.split()[3].isdigit()]
            if not wrong:
                raise FaultError("no neighbour of this router has a numeric remote-as")
            return [block[0], *wrong], [block[0], *right]
        wrong = [f"router bgp {asn + 600}", *block[1:]]
        return [f"no {block[0]}", *wrong], [f"no router bgp {asn + 600}", *block]

    def check_block(self, block: list[str], rec: FaultRecord) -> str | None:
        if rec.mechanism_id == "remote_as":
            present = {line.strip() for line in block}
            missing = [c for c in rec.params["forward"][1:] if c not in present]
            return f"not in router bgp on {rec.target}: {', '.join(missing)}" if missing else None
        expected = rec.params["forward"][1]
        return None if block[0] == expected else f"running config has `{block[0]}`, expected `{expected}`"

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return peer_down_problem(ctx, _topo(ctx, rec), rec.target)


def _topo(ctx: ProbeContext, rec: FaultRecord) -> Topology:
    state = ctx.directory
    if not isinstance(state, LabState):
        raise FaultError(f"verifying {rec.label} needs a ProbeContext built from the lab state (lab.probe_context)")
    return lab_topology(state)


class HostStaticBlackhole(Fault):
    """`host_static_blackhole`: the router's attached host subnet turned into a kernel blackhole route (standard)
    or an unreachable route (the router answers its hosts' traffic with ICMP unreachable instead of dropping it)."""

    label = "host_static_blackhole"
    roles = ("router",)
    host_lan = True
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "ip route replace blackhole <LAN subnet> (packets dropped silently)",
        "unreachable": "ip route replace unreachable <LAN subnet> (packets refused with ICMP host unreachable)",
    }

    def route_type(self, rec: FaultRecord) -> str:
        """The kernel route type this injection uses."""
        return "unreachable" if rec.mechanism_id == "unreachable" else "blackhole"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        lan = rng.choice([lan for lan in topo.lans if lan.router == rec.target and lan.hosts])
        ns, kind = state.device(rec.target).namespace, self.route_type(rec)
        sh(in_ns(ns, "ip", "route", "replace", kind, lan.subnet), f"{kind} route")
        rec.params = {"subnet": lan.subnet, "ifname": lan.gateway.name, "src": lan.gateway.address.split("/")[0],
                      "type": kind}
        rec.mechanism = f"ip route replace {kind} {lan.subnet} in {rec.target} (its connected host LAN)"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        routes = run_probe(ctx, "ip_route", dev=rec.target).record.routes
        kind = self.route_type(rec)
        if any(r.dst == rec.params["subnet"] and r.type == kind for r in routes):
            return None
        return f"no {kind} route for {rec.params['subnet']} on {rec.target}"

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return lan_reachability_problem(ctx, _topo(ctx, rec), rec.target)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns, subnet, kind = state.device(rec.target).namespace, rec.params["subnet"], self.route_type(rec)
        sh(in_ns(ns, "ip", "route", "del", kind, subnet), f"{kind} delete", check=False)
        sh(in_ns(ns, "ip", "route", "replace", subnet, "dev", rec.params["ifname"], "proto", "kernel", "scope", "link",
                 "src", rec.params["src"]), "connected route restore")
