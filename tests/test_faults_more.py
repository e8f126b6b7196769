"""BGP route leak and hijack, ARP poisoning, MAC conflict; and on which scenarios each label applies.

Pure tests first (applicability over every registered scenario, refusals with a fix, seeded
targets), then inject → verify → recover on real labs: simple_bgp and dc_clos_bgp for the BGP labels
and ARP poisoning, ospf_enterprise_static for the MAC conflict (its server LAN is the bridged segment
at size s). The lab tests (marked `lab`) need root. One lab at a time: the module's `labs` holder tears the
current lab down before it builds another scenario's, and the last one at the end.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from faultline.lab import faults
from faultline.lab.faults.applicability import label_scenarios, scenario_table
from faultline.lab.faults.base import FaultError, FaultNotVerified
from faultline.lab.faults.bgp_origin import victim_lan
from faultline.lab.namespaces import namespace_name
from faultline.lab.scenarios import SCENARIOS, build_topology
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.nika.labels import catalogue
from tests.labfixtures import lab_dir, lab_holder, offline_state

LAB_DIR = lab_dir("faults-more")
NEW_LABELS = ("bgp_blackhole_route_leak", "bgp_hijacking", "arp_cache_poisoning", "mac_address_conflict")

CASES = [  # (scenario, label, target); grouped by scenario, simple_bgp last: the next test reuses its lab
    ("ospf_enterprise_static", "mac_address_conflict", "web_server_3"),
    ("ospf_enterprise_static", "arp_cache_poisoning", "host_2_1_1_1"),
    ("dc_clos_bgp", "bgp_blackhole_route_leak", "leaf_0_0"),
    ("dc_clos_bgp", "bgp_hijacking", "spine_0_1"),
    ("dc_clos_bgp", "arp_cache_poisoning", "pc_0_1"),
    ("simple_bgp", "bgp_blackhole_route_leak", "router1"),
    ("simple_bgp", "bgp_hijacking", "router1"),
    ("simple_bgp", "arp_cache_poisoning", "pc1"),
]


# --- pure: where labels apply -------------------------------------------------------------------


def test_every_implemented_label_applies_somewhere_and_only_where_its_protocol_runs():
    table = scenario_table("s")
    assert set(table) == set(faults.fault_labels())
    for label, scenarios in table.items():
        assert scenarios, f"{label} applies to no scenario at size s"
        protocols = faults.fault_class(label).protocols
        assert all(not protocols or build_topology(s, "s").protocol in protocols for s in scenarios), label
    for label in ("bgp_blackhole_route_leak", "bgp_hijacking", "bgp_acl_block", "bgp_asn_misconfig"):
        assert {"simple_bgp", "dc_clos_bgp"} <= set(label_scenarios(label)) and "rip_small_internet" not in table[label]
    for label in ("ospf_acl_block", "ospf_neighbor_missing", "ospf_area_misconfiguration"):
        assert "ospf_enterprise_static" in table[label] and "simple_bgp" not in table[label]
    # a bridged LAN with two end hosts: the server LAN (ospf), the external web LAN (rip), PCs from size m (simple_bgp)
    assert {"ospf_enterprise_static", "rip_small_internet"} <= set(table["mac_address_conflict"])
    assert not {"simple_bgp", "dc_clos_bgp"} & set(table["mac_address_conflict"])
    assert "simple_bgp" in label_scenarios("mac_address_conflict", "m")


def test_a_scenario_registered_later_is_picked_up(monkeypatch):
    def toy(size: str) -> Topology:
        topo = Topology(scenario="toy_web", size=size, protocol="bgp")
        topo.add_router("r1", asn=1)
        topo.add_router("r2", asn=2)
        topo.connect("r1", "r2")
        topo.add_lan("r1", [topo.add_host("pc1").name])
        webs = [topo.add_host(name).name for name in ("web_a", "web_b")]
        for name in webs:
            topo.nodes[name].role = "web"  # a service role, as the service scenarios give their servers
        topo.add_lan("r2", webs)
        return topo

    monkeypatch.setitem(SCENARIOS, "toy_web", toy)
    assert "toy_web" in label_scenarios("bgp_hijacking") and "toy_web" in label_scenarios("mac_address_conflict")
    victim, lan = victim_lan(toy("s")) or ("", None)
    assert victim == "web_b" and lan is not None and lan.router == "r2"  # the last web server, not the last host
    assert faults.fault_class("bgp_hijacking").targets(toy("s")) == ["r1"]  # never the victim's own gateway


def test_refusals_name_where_the_label_works():
    state = offline_state("simple_bgp")
    with pytest.raises(FaultError, match="needs two end hosts on one bridged LAN") as err:
        faults.inject(state, "mac_address_conflict")
    assert "simple_bgp (m, l)" in err.value.fix and "ospf_enterprise_static (s, m, l)" in err.value.fix
    with pytest.raises(FaultError, match="needs an OSPF lab") as err:
        faults.inject(state, "ospf_neighbor_missing", "router1")
    assert "ospf_enterprise_static" in err.value.fix
    with pytest.raises(FaultError, match="needs a BGP lab"):
        faults.inject(offline_state("rip_small_internet"), "bgp_hijacking")
    with pytest.raises(FaultError, match="cannot target 'router2'"):  # router2 is the victim pc2's gateway
        faults.inject(state, "bgp_hijacking", "router2")
    assert faults.fault_class("mac_address_conflict").where_applicable().startswith(
        "a scenario/size where it applies: ")


def test_new_labels_pick_seeded_targets_and_match_the_catalogue():
    info = {row.label: row for row in catalogue()}
    for label in NEW_LABELS:
        cls = faults.fault_class(label)
        assert info[label].status == "implemented" and info[label].category == cls.category
        for scenario in label_scenarios(label):
            state = offline_state(scenario)
            picks = [faults.choose_target(state, label, seed) for seed in range(8)]
            assert picks == [faults.choose_target(state, label, seed) for seed in range(8)]
            assert set(picks) <= set(cls.targets(build_topology(scenario, "s")))


def test_cli_faults_json_lists_scenarios(run_cli, capsys):
    run_cli("lab", "faults", "--all", "--json")
    rows = {row["label"]: row for row in json.loads(capsys.readouterr().out)}
    assert len(rows) == 55
    assert rows["mac_address_conflict"]["scenarios"] == scenario_table("s")["mac_address_conflict"]
    assert rows["dns_service_down"]["scenarios"] == scenario_table("s")["dns_service_down"]
    assert rows["sdn_controller_crash"]["scenarios"] == []


# --- real labs --------------------------------------------------------------------------------


labs = lab_holder(LAB_DIR, timeout=60)  # one lab up at a time; labs.get(scenario) switches


def _assert_healthy(state: LabState, ctx) -> None:
    from faultline.lab.readiness import routing_problems
    from faultline.network.probes import run_probe

    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, [r for r in matrix.rows if r.status != "ok"]
    what, problems = routing_problems(build_topology(state.scenario, state.size), Path(state.run_dir))
    assert not problems, (what, problems)


@pytest.mark.lab
@pytest.mark.parametrize("scenario,label,target", CASES, ids=[f"{s}-{label}" for s, label, _ in CASES])
def test_inject_verify_recover(labs, scenario, label, target):
    state, ctx = labs.get(scenario)
    t0 = time.monotonic()
    rec = faults.inject(state, label, target, seed=5, mechanism="standard")
    truth = rec.ground_truth()
    devices = sorted([target, rec.params["victim"]]) if label == "mac_address_conflict" else [target]
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": devices, "root_cause_name": label}
    assert truth["category"] == next(r.category for r in catalogue() if r.label == label)
    assert truth["v2"]["fault_type"] == faults.fault_class(label).fault_type
    assert truth["v2"]["resource_id"].split("/")[1] == target and rec.mechanism
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    result = faults.recover(state)
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):  # recovery really removed it
        faults.registry.rebuild(rec).verify(ctx)
    _assert_healthy(state, ctx)
    assert verified_s < 30 and result["healthy_s"] < 30
    if label == "bgp_blackhole_route_leak":  # the staticd started for the fault is gone again
        from faultline.lab.teardown import alive

        pid = rec.params["staticd_pid"]
        assert pid and not alive(pid) and all(p.pid != pid for p in state.processes)
    if label == "mac_address_conflict":
        mac = subprocess.run(["ip", "-n", namespace_name(target), "-br", "link", "show", "dev", rec.params["ifname"]],
                             check=True, capture_output=True, text=True).stdout.split()[2]
        assert mac == rec.params["original_mac"] != rec.params["mac"]


@pytest.mark.lab
def test_bgp_and_arp_faults_repaired_by_hand_are_not_verified(labs):
    state, ctx = labs.get("simple_bgp")
    leak = faults.inject(state, "bgp_blackhole_route_leak", "router2")
    assert leak.params["victim"] == "pc1" and leak.params["prefix"] == "10.1.0.8/30"
    # an operator removes the leaked announcement (the Null0 route stays): not verified any more
    cmds = ["configure terminal", leak.params["head"], "address-family ipv4 unicast", "no network 10.1.0.8/30"]
    subprocess.run(["vtysh", "--vty_socket", ctx.vty_dirs["router2"], *[a for c in cmds for a in ("-c", c)]],
                   check=True, capture_output=True)
    with pytest.raises(FaultNotVerified, match="network 10.1.0.8/30` is not under router bgp"):
        faults.verify(state, ctx, leak.id)
    poison = faults.inject(state, "arp_cache_poisoning", "pc2")
    subprocess.run(["ip", "-n", "fl-pc2", "neigh", "del", "10.1.1.1", "dev", "eth0"], check=True)
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.verify(state, ctx, poison.id)
    faults.recover(state)  # idempotent: what the operator already undid is fine
    assert state.faults == [] and not any(p.name == "staticd" for p in state.processes)
    _assert_healthy(state, ctx)


@pytest.mark.lab
def test_mac_conflict_repaired_by_hand_is_not_verified(labs):
    state, ctx = labs.get("ospf_enterprise_static")
    rec = faults.inject(state, "mac_address_conflict", "dns_server", seed=1, mechanism="standard")
    assert rec.faulty_devices == sorted(["dns_server", rec.params["victim"]])
    subprocess.run(["ip", "-n", "fl-dns_server", "link", "set", "dev", rec.params["ifname"], "address",
                    rec.params["original_mac"]], check=True)
    with pytest.raises(FaultNotVerified, match=f"dns_server {rec.params['ifname']} has MAC"):
        faults.verify(state, ctx)
    faults.recover(state)
    assert state.faults == []
    _assert_healthy(state, ctx)
