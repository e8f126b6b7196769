"""The network lab: topology addressing (pure), and a real simple_bgp lab in namespaces (root).

The lab tests (marked `lab`) need root: skipped without it, failed with --require-all (as CI runs them).
"""

from __future__ import annotations

import ipaddress
import json
import os
from pathlib import Path

import pytest

from faultline.errors import FaultlineError
from faultline.lab.scenarios import SIZES, build_topology, scenario_names
from tests.labfixtures import lab_dir, lab_fixture, lab_namespaces, root_routes, running_lab, settings_for

LAB_DIR = lab_dir("test")


def _alive(pid: int) -> bool:
    from faultline.lab.teardown import alive

    return alive(pid)


# --- pure unit tests -------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_addressing_is_deterministic_and_disjoint(size):
    first, second = build_topology("simple_bgp", size), build_topology("simple_bgp", size)
    addrs = {n: node.addresses for n, node in first.nodes.items()}
    assert addrs == {n: node.addresses for n, node in second.nodes.items()}
    every = [a for node in first.nodes.values() for a in node.addresses]
    assert len(every) == len(set(a.split("/")[0] for a in every)), "an address is used twice"
    # the subnets of links, LANs and loopbacks never overlap
    nets = [ipaddress.ip_network(link.a.address, strict=False) for link in first.links]
    nets += [ipaddress.ip_network(lan.subnet) for lan in first.lans]
    nets += [ipaddress.ip_network(node.loopback) for node in first.routers()]
    for i, a in enumerate(nets):
        for b in nets[i + 1:]:
            assert not a.overlaps(b), f"{a} overlaps {b}"
    # every host sits in its gateway's LAN
    for lan in first.lans:
        for host in lan.hosts:
            assert ipaddress.ip_address(host.address.split("/")[0]) in ipaddress.ip_network(lan.subnet)


def test_simple_bgp_small_is_nikas_shape():
    topo = build_topology("simple_bgp", "s")
    assert [n.name for n in topo.routers()] == ["router1", "router2"]
    assert [n.name for n in topo.hosts()] == ["pc1", "pc2"]
    assert [n.asn for n in topo.routers()] == [1, 2]


def test_bad_scenario_and_size_are_refused():
    with pytest.raises(FaultlineError, match="unknown lab scenario 'nope'") as exc:
        build_topology("nope", "s")
    assert "simple_bgp" in (exc.value.fix or "")
    with pytest.raises(FaultlineError, match="unknown lab size 'xl'"):
        build_topology("simple_bgp", "xl")
    assert "simple_bgp" in scenario_names()


def test_cli_refuses_bad_names_and_non_root(run_cli, capsys, monkeypatch):
    run_cli("lab", "up", "nope", expect_exit=2)
    assert "unknown lab scenario 'nope'" in capsys.readouterr().err
    run_cli("lab", "up", "simple_bgp", "--size", "xl", expect_exit=2)
    assert "unknown lab size 'xl'" in capsys.readouterr().err
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    run_cli("lab", "up", "simple_bgp", expect_exit=2)
    assert "the lab needs root (network namespaces)" in capsys.readouterr().err


# --- a real lab ------------------------------------------------------------------------------


@lab_fixture
def lab_settings():
    return settings_for(LAB_DIR)


@lab_fixture
def bgp_lab(lab_settings):
    """(state, root routes before it) of one simple_bgp lab (size s) shared by the tests below; always torn down."""
    routes_before = root_routes()
    with running_lab("simple_bgp", lab_settings, timeout=30) as (state, _):
        yield state, routes_before


@pytest.mark.lab
def test_lab_comes_up_healthy(bgp_lab):
    from faultline.lab.readiness import host_pairs, unreachable

    state, _ = bgp_lab
    assert state.status == "healthy"
    assert sorted(state.namespaces) == ["fl-pc1", "fl-pc2", "fl-router1", "fl-router2"]
    assert sorted(p.name for p in state.processes) == ["bgpd", "bgpd", "zebra", "zebra"]
    assert all(_alive(p.pid) for p in state.processes)
    assert unreachable(host_pairs(build_topology("simple_bgp", "s"))) == []
    assert state.timings["healthy_s"] < 30


@pytest.mark.lab
def test_state_is_a_device_directory(bgp_lab):
    state, _ = bgp_lab
    pc1 = state.device("pc1")
    assert pc1.namespace == "fl-pc1" and pc1.role == "host" and pc1.addresses == ("10.1.0.10/24",)
    assert [d.name for d in state.devices()] == ["router1", "router2", "pc1", "pc2"]
    with pytest.raises(KeyError):
        state.device("nope")


@pytest.mark.lab
def test_status_json(bgp_lab, run_cli, capsys, monkeypatch):
    monkeypatch.setenv("FAULTLINE_LAB_DIR", str(LAB_DIR))
    run_cli("lab", "status", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["scenario"] == "simple_bgp" and payload["status"] == "healthy"
    assert {d["name"] for d in payload["device_list"]} == {"router1", "router2", "pc1", "pc2"}


@pytest.mark.lab
def test_second_up_is_refused(bgp_lab, lab_settings):
    from faultline.lab import lifecycle as lab

    with pytest.raises(FaultlineError, match="already up"):
        lab.up("simple_bgp", "s", lab_settings)


@pytest.mark.lab
def test_down_leaves_nothing_behind(bgp_lab, lab_settings):
    from faultline.lab import lifecycle as lab

    state, routes_before = bgp_lab
    lab.down(lab_settings)
    assert not lab_namespaces()
    assert not any(_alive(p.pid) for p in state.processes)
    assert not Path(state.run_dir).exists()
    assert not [p for p in state.extra_paths if Path(p).exists()]
    assert root_routes() == routes_before


@pytest.mark.lab
def test_down_all_cleans_a_crashed_lab(lab_settings):
    from faultline.lab import lifecycle as lab
    from faultline.lab.state import STATE_FILE

    routes_before = root_routes()
    try:
        state = lab.up("simple_bgp", "s", lab_settings, timeout=30)
        # a crash: the state file is gone, namespaces and daemons are still there
        (Path(state.run_dir) / STATE_FILE).unlink()
        assert lab.status(lab_settings) is None
        result = lab.down(lab_settings, all=True)
        assert sorted(result["killed_pids"]) == sorted(p.pid for p in state.processes)
        assert not lab_namespaces()
        assert not any(_alive(p.pid) for p in state.processes)
        assert not Path(state.run_dir).exists()
        assert not [p for p in state.extra_paths if Path(p).exists()]
        assert root_routes() == routes_before
    finally:
        lab.down(lab_settings, all=True)
