"""The lab's typed topology: nodes with roles, point-to-point links, host LANs, deterministic addresses.

Addresses come from fixed pools in the order things are added, so a scenario and size always get the same ones;
the pools and the LAN shapes: docs/lab.md#topology-and-addressing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from faultline.errors import FaultlineError
from faultline.network.devices import valid_device_name

_LOOPBACKS = ipaddress.ip_network("10.255.0.0/16")
_P2P = ipaddress.ip_network("10.0.0.0/16")
_LANS = ipaddress.ip_network("10.1.0.0/16")
ROLES = ("router", "host", "switch", "client", "dns", "dhcp", "web", "lb", "backend")
# roles of end hosts: everything that is neither a router nor a switch ("backend": behind a load balancer)
END_ROLES = ("host", "client", "dns", "dhcp", "web", "lb", "backend")
PROTOCOLS = ("bgp", "ospf", "rip")


@dataclass(frozen=True)
class Interface:
    """One interface of a node: its name in the node's namespace and its address (CIDR)."""

    node: str
    name: str
    address: str  # "10.0.0.0/31"


@dataclass
class Node:
    """A device: a router (runs FRR), a host (default route to its gateway) or a switch (one bridge)."""

    name: str
    role: str
    asn: int | None = None  # BGP routers only
    area: int = 0  # OSPF area of the router's loopback
    static_routes: list[tuple[str, str]] = field(default_factory=list)  # (prefix, next hop), via staticd
    loopback: str | None = None  # "10.255.0.1/32", routers only
    gateway: str | None = None  # hosts: the LAN gateway's address (no prefix)
    interfaces: list[Interface] = field(default_factory=list)
    dhcp: bool = False  # the host takes its (reserved) address from the lab's DHCP server
    resolvers: list[str] = field(default_factory=list)  # DNS server nodes written to its resolv.conf
    private: bool = False  # on a LAN behind a non-router (LB backends): not reachable from other LANs

    @property
    def addresses(self) -> tuple[str, ...]:
        """Every address of the node; the first is its main one (loopback, else first interface)."""
        ifaces = tuple(i.address for i in self.interfaces)
        return ((self.loopback,) + ifaces) if self.loopback else ifaces


@dataclass(frozen=True)
class Link:
    """A veth pair between two nodes (router-router point-to-point, or router-host on a one-host LAN)."""

    a: Interface
    b: Interface
    area: int = 0  # OSPF area


@dataclass(frozen=True)
class Lan:
    """A /24 behind one router. One host: a direct veth. Several, or any switch: a bridge on the router.

    With switches, `host_switch[i]` names the access switch host i hangs off (in `switches` order).
    """

    router: str
    subnet: str
    gateway: Interface  # on the router (a bridge "br<k>" when bridged)
    hosts: tuple[Interface, ...]
    bridged: bool
    area: int = 0  # OSPF area
    switches: tuple[str, ...] = ()
    host_switch: tuple[str, ...] = ()


