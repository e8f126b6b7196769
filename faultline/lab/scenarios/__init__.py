"""Scenario registry: one module per scenario, each a function `(size) -> Topology`."""

from __future__ import annotations

from typing import Callable

from faultline.errors import FaultlineError
from faultline.lab.scenarios import (
    dc_clos_bgp,
    dc_clos_service,
    ospf_enterprise_dhcp,
    ospf_enterprise_static,
    rip_small_internet,
    simple_bgp,
)
from faultline.lab.topology import Topology

SIZES = ("s", "m", "l")

# built-ins register here the same way any later scenario would
SCENARIOS: dict[str, Callable[[str], Topology]] = {
    "simple_bgp": simple_bgp.build,
    "dc_clos_bgp": dc_clos_bgp.build,
    "dc_clos_service": dc_clos_service.build,
    "ospf_enterprise_static": ospf_enterprise_static.build,
    "ospf_enterprise_dhcp": ospf_enterprise_dhcp.build,
    "rip_small_internet": rip_small_internet.build,
}


def scenario_names() -> list[str]:
    """Every registered scenario, sorted."""
    return sorted(SCENARIOS)


def build_topology(scenario: str, size: str) -> Topology:
    """The topology of `scenario` at `size`; a clear error for unknown names."""
    if scenario not in SCENARIOS:
        raise FaultlineError(
            f"unknown lab scenario {scenario!r}",
            fix=f"choose one of: {', '.join(scenario_names())}",
        )
    if size not in SIZES:
        raise FaultlineError(f"unknown lab size {size!r}", fix="choose one of: s, m, l")
    return SCENARIOS[scenario](size)
