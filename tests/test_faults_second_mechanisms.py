"""Second mechanisms of the routing, OSPF, BGP-origin, web, DNS and DHCP labels.

Pure tests check the config text and rules each mechanism writes; the lab tests (marked `lab`) bring one lab up
per scenario and inject, verify and recover every new mechanism in turn, each by name.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from faultline.lab import faults, teardown
from faultline.lab.faults.base import FaultNotVerified, FaultRecord
from faultline.lab.faults.dhcp_config import insert_added, remove_added, spoofed_value, typo_range
from faultline.lab.faults.ospf import interface_areas, interface_block
from faultline.lab.faults.routing import BgpAsnMisconfig, BgpConfigChange, bgp_peers
from faultline.lab.faults.web import QUEUE_LINE, request_queue
from faultline.lab.scenarios import build_topology
from faultline.lab.services import render_web
from faultline.network.probes import run_probe
from tests.labfixtures import lab_dir, lab_holder

LABELS = [
    "frr_service_down", "bgp_missing_route_advertisement", "bgp_asn_misconfig", "host_static_blackhole",
    "ospf_acl_block", "ospf_neighbor_missing", "ospf_area_misconfiguration", "bgp_blackhole_route_leak",
    "bgp_hijacking", "http_acl_block", "sender_application_delay", "host_incorrect_dns", "dns_record_error",
    "dns_service_down", "dns_port_blocked", "dhcp_service_down", "dhcp_missing_subnet", "dhcp_spoofed_gateway",
    "dhcp_spoofed_dns", "dns_lookup_latency",
]
BLOCK = [
    "router bgp 65001", " bgp router-id 10.255.0.1", " neighbor 10.0.0.1 remote-as 65002",
    " neighbor 10.0.0.1 timers 1 3", " neighbor 10.0.0.3 remote-as 65003", " !", " address-family ipv4 unicast",
    "  network 10.255.0.1/32", "  network 10.1.0.0/24", " exit-address-family", "exit",
]


def _with(cls, mechanism_id: str):
    fault = cls()
    fault.record = FaultRecord(id="f1", label=cls.label, category="", target="r1", faulty_devices=["r1"],
                               resource_id="node/r1", fault_type=cls.label, mechanism="", mechanism_id=mechanism_id)
    return fault


def test_each_label_has_a_standard_and_another_mechanism_drawn_by_seed():
    for label in LABELS:
        names = list(faults.fault_class(label).mechanisms)
        assert names[0] == "standard" and len(names) >= 2, label
        drawn = {faults.choose_mechanism(label, seed) for seed in range(40)}
        assert drawn == set(names), (label, drawn)
        text = " ".join([*names, *faults.fault_class(label).mechanisms.values()]).lower()
        assert "faultline" not in text and "fl-" not in text and "fl_" not in text, label


def test_outbound_filter_denies_own_prefixes_and_undoes_exactly():
    forward, backward = _with(BgpConfigChange, "outbound_filter").change(BLOCK)
    assert bgp_peers(BLOCK) == ["10.0.0.1", "10.0.0.3"]
    assert "ip prefix-list EXPORT seq 5 deny 10.255.0.1/32" in forward
    assert "ip prefix-list EXPORT seq 10 deny 10.1.0.0/24" in forward
    assert forward[-2:] == ["neighbor 10.0.0.1 prefix-list EXPORT out", "neighbor 10.0.0.3 prefix-list EXPORT out"]
    assert backward[-1] == "no ip prefix-list EXPORT" and "no neighbor 10.0.0.3 prefix-list EXPORT out" in backward
    # the standard mechanism is unchanged
    assert _with(BgpConfigChange, "standard").change(BLOCK)[0][-1] == "no network 10.1.0.0/24"


def test_remote_as_change_touches_every_peer_and_keeps_the_local_as():
    forward, backward = _with(BgpAsnMisconfig, "remote_as").change(BLOCK)
    assert forward == ["router bgp 65001", "neighbor 10.0.0.1 remote-as 65602", "neighbor 10.0.0.3 remote-as 65603"]
    assert backward == ["router bgp 65001", "neighbor 10.0.0.1 remote-as 65002", "neighbor 10.0.0.3 remote-as 65003"]


def test_interface_areas_cover_every_interface_of_the_network_lines():
    topo = build_topology("ospf_enterprise_static", "s")
    router = "dist_router_1_1"
    node = topo.nodes[router]
    nets = [f"network {node.loopback} area 0", "network 10.0.0.6/31 area 0", "network 10.1.0.0/24 area 0"]
    areas = interface_areas(topo, router, nets)
    assert areas == {i.name: "0" for i in node.interfaces} | {"lo": "0"}
    config = "interface eth0\n ip ospf area 66\nexit\n!\ninterface lo\n ip ospf passive\nexit\n"
    assert interface_block(config, "eth0") == ["ip ospf area 66"] and interface_block(config, "br0") == []


def test_request_queue_holds_requests_in_the_server_block():
    topo = build_topology("ospf_enterprise_dhcp", "s")
    conf = request_queue(render_web(topo, Path("/srv"), "web_server_0"))
    lines = [ln.strip() for ln in conf.splitlines()]
    assert lines.index("http {") < lines.index("limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;")
    assert lines.index(QUEUE_LINE) == lines.index("location / { }") - 1
    assert conf.count("{") == conf.count("}")


def test_dhcp_range_typo_and_host_override_lines_round_trip(tmp_path):
    lines = ["dhcp-range=set:lan0,10.1.0.100,10.1.0.200,255.255.255.0,2m",
             "dhcp-range=set:lan1,10.1.100.100,10.1.100.200,255.255.255.0,2m"]
    typo = typo_range(lines[0], lines)
    assert typo.startswith("dhcp-range=set:lan0,10.1.101.100,10.1.101.200,255.255.255.0")
    conf = tmp_path / "dnsmasq.conf"
    original = "port=0\ndhcp-host=02:00:0a:01:00:0a,10.1.0.10,host_1\n"
    conf.write_text(original)
    edits = [{"old": "dhcp-host=02:00:0a:01:00:0a,10.1.0.10,host_1", "after": None,
              "new": "dhcp-host=02:00:0a:01:00:0a,set:guest,10.1.0.10,host_1",
              "added": ["dhcp-option=tag:guest,option:router,10.1.0.254"]}]
    from faultline.lab.faults import dhcp_clients as dc

    dc.apply_edits(conf, edits)
    insert_added(conf, edits)
    assert conf.read_text().splitlines()[1:] == [edits[0]["new"], *edits[0]["added"]]
    rec = FaultRecord(id="f1", label="dhcp_spoofed_gateway", category="", target="host_1", faulty_devices=[],
                      resource_id="", fault_type="", mechanism="", params={"edits": edits})
    assert spoofed_value(rec) == "10.1.0.254"
    remove_added(conf, edits)
    dc.revert_edits(conf, edits)
    assert conf.read_text() == original


# --- real labs: each new mechanism injected, verified and recovered by name --------------------------------

CASES = {
    "ospf_enterprise_dhcp": [
        ("frr_service_down", "frozen", "dist_router_1_1"),
        ("frr_service_down", "protocol_daemon", "dist_router_2_1"),
        ("frr_service_down", "standard", "dist_router_2_1"),  # its DHCP relay is no FRR daemon: it keeps running
        ("host_static_blackhole", "unreachable", None),
        ("ospf_acl_block", "iptables", None),
        ("ospf_neighbor_missing", "passive_interface", None),
        ("ospf_area_misconfiguration", "interface_area", None),
        ("http_acl_block", "iptables_reject", None),
        ("sender_application_delay", "request_queue", None),
        ("host_incorrect_dns", "wrong_resolver", None),
        ("dns_record_error", "config_record", None),
        ("dns_service_down", "frozen", None),
        ("dns_service_down", "rebound", None),
        ("dns_port_blocked", "iptables_reject", None),
        ("dns_lookup_latency", "query_queue", None),
        ("dhcp_service_down", "frozen", None),
        ("dhcp_missing_subnet", "range_typo", None),
        ("dhcp_spoofed_gateway", "host_override", None),
        ("dhcp_spoofed_dns", "host_override", None),
    ],
    "simple_bgp": [
        ("frr_service_down", "frozen", None),
        ("frr_service_down", "protocol_daemon", None),
        ("bgp_missing_route_advertisement", "outbound_filter", None),
        ("bgp_asn_misconfig", "remote_as", None),
        ("bgp_blackhole_route_leak", "redistribute_static", None),
        ("bgp_hijacking", "host_route", None),
    ],
}
labs = lab_holder(lab_dir("faults-second"), timeout=90)


@pytest.mark.lab
@pytest.mark.parametrize("scenario", sorted(CASES))
def test_new_mechanisms_inject_verify_recover(labs, scenario):
    state, ctx = labs.get(scenario)
    for label, mechanism, target in CASES[scenario]:
        rec = faults.inject(state, label, target, seed=random.Random(label).randrange(100), mechanism=mechanism)
        assert rec.ground_truth()["mechanism_id"] == mechanism and rec.target in rec.faulty_devices
        assert faults.verify(state, ctx) == [rec], (label, mechanism)
        faults.recover(state)
        with pytest.raises(FaultNotVerified, match="artifact missing"):
            faults.registry.rebuild(rec).verify(ctx)
        matrix = run_probe(ctx, "reachability", count=1).record
        assert matrix.summary == {"ok": len(matrix.rows)}, (label, mechanism, matrix.rows)
        if label == "frr_service_down":
            relay = [p for p in state.processes if p.device == rec.target and p.name == "dnsmasq"]
            assert all(teardown.alive(p.pid) for p in relay), relay
