"""iptables rules as a fault mechanism: added with the `iptables` command an operator types, removed one by one.

`iptables` here is iptables-nft, so the rules land in the kernel's nftables as table `ip filter` (or `ip mangle`)
with the built-in chains INPUT, FORWARD, OUTPUT, written with `xt` matches where nft has no native form
(`statistic`, `length`). A rule is an argument vector after `-A`: `["INPUT", "-p", "icmp", "-j", "DROP"]`.
Recovery deletes exactly the rules the fault added (`iptables -D`), then the table when the fault created it and
nothing else is left in it, so a healthy device shows the ruleset it had before.
"""

from __future__ import annotations

import random
from typing import ClassVar

from faultline.lab.faults.base import FaultError, FaultRecord, in_ns, sh
from faultline.lab.state import MGMT_INTERFACE, LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe

Rule = list[str]  # chain, then iptables match/target arguments


def spare_management(state: LabState, chain: str) -> list[str]:
    """Arguments that keep a rule off the management interface (a NOC reaches the device through it)."""
    if state.mgmt is None:
        return []
    if chain in ("INPUT", "PREROUTING"):
        return ["!", "-i", MGMT_INTERFACE]
    if chain in ("OUTPUT", "POSTROUTING"):
        return ["!", "-o", MGMT_INTERFACE]
    return []


def rule(state: LabState, chain: str, *spec: str) -> Rule:
    """One rule of `chain` that spares the management interface (`CHAIN ! -i mgmt0 SPEC...`)."""
    return [chain, *spare_management(state, chain), *spec]


def listed_rules(namespace: str, table: str) -> list[str]:
    """The `-A` lines of `iptables -t TABLE -S` in a namespace, now."""
    out = sh(in_ns(namespace, "iptables", "-t", table, "-S"), "iptables list").stdout
    return [line.strip() for line in out.splitlines() if line.startswith("-A ")]


def table_exists(namespace: str, table: str) -> bool:
    """Whether iptables-nft's table `ip TABLE` is in the namespace's ruleset."""
    return sh(in_ns(namespace, "nft", "list", "table", "ip", table), "nft list", check=False).returncode == 0


def add_rules(namespace: str, table: str, rules: list[Rule]) -> dict:
    """Append `rules` to `table`; returns what recovery and verification need (the rules, the lines iptables lists
    for them, whether the table was there before)."""
    existed = table_exists(namespace, table)
    before = set(listed_rules(namespace, table))
    for rule in rules:
        sh(in_ns(namespace, "iptables", "-t", table, "-A", *rule), "iptables rule")
    lines = [line for line in listed_rules(namespace, table) if line not in before]
    return {"table": table, "rules": [list(r) for r in rules], "lines": lines, "table_existed": existed}


def delete_rules(namespace: str, spec: dict) -> None:
    """Delete the rules `add_rules` added (a rule already gone is fine), and the table if it made it and it is
    empty now."""
    table = spec["table"]
    for rule in spec["rules"]:
        while sh(in_ns(namespace, "iptables", "-t", table, "-C", *rule), "iptables check", check=False).returncode == 0:
            sh(in_ns(namespace, "iptables", "-t", table, "-D", *rule), "iptables delete")
    if not spec["table_existed"] and table_exists(namespace, table) and not listed_rules(namespace, table):
        sh(in_ns(namespace, "nft", "delete", "table", "ip", table), "iptables table delete", check=False)


def rules_problem(ctx: ProbeContext, rec: FaultRecord, spec: dict) -> str | None:
    """None when every line the fault added is listed by the `iptables_rules` probe, else which is missing."""
    listed = run_probe(ctx, "iptables_rules", dev=rec.target, table=spec["table"]).record
    if listed.error:
        return f"iptables on {rec.target}: {listed.error}"
    missing = [line for line in spec["lines"] if line not in listed.rules]
    if missing or not spec["lines"]:
        return f"{rec.target} has no iptables rule {missing[0] if missing else '(none recorded)'}"
    return None


def describe(spec: dict) -> str:
    """The rules in words, as `iptables -S` lists them."""
    return "; ".join(f"iptables -t {spec['table']} {line}" for line in spec["lines"])


class IptablesVariant:
    """Mixin for a filter label whose standard mechanism is an nft table: the mechanisms named in
    `iptables_mechanisms` write iptables rules (`iptables_rules_for`) into the `filter` table instead.

    Put it before the nft class in the bases; the record's `params["iptables"]` marks an iptables injection.
    """

    iptables_mechanisms: ClassVar[tuple[str, ...]] = ()

    def iptables_rules_for(self, state: LabState, rec: FaultRecord) -> list[Rule]:
        """The rules of mechanism `rec.mechanism_id` (argument lists after `iptables -A`)."""
        raise NotImplementedError

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        if rec.mechanism_id not in self.iptables_mechanisms:
            super().apply(state, topo, rec, rng)  # type: ignore[misc]
            return
        namespace = state.device(rec.target).namespace
        rules = self.iptables_rules_for(state, rec)
        existed = table_exists(namespace, "filter")
        try:
            rec.params = {"iptables": add_rules(namespace, "filter", rules)}
        except FaultError:  # the record is not saved yet: leave nothing behind
            delete_rules(namespace, {"table": "filter", "rules": rules, "lines": [], "table_existed": existed})
            raise
        rec.mechanism = f"on {rec.target}: {describe(rec.params['iptables'])}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if "iptables" not in rec.params:
            return super().artifact_problem(ctx, rec)  # type: ignore[misc]
        return rules_problem(ctx, rec, rec.params["iptables"])

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "iptables" not in rec.params:
            super().undo(state, topo, rec)  # type: ignore[misc]
            return
        delete_rules(state.device(rec.target).namespace, rec.params["iptables"])
