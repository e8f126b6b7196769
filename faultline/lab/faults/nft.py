"""Packet-filter faults: the ACL blocks, `link_fragmentation_disabled`, `link_high_packet_corruption`.

Mechanism `standard` owns one nft table per injection (`acl<fault number>`), so recovery deletes exactly it: `NftFilter`
drops in NIKA's chains, `NftRandomLoss` drops 60 % of an interface's egress (no netem here). Mechanism `iptables`
writes the same filter as an operator would with `iptables` (iptables-nft, built-in chains, `xt` matches; see
`iptables.py`); `arp_acl_block`'s `netdev` mechanism filters ARP at each interface's ingress and egress hooks.
Recipes: docs/lab.md#fault-recipes.
"""

from __future__ import annotations

import json
import random
import subprocess
from typing import ClassVar

from faultline.lab.faults import iptables
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, in_ns, sh
from faultline.lab.faults.interfaces import pick_interface
from faultline.lab.state import MGMT_INTERFACE, LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe


def table_name(rec: FaultRecord) -> str:
    """The nft table owned by one injection."""
    return f"acl{rec.id.lstrip('f')}"  # an ordinary operator's name; the fault id keeps two injections apart


def load_ruleset(namespace: str, text: str) -> None:
    """Load an nft script (`nft -f -`) inside a namespace, atomically."""
    proc = subprocess.run(in_ns(namespace, "nft", "-f", "-"), input=text, capture_output=True, text=True, timeout=15)
    if proc.returncode != 0:
        raise FaultError(f"nft rejected the fault ruleset in {namespace}: {proc.stderr.strip()[:300]}")


def delete_table(namespace: str, family: str, table: str) -> None:
    """Delete one nft table; already gone is fine (add-then-delete is nft's idempotent delete)."""
    load_ruleset(namespace, f"add table {family} {table}\ndelete table {family} {table}\n")


def table_rules(ctx: ProbeContext, device: str, family: str, table: str) -> list:
    """The rules of one nft table, through the `nft_ruleset` probe."""
    rules = run_probe(ctx, "nft_ruleset", dev=device).record.rules
    return [r for r in rules if r.family == family and r.table == table]


class NftFilter(Fault):
    """Drop matching packets in input, forward and output (NIKA v1's ACL-block layout)."""

    family: ClassVar[str] = "inet"
    matches: ClassVar[tuple[str, ...]] = ()  # one drop rule per match, in every chain ("" = drop everything)
    chains: ClassVar[tuple[str, ...]] = ("input", "forward", "output")
    # mechanism `iptables`: the same filter as `iptables -A` rules (chain, then arguments), in table filter
    iptables_rules: ClassVar[tuple[tuple[str, ...], ...]] = ()

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        if rec.mechanism_id == "iptables":
            self.apply_iptables(state, rec)
            return
        table = table_name(rec)
        lines = [f"table {self.family} {table} {{"]
        # an ACL on the data plane, not on the management interface a NOC reaches the device through
        spare = {"input": f'iifname != "{MGMT_INTERFACE}" ', "output": f'oifname != "{MGMT_INTERFACE}" '} \
            if state.mgmt is not None and self.family != "arp" else {}
        for chain in self.chains:
            lines.append(f"  chain {chain} {{ type filter hook {chain} priority -10; policy accept;")
            lines += [f"    {spare.get(chain, '')}{m + ' ' if m else ''}counter drop" for m in self.matches]
            lines.append("  }")
        lines.append("}")
        load_ruleset(state.device(rec.target).namespace, "\n".join(lines) + "\n")
        rec.params = {"family": self.family, "table": table}
        rec.mechanism = (f"nft table {self.family} {table} on {rec.target}: "
                         f"{'; '.join(m or 'everything' for m in self.matches)} -> drop in {'/'.join(self.chains)}")

    def apply_iptables(self, state: LabState, rec: FaultRecord) -> None:
        """Mechanism `iptables`: `iptables_rules` appended to the built-in chains, off the management interface."""
        rules = [[chain, *iptables.spare_management(state, chain), *args] for chain, *args in self.iptables_rules]
        spec = iptables.add_rules(state.device(rec.target).namespace, "filter", rules)
        rec.params = {"iptables": spec}
        rec.mechanism = f"on {rec.target}: {iptables.describe(spec)}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if "iptables" in rec.params:
            return iptables.rules_problem(ctx, rec, rec.params["iptables"])
        rules = table_rules(ctx, rec.target, rec.params["family"], rec.params["table"])
        drops = [r for r in rules if r.verdict == "drop"]
        expected = len(self.chains) * len(self.matches)
        if len(drops) < expected:
            return f"nft table {rec.params['table']} on {rec.target} has {len(drops)} drop rules, expected {expected}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "iptables" in rec.params:
            iptables.delete_rules(state.device(rec.target).namespace, rec.params["iptables"])
            return
        delete_table(state.device(rec.target).namespace, rec.params["family"], rec.params["table"])


