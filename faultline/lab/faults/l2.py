"""Layer-2 faults: a forged ARP entry on a host, two end hosts sharing one MAC on a bridged LAN.

`arp_cache_poisoning` as NIKA v1 (a permanent entry), or as a spoofer leaves it (an ordinary learned entry for
the gateway, re-poisoned every second by forged replies, here a root-namespace loop); `mac_address_conflict` on a
shared LAN, since on a veth point-to-point link a copied MAC changes nothing. Recipes and recovery:
docs/lab.md#layer-2-faults.
"""

from __future__ import annotations

import json
import random
from typing import ClassVar

from faultline.lab.faults.base import (
    Fault,
    FaultError,
    FaultRecord,
    helper_alive,
    in_ns,
    poll,
    sh,
    start_helper,
    stop_helper,
)
from faultline.lab.state import LabState
from faultline.lab.topology import Interface, Lan, Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import END_HOST_ROLES

FORGED_MAC = "00:11:22:33:44:55"


def lan_of(topo: Topology, host: str) -> tuple[Lan, Interface] | None:
    """The LAN an end host sits on and its interface there (None when it is on none)."""
    for lan in topo.lans:
        for iface in lan.hosts:
            if iface.node == host:
                return lan, iface
    return None


def require_lan(topo: Topology, host: str) -> tuple[Lan, Interface]:
    """`lan_of`, or FaultError when the host sits on no LAN."""
    found = lan_of(topo, host)
    if found is None:
        raise FaultError(f"{host} sits on no LAN")
    return found


def end_hosts(topo: Topology, lan: Lan) -> list[str]:
    """The LAN's members with an end-host role (not switches or routers), in address order."""
    return [i.node for i in lan.hosts if topo.nodes[i.node].role in END_HOST_ROLES]


def link_mac(namespace: str, ifname: str) -> str:
    """The MAC address of one interface, read now."""
    info = json.loads(sh(["ip", "-n", namespace, "-j", "link", "show", "dev", ifname], "link show").stdout or "[]")
    if not info or "address" not in info[0]:
        raise FaultError(f"{ifname} in {namespace} has no MAC address")
    return str(info[0]["address"])


def probed_mac(ctx: ProbeContext, device: str, ifname: str) -> str | None:
    """One interface's MAC through the `ip_link` probe (None when the interface does not exist)."""
    for iface in run_probe(ctx, "ip_link", dev=device).record.interfaces:
        if iface.ifname == ifname:
            return iface.mac
    return None


