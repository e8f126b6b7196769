"""Link faults: an interface administratively down (`link_down`), flapping (`link_flap`), or gone (`link_detach`).

The flap toggles the peer's end from the root namespace and the detach parks the interface in a namespace of its
own, as NIKA v2 does. Second mechanisms: the link shut at its far end (the switch or router port facing the
target: the target's interface stays up without carrier) and a flapping NIC on the target's own end, whose
routes come back each time it does (as a network manager re-adds them). Recipes: docs/lab.md#link-faults.
"""

from __future__ import annotations

import json
import random
import shlex
from typing import ClassVar

from faultline.lab.faults.base import (
    Fault,
    FaultError,
    FaultRecord,
    helper_alive,
    in_ns,
    sh,
    start_helper,
    stop_helper,
)
from faultline.lab.faults.interfaces import interface_state, pick_interface, set_addressing, snapshot, veth_peer
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import END_HOST_ROLES


class LinkDown(Fault):
    """`ip link set IF down` on one end of a link (NIKA v1: the node's own interface)."""

    label = "link_down"
    roles = ("host", "router")
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "ip link set IF down on the target itself",
        "far_end": "the port at the other end of the target's link (the switch or router port facing it) set "
                   "down: the target's interface stays administratively up without carrier",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        ns = state.device(rec.target).namespace
        if rec.mechanism_id == "far_end":
            ifname, far_node, far_ns, far_if = far_port(state, topo, rec.target, ifname, rng)
            rec.params = {"ifname": ifname, "routes": static_routes(ns, ifname), "far_node": far_node,
                          "far_ifname": far_if, "far_routes": static_routes(far_ns, far_if)}
            sh(["ip", "-n", far_ns, "link", "set", far_if, "down"], "far end down")
        else:
            rec.params = {"ifname": ifname, "routes": static_routes(ns, ifname)}
            sh(in_ns(ns, "ip", "link", "set", ifname, "down"), "link down")
        peer = next((remote for local, remote in topo.neighbours(rec.target) if local.name == ifname), None)
        if peer is not None:  # a router-to-router link: its routing session is what breaks
            rec.params["peer"] = {"node": peer.node, "ip": peer.address.split("/")[0],
                                  "router_id": (topo.nodes[peer.node].loopback or "").split("/")[0]}
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        rec.mechanism = f"ip link set {ifname} down in {rec.target}"
        if rec.mechanism_id == "far_end":
            rec.mechanism = (f"ip link set {rec.params['far_ifname']} down in {rec.params['far_node']}, the far end of "
                             f"{rec.target} {ifname} (which stays up without carrier)")
            # the link is down at both ends' devices: the port set down is the far end's, the user is the target
            rec.faulty_devices = sorted({rec.target, rec.params["far_node"]})

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        """On a redundant fabric link traffic reroutes at once, so the symptom is the lost adjacency."""
        peer = rec.params.get("peer")
        if peer is None:
            return super().symptom_problem(ctx, rec)
        bgp = run_probe(ctx, "vtysh_show", dev=rec.target, command="show bgp ipv4 unicast summary json").record
        states = {p.peer: p.state for p in bgp.bgp_peers}
        if peer["ip"] in states:
            return None if states[peer["ip"]] != "Established" else f"BGP session to {peer['node']} still Established"
        ospf = run_probe(ctx, "vtysh_show", dev=rec.target, command="show ip ospf neighbor json").record
        if ospf.data is not None and not ospf.daemon_down:
            full = [n for n in ospf.ospf_neighbors if n.neighbor_id == peer["router_id"] and n.state.startswith("Full")
                    and (n.interface or "").split(":")[0] == rec.params["ifname"]]
            return None if not full else f"OSPF adjacency with {peer['node']} over {rec.params['ifname']} still Full"
        return super().symptom_problem(ctx, rec)

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        found = interface_state(ctx, rec.target, rec.params["ifname"])
        if found is None:
            return f"{rec.target} has no interface {rec.params['ifname']}"
        operstate, flags = found
        if "far_node" not in rec.params:
            if "UP" in flags:
                return f"{rec.target} {rec.params['ifname']} is administratively up (operstate {operstate})"
            return None
        if "LOWER_UP" in flags:
            return f"{rec.target} {rec.params['ifname']} still has carrier ({', '.join(flags)})"
        far = interface_state(ctx, rec.params["far_node"], rec.params["far_ifname"])
        if far is None or "UP" in far[1]:
            return f"{rec.params['far_node']} {rec.params['far_ifname']} is {'missing' if far is None else 'up'}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns, ifname = state.device(rec.target).namespace, rec.params["ifname"]
        if "far_node" in rec.params:
            far_ns = state.device(rec.params["far_node"]).namespace
            sh(["ip", "-n", far_ns, "link", "set", rec.params["far_ifname"], "up"], "far end up")
            restore_routes(far_ns, rec.params["far_ifname"], rec.params["far_routes"])
        else:
            sh(in_ns(ns, "ip", "link", "set", ifname, "up"), "link up")
        restore_routes(ns, ifname, rec.params.get("routes", []))