class IcmpAclBlock(NftFilter):
    """`icmp_acl_block`: `ip protocol icmp drop` on a router or a host."""

    label = "icmp_acl_block"
    roles = ("host", "router")
    family = "ip"
    matches = ("ip protocol icmp",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft ip table: ip protocol icmp drop in input, forward and output",
        "iptables": "iptables -p icmp -j DROP in INPUT, FORWARD and OUTPUT (iptables-nft, table filter)",
    }
    iptables_rules = tuple((chain, "-p", "icmp", "-j", "DROP") for chain in ("INPUT", "FORWARD", "OUTPUT"))


class BgpAclBlock(NftFilter):
    """`bgp_acl_block`: TCP port 179 dropped both ways on a router; its sessions expire (hold 3 s)."""

    label = "bgp_acl_block"
    roles = ("router",)
    protocols = ("bgp",)
    matches = ("tcp dport 179", "tcp sport 179")
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft inet table: tcp dport 179 and tcp sport 179 dropped in input, forward and output",
        "iptables": "iptables REJECT --reject-with tcp-reset of TCP port 179 both ways in INPUT and OUTPUT: the "
                    "sessions are refused at once instead of timing out",
    }
    iptables_rules = tuple((chain, "-p", "tcp", flag, "179", "-j", "REJECT", "--reject-with", "tcp-reset")
                           for chain in ("INPUT", "OUTPUT") for flag in ("--dport", "--sport"))

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        peers = run_probe(ctx, "vtysh_show", dev=rec.target, command="show bgp ipv4 unicast summary json").record
        if peers.error:
            return f"vtysh on {rec.target}: {peers.error}"
        if not peers.bgp_peers:
            return f"{rec.target} has no BGP peers"
        if all(p.state == "Established" for p in peers.bgp_peers):
            return f"every BGP session of {rec.target} is still Established"
        return None


class ArpAclBlock(NftFilter):
    """`arp_acl_block`: an nft `arp` table dropping every ARP packet in and out, then the neighbour cache flushed."""

    label = "arp_acl_block"
    roles = ("host", "router")
    family = "arp"
    matches = ("",)
    chains = ("input", "output")  # the only hooks of the arp family
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft arp table dropping every ARP packet on input and output, then ip neigh flush all",
        "netdev": "nft netdev table filter: ether type arp dropped at the ingress and egress hook of every data-plane "
                  "interface (an interface ACL below IP), then ip neigh flush all",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ns = state.device(rec.target).namespace
        if rec.mechanism_id == "netdev":
            links = json.loads(sh(in_ns(ns, "ip", "-j", "link", "show"), "link list").stdout or "[]")
            names = sorted(link["ifname"] for link in links if link["ifname"] not in ("lo", MGMT_INTERFACE)
                           and link.get("link_type") == "ether")
            lines = ["table netdev filter {"]
            for name in names:
                for hook, short in (("ingress", "in"), ("egress", "out")):
                    lines += [f"  chain {name}_{short} {{",
                              f'    type filter hook {hook} device "{name}" priority 0; policy accept;',
                              "    ether type arp counter drop", "  }"]
            load_ruleset(ns, "\n".join([*lines, "}"]) + "\n")
            rec.params = {"family": "netdev", "table": "filter", "interfaces": names}
            rec.mechanism = f"nft table netdev filter on {rec.target}: ether type arp drop at ingress and egress of " \
                            f"{', '.join(names)}"
        else:
            super().apply(state, topo, rec, rng)
        sh(in_ns(ns, "ip", "neigh", "flush", "all"), "neighbour flush")
        rec.mechanism += "; ip neigh flush all"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if rec.params["family"] != "netdev":
            return super().artifact_problem(ctx, rec)
        rules = table_rules(ctx, rec.target, "netdev", rec.params["table"])
        drops = [r for r in rules if r.verdict == "drop"]
        if len(drops) < 2 * len(rec.params["interfaces"]) or not drops:
            return f"nft table netdev {rec.params['table']} on {rec.target} has {len(drops)} ARP drop rules"
        return None


