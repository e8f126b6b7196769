"""dc_clos_bgp: NIKA's data-center CLOS, eBGP everywhere.

Per pod `spines` spines and `leaves` leaves; as many super-spines as pods. Every super-spine
links to every spine, every spine to every leaf of its pod. AS numbers as in NIKA: super-spines
share AS 65000, spine i of pod p is AS 65100 + 10p + i, leaf i of pod p AS 65200 + 10p + i. Each
leaf fronts one host `pc_<p>_<i>` and announces its /24. Node counts match NIKA: s 7, m 26, l 100.
"""

from __future__ import annotations

from faultline.lab.topology import Topology

# (super-spines = pods, spines per pod, leaves per pod)
SHAPES = {"s": (1, 2, 2), "m": (2, 4, 4), "l": (4, 8, 8)}


def build(size: str) -> Topology:
    """The dc_clos_bgp topology at `size`."""
    pods, spines, leaves = SHAPES[size]
    topo = Topology(scenario="dc_clos_bgp", size=size, protocol="bgp")
    build_fabric(topo, pods, spines, leaves)
    for p in range(pods):
        for i in range(leaves):
            topo.add_lan(f"leaf_{p}_{i}", [topo.add_host(f"pc_{p}_{i}").name])
    return topo


def build_fabric(topo: Topology, pods: int, spines: int, leaves: int) -> list[str]:
    """The eBGP CLOS routers and links (NIKA's names and AS numbers); returns the super-spines."""
    supers = [topo.add_router(f"super_spine_{k}", asn=65000).name for k in range(pods)]
    for p in range(pods):
        for i in range(spines):
            spine = topo.add_router(f"spine_{p}_{i}", asn=65100 + 10 * p + i).name
            for s in supers:
                topo.connect(s, spine)
    for p in range(pods):
        for i in range(leaves):
            leaf = topo.add_router(f"leaf_{p}_{i}", asn=65200 + 10 * p + i).name
            for j in range(spines):
                topo.connect(f"spine_{p}_{j}", leaf)
    return supers
