"""Interface and addressing helpers the fault mechanisms share (link, host, filter and shaping faults)."""

from __future__ import annotations

import json
import random

from faultline.lab.faults.base import FaultError, in_ns, sh
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe

IFNAME = "eth0"  # an end host's one LAN interface


def pick_interface(topo: Topology, device: str, rng: random.Random) -> str:
    """A host's eth0 (as NIKA v1) or, on a router, a seeded choice among its eth* interfaces."""
    names = sorted(i.name for i in topo.nodes[device].interfaces if i.name.startswith("eth"))
    if not names:
        raise FaultError(f"{device} has no eth interface")
    return "eth0" if "eth0" in names and topo.nodes[device].role == "host" else rng.choice(names)


def interface_state(ctx: ProbeContext, device: str, ifname: str) -> tuple[str, list[str]] | None:
    """(operstate, flags) of one interface through the `ip_link` probe; None when it does not exist."""
    for iface in run_probe(ctx, "ip_link", dev=device).record.interfaces:
        if iface.ifname == ifname:
            return iface.operstate, iface.flags
    return None


def veth_peer(namespace: str, ifname: str) -> tuple[str, str]:
    """(namespace, interface name) of the other end of a veth, from its link index and netns id."""
    info = json.loads(sh(["ip", "-n", namespace, "-j", "link", "show", "dev", ifname], "link show").stdout or "[]")
    if not info or "link_netnsid" not in info[0] or "link_index" not in info[0]:
        raise FaultError(f"{ifname} in {namespace} is not a veth with its peer in another namespace")
    nsid, index = info[0]["link_netnsid"], info[0]["link_index"]
    peer_ns = None
    for line in sh(["ip", "-n", namespace, "netns", "list-id"], "netns list-id").stdout.splitlines():
        words = line.replace("(", " ").replace(")", " ").split()
        if words[:2] == ["nsid", str(nsid)] and "name:" in words:
            peer_ns = words[words.index("name:") + 1]
    if peer_ns is None:
        raise FaultError(f"no named namespace has nsid {nsid} as seen from {namespace}")
    links = json.loads(sh(["ip", "-n", peer_ns, "-j", "link", "show"], "link show").stdout or "[]")
    name = next((link["ifname"] for link in links if link.get("ifindex") == index), None)
    if name is None:
        raise FaultError(f"no interface with index {index} in {peer_ns}")
    return peer_ns, name


def snapshot(namespace: str) -> dict:
    """eth0's IPv4 addresses and the routes with a gateway, as they are now (what recovery restores)."""
    shown = sh(in_ns(namespace, "ip", "-j", "-4", "addr", "show", "dev", IFNAME), "addr list").stdout
    addrs = json.loads(shown or "[]")
    cidrs = [f"{a['local']}/{a['prefixlen']}" for link in addrs for a in link.get("addr_info", [])]
    routes = json.loads(sh(in_ns(namespace, "ip", "-j", "route", "show"), "route list").stdout or "[]")
    gw_routes = [[r["dst"], r["gateway"]] for r in routes if r.get("gateway")]
    return {"addresses": cidrs, "routes": gw_routes}


def set_addressing(namespace: str, addresses: list[str], routes: list[list[str]]) -> None:
    """Make eth0 carry exactly `addresses` and put `routes` ([dst, gateway]) back; default routes dropped first."""
    sh(in_ns(namespace, "ip", "-4", "addr", "flush", "dev", IFNAME), "addr flush")
    sh(in_ns(namespace, "ip", "-4", "route", "flush", "default"), "default route flush", check=False)
    for cidr in addresses:
        sh(in_ns(namespace, "ip", "addr", "add", cidr, "dev", IFNAME), "addr add")
    for dst, gateway in routes:
        sh(in_ns(namespace, "ip", "route", "replace", dst, "via", gateway, "dev", IFNAME), "route replace")
