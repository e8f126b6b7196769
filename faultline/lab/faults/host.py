"""End-host faults (NIKA v1 `host_*`): eth0's address or default route changed by hand, or the host crashed.

The addressing faults record eth0's addresses and gateway routes first and recovery puts exactly those back;
`host_crash` (partial: no container to kill) kills the namespace's processes and sets its interfaces down.
Values and recipes: docs/lab.md#host-faults.
"""

from __future__ import annotations

import ipaddress
import random

from faultline.lab import mgmt, teardown
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, sh
from faultline.lab.faults.interfaces import IFNAME, interface_state, set_addressing, snapshot, veth_peer
from faultline.lab.service_ops import service_process, service_running, start_recorded
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


def host_lan(topo: Topology, host: str) -> tuple[str, str]:
    """(eth0 address with prefix, gateway address) of a host, from the topology."""
    for lan in topo.lans:
        for iface in lan.hosts:
            if iface.node == host and iface.name == IFNAME:
                return iface.address, lan.gateway.address.split("/")[0]
    raise FaultError(f"{host} has no {IFNAME} on a LAN with a gateway")


def eth0_addresses(ctx: ProbeContext, device: str) -> list[str] | None:
    """eth0's IPv4 addresses through the `ip_addr` probe (None when there is no eth0)."""
    for iface in run_probe(ctx, "ip_addr", dev=device).record.interfaces:
        if iface.ifname == IFNAME:
            return [a for a in iface.addresses if ":" not in a]
    return None


def default_gateways(ctx: ProbeContext, device: str) -> list[str]:
    """Gateways of the default route(s) through the `ip_route` probe."""
    routes = run_probe(ctx, "ip_route", dev=device).record.routes
    return [gw for r in routes if r.dst == "default" for gw in ([r.gateway] if r.gateway else r.nexthops)]


class HostAddressing(Fault):
    """Base: replace eth0's addressing with `wanted()`; the artifact is that addressing, checked by probe."""

    roles = ("host",)

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ns = state.device(rec.target).namespace
        address, gateway = host_lan(topo, rec.target)
        before = snapshot(ns)
        addresses, routes, what = self.wanted(state, topo, rec, address, gateway, rng)
        rec.params.update({"before": before, "addresses": addresses, "routes": routes})
        set_addressing(ns, addresses, routes)
        rec.resource_id = f"interface/{rec.target}/{IFNAME}"
        rec.mechanism = f"{rec.target} {IFNAME}: {what}"

    def wanted(self, state: LabState, topo: Topology, rec: FaultRecord, address: str, gateway: str,
               rng: random.Random) -> tuple[list[str], list[list[str]], str]:
        """(eth0 addresses, [dst, gateway] routes, description) of the faulty addressing."""
        raise NotImplementedError

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        have = eth0_addresses(ctx, rec.target)
        if have is None:
            return f"{rec.target} has no {IFNAME}"
        if sorted(have) != sorted(rec.params["addresses"]):
            wanted = rec.params["addresses"] or "none"
            return f"{rec.target} {IFNAME} has {have or 'no address'}, the fault set {wanted}"
        wanted_gw = [gw for dst, gw in rec.params["routes"] if dst == "default"]
        have_gw = default_gateways(ctx, rec.target)
        if sorted(have_gw) != sorted(wanted_gw):
            return f"{rec.target} default via {have_gw or 'nothing'}, the fault set {wanted_gw or 'none'}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        before = rec.params["before"]
        set_addressing(state.device(rec.target).namespace, before["addresses"], before["routes"])


class HostMissingIp(HostAddressing):
    """`host_missing_ip`: eth0's address deleted."""

    label = "host_missing_ip"

    def wanted(self, state, topo, rec, address, gateway, rng):
        return [], [], f"ip addr del {address} (default route removed with it)"


class HostIncorrectIp(HostAddressing):
    """`host_incorrect_ip`: 10.2.1.x/24 with default via 10.2.1.1."""

    label = "host_incorrect_ip"

    def wanted(self, state, topo, rec, address, gateway, rng):
        wrong = f"10.2.1.{rng.randint(2, 254)}/24"
        return [wrong], [["default", "10.2.1.1"]], f"address {address} replaced by {wrong}, default via 10.2.1.1"


class HostIncorrectGateway(HostAddressing):
    """`host_incorrect_gateway`: default via the gateway's subnet address ending in .254."""

    label = "host_incorrect_gateway"

    def wanted(self, state, topo, rec, address, gateway, rng):
        wrong = ".".join(gateway.split(".")[:3] + ["254"])
        if wrong == gateway:
            raise FaultError(f"{rec.target}'s gateway already ends in .254")
        return [address], [["default", wrong]], f"default route via {wrong} instead of {gateway}"


