"""What changed since the baseline: FRR running configurations read into statements and compared (recorded
output of faults made by hand), and the general differ over other probes' records."""

from __future__ import annotations

from pathlib import Path

from faultline.network.probes import ProbeOutput
from faultline.network.records import Route, RouteTable
from faultline.sade import frr_config
from faultline.sade.scans.changes import DIFFERS

CASES = Path(__file__).parent / "cases" / "frr_config"


def _pair(name: str) -> tuple[str, str]:
    return (CASES / f"{name}.baseline.txt").read_text(), (CASES / f"{name}.incident.txt").read_text()


def test_a_neighbours_remote_as_changed_is_one_change_in_its_router_bgp_block() -> None:
    before, after = _pair("bgp-remote-as-router2")
    found = frr_config.diff(before, after)
    assert [(c.section, c.before, c.after, c.topic) for c in found] == [
        ("router bgp 2", "neighbor 10.0.0.0 remote-as 1", "neighbor 10.0.0.0 remote-as 9", "bgp_neighbor_as")]


def test_a_passive_interface_is_a_statement_added_to_that_interface() -> None:
    before, after = _pair("ospf-passive-dist_router_1_1")
    found = frr_config.diff(before, after)
    assert [(c.section, c.change, c.statement, c.topic) for c in found] == [
        ("interface eth0", "added", "ip ospf passive", "ospf_passive")]


def test_statements_keep_their_nested_block() -> None:
    before, _ = _pair("bgp-remote-as-router2")
    stmts = frr_config.statements(before)
    assert frr_config.Statement("router bgp 2 / address-family ipv4 unicast", "network 10.1.1.0/24") in stmts
    assert all(s.text not in ("exit", "exit-address-family", "!") for s in stmts)


def test_a_renamed_block_is_one_header_change_and_its_statements_compare_under_the_new_name() -> None:
    before, _ = _pair("bgp-remote-as-router2")
    after = before.replace("router bgp 2", "router bgp 602").replace("  network 10.1.1.0/24\n", "")
    found = frr_config.diff(before, after)
    assert [(c.before, c.after, c.topic) for c in found] == [
        ("router bgp 2", "router bgp 602", "bgp_as"), ("network 10.1.1.0/24", None, "bgp_network")]


def test_unchanged_configuration_has_no_difference() -> None:
    before, _ = _pair("ospf-passive-dist_router_1_1")
    assert frr_config.diff(before, before) == []


def _routes(*routes: Route) -> ProbeOutput:
    return ProbeOutput(probe="ip_route", device="h", args={"dev": "h"}, raw="", result=None,
                       record=RouteTable(device="h", routes=list(routes)))


def test_route_differ_sees_a_prefix_turned_into_a_blackhole_beside_an_intact_default() -> None:
    default = Route(dst="default", gateway="10.2.0.1", dev="eth0", type="unicast")
    lan = Route(dst="10.2.0.0/24", dev="eth0", protocol="kernel", type="unicast")
    hole = Route(dst="10.1.2.0/24", type="blackhole")
    found = DIFFERS["ip_route"](_routes(default, lan), _routes(default, lan, hole), {"dev": "h"})
    assert [(c.kind, c.attrs["prefix"], c.change, c.attrs["type"]) for c in found] == [
        ("route_changed", "10.1.2.0/24", "added", "blackhole")]
