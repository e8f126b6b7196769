"""SADE end to end on recorded lab incidents (the project's own sample corpus): one case per skill family,
healthy controls and multi-fault incidents, against their ground truth; plus the policy's gating rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"

# (incident folder, owning family) — every family once, more where a family has sharp sub-cases
CASES = [
    ("history/sample-history-030", "link"),  # link_down on a router interface
    ("history/sample-history-029", "link"),  # link_detach
    ("backlog/sample-backlog-017", "host-crash"),  # its processes gone, the switch port facing it down
    ("history/sample-history-001", "acl"),  # arp_acl_block
    ("history/sample-history-032", "acl"),  # link_fragmentation_disabled
    ("history/sample-history-028", "tc"),  # link_bandwidth_throttling
    ("history/sample-history-027", "tc"),  # incast
    ("history/sample-history-022", "host-ip"),  # ip conflict: two devices
    ("history/sample-history-002", "host-ip"),  # arp cache poisoning
    ("history/sample-history-011", "dhcp"),  # spoofed gateway: server + host
    ("history/sample-history-009", "dhcp"),  # service down: no symptom, found by the sweep
    ("history/sample-history-035", "mac-address-conflict"),
    ("history/sample-history-014", "dns"),  # record error
    ("history/sample-history-038", "ospf"),  # neighbor missing
    ("history/sample-history-005", "bgp"),  # blackhole route leak
    ("history/sample-history-006", "bgp"),  # hijacking
    ("history/sample-history-016", "routing-daemon"),
    ("history/sample-history-034", "load-balancer"),
    ("history/sample-history-042", "resource-contention"),  # web DoS: blamed on the victim
    ("history/sample-history-040", "resource-contention"),  # sender application delay
    ("history/sample-history-043", "healthy"),
    ("backlog/sample-backlog-052", "healthy"),
    ("backlog/sample-backlog-046", "multi"),  # icmp_acl_block + host_incorrect_gateway
    ("backlog/sample-backlog-043", "multi"),  # link_down hides dns_service_down: found by the second look
]


def _truth(folder: Path) -> tuple[bool, list[str], list[str]]:
    v1 = json.loads((folder / "ground_truth.json").read_text())["v1"]
    return v1["is_anomaly"], sorted(v1.get("root_cause_names") or []), sorted(v1["faulty_devices"])


@pytest.mark.parametrize("case,family", CASES, ids=[f"{f}:{c.split('/')[-1]}" for c, f in CASES])
def test_recorded_incident_is_diagnosed_like_its_truth(case: str, family: str) -> None:
    folder = SAMPLE / case
    anomalous, labels, devices = _truth(folder)
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.status == "submitted" and diag.submission is not None
    v1 = diag.submission.v1
    assert v1.is_anomaly is anomalous
    assert sorted(v1.root_cause_name) == labels
    assert sorted(v1.faulty_devices) == devices
    if family not in ("healthy", "multi"):
        assert diag.submission.families == [family]
    # the v2 form: (resource, fault type) pairs exactly as the ground truth's
    truth_v2 = json.loads((folder / "ground_truth.json").read_text())["v2"]
    assert sorted((rc.resource_id, rc.fault_type) for rc in diag.submission.v2.root_causes) == \
        sorted((rc["resource_id"], rc["fault_type"]) for rc in truth_v2)


def test_symptom_first_looks_at_the_isolated_device_and_stops_at_the_fingerprint() -> None:
    folder = SAMPLE / "history/sample-history-020"  # host_incorrect_ip: one host isolated
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.steps[0].tool == "reachability" and diag.steps[0].phase == "initial"
    assert [(s.tool, s.args.get("dev")) for s in diag.steps[1:2]] == [("ip_addr", "host_2")]
    assert "triage host_isolated" in diag.steps[1].note and diag.steps[1].flags == ["ip_wrong"]
    # then the second look: the link counters of the host the answer cuts off (a flap the fault would hide), and
    # up to two service requests from a user the answer leaves untouched
    assert [(s.tool, s.args.get("dev")) for s in diag.steps[2:3]] == [("link_counters", "host_2")]
    assert diag.steps[2].note.startswith("second look: the answer's own host_2")
    rest = diag.steps[3:]
    assert [s.tool for s in rest] == ["http_get"] * len(rest) and len(rest) <= 2
    assert all(s.note == "second look: service canary" and s.args["src"] != "host_2" and not s.flags for s in rest)


def test_a_lead_goes_to_the_owning_skill_families_in_index_order() -> None:
    folder = SAMPLE / "history/sample-history-036"  # ospf_acl_block on the isolated host's gateway
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    notes = [s.note for s in diag.steps[1:]]
    assert notes[0].startswith("triage host_isolated host_1_1_1_1")
    families = [n.split("skill ")[1].split(":")[0] for n in notes if "skill " in n]
    assert families[0] == "host-ip" and families[-1] == "acl"  # index order: host-ip, link, acl
    assert diag.submission.v1.root_cause_name == ["ospf_acl_block"]  # type: ignore[union-attr]
    assert diag.probe_calls <= 12


def test_no_symptom_means_the_deep_scan_runs_bottom_up_across_devices() -> None:
    folder = SAMPLE / "history/sample-history-047"  # a healthy control: nothing fails anywhere
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    order = {"initial": 0, "A": 1, "B": 2, "C": 3, "D": 4}
    deep = [order[s.phase] for s in diag.steps if not s.note.startswith("pressure sweep")]
    assert deep == sorted(deep) and 1 in deep and 3 in deep  # every device's A before any B, and so on
    assert diag.submission is not None and diag.submission.v1.is_anomaly is False


def test_without_a_baseline_the_asn_change_is_seen_through_a_peer() -> None:
    folder = SAMPLE / "history/sample-history-004"  # bgp_asn_misconfig on router1
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz", use_baseline=False), incident_id="x")
    assert diag.submission.v1.root_cause_name == ["bgp_asn_misconfig"]  # type: ignore[union-attr]
    flag = next(f for f in diag.flags if f.kind == "bgp_as_changed")
    assert not flag.vs_baseline and "remote-as" in flag.evidence


def test_healthy_is_answered_only_after_every_phase_ran_on_every_device() -> None:
    folder = SAMPLE / "history/sample-history-043"
    backend = snapshot_backend(folder / "snapshot.json.gz")
    diag = diagnose(backend, incident_id=folder.name)
    assert diag.submission is not None and diag.submission.v1.is_anomaly is False
    scanned_in_d = {s.args.get("dev") for s in diag.steps if s.phase == "D"}
    assert {d.name for d in backend.devices()} <= scanned_in_d


def test_gated_policy_probes_far_less_than_the_flat_baseline_for_the_same_answer() -> None:
    folder = SAMPLE / "backlog/sample-backlog-001"  # arp_acl_block on one host of a 37-device campus
    gated = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="x")
    flat = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="x", method="flat")
    assert gated.submission.v1 == flat.submission.v1  # type: ignore[union-attr]
    assert gated.probe_calls * 3 <= flat.probe_calls


def test_a_probe_is_asked_of_the_network_once_per_diagnosis() -> None:
    folder = SAMPLE / "history/sample-history-009"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="x")
    keys = [(s.tool, json.dumps(s.args, sort_keys=True)) for s in diag.steps]
    assert len(keys) == len(set(keys))
    assert diag.probe_calls == len(diag.steps)


def test_a_broken_backend_is_an_error_row_not_a_crash() -> None:
    folder = SAMPLE / "history/sample-history-001"
    backend = snapshot_backend(folder / "snapshot.json.gz")

    def boom(name, /, **args):
        raise RuntimeError("network unreachable")

    backend.probe = boom  # type: ignore[method-assign]
    diag = diagnose(backend, incident_id="x")
    assert diag.status == "error" and diag.submission is None and "network unreachable" in (diag.error or "")


def test_eval_sade_scores_a_corpus_per_label_and_size_from_the_cli(run_cli, capsys) -> None:
    run_cli("eval", "sade", "--corpus", str(SAMPLE / "history"), "--method", "sade", "--method", "flat",
            "--limit", "6", "--json")
    report = json.loads(capsys.readouterr().out)
    overall = {s["method"]: s for s in report["summaries"]["overall"]}
    assert set(overall) == {"sade", "flat"} and overall["sade"]["n"] == 6
    assert {s["group"] for s in report["summaries"]["size"]} == {"s"}
    labels = {s["group"] for s in report["summaries"]["label"]}
    assert "arp_acl_block" in labels and len(report["incidents"]) == 12
    first = report["incidents"][0]
    assert first["submission"]["v1"]["root_cause_name"] == first["score"]["labels"]


def test_eval_sade_names_a_missing_corpus_and_the_fix(run_cli, capsys) -> None:
    run_cli("eval", "sade", "--corpus", "/nonexistent/corpus", expect_exit=2)
    assert "no such corpus folder" in capsys.readouterr().err


def test_an_isolated_host_is_not_explained_by_one_named_peer_alone() -> None:
    from faultline.sade.index import LeadSymptom
    from faultline.sade.matcher import Match
    from faultline.sade.search import explains
    from faultline.sade.session import Session

    s = Session(snapshot_backend(SAMPLE / "backlog/sample-backlog-043" / "snapshot.json.gz"))
    hosts = [d.name for d in s.devices("host", "web")][:3]
    assert len(hosts) == 3
    lead = LeadSymptom("host_isolated", hosts[0], peers=hosts[1:3])

    def named(*devices: str) -> list[Match]:
        return [Match(family="host-ip", fingerprint="x", label="host_incorrect_ip", device=devices[0],
                      devices=list(devices), resources=[f"node/{devices[0]}"], priority=50)]

    # two hosts can each have a fault: naming one of the devices it fails with leaves it unexplained
    assert not explains(named(hosts[1]), [lead], s, {"dhcp"})
    assert explains(named(hosts[1], hosts[2]), [lead], s, {"dhcp"})  # it fails only with named devices
    assert explains(named(hosts[0]), [lead], s, {"dhcp"})


def test_a_server_fault_no_user_sees_is_found_by_the_pressure_sweep_before_the_deep_scan() -> None:
    # sender_application_delay (a rate limit on web_server_3): every pair and every URL answers, the canary's
    # small pages in time
    folder = SAMPLE / "backlog/sample-backlog-040"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert (diag.submission.v1.root_cause_name, diag.submission.v1.faulty_devices) == (
        ["sender_application_delay"], ["web_server_3"])
    swept = [st for st in diag.steps if st.note.startswith("pressure sweep")]
    assert swept and {st.phase for st in swept} == {"D"}  # the service devices' own look, nothing bottom-up
    assert not any(st.phase in ("A", "B", "C") for st in diag.steps) and diag.probe_calls < 30


def test_two_suspects_each_get_their_likeliest_family_before_either_ones_long_tail() -> None:
    folder = SAMPLE / "backlog/sample-backlog-046"  # host_1 behind an ICMP ACL, host_2 with a wrong gateway
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert sorted(diag.submission.v1.root_cause_name) == ["host_incorrect_gateway", "icmp_acl_block"]
    order = [(st.tool, st.args.get("dev")) for st in diag.steps]
    # host_2's own default route is read before any packet filter of host_1's path
    assert order.index(("ip_route", "host_2")) < min(i for i, (tool, _) in enumerate(order) if tool == "nft_ruleset")
    assert not any(st.tool in ("tc_qdisc", "cgroup_cpu") for st in diag.steps)


def test_a_slow_page_whose_name_resolved_in_time_is_not_blamed_on_the_name_server_first() -> None:
    from faultline.sade.index import classify
    from faultline.sade.initial import initial_scan
    from faultline.sade.session import Session

    kinds = {}
    for case in ("backlog/sample-backlog-034", "backlog/sample-backlog-012"):  # LB overload; DNS latency
        s = Session(snapshot_backend(SAMPLE / case / "snapshot.json.gz"))
        kinds[case] = {lead.kind for lead in classify(s, initial_scan(s))}
    assert kinds == {"backlog/sample-backlog-034": {"service_slow_after_lookup"},
                     "backlog/sample-backlog-012": {"service_slow"}}
    folder = SAMPLE / "backlog/sample-backlog-034"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None and diag.submission.v1.root_cause_name == ["load_balancer_overload"]
    assert not any(st.args.get("dev") == "dns_server" for st in diag.steps)


def test_unstable_devices_search_only_after_the_isolated_one() -> None:
    folder = SAMPLE / "backlog/sample-backlog-028"  # a throttled host: isolated, its peers lossy as a side effect
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert (diag.submission.v1.root_cause_name, diag.submission.v1.faulty_devices) == (
        ["link_bandwidth_throttling"], ["pc_1_3"])
    searched = [st.note.split(" -> ")[0] for st in diag.steps if " -> skill " in st.note]
    assert searched and all(note.startswith("host_isolated") for note in searched)


def test_a_resolver_that_never_answers_ends_the_canary_after_one_page() -> None:
    folder = SAMPLE / "backlog/sample-backlog-013"  # dns_port_blocked: every lookup from the user times out
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert (diag.submission.v1.root_cause_name, diag.submission.v1.faulty_devices) == (
        ["dns_port_blocked"], ["dns_pod0"])
    pages = [st for st in diag.steps if st.tool == "http_get"]
    # one page shows the silent resolver; five more would each wait out the same timeout on a live network
    assert len(pages) == 1 and diag.probe_calls <= 10


def test_a_static_blackhole_is_looked_for_on_a_network_that_runs_no_bgp() -> None:
    folder = SAMPLE / "history/sample-history-024"  # host_static_blackhole on a RIP network
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert (diag.submission.v1.root_cause_name, diag.submission.v1.faulty_devices) == (
        ["host_static_blackhole"], ["router_2"])
    # the kernel's routes are read although the BGP skill's protocol checks do not apply; before, only the
    # bottom-up deep scan found the route (45 probes)
    assert any(st.tool == "ip_route" and st.args.get("dev") == "router_2" and "skill bgp" in st.note
               for st in diag.steps)
    assert diag.probe_calls <= 15
    assert not any(st.tool == "vtysh_show" and "bgp" in st.args.get("command", "") for st in diag.steps)


def test_a_name_the_users_resolver_never_answered_starts_at_the_users_resolver() -> None:
    from faultline.sade.index import classify
    from faultline.sade.initial import initial_scan
    from faultline.sade.session import Session

    s = Session(snapshot_backend(SAMPLE / "backlog/sample-backlog-013" / "snapshot.json.gz"))
    sym = initial_scan(s)
    url = sym.services[0][0]
    # the page failed for want of a name server: every name server of the network is what it depends on
    assert sym.unresolved == {url} and sym.depends_on[url] == {d.name for d in s.devices("dns")}
    assert [lead.kind for lead in classify(s, sym)] == ["service_unresolved"]
    folder = SAMPLE / "backlog/sample-backlog-010"  # dhcp_spoofed_dns: the DHCP server hands out a foreign resolver
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert sorted(diag.submission.v1.root_cause_name) == ["dhcp_spoofed_dns"]
    looked = [(st.tool, st.args.get("dev")) for st in diag.steps if not st.note.startswith("service canary")]
    # the user's resolv.conf names the foreign resolver before the site's name server is searched at all
    assert looked[1] == ("read_file", "host_1_1_1_1")
    assert not any(dev == "dns_server" for _, dev in looked) and diag.probe_calls <= 8


CASES_DIR = Path(__file__).resolve().parent / "cases" / "sade"


@pytest.mark.parametrize("case", ["two-faults-012", "two-faults-014"])
def test_a_second_fault_the_first_answer_does_not_explain_is_submitted_too(case: str) -> None:
    from faultline.sade.evaluate import evaluate_folder

    folder = CASES_DIR / case
    ev = evaluate_folder(folder)
    truth = json.loads((folder / "ground_truth.json").read_text())
    wanted = sorted(f["v1"]["root_cause_name"] for f in truth["faults"])
    assert ev.diagnosis.submission is not None
    assert sorted(ev.diagnosis.submission.v1.root_cause_name) == wanted
    assert ev.diagnosis.probe_calls < 60  # the flat baseline asks about 60


def test_a_filter_on_a_router_past_the_gateway_is_found_by_the_acl_skill() -> None:
    folder = SAMPLE / "backlog/sample-backlog-036"  # ospf_acl_block on the server LAN's switch-router
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    assert diag.submission.v1.root_cause_name == ["ospf_acl_block"]
    assert diag.submission.v1.faulty_devices == ["switch_server_access"]
    read = next(st for st in diag.steps if st.tool == "nft_ruleset" and st.args.get("dev") == "switch_server_access")
    assert "skill acl" in read.note  # the skill's far pass asked, not the deep scan
    assert diag.probe_calls < 45  # 67 when only the deep scan read the routers' filters (the flat baseline: 110)


def test_a_router_filter_beside_a_host_fault_is_submitted_too() -> None:
    from faultline.sade.evaluate import evaluate_folder

    # a wrong netmask on one user and an OSPF drop rule on a core router that cuts another user's LAN off
    ev = evaluate_folder(CASES_DIR / "two-faults-011")
    assert ev.diagnosis.submission is not None
    assert sorted(ev.diagnosis.submission.v1.root_cause_name) == ["host_incorrect_netmask", "ospf_acl_block"]
    assert sorted(ev.diagnosis.submission.v1.faulty_devices) == ["core_router_1", "host_2_1_1_1"]
    assert ev.diagnosis.probe_calls < 167  # the flat baseline's count on this incident


def test_the_canary_asks_for_a_dhcp_lease_and_finds_a_dead_server_while_old_leases_last() -> None:
    folder = SAMPLE / "backlog/sample-backlog-009"  # dhcp_service_down: every host still holds its lease
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz", use_baseline=False), incident_id=folder.name)
    assert diag.submission is not None and diag.submission.v1.root_cause_name == ["dhcp_service_down"]
    lease = next(i for i, st in enumerate(diag.steps) if st.tool == "dhcp_check")
    assert diag.steps[lease].note == "service canary: a DHCP lease"
    # the DHCP server's own look comes right after the canary, before any other family's
    assert diag.steps[lease + 1].args.get("dev") == "dhcp_server"
    assert diag.probe_calls <= 8  # 10 when the pages' DNS look came first


def test_a_dead_dhcp_server_beside_a_client_filter_is_submitted_too() -> None:
    folder = SAMPLE / "backlog/sample-backlog-045"  # dhcp_service_down + http_acl_block on the canary's user
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None
    # the dead server does not explain the user's failing pages, nor the user's filter the missing lease
    assert sorted(diag.submission.v1.root_cause_name) == ["dhcp_service_down", "http_acl_block"]
    assert sorted(diag.submission.v1.faulty_devices) == ["dhcp_server", "host_1_1_1_1"]


def test_a_page_that_timed_out_after_its_name_resolved_looks_at_filters_before_the_name_server() -> None:
    folder = SAMPLE / "history/sample-history-025"  # http_acl_block on the user
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None and diag.submission.v1.root_cause_name == ["http_acl_block"]
    searched = [st for st in diag.steps if "skill" in st.note]
    assert searched[0].tool == "nft_ruleset" and "skill acl" in searched[0].note
    assert not any(st.args.get("dev") == "dns_server" for st in diag.steps)


def test_a_page_whose_server_the_answer_cut_off_starts_no_second_search() -> None:
    folder = SAMPLE / "backlog/sample-backlog-004"  # bgp_asn_misconfig: web1.pod0's server is cut off
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission is not None and diag.submission.v1.root_cause_name == ["bgp_asn_misconfig"]
    canary = next(i for i, st in enumerate(diag.steps) if st.note == "second look: service canary")
    after = diag.steps[canary + 1:]
    # the resolver says which server the page needs; it is the one the answer cut off: nothing more to search
    assert [st.tool for st in after] == ["dig"]


def test_the_second_look_sweep_finds_a_second_fault_no_user_position_shows() -> None:
    """sample-backlog-044: a user without an address and a BGP filter on a redundant router. The users' second
    look (the routes look off) answers the user's fault alone; the sweep (setting sade_second_look_sweep) runs
    every check on every device after the answer and names both, for the flat scan's probe count (the routes look
    finds it for less: tests/test_sade_route_look.py)."""
    from faultline.sade.session import Breadth

    folder = SAMPLE / "backlog/sample-backlog-044"
    narrow = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name,
                      breadth=Breadth(routes="off"))
    wide = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name,
                    breadth=Breadth(sweep=True))
    assert narrow.submission.v1.root_cause_name == ["host_missing_ip"]
    assert sorted(wide.submission.v1.root_cause_name) == ["bgp_acl_block", "host_missing_ip"]
    assert wide.probe_calls > 3 * narrow.probe_calls


def test_a_drop_route_is_judged_with_the_routing_configuration_that_may_hold_it() -> None:
    """two-faults-new-003: the leaf drops 10.1.1.8/30, and its FRR configuration holds that Null0 static and
    announces it: a leak, not a static blackhole set beside the routing daemon. The kernel routes alone cannot
    tell the two apart, so before judging a drop route the check reads the running configuration when no step has
    yet (one probe); a blackhole set with `ip route` alone stays host_static_blackhole (sample-backlog-024)."""
    folder = CASES_DIR / "two-faults-new-003"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert sorted(diag.submission.v1.root_cause_name) == ["bgp_blackhole_route_leak", "host_missing_ip"]
    assert "leaf_0_0" in diag.submission.v1.faulty_devices
    folder = SAMPLE / "backlog/sample-backlog-024"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert diag.submission.v1.root_cause_name == ["host_static_blackhole"]


def test_a_device_the_answer_cuts_off_gets_its_link_counters_read_for_a_flap_the_fault_hides() -> None:
    """two-faults-new-014: an ARP filter on host_1_1_1_1 drops everything, so its flapping link shows no loss of
    its own. The answer silences the host; its own look reads the link counters and names the flap too. With the
    own-device look off the answer is the filter alone."""
    from faultline.sade.session import Breadth

    folder = CASES_DIR / "two-faults-new-014"
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    assert sorted(diag.submission.v1.root_cause_name) == ["arp_acl_block", "link_flap"]
    assert diag.submission.v1.faulty_devices == ["host_1_1_1_1"]
    off = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name,
                   breadth=Breadth(own_device="off"))
    assert off.submission.v1.root_cause_name == ["arp_acl_block"]


def test_a_lead_of_failing_pings_skips_checks_no_ping_depends_on() -> None:
    """sample-backlog-001 and -007: a host cut off from every peer. A filter on one of its peers would explain one
    pair, not the isolation, and its resolver cannot stop a ping: neither is read on the way to the answer."""
    for name in ("sample-backlog-001", "sample-backlog-007"):
        folder = SAMPLE / "backlog" / name
        diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
        assert diag.submission.v1.root_cause_name == json.loads((folder / "ground_truth.json").read_text())["v1"][
            "root_cause_names"]
        lead = diag.steps[1].args["dev"]
        skill_steps = [s for s in diag.steps if "-> skill" in s.note]
        assert not [s for s in skill_steps if s.tool == "read_file" and "resolv.conf" in s.args.get("path", "")]
        devices = snapshot_backend(folder / "snapshot.json.gz").devices()
        users = {d.name for d in devices if d.role in ("host", "client")}
        assert not [s for s in skill_steps if s.tool == "nft_ruleset" and s.args["dev"] in users - {lead}]