class HostIncorrectNetmask(HostAddressing):
    """`host_incorrect_netmask`: the same address with /8."""

    label = "host_incorrect_netmask"

    def wanted(self, state, topo, rec, address, gateway, rng):
        wrong = f"{address.split('/')[0]}/8"
        return [wrong], [["default", gateway]], f"address {address} re-added as {wrong}, default via {gateway}"


class HostIpConflict(HostAddressing):
    """`host_ip_conflict`: the target (host B) takes another host A's address and gateway."""

    label = "host_ip_conflict"

    def wanted(self, state, topo, rec, address, gateway, rng):
        others = sorted(d.name for d in state.devices() if d.role == "host" and d.name != rec.target
                        and host_lan_or_none(topo, d.name) is not None)
        if not others:
            raise FaultError("host_ip_conflict needs a second host with an address")
        victim = rng.choice(others)
        victim_addr, victim_gw = host_lan(topo, victim)
        if ipaddress.ip_interface(victim_addr).ip == ipaddress.ip_interface(address).ip:
            raise FaultError(f"{victim} and {rec.target} already share an address")
        rec.params["victim"] = victim
        rec.faulty_devices = sorted([rec.target, victim])
        return ([victim_addr], [["default", victim_gw]],
                f"address {address} replaced by {victim}'s {victim_addr}, default via {victim_gw}")


def host_lan_or_none(topo: Topology, host: str) -> tuple[str, str] | None:
    try:
        return host_lan(topo, host)
    except FaultError:
        return None


class HostCrash(Fault):
    """`host_crash`: the host's processes killed and its own network interfaces gone dark."""

    label = "host_crash"
    roles = ("host",)

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ns = state.device(rec.target).namespace
        names = sorted(i.name for i in topo.nodes[rec.target].interfaces if i.name.startswith("eth"))
        peers = [[*veth_peer(ns, name), name] for name in names]
        by_ns = {d.namespace: d.name for d in state.devices()}
        if not peers or any(p[0] not in by_ns for p in peers):
            raise FaultError(f"{rec.target}'s veth peers are not all lab devices: {peers}")
        before = snapshot(ns)
        pids = teardown.namespace_pids(ns)
        killed = [f"{teardown.comm(pid)}[{pid}]" for pid in pids]
        teardown.kill_pids(pids)
        # a dead machine's NIC stops signalling: its own end goes down, the switch or router port stays
        # administratively up and loses carrier (setting that port down would be `link_down` on it)
        for name in names:
            sh(["ip", "-n", ns, "link", "set", name, "down"], "own link down")
        mgmt.crash_node(state, rec.target)
        rec.params = {"peers": [[by_ns[p], p, i, own] for p, i, own in peers], "killed": killed, "own": names,
                      "before": before}
        rec.mechanism = (f"{rec.target} crashed: killed {', '.join(killed) or 'no processes'}; its "
                         f"{', '.join(names)} went dark (set down inside the host), so "
                         f"{', '.join(f'{d}:{i}' for d, _, i, _ in rec.params['peers'])} stay up without carrier "
                         "(substitute for docker kill: no container)")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        for device, _, ifname, own in rec.params["peers"]:
            found = interface_state(ctx, device, ifname)
            if found is None:
                return f"{device} has no {ifname} (far end of {rec.target} {own})"
            if "own" in rec.params and ("UP" not in found[1] or "LOWER_UP" in found[1]):
                return f"{device} {ifname} (far end of {rec.target} {own}) is not up without carrier: {found[1]}"
            if "own" not in rec.params and "UP" in found[1]:
                return f"{device} {ifname} (far end of {rec.target} {own}) is up"
        for name in rec.params.get("own", []):
            found = interface_state(ctx, rec.target, name)
            if found is not None and "UP" in found[1]:
                return f"{rec.target} {name} is still up"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "own" in rec.params:
            ns = state.device(rec.target).namespace
            for name in rec.params["own"]:
                sh(["ip", "-n", ns, "link", "set", name, "up"], "own link up")
            # the kernel dropped the routes through the downed links; the host "boots" with its own config
            before = rec.params["before"]
            set_addressing(ns, before["addresses"], before["routes"])
        else:  # a fault recorded before the host's own links went dark: its far ends were set down
            for _, peer_ns, peer_if, _ in rec.params["peers"]:
                sh(["ip", "-n", peer_ns, "link", "set", peer_if, "up"], "peer link up")
        # the host "boots" again: its service (a DHCP client on DHCP hosts) is started afresh
        if service_process(state, rec.target) is not None and not service_running(state, rec.target):
            start_recorded(state, rec.target)
        mgmt.reboot_node(state, rec.target)