@dataclass
class Topology:
    """A complete lab: build it with `add_router`, `add_host`, `connect`, `add_lan`."""

    scenario: str
    size: str
    protocol: str  # the routing protocol of every router: "bgp", "ospf" or "rip"
    nodes: dict[str, Node] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    lans: list[Lan] = field(default_factory=list)
    # dns node -> (zone, {fqdn: node whose main address the name resolves to})
    zones: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    lb_backends: dict[str, list[str]] = field(default_factory=dict)  # lb node -> backend web nodes
    dhcp_relays: dict[str, str] = field(default_factory=dict)  # router -> DHCP server node it relays to

    def add_router(self, name: str, asn: int | None = None) -> Node:
        """Add a router; its loopback is the next one in the pool."""
        count = sum(1 for n in self.nodes.values() if n.role == "router")
        loopback = f"{_LOOPBACKS.network_address + count + 1}/32"
        return self._add(Node(name=name, role="router", asn=asn, loopback=loopback))

    def add_host(self, name: str, role: str = "host") -> Node:
        """Add an end host (`role` host, client, dns, dhcp, web or lb); give it an address with `add_lan`."""
        if role not in END_ROLES:
            raise FaultlineError(f"{name}: {role!r} is not an end-host role", fix=f"use one of {', '.join(END_ROLES)}")
        return self._add(Node(name=name, role=role))

    def add_switch(self, name: str) -> Node:
        """Add an access switch (a namespace with one bridge, no address); use it in `add_lan`."""
        return self._add(Node(name=name, role="switch"))

    def connect(self, a: str, b: str, area: int = 0) -> Link:
        """A point-to-point /31 between two routers (in OSPF `area`)."""
        base = _P2P.network_address + 2 * len(self.links)
        if base + 1 > _P2P.broadcast_address:
            raise FaultlineError("the lab ran out of point-to-point addresses", fix="use a smaller size")
        link = Link(self._iface(a, f"{base}/31"), self._iface(b, f"{base + 1}/31"), area)
        self.links.append(link)
        return link

    def add_static_route(self, router: str, prefix: str, via: str) -> None:
        """A static route on `router` (rendered for staticd, which then runs on that router)."""
        ipaddress.ip_network(prefix)
        ipaddress.ip_address(via)
        self.nodes[router].static_routes.append((prefix, via))

    def protocols(self) -> set[str]:
        """The routing protocols in use: the topology's protocol, plus "static" if any static route."""
        extra = {"static"} if any(n.static_routes for n in self.routers()) else set()
        return {self.protocol} | extra

    def add_lan(self, router: str, hosts: list[str], area: int = 0,
                switches: dict[str, list[str]] | None = None, subnet: str | None = None) -> Lan:
        """A /24 LAN behind `router` (gateway .1 on the router, hosts from .10, in OSPF `area`).

        `hosts` hang off the router; `switches` maps access-switch names to the hosts behind each.
        `subnet` overrides the next /24 of the pool. `router` may be an end host (a load balancer in
        front of its backends): such a LAN is not routed, and its hosts are marked `private`.
        """
        switches = switches or {}
        if hosts and switches:
            raise FaultlineError("a LAN has either direct hosts or switches", fix="fix the scenario")
        host_switch = [sw for sw, members in switches.items() for _ in members]
        hosts = list(hosts) + [h for members in switches.values() for h in members]
        index = len(self.lans)
        if index > 255 or len(hosts) > 240:
            raise FaultlineError("the lab ran out of LAN addresses", fix="use a smaller size")
        net = ipaddress.ip_network(subnet or f"{_LANS.network_address + 256 * index}/24")
        private = self.nodes[router].role != "router"
        bridged = len(hosts) > 1 or bool(switches)
        gw_addr = f"{net.network_address + 1}/24"
        if bridged:
            gateway = Interface(router, f"br{index}", gw_addr)
            self.nodes[router].interfaces.append(gateway)
        else:
            gateway = self._iface(router, gw_addr)
        members = []
        for offset, host in enumerate(hosts):
            iface = self._iface(host, f"{net.network_address + 10 + offset}/24")
            self.nodes[host].gateway = str(net.network_address + 1)
            self.nodes[host].private = private
            members.append(iface)
        lan = Lan(router, str(net), gateway, tuple(members), bridged, area, tuple(switches), tuple(host_switch))
        self.lans.append(lan)
        return lan

    def routers(self) -> list[Node]:
        """Routers in insertion order."""
        return [n for n in self.nodes.values() if n.role == "router"]

    def hosts(self) -> list[Node]:
        """Plain hosts (role "host") in insertion order."""
        return [n for n in self.nodes.values() if n.role == "host"]

    def end_hosts(self) -> list[Node]:
        """Every end host (hosts, clients, servers) in insertion order, private LAN members included."""
        return [n for n in self.nodes.values() if n.role in END_ROLES]

    def routed_lans(self) -> list[Lan]:
        """LANs behind routers (announced by the routing protocol); private LANs excluded."""
        return [lan for lan in self.lans if self.nodes[lan.router].role == "router"]

    def add_zone(self, dns: str, zone: str, records: dict[str, str]) -> None:
        """Make `dns` authoritative for `zone` with A records {name: node} (names without the zone)."""
        for node in records.values():
            if node not in self.nodes:
                raise FaultlineError(f"DNS record for unknown node {node!r}", fix="add the node first")
        self.zones[dns] = (zone, {f"{name}.{zone}": node for name, node in records.items()})

    def switches(self) -> list[Node]:
        """Access switches in insertion order."""
        return [n for n in self.nodes.values() if n.role == "switch"]

    def neighbours(self, router: str) -> list[tuple[Interface, Interface]]:
        """(local, remote) interface pairs of `router`'s router-to-router links."""
        out = []
        for link in self.links:
            if link.a.node == router:
                out.append((link.a, link.b))
            elif link.b.node == router:
                out.append((link.b, link.a))
        return out

    def _add(self, node: Node) -> Node:
        if not valid_device_name(node.name):
            raise FaultlineError(f"invalid device name {node.name!r}", fix="use [a-z][a-z0-9_-]{0,30}")
        if node.name in self.nodes:
            raise FaultlineError(f"duplicate device name {node.name!r}", fix="name every device once")
        self.nodes[node.name] = node
        return node

    def _iface(self, node: str, address: str) -> Interface:
        # interface names are reused per namespace (eth0, eth1, ...): short and stable
        owner = self.nodes[node]
        name = f"eth{sum(1 for i in owner.interfaces if i.name.startswith('eth'))}"
        iface = Interface(node, name, address)
        owner.interfaces.append(iface)
        return iface