class ArpCachePoisoning(Fault):
    """`arp_cache_poisoning`: a permanent neighbour entry mapping the host's gateway to a forged MAC."""

    label = "arp_cache_poisoning"
    roles = ("host", "client")  # NIKA's H: pcs, hosts and clients
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "ip neigh replace GATEWAY lladdr 00:11:22:33:44:55 nud permanent (v1's arp -s)",
        "spoofed": "the gateway's entry re-learned as a spoofer's MAC (seeded, locally administered) every second, "
                   "as forged ARP replies leave it: an ordinary STALE/DELAY entry, never a permanent one",
    }
    refresh_s: ClassVar[float] = 1.0

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [h for h in super().targets(topo) if lan_of(topo, h) is not None]

    @classmethod
    def needs(cls) -> str:
        return "a host on a LAN with a gateway"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        lan, iface = require_lan(topo, rec.target)
        gateway = lan.gateway.address.split("/")[0]
        ns = state.device(rec.target).namespace
        if rec.mechanism_id == "spoofed":
            mac = spoofer_mac(rng)
            marker = f"neigh-{rec.id}"
            script = (f'while :; do ip -n "$1" neigh replace "$2" lladdr "$3" nud stale dev "$4"; '
                      f'sleep {self.refresh_s:g}; done')
            # the first forged entry now, so the fault is there when inject returns; the loop keeps it there
            sh(in_ns(ns, "ip", "neigh", "replace", gateway, "lladdr", mac, "nud", "stale", "dev", iface.name),
               "forged neighbour entry")
            pid = start_helper(["sh", "-c", script, marker, ns, gateway, mac, iface.name])
            rec.params = {"gateway": gateway, "ifname": iface.name, "mac": mac, "helper_pid": pid,
                          "helper_marker": marker}
            rec.mechanism = (f"{rec.target}'s entry for {gateway} on {iface.name} set to {mac} (nud stale) every "
                             f"{self.refresh_s:g} s by a root-namespace loop (pid {pid}), as forged ARP replies do")
            return
        sh(in_ns(ns, "ip", "neigh", "replace", gateway, "lladdr", FORGED_MAC,
                 "nud", "permanent", "dev", iface.name), "forged neighbour entry")
        rec.params = {"gateway": gateway, "ifname": iface.name}
        rec.mechanism = f"ip neigh replace {gateway} lladdr {FORGED_MAC} nud permanent dev {iface.name} on {rec.target}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        gateway = rec.params["gateway"]
        if "helper_pid" in rec.params:
            if not helper_alive(rec.params["helper_pid"], rec.params["helper_marker"]):
                return f"the spoofing loop (pid {rec.params['helper_pid']}) is not running"

            def forged() -> str | None:
                entries = [n for n in run_probe(ctx, "ip_neigh", dev=rec.target).record.neighbors
                           if n.dst == gateway and n.dev == rec.params["ifname"]]
                if any(n.lladdr == rec.params["mac"] for n in entries):
                    return None
                return f"{rec.target}'s entry for {gateway} is not {rec.params['mac']}: {entries}"

            # the gateway's own ARP traffic can set the real MAC back for a moment until the next forged reply
            return poll(forged, 3 * self.refresh_s)
        for n in run_probe(ctx, "ip_neigh", dev=rec.target).record.neighbors:
            if n.dst == gateway and n.dev == rec.params["ifname"]:
                if n.lladdr == FORGED_MAC and "PERMANENT" in n.state:
                    return None
                return (f"{rec.target}'s entry for {gateway} is {n.lladdr} {'/'.join(n.state)}, "
                        f"not {FORGED_MAC} PERMANENT")
        return f"{rec.target} has no neighbour entry for {gateway}"

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "helper_pid" in rec.params:
            stop_helper(rec.params["helper_pid"], rec.params["helper_marker"])
        sh(in_ns(state.device(rec.target).namespace, "ip", "neigh", "del", rec.params["gateway"], "dev",
                 rec.params["ifname"]), "neighbour delete", check=False)


def spoofer_mac(rng: random.Random) -> str:
    """A seeded unicast, locally administered MAC (as a virtual machine's NIC has)."""
    return ":".join(["02", *(f"{rng.randrange(256):02x}" for _ in range(5))])