def far_port(state: LabState, topo: Topology, device: str, ifname: str,
             rng: random.Random) -> tuple[str, str, str, str]:
    """(interface, far node, its namespace, its port) of a link of `device` whose far end is a router or switch
    port: `ifname` when its far end is one, else a seeded choice among the others. The far end of an end host's
    own NIC is never used: that port down is the host's `link_down`, not this device's."""
    by_ns = {d.namespace: d for d in state.devices()}
    ns = state.device(device).namespace
    names = [ifname] + sorted(i.name for i in topo.nodes[device].interfaces if i.name.startswith("eth")
                              and i.name != ifname)
    usable = []
    for name in names:
        far_ns, far_if = veth_peer(ns, name)
        far = by_ns.get(far_ns)
        if far is not None and far.role not in END_HOST_ROLES:
            usable.append((name, far.name, far_ns, far_if))
    if not usable:
        raise FaultError(f"no link of {device} ends at a router or switch port", fix="use mechanism standard")
    return usable[0] if usable[0][0] == ifname else rng.choice(usable)


def static_routes(namespace: str, ifname: str) -> list[list[str]]:
    """[dst, gateway] of the static routes through `ifname` (the kernel flushes them when the interface goes down;
    routing daemons put their own back)."""
    routes = json.loads(sh(in_ns(namespace, "ip", "-j", "route", "show", "dev", ifname), "route list").stdout or "[]")
    return [[r["dst"], r["gateway"]] for r in routes
            if r.get("protocol", "boot") in ("boot", "static") and r.get("gateway")]


def restore_routes(namespace: str, ifname: str, routes: list[list[str]]) -> None:
    """Put `static_routes` back (replace: a route still there is fine)."""
    for dst, gateway in routes:
        sh(in_ns(namespace, "ip", "route", "replace", dst, "via", gateway, "dev", ifname), "route restore")


def lan_gateway(topo: Topology, host: str) -> str | None:
    """The gateway address of the LAN a host sits on (None when it is on none)."""
    lans = [lan for lan in topo.lans if any(h.node == host for h in lan.hosts)]
    return lans[0].gateway.address.split("/")[0] if lans else None


class LinkFlap(Fault):
    """`link_flap`: the host's link toggled down/up every second from outside the host."""

    label = "link_flap"
    roles = ("host",)
    period_s = 1
    late_ms = 200.0  # a lab ping normally takes well under 1 ms
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the peer's veth end (the port facing the host) set down 1 s, up 1 s by a root-namespace loop",
        "own_end": "the host's own interface reset down 1 s, up 1 s (a NIC losing its link over and over), its "
                   "routes re-added each time it comes up, from a root-namespace loop",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        if rec.mechanism_id == "own_end":
            self.apply_own_end(state, topo, rec, ifname)
            return
        peer_ns, peer_if = veth_peer(state.device(rec.target).namespace, ifname)
        marker = f"fl-flap-{rec.id}"
        script = (f'while :; do ip -n "$1" link set "$2" down; sleep {self.period_s}; '
                  f'ip -n "$1" link set "$2" up; sleep {self.period_s}; done')
        pid = start_helper(["sh", "-c", script, marker, peer_ns, peer_if])
        rec.params = {"ifname": ifname, "peer_ns": peer_ns, "peer_ifname": peer_if,
                      "gateway": lan_gateway(topo, rec.target), "helper_pid": pid, "helper_marker": marker}
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        rec.mechanism = (f"root-namespace toggler (pid {pid}) sets {peer_ns} {peer_if} (peer of {rec.target} {ifname}) "
                         f"down {self.period_s} s / up {self.period_s} s")

    def apply_own_end(self, state: LabState, topo: Topology, rec: FaultRecord, ifname: str) -> None:
        """Mechanism `own_end`: the toggler flips the host's own interface and puts its static routes back."""
        ns = state.device(rec.target).namespace
        routes = static_routes(ns, ifname)
        marker = f"ifmon-{rec.id}"
        readd = "".join(f"ip -n \"$1\" route replace {shlex.quote(dst)} via {shlex.quote(gw)} dev \"$2\" 2>/dev/null; "
                        for dst, gw in routes)
        script = (f'while :; do ip -n "$1" link set "$2" down; sleep {self.period_s}; '
                  f'ip -n "$1" link set "$2" up; {readd}sleep {self.period_s}; done')
        pid = start_helper(["sh", "-c", script, marker, ns, ifname])
        rec.params = {"ifname": ifname, "own_ns": ns, "routes": routes, "gateway": lan_gateway(topo, rec.target),
                      "helper_pid": pid, "helper_marker": marker}
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        rec.mechanism = (f"root-namespace toggler (pid {pid}) sets {rec.target} {ifname} down {self.period_s} s / up "
                         f"{self.period_s} s, re-adding its routes ({', '.join(d for d, _ in routes) or 'none'}) "
                         "each time")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if not helper_alive(rec.params["helper_pid"], rec.params["helper_marker"]):
            return f"the toggler (pid {rec.params['helper_pid']}) is not running"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        # 10 pings over 2 s to the gateway span at least one down period: they are lost, or (with the
        # peer end down, a host's packets can wait in its queue) come back hundreds of ms late
        gateway = rec.params.get("gateway")
        if not gateway:
            return f"{rec.target} has no gateway to ping"
        res = run_probe(ctx, "ping", src=rec.target, dst_ip=gateway, count=10).record
        if res.loss_pct > 0 or (res.rtt_max_ms or 0) > self.late_ms or res.status != "ok":
            return None
        return f"10 pings {rec.target} -> {gateway}: no loss, max rtt {res.rtt_max_ms} ms"

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        stop_helper(rec.params["helper_pid"], rec.params["helper_marker"])
        if "own_ns" in rec.params:
            sh(["ip", "-n", rec.params["own_ns"], "link", "set", rec.params["ifname"], "up"], "link up")
            restore_routes(rec.params["own_ns"], rec.params["ifname"], rec.params["routes"])
            return
        sh(["ip", "-n", rec.params["peer_ns"], "link", "set", rec.params["peer_ifname"], "up"], "peer link up")


