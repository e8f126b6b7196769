"""The skills library and the matcher: every skill is valid, every supported label has exactly one owner,
and fingerprints turn flags into answers the way their files say."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.errors import FaultlineError
from faultline.nika.labels import catalogue
from faultline.sade.matcher import match
from faultline.sade.records import Flag
from faultline.sade.skills import load_skills


def _implemented() -> set[str]:
    return {info.label for info in catalogue() if info.status != "unsupported"}


def test_every_supported_label_is_owned_by_exactly_one_skill() -> None:
    owners: dict[str, list[str]] = {}
    for skill in load_skills():
        for label in skill.labels:
            owners.setdefault(label, []).append(skill.family)
    assert set(owners) == _implemented()
    assert {label: fams for label, fams in owners.items() if len(fams) != 1} == {}
    # the catalogue's `skill` column (what ASTRA, the marts and the nightly read) names the same owner
    assert {info.label: info.skill for info in catalogue() if info.skill} == {name: f[0] for name, f in owners.items()}


def test_every_skill_has_the_sections_a_person_and_a_model_need() -> None:
    for skill in load_skills():
        for section in ("## Failure modes", "## Leading signals", "## Probes", "## Stop and submit"):
            assert section in skill.text, f"{skill.family}: no '{section}'"
        assert skill.fingerprints, skill.family


def test_a_skill_without_frontmatter_is_rejected_with_a_fix(tmp_path: Path) -> None:
    bad = tmp_path / "odd"
    bad.mkdir()
    (bad / "SKILL.md").write_text("# no frontmatter\n")
    (bad / "fingerprints.yml").write_text("family: odd\nfingerprints: []\n")
    with pytest.raises(FaultlineError) as err:
        load_skills(tmp_path)
    assert "frontmatter" in err.value.message


def _f(device: str, kind: str, **attrs) -> Flag:
    return Flag(scan="t", phase="A", device=device, kind=kind, evidence=kind, attrs=attrs)


ROLES = {"h1": "host", "h2": "host", "r1": "router", "sw": "switch", "dhcp": "dhcp", "web": "web", "lb": "lb"}


def test_duplicate_address_names_both_holders() -> None:
    [m] = match([_f("h1", "ip_duplicate", other="h2", ifname="eth0")], roles=ROLES)
    assert (m.label, m.devices) == ("host_ip_conflict", ["h1", "h2"])


def test_dhcp_server_evidence_outranks_the_hosts_own_symptom() -> None:
    found = match([_f("h1", "gateway_wrong", gateway="10.0.0.254"), _f("dhcp", "dhcp_router_foreign")], roles=ROLES)
    assert [(m.label, m.devices) for m in found] == [("dhcp_spoofed_gateway", ["dhcp", "h1"])]


def test_same_flags_mean_different_labels_by_role() -> None:
    for dev, label in (("web", "sender_resource_contention"), ("h1", "receiver_resource_contention"),
                       ("lb", "load_balancer_overload")):
        for kind in ("cpu_throttled", "cpu_busy"):
            [m] = match([_f(dev, kind)], roles=ROLES)
            assert m.label == label


def test_none_rules_and_interface_resources() -> None:
    [m] = match([_f("h1", "tc_shaper", ifname="eth0", root=True)], roles=ROLES)
    assert (m.label, m.resources) == ("link_bandwidth_throttling", ["interface/h1/eth0"])
    [m] = match([_f("h1", "tc_shaper", ifname="eth0"), _f("h1", "ifb_present", ifname="ifb0")], roles=ROLES)
    assert m.label == "incast_traffic_network_limitation"
    # a shaper that drops what arrives faster than its rate is overrun, not just a slow link
    [m] = match([_f("h1", "tc_shaper", ifname="eth0"), _f("h1", "shaper_dropping", ifname="eth0")], roles=ROLES)
    assert m.label == "incast_traffic_network_limitation"


def test_slow_lookups_alone_are_a_dns_answer_only_when_nothing_else_is_found() -> None:
    slow = _f("dns", "dns_slow")
    roles = {**ROLES, "dns": "dns"}
    assert match([slow], roles=roles) == []  # the DNS server not examined in every phase yet
    [m] = match([slow], roles=roles, complete={"dns"})
    assert (m.label, m.devices) == ("dns_lookup_latency", ["dns"])
    [m] = match([slow, _f("dns", "cpu_throttled")], roles=roles, complete={"dns"})
    assert m.label == "sender_resource_contention"


def test_fallback_only_when_the_device_is_complete_and_nothing_else_matches() -> None:
    flags = [Flag(scan="t", phase="initial", device="h1", kind="partial_loss", evidence="x", family="link",
                  strength="weak", attrs={"ifname": "eth0"})]
    assert match(flags, roles=ROLES) == []
    [m] = match(flags, roles=ROLES, complete={"h1"})
    assert m.label == "link_flap"
    assert [x.label for x in match(flags + [_f("h2", "acl_icmp")], roles=ROLES, complete={"h1"})] == ["icmp_acl_block"]


def test_a_dark_nic_with_its_processes_gone_is_a_crash_and_a_port_set_down_is_not() -> None:
    [m] = match([_f("h1", "iface_admin_down", ifname="eth0"), _f("h1", "processes_gone"),
                 _f("r1", "iface_no_carrier", ifname="eth2")], roles=ROLES)
    assert (m.label, m.devices) == ("host_crash", ["h1"])
    found = match([_f("r1", "iface_admin_down", ifname="eth2"), _f("h1", "iface_no_carrier", ifname="eth0")],
                  roles=ROLES)
    assert [(m.label, m.devices) for m in found] == [("link_down", ["r1"])]


def test_host_crash_needs_its_processes_gone() -> None:
    flags = [_f("h1", "iface_no_carrier", ifname="eth0"), _f("h1", "isolated")]
    assert match(flags, roles=ROLES) == []
    for more in ([], [_f("sw", "switch_port_down", ifname="eth3")]):
        [m] = match(flags + more + [_f("h1", "processes_gone")], roles=ROLES)
        assert (m.label, m.devices) == ("host_crash", ["h1"])


def test_a_switch_port_down_in_front_of_a_running_host_is_a_link_down_not_a_crash() -> None:
    flags = [_f("h1", "iface_no_carrier", ifname="eth0"), _f("h1", "isolated"),
             _f("sw", "switch_port_down", ifname="eth3")]
    [m] = match(flags, roles=ROLES)
    assert (m.label, m.devices) == ("link_down", ["h1", "sw"])


def test_a_user_without_an_address_is_its_own_fault_beside_a_dead_dhcp_server() -> None:
    """A dead DHCP server leaves the leases its users hold: a user with no address at all is a fault of its own
    (two-faults-new-009); a server without the user's range names the user itself, and that explains it."""
    host = [_f("h1", "no_ipv4"), _f("h1", "dhcp_no_lease")]
    found = match(host + [_f("dhcp", "daemon_missing")], roles=ROLES)
    assert sorted((m.label, tuple(m.devices)) for m in found) == [("dhcp_service_down", ("dhcp",)),
                                                                  ("host_missing_ip", ("h1",))]
    found = match(host + [_f("dhcp", "dhcp_subnet_missing", host="h1")], roles=ROLES)
    assert [(m.label, m.devices) for m in found] == [("dhcp_missing_subnet", ["dhcp", "h1"])]
