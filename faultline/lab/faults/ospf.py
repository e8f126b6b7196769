"""OSPF faults on FRR routers: `ospf_acl_block`, `ospf_neighbor_missing`, `ospf_area_misconfiguration`.

The ACL is an nft table; the other two are live `vtysh` changes whose inverse is recorded (NIKA edits frr.conf
and restarts; the running result is the same). Recipes: docs/lab.md#fault-recipes.
"""

from __future__ import annotations

from faultline.lab.faults.base import FaultError, FaultRecord
from faultline.lab.faults.nft import NftFilter
from faultline.lab.faults.routing import BgpConfigChange, _topo, config_block
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


def adjacency_lost_problem(ctx: ProbeContext, topo: Topology, router: str) -> str | None:
    """None when some neighbour router no longer has a Full OSPF adjacency with `router`."""
    checked = 0
    for local, remote in topo.neighbours(router):
        addr = local.address.split("/")[0]
        rec = run_probe(ctx, "vtysh_show", dev=remote.node, command="show ip ospf neighbor json").record
        state = next((n.state for n in rec.ospf_neighbors if n.address == addr), "absent")
        if not state.startswith("Full"):
            return None
        checked += 1
    return f"all {checked} neighbours of {router} still have a Full OSPF adjacency with it"


class OspfAclBlock(NftFilter):
    """`ospf_acl_block`: IP protocol 89 dropped both ways on a router."""

    label = "ospf_acl_block"
    roles = ("router",)
    protocols = ("ospf",)
    family = "inet"
    matches = ("ip protocol ospf",)

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return adjacency_lost_problem(ctx, _topo(ctx, rec), rec.target)


class OspfNeighborMissing(BgpConfigChange):
    """`ospf_neighbor_missing`: `no network ... area ...` for every network of `router ospf`."""

    label = "ospf_neighbor_missing"
    protocols = ("ospf",)
    host_lan = False

    def block(self, running_config: str) -> list[str]:
        return config_block(running_config, "router ospf")

    def change(self, block: list[str]) -> tuple[list[str], list[str]]:
        nets = network_lines(block, required=True)
        return [block[0], *[f"no {n}" for n in nets]], [block[0], *nets]

    def check_block(self, block: list[str], rec: FaultRecord) -> str | None:
        present = set(network_lines(block))
        still = [c for c in rec.params["backward"][1:] if c in present]
        return f"still in router ospf on {rec.target}: {', '.join(still)}" if still else None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return adjacency_lost_problem(ctx, _topo(ctx, rec), rec.target)


class OspfAreaMisconfiguration(OspfNeighborMissing):
    """`ospf_area_misconfiguration`: the networks of one area moved to area 66 (or 99)."""

    label = "ospf_area_misconfiguration"

    def change(self, block: list[str]) -> tuple[list[str], list[str]]:
        nets = network_lines(block, required=True)
        area = nets[0].split()[-1]
        wrong_area = "99" if area == "66" else "66"
        moved = [n for n in nets if n.split()[-1] == area]
        wrong = [" ".join(n.split()[:-1] + [wrong_area]) for n in moved]
        return ([block[0], *[f"no {n}" for n in moved], *wrong],
                [block[0], *[f"no {w}" for w in wrong], *moved])

    def check_block(self, block: list[str], rec: FaultRecord) -> str | None:
        present = set(network_lines(block))
        wrong = [c for c in rec.params["forward"][1:] if not c.startswith("no ")]
        missing = [c for c in wrong if c not in present]
        return f"not in router ospf on {rec.target}: {', '.join(missing)}" if missing else None


def network_lines(block: list[str], required: bool = False) -> list[str]:
    """The `network P area A` lines of a `router ospf` block (stripped); FaultError when `required` and none."""
    lines = [line.strip() for line in block if line.strip().startswith("network ")]
    if required and not lines:
        raise FaultError("`router ospf` has no network lines on this router")
    return lines
