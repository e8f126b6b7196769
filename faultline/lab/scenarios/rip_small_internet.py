"""rip_small_internet: NIKA's rip_small_internet_vpn without the VPN (this kernel has no WireGuard device).

NIKA's counts minus the VPN server (s 8, m 19, l 53); its shape and the gateway's wiring, which is our choice:
docs/lab.md#scenarios.
"""

from __future__ import annotations

from faultline.lab.topology import Topology

# (internal routers, internal hosts, external routers, web servers per external router)
SHAPES = {"s": (2, 2, 1, 2), "m": (4, 4, 2, 4), "l": (8, 8, 4, 8)}


def build(size: str) -> Topology:
    """The rip_small_internet topology at `size`."""
    internal, hosts, external, servers = SHAPES[size]
    topo = Topology(scenario="rip_small_internet", size=size, protocol="rip")
    routers = [topo.add_router(f"router_{i}").name for i in range(1, internal + 1)]
    topo.add_router("gateway_router")
    externals = [topo.add_router(f"ext_router_{e}").name for e in range(1, external + 1)]
    for i, a in enumerate(routers):
        for b in routers[i + 1:]:
            topo.connect(a, b)
    for r in routers:
        topo.connect(r, "gateway_router")
    for e in externals:
        topo.connect("gateway_router", e)
    for i in range(1, hosts + 1):
        topo.add_lan(routers[(i - 1) % internal], [topo.add_host(f"host_{i}").name])
    for e, router in enumerate(externals, start=1):
        names = [topo.add_host(f"web_server_{e}_{i}", role="web").name for i in range(1, servers + 1)]
        topo.add_lan(router, names)
    return topo
