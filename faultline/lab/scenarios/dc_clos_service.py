"""dc_clos_service: the dc_clos_bgp fabric serving DNS and web to external clients (NIKA's counts: s 8, m 28, l 88).

Its shape: docs/lab.md#what-each-scenario-is.
"""

from __future__ import annotations

from faultline.lab.scenarios.dc_clos_bgp import SHAPES, build_fabric
from faultline.lab.topology import Topology

SHAPES_SERVICE = {"s": SHAPES["s"], "m": SHAPES["m"], "l": (4, 4, 8)}  # NIKA's l: (4, 4, 8), 88 nodes


def build(size: str) -> Topology:
    """The dc_clos_service topology at `size`."""
    pods, spines, leaves = SHAPES_SERVICE[size]
    topo = Topology(scenario="dc_clos_service", size=size, protocol="bgp")
    supers = build_fabric(topo, pods, spines, leaves)
    dns_servers = []
    for p in range(pods):
        dns = topo.add_host(f"dns_pod{p}", role="dns").name
        topo.add_lan(f"leaf_{p}_0", [dns])
        webs = {}
        for i in range(1, leaves):
            web = topo.add_host(f"webserver{i}_pod{p}", role="web").name
            topo.add_lan(f"leaf_{p}_{i}", [web])
            webs[f"web{i}"] = web
        topo.add_zone(dns, f"pod{p}", {f"ns{p}": dns, **webs})
        dns_servers.append(dns)
    for k, super_spine in enumerate(supers):
        client = topo.add_host(f"client_{k}", role="client").name
        topo.add_lan(super_spine, [client])
        topo.nodes[client].resolvers = list(dns_servers)
    return topo