class LinkDetach(Fault):
    """`link_detach`: the host's eth0 moved into a parking namespace."""

    label = "link_detach"
    roles = ("host",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the host's eth0 moved into a parking namespace (NIKA v2)",
        "renamed": "the host's NIC re-enumerated under another name (as after a driver reload): eth0 is gone and "
                   "the new, unconfigured interface is down, so nothing of eth0's configuration applies",
    }
    new_names: ClassVar[tuple[str, ...]] = ("ens3", "ens4", "enp0s3", "enp1s0")

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        ns = state.device(rec.target).namespace
        before = snapshot(ns) if ifname == "eth0" else {"addresses": [], "routes": []}
        if rec.mechanism_id == "renamed":
            new = rng.choice(self.new_names)
            for step in (("link", "set", ifname, "down"), ("-4", "addr", "flush", "dev", ifname),
                         ("link", "set", ifname, "name", new)):
                sh(in_ns(ns, "ip", *step), "rename interface")
            rec.params = {"ifname": ifname, "new_name": new, "before": before}
            rec.resource_id = f"interface/{rec.target}/{ifname}"
            rec.mechanism = f"{rec.target} {ifname} set down, unconfigured and renamed {new} (restored on recover)"
            return
        park = f"{ns.split('-', 1)[0]}-park-{rec.id}"
        state.namespaces.append(park)  # recorded first: `lab down` deletes it whatever happens next
        state.save()
        sh(["ip", "netns", "add", park], "parking namespace")
        sh(["ip", "-n", ns, "link", "set", ifname, "netns", park], "move interface")
        rec.params = {"ifname": ifname, "park": park, "before": before}
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        rec.mechanism = f"{rec.target} {ifname} moved into namespace {park} (detached; restored on recover)"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if interface_state(ctx, rec.target, rec.params["ifname"]) is not None:
            return f"{rec.target} still has {rec.params['ifname']}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "new_name" in rec.params:
            ns, ifname, new = state.device(rec.target).namespace, rec.params["ifname"], rec.params["new_name"]
            if sh(in_ns(ns, "ip", "link", "show", "dev", new), "renamed link", check=False).returncode == 0:
                sh(in_ns(ns, "ip", "link", "set", new, "name", ifname), "rename back")
                sh(in_ns(ns, "ip", "link", "set", ifname, "up"), "link up")
                set_addressing(ns, rec.params["before"]["addresses"], rec.params["before"]["routes"])
            return
        ns, ifname, park = state.device(rec.target).namespace, rec.params["ifname"], rec.params["park"]
        parked = sh(["ip", "-n", park, "link", "show", "dev", ifname], "parked link", check=False).returncode == 0
        if parked:
            sh(["ip", "-n", park, "link", "set", ifname, "netns", ns], "move interface back")
            sh(in_ns(ns, "ip", "link", "set", ifname, "up"), "link up")
            before = rec.params["before"]
            set_addressing(ns, before["addresses"], before["routes"])
        sh(["ip", "netns", "del", park], "delete parking namespace", check=False)
        state.namespaces = [n for n in state.namespaces if n != park]
