"""Packet filters written with iptables (iptables-nft here), as an operator would type them.

A fault keeps the exact rules it appended (`chain + match + target` argument lists) and deletes exactly those on
recovery; the rules live in the built-in chains of the `filter` table, with no chain or comment of their own, so
nothing in them names the lab. Verification reads them back through the `iptables_rules` probe.
"""

from __future__ import annotations

import random
from typing import ClassVar

from faultline.lab.faults.base import FaultError, FaultRecord, in_ns, sh
from faultline.lab.state import MGMT_INTERFACE, LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe

TABLE = "filter"


def data_plane(state: LabState, chain: str) -> list[str]:
    """The match that spares the management interface in `chain` (empty without a management network)."""
    if state.mgmt is None or chain == "FORWARD":
        return []
    return ["!", "-i" if chain == "INPUT" else "-o", MGMT_INTERFACE]


def rule(state: LabState, chain: str, *spec: str) -> list[str]:
    """One rule (`CHAIN ! -i mgmt0 SPEC...`) in the order `iptables -S` prints it back."""
    return [chain, *data_plane(state, chain), *spec]


def add_rules(state: LabState, device: str, rules: list[list[str]]) -> None:
    """Append `rules` to the device's filter table (FaultError on the first iptables error)."""
    ns = state.device(device).namespace
    for spec in rules:
        sh(in_ns(ns, "iptables", "-t", TABLE, "-A", *spec), "iptables rule")


def delete_rules(state: LabState, device: str, rules: list[list[str]]) -> None:
    """Delete every copy of each of `rules`; a rule already gone is fine."""
    ns = state.device(device).namespace
    for spec in rules:
        for _ in range(10):
            if sh(in_ns(ns, "iptables", "-t", TABLE, "-D", *spec), "iptables delete", check=False).returncode != 0:
                break


def shown_as(spec: list[str], shown: str) -> bool:
    """Whether `iptables -S` line `shown` is rule `spec` (iptables adds implicit `-m udp`, reject types)."""
    words = shown.split()
    if words[:1] != ["-A"]:
        return False
    rest = iter(words[1:])
    return all(any(w == want for w in rest) for want in spec)


def rules_missing(ctx: ProbeContext, device: str, rules: list[list[str]]) -> str | None:
    """None when every one of `rules` is in the device's filter table, else which one is not."""
    listed = run_probe(ctx, "iptables_rules", dev=device, table=TABLE).record
    if listed.error:
        return f"iptables on {device}: {listed.error}"
    for spec in rules:
        if not any(shown_as(spec, line) for line in listed.rules):
            return f"no `iptables -A {' '.join(spec)}` on {device} ({len(listed.rules)} rules listed)"
    return None


def describe(rules: list[list[str]]) -> str:
    """The rules as the commands that added them."""
    return "; ".join(f"iptables -A {' '.join(spec)}" for spec in rules)


class IptablesVariant:
    """Mixin for a filter label whose standard mechanism is an nft table: the mechanisms named in
    `iptables_mechanisms` write iptables rules (`iptables_rules_for`) instead.

    Put it before the nft class in the bases; the record's `params["rules"]` marks an iptables injection.
    """

    iptables_mechanisms: ClassVar[tuple[str, ...]] = ()

    def iptables_rules_for(self, state: LabState, rec: FaultRecord) -> list[list[str]]:
        """The rules of mechanism `rec.mechanism_id` (argument lists after `iptables -A`)."""
        raise NotImplementedError

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        if rec.mechanism_id not in self.iptables_mechanisms:
            super().apply(state, topo, rec, rng)  # type: ignore[misc]
            return
        rules = self.iptables_rules_for(state, rec)
        rec.params = {"rules": rules}
        try:
            add_rules(state, rec.target, rules)
        except FaultError:
            delete_rules(state, rec.target, rules)  # the record is not saved yet: leave nothing behind
            raise
        rec.mechanism = f"{describe(rules)} on {rec.target}"

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        if "rules" not in rec.params:
            return super().artifact_problem(ctx, rec)  # type: ignore[misc]
        return rules_missing(ctx, rec.target, rec.params["rules"])

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        if "rules" not in rec.params:
            super().undo(state, topo, rec)  # type: ignore[misc]
            return
        delete_rules(state, rec.target, rec.params["rules"])
