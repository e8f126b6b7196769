"""End-host faults (NIKA v1 `host_*`): eth0's address or default route changed by hand, or the host crashed.

The addressing faults record eth0's addresses and gateway routes first and recovery puts exactly those back;
each has a second mechanism, another way the same wrong addressing comes about (a lease left to expire, a typo
in the subnet, routes that override the default, a mask too narrow for the gateway, only the address copied).
`host_crash` lives in `host_crash.py`. Values and recipes: docs/lab.md#host-faults.
"""

from __future__ import annotations

import ipaddress
import random
from typing import ClassVar

from faultline.lab.faults.base import Fault, FaultError, FaultRecord, in_ns, poll, sh
from faultline.lab.faults.interfaces import IFNAME, set_addressing, snapshot
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
        self.set_faulty(ns, rec, address)
        rec.resource_id = f"interface/{rec.target}/{IFNAME}"
        rec.mechanism = f"{rec.target} {IFNAME}: {what}"

    def set_faulty(self, namespace: str, rec: FaultRecord, address: str) -> None:
        """Give eth0 the faulty addressing `wanted` chose (default: exactly those addresses and routes)."""
        if rec.params.get("onlink"):  # a gateway outside eth0's subnet, reached only because it is declared on-link
            set_addressing(namespace, rec.params["addresses"], [])
            for dst, gateway in rec.params["routes"]:
                sh(in_ns(namespace, "ip", "route", "replace", dst, "via", gateway, "dev", IFNAME, "onlink"),
                   "on-link route")
            return
        set_addressing(namespace, rec.params["addresses"], rec.params["routes"])

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
        other = [(dst, gw) for dst, gw in rec.params["routes"] if dst != "default"]
        if other:
            have = {(r.dst, r.gateway) for r in run_probe(ctx, "ip_route", dev=rec.target).record.routes}
            missing = [f"{dst} via {gw}" for dst, gw in other if (dst, gw) not in have]
            if missing:
                return f"{rec.target} has no route {', '.join(missing)}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns, before = state.device(rec.target).namespace, rec.params["before"]
        for dst, _ in rec.params.get("routes", []):  # routes beside the default ones set_addressing flushes
            if dst != "default":
                sh(in_ns(ns, "ip", "route", "del", dst), "route delete", check=False)
        set_addressing(ns, before["addresses"], before["routes"])


class HostMissingIp(HostAddressing):
    """`host_missing_ip`: eth0's address deleted."""

    label = "host_missing_ip"
    lease_s: ClassVar[int] = 2
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "ip addr del: eth0's address deleted (the default route goes with it)",
        "lease_expired": "eth0's address given a short valid lifetime, as a DHCP lease that is never renewed: the "
                         "kernel removes it when it expires (and the default route with it)",
    }

    def wanted(self, state, topo, rec, address, gateway, rng):
        if rec.mechanism_id == "lease_expired":
            return [], [], (f"ip addr replace {address} valid_lft {self.lease_s} preferred_lft {self.lease_s}: the "
                            "address expired and the kernel removed it (default route removed with it)")
        return [], [], f"ip addr del {address} (default route removed with it)"

    def set_faulty(self, namespace: str, rec: FaultRecord, address: str) -> None:
        if rec.mechanism_id != "lease_expired":
            super().set_faulty(namespace, rec, address)
            return
        life = str(self.lease_s)
        sh(in_ns(namespace, "ip", "addr", "replace", address, "dev", IFNAME, "valid_lft", life, "preferred_lft", life),
           "address lifetime")

        def expired() -> str | None:
            shown = sh(in_ns(namespace, "ip", "-4", "-o", "addr", "show", "dev", IFNAME), "addr list").stdout
            return None if not shown.strip() else f"{IFNAME} still has {shown.split()[3]}"

        problem = poll(expired, self.lease_s + 5.0)
        if problem:
            raise FaultError(f"the address did not expire: {problem}")


class HostIncorrectIp(HostAddressing):
    """`host_incorrect_ip`: 10.2.1.x/24 with default via 10.2.1.1."""

    label = "host_incorrect_ip"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "address replaced by 10.2.1.x/24 with default via 10.2.1.1 (NIKA v1's values)",
        "subnet_typo": "the address typed with a wrong third octet (a subnet no LAN uses), the gateway kept and "
                       "declared on-link: the host sends to the right router from an address nobody routes back to",
    }

    def wanted(self, state, topo, rec, address, gateway, rng):
        if rec.mechanism_id == "subnet_typo":
            wrong = typo_address(topo, address, rng)
            rec.params["onlink"] = True
            return ([wrong], [["default", gateway]],
                    f"address {address} replaced by {wrong}; ip route replace default via {gateway} onlink")
        wrong = f"10.2.1.{rng.randint(2, 254)}/24"
        return [wrong], [["default", "10.2.1.1"]], f"address {address} replaced by {wrong}, default via 10.2.1.1"


