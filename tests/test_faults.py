"""Fault injection: registry and catalogue (pure), then inject → verify → recover on a real simple_bgp lab.

The lab tests (marked `lab`) need root. One lab is shared by the module and always torn down at the
end (by its state file only: another lab on this machine is left alone).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from faultline.lab import faults
from faultline.lab.faults.base import FaultError, FaultNotVerified
from faultline.lab.scenarios import build_topology
from faultline.nika.labels import CATEGORIES, catalogue
from tests.labfixtures import lab_dir, lab_namespaces, module_lab, offline_state

LAB_DIR = lab_dir("faults")

# label -> target used by the lab tests (explicit, so timings do not depend on a draw)
CASES = [
    ("link_down", "router1"),
    ("frr_service_down", "router1"),
    ("bgp_missing_route_advertisement", "router2"),
    ("bgp_asn_misconfig", "router1"),
    ("bgp_acl_block", "router2"),
    ("icmp_acl_block", "pc1"),
    ("link_high_packet_corruption", "pc2"),
    ("link_bandwidth_throttling", "pc1"),
    ("host_missing_ip", "pc1"),
    ("host_incorrect_ip", "pc2"),
    ("host_incorrect_gateway", "pc1"),
    ("host_incorrect_netmask", "pc2"),
    ("host_ip_conflict", "pc2"),
    ("link_flap", "pc1"),
    ("link_detach", "pc2"),
    ("host_static_blackhole", "router2"),
    ("arp_acl_block", "pc1"),
    ("link_fragmentation_disabled", "pc2"),
    ("host_crash", "pc1"),
]

# labels for other scenarios, exercised on their own lab in tests/test_faults_ospf.py
OSPF_LABELS = {"ospf_acl_block", "ospf_neighbor_missing", "ospf_area_misconfiguration"}
# labels exercised on their own labs in tests/test_faults_more.py
MORE_LABELS = {"bgp_blackhole_route_leak", "bgp_hijacking", "arp_cache_poisoning", "mac_address_conflict"}
# DNS and DHCP labels, exercised on their own labs in tests/test_faults_dns_dhcp.py
DNS_DHCP_LABELS = {"host_incorrect_dns", "dns_record_error", "dns_service_down", "dns_port_blocked",
                   "dhcp_service_down", "dhcp_missing_subnet", "dhcp_spoofed_gateway", "dhcp_spoofed_dns"}
# CPU contention and DNS latency, exercised on their own lab in tests/test_faults_contention.py
CONTENTION_LABELS = {"load_balancer_overload", "sender_resource_contention", "receiver_resource_contention",
                     "dns_lookup_latency"}
# web labels, exercised on their own labs in tests/test_faults_web.py
WEB_LABELS = {"http_acl_block", "sender_application_delay", "web_dos_attack", "incast_traffic_network_limitation"}


# --- pure -------------------------------------------------------------------------------------


def test_catalogue_covers_nikas_v1_labels_and_the_registry():
    rows = catalogue()
    labels = [r.label for r in rows]
    assert len(labels) == 55 == len(set(labels))
    assert all(r.category in CATEGORIES and r.feasible in "RPX" for r in rows)
    assert all(r.status in ("implemented", "planned", "unsupported") for r in rows)
    implemented = {r.label: r for r in rows if r.status == "implemented"}
    assert set(implemented) == set(faults.fault_labels()) == (
        {label for label, _ in CASES} | OSPF_LABELS | MORE_LABELS | DNS_DHCP_LABELS | CONTENTION_LABELS | WEB_LABELS)
    for label, info in implemented.items():
        assert faults.fault_class(label).category == info.category
        # only labels the notes mark reproducible are claimed; a partial one says so in its mechanism
        assert info.feasible == "R" or (info.feasible == "P" and info.how.startswith("PARTIAL")), label
    assert all(r.status == "unsupported" for r in rows if r.feasible == "X")


def test_mechanisms_are_listed_drawn_by_seed_and_checked(run_cli, capsys):
    run_cli("lab", "faults", "--json")
    rows = {r["label"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows["web_dos_attack"]["mechanisms"]) == ["standard", "distributed"]
    assert list(rows["sender_resource_contention"]["mechanisms"]) == ["standard", "workload"]
    assert list(rows["link_down"]["mechanisms"]) == ["standard", "far_end"]
    # without a seed (the CLI's default) the standard one; with a seed a draw of its own, the same every time
    assert faults.choose_mechanism("web_dos_attack") == "standard"
    drawn = [faults.choose_mechanism("web_dos_attack", seed) for seed in range(20)]
    assert set(drawn) == {"standard", "distributed"}
    assert drawn == [faults.choose_mechanism("web_dos_attack", seed) for seed in range(20)]
    # the draw never moves a target: targets come from their own stream
    assert faults.choose_target(offline_state("ospf_enterprise_static"), "web_dos_attack", 3) == \
        faults.plan_target("ospf_enterprise_static", "s", "web_dos_attack", seed=3)
    with pytest.raises(FaultError, match="no mechanism 'botnet'") as err:
        faults.inject(offline_state("ospf_enterprise_static"), "web_dos_attack", mechanism="botnet")
    assert "standard, distributed" in err.value.fix


def test_target_choice_is_seeded_and_checked():
    state = offline_state("simple_bgp")
    topo = build_topology("simple_bgp", "s")
    for label in sorted(label for label in faults.fault_labels() if faults.applicable(label, topo)):
        picks = {faults.choose_target(state, label, seed) for seed in range(12)}
        assert picks == {faults.choose_target(state, label, seed) for seed in range(12)}
        roles = faults.fault_class(label).roles
        assert all(state.device(p).role in roles for p in picks)
    assert len({faults.choose_target(state, "icmp_acl_block", s) for s in range(20)}) > 1
    with pytest.raises(FaultError, match="cannot target 'pc1'"):
        faults.inject(state, "frr_service_down", "pc1")
    with pytest.raises(FaultError, match="needs an OSPF lab"):
        faults.inject(state, "ospf_acl_block", "router1")
    with pytest.raises(FaultError, match="unsupported fault label 'sdn_controller_crash'"):
        faults.inject(state, "sdn_controller_crash")


def test_ground_truth_of_a_quiet_lab_is_no_anomaly():
    truth = faults.ground_truth(offline_state("simple_bgp"))
    assert truth["v1"]["is_anomaly"] is False and truth["v2"] == [] and truth["faults"] == []


# --- a real lab -------------------------------------------------------------------------------


lab = module_lab("simple_bgp", LAB_DIR, timeout=30)  # (state, probe context), torn down whatever happens


def _assert_healthy(ctx) -> None:
    from faultline.network.probes import run_probe

    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, matrix.rows
    for router in ("router1", "router2"):
        peers = run_probe(ctx, "vtysh_show", dev=router, command="show bgp ipv4 unicast summary json").record
        assert peers.bgp_peers and all(p.state == "Established" for p in peers.bgp_peers), (router, peers)


def _assert_truth_shape(rec, label: str, target: str) -> None:
    truth = rec.ground_truth()
    # host_ip_conflict names both hosts (the one changed and the one whose address it took), as NIKA does
    devices = sorted([target, rec.params["victim"]]) if label == "host_ip_conflict" else [target]
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": devices, "root_cause_name": label}
    assert truth["category"] == faults.fault_class(label).category
    kind, _, rest = truth["v2"]["resource_id"].partition("/")
    assert kind in ("node", "interface", "link") and rest.startswith(target)
    assert truth["v2"]["fault_type"] == faults.fault_class(label).fault_type
    assert rec.mechanism


@pytest.mark.lab
@pytest.mark.parametrize("label,target", CASES)
def test_inject_verify_recover(lab, label, target):
    state, ctx = lab
    t0 = time.monotonic()
    rec = faults.inject(state, label, target, seed=7, mechanism="standard")
    assert rec.target == target and [f["id"] for f in state.faults] == [rec.id]
    _assert_truth_shape(rec, label, target)
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    result = faults.recover(state)
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):  # recovery really removed it
        faults.registry.rebuild(rec).verify(ctx)
    _assert_healthy(ctx)
    assert verified_s < 15 and result["healthy_s"] < 20
    if label == "link_flap":  # the root-namespace toggler is gone, not just the symptom
        from faultline.lab.faults.base import helper_alive

        assert not helper_alive(rec.params["helper_pid"], rec.params["helper_marker"])
    if label == "link_detach":
        assert rec.params["park"] not in lab_namespaces() and rec.params["park"] not in state.namespaces


@pytest.mark.lab
def test_a_crashed_host_leaves_the_port_facing_it_up_without_carrier(lab):
    """What the network sees of a dead machine: its NIC dark, the router port facing it still administratively
    up but without carrier (a port set down is `link_down` on the router, a different fault)."""
    from faultline.lab.faults.interfaces import interface_state

    state, ctx = lab
    rec = faults.inject(state, "host_crash", "pc1", seed=7, mechanism="standard")
    try:
        [(device, _, ifname, own)] = rec.params["peers"]
        assert device.startswith("router")
        _, port = interface_state(ctx, device, ifname)
        assert "UP" in port and "LOWER_UP" not in port, port
        _, nic = interface_state(ctx, "pc1", own)
        assert "UP" not in nic, nic
    finally:
        faults.recover(state)
    _assert_healthy(ctx)


@pytest.mark.lab
def test_host_fault_repaired_by_hand_is_not_verified(lab):
    state, ctx = lab
    rec = faults.inject(state, "host_incorrect_gateway", "pc2")
    assert rec.params["routes"] == [["default", "10.1.1.254"]]
    subprocess.run(["ip", "-n", "fl-pc2", "route", "replace", "default", "via", "10.1.1.1"], check=True)
    with pytest.raises(FaultNotVerified, match=r"default via \['10.1.1.1'\]"):
        faults.verify(state, ctx)
    faults.recover(state)
    assert state.faults == []
    _assert_healthy(ctx)


@pytest.mark.lab
def test_verify_raises_when_the_artifact_was_removed(lab):
    state, ctx = lab
    rec = faults.inject(state, "icmp_acl_block", "pc2")
    subprocess.run(["ip", "netns", "exec", "fl-pc2", "nft", "delete", "table", "ip", rec.params["table"]], check=True)
    with pytest.raises(FaultNotVerified, match=r"icmp_acl_block on pc2 .*artifact missing"):
        faults.verify(state, ctx)
    down = faults.inject(state, "link_down", "pc1")
    subprocess.run(["ip", "-n", "fl-pc1", "link", "set", down.params["ifname"], "up"], check=True)
    with pytest.raises(FaultNotVerified, match="administratively up"):
        faults.verify(state, ctx, down.id)
    asn = faults.inject(state, "bgp_asn_misconfig", "router2")
    # an operator puts the right ASN back by hand: the fault is gone before verify
    undo = [arg for cmd in ("configure terminal", *asn.params["backward"]) for arg in ("-c", cmd)]
    subprocess.run(["vtysh", "--vty_socket", ctx.vty_dirs["router2"], *undo], check=True, capture_output=True)
    with pytest.raises(FaultNotVerified, match="router bgp 2"):
        faults.verify(state, ctx, asn.id)
    faults.recover(state)  # idempotent: undoing what is already gone is fine
    assert state.faults == []
    _assert_healthy(ctx)


@pytest.mark.lab
def test_two_faults_at_once(lab):
    state, ctx = lab
    first = faults.inject(state, "frr_service_down", "router2")
    second = faults.inject(state, "link_high_packet_corruption", "pc1")
    assert [r.id for r in faults.verify(state, ctx)] == [first.id, second.id]
    truth = faults.ground_truth(state)
    assert truth["v1"]["root_cause_name"] == "multiple_faults" and truth["v1"]["is_anomaly"] is True
    assert truth["v1"]["faulty_devices"] == ["pc1", "router2"]
    assert truth["v1"]["root_cause_names"] == ["frr_service_down", "link_high_packet_corruption"]
    assert [g["resource_id"] for g in truth["v2"]] == ["node/router2", "interface/pc1/eth0"]
    assert faults.recover(state)["recovered"] == [second.id, first.id]
    _assert_healthy(ctx)
    # the restarted daemons are the lab's now: recorded, alive
    from faultline.lab.teardown import alive

    assert sorted(p.name for p in state.processes) == ["bgpd", "bgpd", "zebra", "zebra"]
    assert all(alive(p.pid) for p in state.processes)


@pytest.mark.lab
def test_cli_inject_verify_recover(lab, run_cli, capsys, monkeypatch):
    monkeypatch.setenv("FAULTLINE_LAB_DIR", str(LAB_DIR))
    state, ctx = lab
    run_cli("lab", "inject", "bgp_acl_block", "--seed", "3", "--json")
    injected = json.loads(capsys.readouterr().out)
    assert injected["v1"]["root_cause_name"] == "bgp_acl_block"
    assert injected["target"] == faults.choose_target(state, "bgp_acl_block", 3)
    run_cli("lab", "verify", "--json")
    truth = json.loads(capsys.readouterr().out)
    assert truth["v1"]["faulty_devices"] == [injected["target"]]
    run_cli("lab", "recover")
    assert "recovered 1 fault(s)" in capsys.readouterr().out
    run_cli("lab", "faults", "--all", "--json")
    assert len(json.loads(capsys.readouterr().out)) == 55
    from faultline.lab.state import load_state

    assert load_state(LAB_DIR).faults == []
    _assert_healthy(ctx)
