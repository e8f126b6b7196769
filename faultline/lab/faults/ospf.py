"""OSPF faults on FRR routers: `ospf_acl_block`, `ospf_neighbor_missing`, `ospf_area_misconfiguration`.

The ACL is an nft table; the other two are live `vtysh` changes whose inverse is recorded (NIKA edits frr.conf
and restarts; the running result is the same). Recipes: docs/lab.md#fault-recipes.
"""

from __future__ import annotations

import ipaddress
from typing import ClassVar

from faultline.lab.faults.base import FaultError, FaultRecord
from faultline.lab.faults.iptables import IptablesVariant, rule
from faultline.lab.faults.nft import NftFilter
from faultline.lab.faults.routing import BgpConfigChange, _topo, adjacency_lost_problem, config_block, vtysh
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


class OspfAclBlock(IptablesVariant, NftFilter):
    """`ospf_acl_block`: IP protocol 89 dropped both ways on a router (an nft table, or iptables rules)."""

    label = "ospf_acl_block"
    roles = ("router",)
    protocols = ("ospf",)
    family = "inet"
    matches = ("ip protocol ospf",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft table: ip protocol ospf drop in input, forward and output",
        "iptables": "iptables -A INPUT/OUTPUT -p ospf -j DROP (an ACL written with iptables)",
    }
    iptables_mechanisms = ("iptables",)

    def iptables_rules_for(self, state: LabState, rec: FaultRecord) -> list[list[str]]:
        return [rule(state, chain, "-p", "ospf", "-j", "DROP") for chain in ("INPUT", "OUTPUT")]

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return adjacency_lost_problem(ctx, _topo(ctx, rec), rec.target)


class OspfNeighborMissing(BgpConfigChange):
    """`ospf_neighbor_missing`: `no network ... area ...` for every network of `router ospf`."""

    label = "ospf_neighbor_missing"
    protocols = ("ospf",)
    host_lan = False
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "`no network ... area ...` for every network of `router ospf`",
        "passive_interface": "`ip ospf passive` on every link interface: the networks stay advertised, no hello "
                             "is sent or answered, so no neighbour forms",
    }

    def block(self, running_config: str) -> list[str]:
        return config_block(running_config, "router ospf")

    def change(self, block: list[str]) -> tuple[list[str], list[str]]:
        nets = network_lines(block, required=True)
        return [block[0], *[f"no {n}" for n in nets]], [block[0], *nets]

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng) -> None:
        if rec.mechanism_id != "passive_interface":
            super().apply(state, topo, rec, rng)
            return
        links = sorted(local.name for local, _ in topo.neighbours(rec.target))
        if not links:
            raise FaultError(f"{rec.target} has no OSPF link")
        rec.params = {"forward": [c for ifname in links for c in (f"interface {ifname}", "ip ospf passive")],
                      "backward": [c for ifname in links for c in (f"interface {ifname}", "no ip ospf passive")],
                      "interfaces": links}
        vtysh(state, rec.target, "configure terminal", *rec.params["forward"])
        rec.mechanism = f"vtysh on {rec.target}: ip ospf passive on {', '.join(links)}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if rec.mechanism_id != "passive_interface":
            return super().artifact_problem(ctx, rec)
        text = run_probe(ctx, "vtysh_show", dev=rec.target, command="show running-config").raw
        missing = [i for i in rec.params["interfaces"] if "ip ospf passive" not in interface_block(text, i)]
        return f"not passive on {rec.target}: {', '.join(missing)}" if missing else None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.mechanism_id != "passive_interface":
            super().undo(state, topo, rec)
            return
        vtysh(state, rec.target, "configure terminal", *rec.params["backward"])

    def check_block(self, block: list[str], rec: FaultRecord) -> str | None:
        present = set(network_lines(block))
        still = [c for c in rec.params["backward"][1:] if c in present]
        return f"still in router ospf on {rec.target}: {', '.join(still)}" if still else None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return adjacency_lost_problem(ctx, _topo(ctx, rec), rec.target)


