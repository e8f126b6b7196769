"""Build a topology's namespaces, veth pairs, bridges, addresses and sysctls with batched `ip` calls.

Nothing is created in the root namespace: veths are created directly inside both namespaces, so
the root namespace's links and routes are never touched.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.lab.namespaces import namespace_name
from faultline.lab.topology import Topology


def host_mac(address: str) -> str:
    """A deterministic, locally administered MAC for a DHCP host: 02:00 + the IPv4 octets."""
    import ipaddress

    return "02:00:" + ":".join(f"{b:02x}" for b in ipaddress.ip_interface(address).ip.packed)

_TIMEOUT = 60


def run(args: list[str], *, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command (argument list, never a shell); a failure becomes a FaultlineError."""
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=_TIMEOUT)
    if check and proc.returncode != 0:
        raise FaultlineError(
            f"`{' '.join(args[:6])}` failed: {proc.stderr.strip()[:500]}",
            fix="run `faultline lab down --all` and try again",
        )
    return proc


def ip_batch(lines: list[str], namespace: str | None = None) -> None:
    """Feed `lines` to one `ip [-n NS] -batch -` process."""
    if not lines:
        return
    args = ["ip"] + (["-n", namespace] if namespace else []) + ["-batch", "-"]
    run(args, stdin="\n".join(lines) + "\n")


def build_network(topo: Topology, record_namespace: Callable[[str], None]) -> None:
    """Create every namespace (recording each before it exists), link and address of `topo`."""
    namespaces = [namespace_name(name) for name in topo.nodes]
    for ns in namespaces:
        record_namespace(ns)
    ip_batch([f"netns add {ns}" for ns in namespaces])

    veths = []
    for link in topo.links:
        veths.append(_veth(link.a.node, link.a.name, link.b.node, link.b.name))
    bridges: dict[str, dict[str, list[str]]] = {}  # namespace -> bridge -> ports
    for lan in topo.lans:
        router_ports = bridges.setdefault(namespace_name(lan.router), {}).setdefault(lan.gateway.name, [])
        for index, switch in enumerate(lan.switches):
            port = switch_uplink(lan.gateway.name, index)
            veths.append(_veth(lan.router, port, switch, "eth0"))
            router_ports.append(port)
            bridges.setdefault(namespace_name(switch), {})["br0"] = ["eth0"]
        for index, host in enumerate(lan.hosts):
            if lan.switches:
                switch = lan.host_switch[index]
                ports = bridges[namespace_name(switch)]["br0"]
                port = f"eth{len(ports)}"
                veths.append(_veth(switch, port, host.node, host.name))
                ports.append(port)
            elif lan.bridged:
                # the router end is a bridge port named after the host's position
                port = bridge_port(lan.gateway.name, index)
                veths.append(_veth(lan.router, port, host.node, host.name))
                router_ports.append(port)
            else:
                veths.append(_veth(lan.router, lan.gateway.name, host.node, host.name))
    ip_batch(veths)

    per_ns: dict[str, list[str]] = {namespace_name(n): ["link set lo up"] for n in topo.nodes}
    for ns, by_bridge in bridges.items():
        for br, ports in by_bridge.items():
            if not ports:  # a one-host LAN without switches: no bridge
                continue
            per_ns[ns].append(f"link add {br} type bridge stp_state 0 forward_delay 0")
            per_ns[ns].append(f"link set {br} up")
            for port in ports:
                per_ns[ns].append(f"link set {port} master {br}")
                per_ns[ns].append(f"link set {port} up")
    for node in topo.nodes.values():
        ns = namespace_name(node.name)
        if node.loopback:
            per_ns[ns].append(f"addr add {node.loopback} dev lo")
        for iface in node.interfaces:
            if node.dhcp and iface.name == "eth0":
                # the address comes from the DHCP server, which reserves it for this MAC
                per_ns[ns].append(f"link set eth0 address {host_mac(iface.address)}")
            else:
                per_ns[ns].append(f"addr add {iface.address} dev {iface.name}")
            per_ns[ns].append(f"link set {iface.name} up")
        if node.gateway and not node.dhcp:
            per_ns[ns].append(f"route add default via {node.gateway}")
    for ns, lines in per_ns.items():
        ip_batch(lines, ns)

    for node in topo.nodes.values():
        ns = namespace_name(node.name)
        forward = "1" if node.role == "router" else "0"
        # rp_filter off: lab paths may be asymmetric (ECMP, faults), and a host must not drop them
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.ip_forward={forward}",
             "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"])


def bridge_port(bridge: str, index: int) -> str:
    """The router-side veth of the `index`-th host on a bridged LAN ("br3p0")."""
    return f"{bridge}p{index}"


def switch_uplink(bridge: str, index: int) -> str:
    """The router-side veth of the `index`-th access switch of a LAN ("br3s0"); the switch end is eth0."""
    return f"{bridge}s{index}"


def _veth(a_node: str, a_if: str, b_node: str, b_if: str) -> str:
    return (f"link add {a_if} netns {namespace_name(a_node)} type veth "
            f"peer name {b_if} netns {namespace_name(b_node)}")


# --- the host-global neighbour (ARP) table ----------------------------------------------------
# Every namespace shares one ARP table whose limits live only in the root namespace
# (net.ipv4.neigh.default.gc_thresh1/2/3, default 128/512/1024). A large lab overflows it
# ("neighbor table overflow", pings fail with ENOBUFS), so its limits are raised for the lab and
# put back afterwards by whoever recorded the old values.

NEIGH_SYSCTLS = tuple(f"net.ipv4.neigh.default.gc_thresh{i}" for i in (1, 2, 3))


def neigh_entries_needed(topo: Topology) -> int:
    """An upper bound on the ARP entries the lab makes: two per link, all pairs on every LAN."""
    lan_entries = sum((len(lan.hosts) + 1) * len(lan.hosts) for lan in topo.lans)
    return 2 * len(topo.links) + lan_entries


def read_neigh_limits() -> dict[str, int]:
    """The current gc_thresh1/2/3 of the root namespace."""
    return {key: int(Path("/proc/sys", *key.split(".")).read_text()) for key in NEIGH_SYSCTLS}


def raise_neigh_limits(topo: Topology, copies: int = 1) -> dict[str, int] | None:
    """Raise the ARP limits if `copies` labs of `topo` could come near them; the old values, or None if untouched.

    The new values keep a wide margin (gc starts above thresh2, thresh3 is the hard limit).
    """
    needed = neigh_entries_needed(topo) * copies
    old = read_neigh_limits()
    if needed * 2 <= old[NEIGH_SYSCTLS[1]]:
        return None
    wanted = dict(zip(NEIGH_SYSCTLS, (needed * 2, needed * 4, needed * 8)))
    new = {key: max(old[key], wanted[key]) for key in NEIGH_SYSCTLS}
    _set_sysctls(new)
    return old


def restore_neigh_limits(old: dict[str, int] | None) -> None:
    """Put back the values `raise_neigh_limits` returned (nothing to do for None)."""
    if old:
        _set_sysctls(old)


def _set_sysctls(values: dict[str, int]) -> None:
    # thresh3 >= thresh2 >= thresh1 must hold at every step: raise from the top, lower from the bottom
    current = read_neigh_limits()
    order = list(NEIGH_SYSCTLS)
    if values[order[2]] >= current[order[2]]:
        order.reverse()
    for key in order:
        Path("/proc/sys", *key.split(".")).write_text(f"{values[key]}\n")
