"""Which labels apply to which scenarios: each fault class's targets, looked for in every registered scenario.

The rule (protocols, roles, and what a class narrows them to): docs/lab.md#fault-lifecycle.
"""

from __future__ import annotations

from faultline.lab.faults.registry import fault_class, fault_labels
from faultline.lab.scenarios import build_topology, scenario_names
from faultline.lab.topology import Topology


def applicable(label: str, topology: Topology) -> bool:
    """True when `label` can be injected into a lab of `topology` (it has at least one target)."""
    return bool(fault_class(label).targets(topology))


def label_scenarios(label: str, size: str = "s") -> list[str]:
    """Every registered scenario where `label` applies at `size`, sorted."""
    return [name for name in scenario_names() if applicable(label, build_topology(name, size))]


def scenario_table(size: str = "s") -> dict[str, list[str]]:
    """label -> the scenarios it applies to at `size`, for every implemented label (each topology built once)."""
    topologies = {name: build_topology(name, size) for name in scenario_names()}
    return {label: [name for name, topo in topologies.items() if applicable(label, topo)] for label in fault_labels()}