class OspfAreaMisconfiguration(OspfNeighborMissing):
    """`ospf_area_misconfiguration`: the networks of one area moved to area 66 (or 99), in the `network` statements
    (standard) or, with the statements replaced by per-interface areas, on the interfaces."""

    label = "ospf_area_misconfiguration"
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the `network ... area A` statements of one area rewritten to area 66 (99)",
        "interface_area": "`router ospf`'s network statements replaced by `ip ospf area` on each interface, those "
                          "of one area given area 66 (99): the same mismatch, configured per interface",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng) -> None:
        if rec.mechanism_id != "interface_area":
            super().apply(state, topo, rec, rng)
            return
        block = self.block(vtysh(state, rec.target, "show running-config"))
        nets = network_lines(block, required=True)
        area = nets[0].split()[-1]
        wrong_area = "99" if area == "66" else "66"
        areas = interface_areas(topo, rec.target, nets)
        given = {ifname: wrong_area if a == area else a for ifname, a in areas.items()}
        forward = [block[0], *[f"no {n}" for n in nets]]
        forward += [c for ifname, a in given.items() for c in (f"interface {ifname}", f"ip ospf area {a}")]
        backward = [c for ifname in given for c in (f"interface {ifname}", "no ip ospf area")] + [block[0], *nets]
        vtysh(state, rec.target, "configure terminal", *forward)
        rec.params = {"forward": forward, "backward": backward, "areas": given,
                      "moved": sorted(i for i, a in areas.items() if a == area), "wrong_area": wrong_area}
        rec.mechanism = (f"vtysh on {rec.target}: network statements removed from router ospf; ip ospf area per "
                         f"interface, {', '.join(rec.params['moved'])} in area {wrong_area} instead of {area}")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if rec.mechanism_id != "interface_area":
            return super().artifact_problem(ctx, rec)
        text = run_probe(ctx, "vtysh_show", dev=rec.target, command="show running-config").raw
        return self.interface_problem(text, rec)

    def interface_problem(self, running_config: str, rec: FaultRecord) -> str | None:
        """None when every moved interface carries the wrong area in `running_config`."""
        wanted = f"ip ospf area {rec.params['wrong_area']}"
        missing = [i for i in rec.params["moved"] if wanted not in interface_block(running_config, i)]
        return f"not in area {rec.params['wrong_area']} on {rec.target}: {', '.join(missing)}" if missing else None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if rec.mechanism_id != "interface_area":
            super().undo(state, topo, rec)
            return
        if self.interface_problem(vtysh(state, rec.target, "show running-config"), rec) is None:
            vtysh(state, rec.target, "configure terminal", *rec.params["backward"])

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


def interface_areas(topo: Topology, router: str, nets: list[str]) -> dict[str, str]:
    """{interface: area} of `router`'s interfaces (and `lo`) covered by its `network P area A` lines."""
    node = topo.nodes[router]
    addresses = [(i.name, i.address) for i in node.interfaces] + ([("lo", node.loopback)] if node.loopback else [])
    found: dict[str, str] = {}
    for name, address in addresses:
        ip = ipaddress.ip_interface(address).ip
        for line in nets:
            words = line.split()
            if ip in ipaddress.ip_network(words[1], strict=False):
                found.setdefault(name, words[-1])
    return found


def network_lines(block: list[str], required: bool = False) -> list[str]:
    """The `network P area A` lines of a `router ospf` block (stripped); FaultError when `required` and none."""
    lines = [line.strip() for line in block if line.strip().startswith("network ")]
    if required and not lines:
        raise FaultError("`router ospf` has no network lines on this router")
    return lines


def interface_block(running_config: str, ifname: str) -> list[str]:
    """The stripped lines of `interface IFNAME` in a running config (empty when it has none)."""
    lines = running_config.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"interface {ifname}"), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() in ("exit", "!")), len(lines))
    return [line.strip() for line in lines[start + 1:end]]