class LinkFragmentationDisabled(NftFilter):
    """`link_fragmentation_disabled`: v1's OUTPUT drop of packets 10-65535 bytes long (nearly all of them)."""

    label = "link_fragmentation_disabled"
    roles = ("host",)
    family = "ip"
    matches = ("meta length 10-65535",)
    chains = ("output",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft ip table: meta length 10-65535 drop on output",
        "iptables": "iptables OUTPUT -m length --length 10:65535 -j DROP (v1's own rule, an xt length match)",
    }
    iptables_rules = (("OUTPUT", "-m", "length", "--length", "10:65535", "-j", "DROP"),)


class NftRandomLoss(Fault):
    """`link_high_packet_corruption` through random egress drops (netem substitute, see the module doc)."""

    label = "link_high_packet_corruption"
    roles = ("host",)
    percent: ClassVar[int] = 60
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft postrouting rule: oifname IF numgen random mod 100 < 60 drop",
        "iptables": "iptables OUTPUT -o IF -m statistic --mode random --probability 0.6 -j DROP (an xt match)",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ifname = pick_interface(topo, rec.target, rng)
        rec.resource_id = f"interface/{rec.target}/{ifname}"
        if rec.mechanism_id == "iptables":
            rule = ["OUTPUT", "-o", ifname, "-m", "statistic", "--mode", "random", "--probability",
                    f"{self.percent / 100:g}", "-j", "DROP"]
            spec = iptables.add_rules(state.device(rec.target).namespace, "filter", [rule])
            rec.params = {"iptables": spec, "ifname": ifname, "percent": self.percent}
            rec.mechanism = f"on {rec.target}: {iptables.describe(spec)} (a random drop: no netem in this kernel)"
            return
        table = table_name(rec)
        load_ruleset(state.device(rec.target).namespace,
                     f"table inet {table} {{\n  chain post {{ type filter hook postrouting priority 0; policy accept;\n"
                     f"    oifname \"{ifname}\" numgen random mod 100 < {self.percent} counter drop\n  }}\n}}\n")
        rec.params = {"family": "inet", "table": table, "ifname": ifname, "percent": self.percent}
        rec.mechanism = (f"nft numgen random drop of {self.percent}% of {ifname} egress on {rec.target} "
                         "(substitute for tc netem corrupt: no netem in this kernel)")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if "iptables" in rec.params:
            return iptables.rules_problem(ctx, rec, rec.params["iptables"])
        rules = table_rules(ctx, rec.target, "inet", rec.params["table"])
        if not any(r.verdict == "drop" and any("numgen" in m for m in r.matches) for r in rules):
            return f"no numgen drop rule in nft table {rec.params['table']} on {rec.target}"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        return reachability_loss(ctx, rec.target)

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "iptables" in rec.params:
            iptables.delete_rules(state.device(rec.target).namespace, rec.params["iptables"])
            return
        delete_table(state.device(rec.target).namespace, "inet", rec.params["table"])


def reachability_loss(ctx: ProbeContext, device: str) -> str | None:
    """None when a reachability row from `device` shows packet loss (10 pings per pair)."""
    rows = run_probe(ctx, "reachability", sources=[device], count=10).record.rows
    if any(r.loss > 0 for r in rows):
        return None
    return f"no packet loss from {device} in {len(rows)} rows of 10 pings"
