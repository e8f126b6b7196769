"""Scenario registry: one module per scenario, each a function `(size) -> Topology`."""

from __future__ import annotations

from collections.abc import Callable

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

SCENARIOS: dict[str, Callable[[str], Topology]] = {}


def register_scenario(name: str, build: Callable[[str], Topology]) -> None:
    """Add a scenario (`build(size) -> Topology`) under `name`; FaultlineError when the name is taken."""
    if name in SCENARIOS:
        raise FaultlineError(f"a lab scenario named {name!r} is already registered", fix="give it another name")
    SCENARIOS[name] = build


# built-ins register the same way any later scenario would
for _module in (simple_bgp, dc_clos_bgp, dc_clos_service, ospf_enterprise_static, ospf_enterprise_dhcp,
                rip_small_internet):
    register_scenario(_module.__name__.rsplit(".", 1)[1], _module.build)


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