def typo_address(topo: Topology, address: str, rng: random.Random) -> str:
    """`address` with its third octet changed (seeded) to one whose /24 no address of `topo` falls in."""
    iface = ipaddress.ip_interface(address)
    octets = str(iface.ip).split(".")
    used = [ipaddress.ip_interface(a).network for n in topo.nodes.values() for a in n.addresses]
    free = [k for k in range(1, 255) if str(k) != octets[2] and not any(
        ipaddress.ip_network(f"{octets[0]}.{octets[1]}.{k}.0/24").overlaps(net) for net in used)]
    if not free:
        raise FaultError(f"no unused /24 next to {address} for a mistyped address")
    return f"{octets[0]}.{octets[1]}.{rng.choice(free)}.{octets[3]}/{iface.network.prefixlen}"


class HostIncorrectGateway(HostAddressing):
    """`host_incorrect_gateway`: default via the gateway's subnet address ending in .254."""

    label = "host_incorrect_gateway"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "default route via the gateway's subnet address ending in .254",
        "split_default": "the default route kept, and 0.0.0.0/1 and 128.0.0.0/1 added via the .254 address (as a "
                         "VPN client leaves them): the more specific routes win, so every packet off the LAN goes "
                         "to the wrong gateway",
    }

    def wanted(self, state, topo, rec, address, gateway, rng):
        wrong = ".".join(gateway.split(".")[:3] + ["254"])
        if wrong == gateway:
            raise FaultError(f"{rec.target}'s gateway already ends in .254")
        if rec.mechanism_id == "split_default":
            return ([address], [["default", gateway], ["0.0.0.0/1", wrong], ["128.0.0.0/1", wrong]],
                    f"default via {gateway} kept; ip route add 0.0.0.0/1 via {wrong} and 128.0.0.0/1 via {wrong}")
        return [address], [["default", wrong]], f"default route via {wrong} instead of {gateway}"


class HostIncorrectNetmask(HostAddressing):
    """`host_incorrect_netmask`: the same address with /8."""

    label = "host_incorrect_netmask"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the same address with /8 (too wide: the rest of 10/8 looks on-link), default via the gateway",
        "narrow": "the same address with the widest mask (/25 to /32) that leaves the gateway outside the subnet: "
                  "the kernel refuses the default route via an unreachable gateway, so the host has none",
    }

    def wanted(self, state, topo, rec, address, gateway, rng):
        if rec.mechanism_id == "narrow":
            wrong = narrow_address(address, gateway)
            return [wrong], [], (f"address {address} re-added as {wrong}; default via {gateway} refused "
                                 "(gateway outside the subnet)")
        wrong = f"{address.split('/')[0]}/8"
        return [wrong], [["default", gateway]], f"address {address} re-added as {wrong}, default via {gateway}"


def narrow_address(address: str, gateway: str) -> str:
    """`address` with the shortest prefix longer than its own whose subnet holds it as a host address but not
    `gateway`."""
    ip, gw = ipaddress.ip_interface(address).ip, ipaddress.ip_address(gateway)
    for prefix in range(ipaddress.ip_interface(address).network.prefixlen + 1, 33):
        net = ipaddress.ip_network(f"{ip}/{prefix}", strict=False)
        usable = prefix >= 31 or ip not in (net.network_address, net.broadcast_address)
        if gw not in net and usable:
            return f"{ip}/{prefix}"
    raise FaultError(f"no mask narrower than {address} leaves out {gateway}")


class HostIpConflict(HostAddressing):
    """`host_ip_conflict`: the target (host B) takes another host A's address and gateway."""

    label = "host_ip_conflict"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the target takes host A's address and A's gateway (NIKA v1)",
        "copied_address": "only host A's address copied into the target's configuration, the target's own gateway "
                          "kept (declared on-link when A sits on another subnet)",
    }

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
        if rec.mechanism_id == "copied_address":
            rec.params["onlink"] = ipaddress.ip_address(gateway) not in ipaddress.ip_interface(victim_addr).network
            return ([victim_addr], [["default", gateway]],
                    f"address {address} replaced by {victim}'s {victim_addr}, default via its own {gateway}"
                    f"{' onlink' if rec.params['onlink'] else ''}")
        return ([victim_addr], [["default", victim_gw]],
                f"address {address} replaced by {victim}'s {victim_addr}, default via {victim_gw}")


def host_lan_or_none(topo: Topology, host: str) -> tuple[str, str] | None:
    try:
        return host_lan(topo, host)
    except FaultError:
        return None
