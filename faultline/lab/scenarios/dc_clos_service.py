"""dc_clos_service: the dc_clos_bgp fabric serving DNS and web to external clients.

Same eBGP CLOS as dc_clos_bgp (super-spines, spines, leaves; NIKA's AS numbers). Instead of a pc,
leaf 0 of pod p fronts `dns_pod<p>` (dnsmasq, authoritative for zone `pod<p>` with records
`ns<p>` and `web<i>`) and every other leaf i fronts a web server `webserver<i>_pod<p>` (nginx).
Each super-spine p fronts one external client `client_<p>` on its own LAN; clients resolve through
every pod's DNS server. URLs look like http://web1.pod0. Node counts match NIKA: s 8, m 28, l 88.
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
