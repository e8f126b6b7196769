"""Build a topology's namespaces, veth pairs, bridges, addresses and sysctls with batched `ip` calls.

Nothing is created in the root namespace: veths are created directly inside both namespaces, so
the root namespace's links and routes are never touched.
"""

from __future__ import annotations

import subprocess
from typing import Callable

from faultline.errors import FaultlineError
from faultline.netlab.devices import namespace_name
from faultline.netlab.topology import Topology

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
    for lan in topo.lans:
        for index, host in enumerate(lan.hosts):
            # bridged LANs: the router end is a bridge port named after the host's position
            router_if = bridge_port(lan.gateway.name, index) if lan.bridged else lan.gateway.name
            veths.append(_veth(lan.router, router_if, host.node, host.name))
    ip_batch(veths)

    per_ns: dict[str, list[str]] = {namespace_name(n): ["link set lo up"] for n in topo.nodes}
    for lan in topo.lans:
        if lan.bridged:
            ns = namespace_name(lan.router)
            br = lan.gateway.name
            per_ns[ns].append(f"link add {br} type bridge stp_state 0 forward_delay 0")
            per_ns[ns].append(f"link set {br} up")
            for index in range(len(lan.hosts)):
                port = bridge_port(br, index)
                per_ns[ns].append(f"link set {port} master {br}")
                per_ns[ns].append(f"link set {port} up")
    for node in topo.nodes.values():
        ns = namespace_name(node.name)
        if node.loopback:
            per_ns[ns].append(f"addr add {node.loopback} dev lo")
        for iface in node.interfaces:
            per_ns[ns].append(f"addr add {iface.address} dev {iface.name}")
            per_ns[ns].append(f"link set {iface.name} up")
        if node.gateway:
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


def _veth(a_node: str, a_if: str, b_node: str, b_if: str) -> str:
    return (f"link add {a_if} netns {namespace_name(a_node)} type veth "
            f"peer name {b_if} netns {namespace_name(b_node)}")
