"""Which labels apply to which scenarios: data on each fault class, checked against real topologies.

A fault applies to a topology when its class finds a target there (`Fault.targets`): the lab runs
one of the class's `protocols` (empty: any) and has a device with one of its `roles`, plus whatever
the class narrows that to (a router with a host LAN, two end hosts on one bridge, a victim LAN). Every
scenario registered in `faultline.lab.scenarios.SCENARIOS` is checked, so a scenario added later
is picked up without touching this module.
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
