"""simple_bgp: NIKA's small inter-domain lab.

Size s is NIKA's shape: router1 (AS 1) and router2 (AS 2) peer over eBGP, each fronting one PC
(pc1, pc2). NIKA's simple_bgp is unsized; our m and l grow it into a chain of eBGP routers, one AS
each, with two PCs on a bridged LAN behind every router, so the same fault families can be
exercised over longer paths.
"""

from __future__ import annotations

from faultline.lab.topology import Topology

# (routers in the chain, PCs per router)
SHAPES = {"s": (2, 1), "m": (4, 2), "l": (8, 2)}


def build(size: str) -> Topology:
    """The simple_bgp topology at `size` (s: 4 nodes, m: 12, l: 24)."""
    routers, pcs_per_router = SHAPES[size]
    topo = Topology(scenario="simple_bgp", size=size, protocol="bgp")
    for r in range(1, routers + 1):
        topo.add_router(f"router{r}", asn=r)
    for r in range(1, routers):
        topo.connect(f"router{r}", f"router{r + 1}")
    pc = 0
    for r in range(1, routers + 1):
        names = []
        for _ in range(pcs_per_router):
            pc += 1
            names.append(topo.add_host(f"pc{pc}").name)
        topo.add_lan(f"router{r}", names)
    return topo
