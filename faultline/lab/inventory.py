"""A lab topology written as a nornir-style SimpleInventory (hosts.yaml, groups.yaml, defaults.yaml).

Built from the topology definition alone (no root, no running lab); with the running lab's management network
(`lab_access`) it is SSH-ready, with a known_hosts file. What it holds: docs/inventory.md#the-labs-inventory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.lab.access import probe_context
from faultline.lab.builder import bridge_port, switch_uplink
from faultline.lab.scenarios import build_topology
from faultline.lab.state import MGMT_INTERFACE, LabState
from faultline.lab.topology import Node, Topology

GROUPS: dict[str, dict[str, Any]] = {
    "lab": {"data": {"managed_by": "faultline lab"}},
    "routers": {"platform": "frr", "groups": ["lab"]},
    "linux": {"platform": "linux", "groups": ["lab"]},
}


@dataclass(frozen=True)
class NodeAccess:
    """How to reach one node over the management network and what its probes may read."""

    address: str  # the management IP sshd listens on
    namespace: str
    host_key: str  # "ssh-ed25519 AAAA..."
    file_roots: tuple[str, ...]
    vty_socket: str | None = None  # a router's FRR vty socket folder
    files: tuple[str, ...] = ()  # the readable files under file_roots now (what the lab backend lists)


@dataclass(frozen=True)
class LabAccess:
    """The running lab's management network, as an inventory writes it."""

    key_file: str
    nodes: dict[str, NodeAccess]
    username: str = "root"
    port: int = 22


def lab_access(state: LabState, settings: Settings | None = None) -> LabAccess | None:
    """How to reach the running lab over SSH; None when it was built without `--mgmt`."""
    if state.mgmt is None:
        return None
    from faultline.network.snapshot import readable_files

    ctx = probe_context(state, settings)
    nodes = {d.name: NodeAccess(address=state.mgmt["addresses"][d.name], namespace=d.namespace,
                                host_key=state.mgmt["host_keys"][d.name],
                                file_roots=tuple(ctx.file_roots.get(d.name, [])), vty_socket=ctx.vty_dirs.get(d.name),
                                files=tuple(readable_files(ctx.file_roots.get(d.name, []))))
             for d in state.devices()}
    return LabAccess(key_file=state.mgmt["client_key"], nodes=nodes)


def write_mgmt_inventory(state: LabState, settings: Settings | None, out: Path) -> Path:
    """Write the running lab's SSH-ready inventory (and known_hosts) into `out`; returns `out`.

    FaultlineError when the lab has no management network.
    """
    access = lab_access(state, settings)
    if access is None:
        raise FaultlineError("the lab has no management network to reach it over SSH",
                             fix="bring it up with `faultline lab up SCENARIO --mgmt`")
    write_lab_inventory(build_topology(state.scenario, state.size), out, access)
    return out


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


def _reachable(host: dict[str, Any], node: NodeAccess, port: int) -> dict[str, Any]:
    data = dict(host["data"], namespace=node.namespace, mgmt_interface=MGMT_INTERFACE)
    if node.vty_socket:
        data["vty_socket"] = node.vty_socket
    data["file_roots"] = list(node.file_roots)
    if node.files:
        data["files"] = list(node.files)
    return {"hostname": node.address, "port": port, "groups": host["groups"], "data": data}


def inventory_documents(topo: Topology, access: LabAccess | None = None) -> dict[str, dict[str, Any]]:
    """The three files' contents: {"hosts.yaml": ..., "groups.yaml": ..., "defaults.yaml": ...}.

    With `access` (the running lab's management network) every host is reachable over SSH.
    """
    links: dict[str, list[dict[str, str]]] = {name: [] for name in topo.nodes}
    for a, a_if, b, b_if in lab_links(topo):
        links[a].append({"interface": a_if, "peer": b, "peer_interface": b_if})
        links[b].append({"interface": b_if, "peer": a, "peer_interface": a_if})
    dns = _dns_names(topo)
    hosts = {name: _host(node, links[name], dns.get(name, [])) for name, node in topo.nodes.items()}
    defaults: dict[str, Any] = {
        "data": {"site": topo.scenario, "lab_size": topo.size, "routing_protocol": topo.protocol}}
    if access is not None:
        hosts = {name: _reachable(host, access.nodes[name], access.port) for name, host in hosts.items()}
        defaults = {"username": access.username, "data": {**defaults["data"], "ssh_key_file": access.key_file}}
    return {"hosts.yaml": hosts, "groups.yaml": GROUPS, "defaults.yaml": defaults}


def write_lab_inventory(topo: Topology, out: Path, access: LabAccess | None = None) -> list[Path]:
    """Write the topology's inventory into folder `out` (created); returns the files written.

    With `access` also `known_hosts`: one `<mgmt ip> ssh-ed25519 AAAA...` line per node.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for file_name, document in inventory_documents(topo, access).items():
        path = out / file_name
        header = (f"# {file_name} of lab scenario {topo.scenario} (size {topo.size}), "
                  f"written by `faultline lab inventory`\n")
        path.write_text(header + yaml.safe_dump(document, sort_keys=False, default_flow_style=False))
        written.append(path)
    if access is not None:
        path = out / "known_hosts"
        path.write_text("".join(f"{node.address} {node.host_key}\n" for node in access.nodes.values()))
        written.append(path)
    return written
