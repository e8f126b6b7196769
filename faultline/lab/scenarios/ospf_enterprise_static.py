"""ospf_enterprise_static: NIKA's enterprise campus with statically addressed hosts.

NIKA's counts (s 15, m 37, l 177); its shape and where it differs from NIKA: docs/lab.md#scenarios.
"""

from __future__ import annotations

from faultline.lab.topology import Topology

# (distribution routers per core, access switches per distribution router, hosts per access switch)
SHAPES = {"s": (1, 1, 1), "m": (2, 2, 2), "l": (4, 4, 4)}
USER_AREA = 1
WEB_SERVERS = 4
ZONE = "local"


def build_campus(scenario: str, size: str, server_router: str) -> tuple[Topology, list[str]]:
    """The campus both enterprise scenarios share; returns it and the user hosts, server LAN not yet added."""
    dists, access, per_access = SHAPES[size]
    topo = Topology(scenario=scenario, size=size, protocol="ospf")
    cores = [topo.add_router(f"core_router_{c}").name for c in (1, 2, 3)]
    for i, a in enumerate(cores):
        for b in cores[i + 1:]:
            topo.connect(a, b, area=0)
    users = []
    for c in (1, 2):
        for d in range(1, dists + 1):
            dist = topo.add_router(f"dist_router_{c}_{d}")
            dist.area = USER_AREA
            topo.connect(f"core_router_{c}", dist.name, area=USER_AREA)
            switches: dict[str, list[str]] = {}
            for a in range(1, access + 1):
                switch = topo.add_switch(f"access_switch_{c}_{d}_{a}").name
                switches[switch] = [topo.add_host(f"host_{c}_{d}_{a}_{h}").name
                                    for h in range(1, per_access + 1)]
                users += switches[switch]
            topo.add_lan(dist.name, [], area=USER_AREA, switches=switches)
    topo.add_router(server_router)
    topo.connect("core_router_3", server_router, area=0)
    return topo, users


def build(size: str) -> Topology:
    """The ospf_enterprise_static topology at `size`."""
    topo, users = build_campus("ospf_enterprise_static", size, "switch_server_access")
    servers = [topo.add_host("dns_server", role="dns").name]
    servers += [topo.add_host(f"web_server_{i}", role="web").name for i in range(WEB_SERVERS)]
    topo.add_lan("switch_server_access", servers, area=0)
    topo.add_zone("dns_server", ZONE, {"dns": "dns_server",
                                       **{f"web{i}": f"web_server_{i}" for i in range(WEB_SERVERS)}})
    for name in users + servers:
        topo.nodes[name].resolvers = ["dns_server"]
    return topo
