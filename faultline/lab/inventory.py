"""A lab topology written as a nornir-style SimpleInventory (hosts.yaml, groups.yaml, defaults.yaml).

Built from the topology definition alone, so it needs neither root nor a running lab. Every device
is a host: routers (platform frr, hostname its loopback), end hosts and servers (platform linux,
hostname their first address) and access switches (platform linux; a switch has no address, so
its hostname is its device name). Links carry the interface names the lab's builder gives both
ends, and DNS names come from the lab's zones. `faultline ingest inventory` reads the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from faultline.lab.builder import bridge_port, switch_uplink
from faultline.lab.topology import Node, Topology

GROUPS: dict[str, dict[str, Any]] = {
    "lab": {"data": {"managed_by": "faultline lab"}},
    "routers": {"platform": "frr", "groups": ["lab"]},
    "linux": {"platform": "linux", "groups": ["lab"]},
}


def lab_links(topo: Topology) -> list[tuple[str, str, str, str]]:
    """Every veth of the lab as (node, interface, peer node, peer interface), named as the builder names them."""
    pairs = [(link.a.node, link.a.name, link.b.node, link.b.name) for link in topo.links]
    for lan in topo.lans:
        switch_ports: dict[str, int] = {}
        for index, switch in enumerate(lan.switches):
            pairs.append((lan.router, switch_uplink(lan.gateway.name, index), switch, "eth0"))
            switch_ports[switch] = 1
        for index, host in enumerate(lan.hosts):
            if lan.switches:
                switch = lan.host_switch[index]
                pairs.append((switch, f"eth{switch_ports[switch]}", host.node, host.name))
                switch_ports[switch] += 1
            elif lan.bridged:
                pairs.append((lan.router, bridge_port(lan.gateway.name, index), host.node, host.name))
            else:
                pairs.append((lan.router, lan.gateway.name, host.node, host.name))
    return pairs


def _dns_names(topo: Topology) -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for _, (_, records) in sorted(topo.zones.items()):
        for fqdn, node in sorted(records.items()):
            names.setdefault(node, []).append(fqdn)
    return names


def _host(node: Node, links: list[dict[str, str]], dns_names: list[str]) -> dict[str, Any]:
    interfaces = (["lo"] if node.loopback else []) + [i.name for i in node.interfaces]
    interfaces += [lk["interface"] for lk in links if lk["interface"] not in interfaces]
    data: dict[str, Any] = {"role": node.role}
    if node.addresses:
        data["addresses"] = list(node.addresses)
    data["interfaces"] = interfaces
    if dns_names:
        data["dns_names"] = dns_names
    if node.asn is not None:
        data["asn"] = node.asn
    if node.gateway:
        data["gateway"] = node.gateway
    data["links"] = links
    hostname = node.addresses[0].split("/", 1)[0] if node.addresses else node.name
    group = "routers" if node.role == "router" else "linux"
    return {"hostname": hostname, "groups": [group], "data": data}


def inventory_documents(topo: Topology) -> dict[str, dict[str, Any]]:
    """The three files' contents: {"hosts.yaml": ..., "groups.yaml": ..., "defaults.yaml": ...}."""
    links: dict[str, list[dict[str, str]]] = {name: [] for name in topo.nodes}
    for a, a_if, b, b_if in lab_links(topo):
        links[a].append({"interface": a_if, "peer": b, "peer_interface": b_if})
        links[b].append({"interface": b_if, "peer": a, "peer_interface": a_if})
    dns = _dns_names(topo)
    hosts = {name: _host(node, links[name], dns.get(name, [])) for name, node in topo.nodes.items()}
    defaults = {"data": {"site": topo.scenario, "lab_size": topo.size, "routing_protocol": topo.protocol}}
    return {"hosts.yaml": hosts, "groups.yaml": GROUPS, "defaults.yaml": defaults}


def write_lab_inventory(topo: Topology, out: Path) -> list[Path]:
    """Write the topology's inventory into folder `out` (created); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, document in inventory_documents(topo).items():
        path = out / file_name
        header = f"# {file_name} of lab scenario {topo.scenario} (size {topo.size}), written by `faultline lab inventory`\n"
        path.write_text(header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
        written.append(path)
    return written