class MacAddressConflict(Fault):
    """`mac_address_conflict`: end host A (the target) takes the MAC of end host B on the same bridged LAN."""

    label = "mac_address_conflict"
    roles = tuple(sorted(END_HOST_ROLES))
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "ip link set eth0 address <B's MAC> on host A",
        "macvlan": "host A's address and routes moved onto a macvlan interface on eth0 that carries B's MAC (a "
                   "virtual NIC with a cloned MAC, as a VM or container host has); eth0 keeps its own MAC",
    }
    vif: ClassVar[str] = "macvlan0"

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        allowed = set(super().targets(topo))
        segments = [end_hosts(topo, lan) for lan in topo.lans if lan.bridged]
        return sorted(h for hosts in segments if len(hosts) >= 2 for h in hosts if h in allowed)

    @classmethod
    def needs(cls) -> str:
        return "two end hosts on one bridged LAN (a point-to-point veth shows no symptom)"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        lan, iface = require_lan(topo, rec.target)
        victim = rng.choice([h for h in end_hosts(topo, lan) if h != rec.target])
        victim_if = next(i for i in lan.hosts if i.node == victim)
        ns = state.device(rec.target).namespace
        original = link_mac(ns, iface.name)
        shared = link_mac(state.device(victim).namespace, victim_if.name)
        rec.params = {"ifname": iface.name, "original_mac": original, "victim": victim,
                      "victim_ifname": victim_if.name, "mac": shared, "router": lan.router,
                      "bridge": lan.gateway.name, "switches": list(lan.switches),
                      "members": [i.node for i in lan.hosts],
                      "addresses": [i.address.split("/")[0] for i in (iface, victim_if)]}
        rec.faulty_devices = sorted([rec.target, victim])
        rec.resource_id = f"interface/{rec.target}/{iface.name}"
        if rec.mechanism_id == "macvlan":
            self.apply_macvlan(ns, rec, iface.name, shared)
            rec.mechanism = (f"{rec.target}: {self.vif} (macvlan on {iface.name}) with {victim} {victim_if.name}'s "
                             f"MAC {shared} carries {rec.target}'s addresses and routes, on the bridged LAN "
                             f"{lan.subnet} behind {lan.router}")
            return
        sh(in_ns(ns, "ip", "link", "set", "dev", iface.name, "address", shared), "MAC change")
        rec.mechanism = (f"{rec.target} {iface.name} MAC {original} -> {shared} ({victim} {victim_if.name}'s MAC) "
                         f"on the bridged LAN {lan.subnet} behind {lan.router}")

    def apply_macvlan(self, namespace: str, rec: FaultRecord, ifname: str, shared: str) -> None:
        """Mechanism `macvlan`: the host's addressing moved onto a macvlan with the shared MAC."""
        shown = json.loads(sh(in_ns(namespace, "ip", "-j", "-4", "addr", "show", "dev", ifname), "addr list").stdout
                           or "[]")
        addresses = [f"{a['local']}/{a['prefixlen']}" for link in shown for a in link.get("addr_info", [])]
        routes = json.loads(sh(in_ns(namespace, "ip", "-j", "route", "show", "dev", ifname), "route list").stdout
                            or "[]")
        gateways = [[r["dst"], r["gateway"]] for r in routes if r.get("gateway")]
        rec.params.update({"mac_ifname": self.vif, "moved_addresses": addresses, "moved_routes": gateways})
        steps = [("link", "add", "link", ifname, "name", self.vif, "address", shared, "type", "macvlan", "mode",
                  "bridge"), ("-4", "addr", "flush", "dev", ifname), ("link", "set", self.vif, "up"),
                 *(("addr", "add", cidr, "dev", self.vif) for cidr in addresses),
                 *(("route", "replace", dst, "via", gw, "dev", self.vif) for dst, gw in gateways)]
        for step in steps:
            sh(in_ns(namespace, "ip", *step), "macvlan")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        shared = rec.params["mac"]
        own = rec.params.get("mac_ifname", rec.params["ifname"])
        for device, ifname in ((rec.target, own), (rec.params["victim"], rec.params["victim_ifname"])):
            mac = probed_mac(ctx, device, ifname)
            if mac != shared:
                return f"{device} {ifname} has MAC {mac}, not the shared {shared}"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        pair = {rec.target, rec.params["victim"]}
        rows = run_probe(ctx, "reachability", sources=sorted(pair), targets=sorted(pair), count=2).record.rows
        if all(r.status == "ok" for r in rows):
            return f"{' and '.join(sorted(pair))} still reach each other"
        # the pings just sent made both ports send with the shared MAC: the segment's bridge must know it
        fdb = run_probe(ctx, "bridge_fdb", dev=rec.params["router"]).record.entries
        if not any(e.mac == rec.params["mac"] and e.master == rec.params["bridge"] for e in fdb):
            return f"{rec.params['router']} {rec.params['bridge']} FDB has no entry for {rec.params['mac']}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns = state.device(rec.target).namespace
        if "mac_ifname" in rec.params:
            sh(in_ns(ns, "ip", "link", "del", rec.params["mac_ifname"]), "macvlan delete", check=False)
            ifname = rec.params["ifname"]
            for cidr in rec.params["moved_addresses"]:
                sh(in_ns(ns, "ip", "addr", "replace", cidr, "dev", ifname), "address back")
            for dst, gateway in rec.params["moved_routes"]:
                sh(in_ns(ns, "ip", "route", "replace", dst, "via", gateway, "dev", ifname), "route back")
        if link_mac(ns, rec.params["ifname"]) != rec.params["original_mac"]:
            sh(in_ns(ns, "ip", "link", "set", "dev", rec.params["ifname"], "address", rec.params["original_mac"]),
               "MAC restore")
        router_ns = state.device(rec.params["router"]).namespace
        bridges = [(router_ns, rec.params["bridge"])]
        for switch in rec.params["switches"]:
            sw_ns = state.device(switch).namespace
            shown = sh(["ip", "-n", sw_ns, "-j", "link", "show", "type", "bridge"], "bridge list").stdout
            bridges += [(sw_ns, b["ifname"]) for b in json.loads(shown or "[]")]
        for bridge_ns, bridge in bridges:
            sh(["ip", "-n", bridge_ns, "link", "set", "dev", bridge, "type", "bridge", "fdb_flush"], "FDB flush")
        for device in (rec.params["router"], *rec.params["members"]):
            for address in rec.params["addresses"]:
                sh(["ip", "-n", state.device(device).namespace, "neigh", "flush", "to", address], "neighbour flush",
                   check=False)

