"""DNS and DHCP faults: where they apply, the dhcp_check probe, reversible config edits, and real labs.

Pure tests first (applicability by role, parser, argument refusal, config edits undone exactly). Then
inject → verify → recover for every label on real labs: dc_clos_service (several-zone DNS, clients)
and ospf_enterprise_dhcp (DNS, DHCP server, relays, udhcpc hosts), size s, one lab at a time. The
lab tests (marked `lab`) need root. Each lab test prints a `TIMING` line (run with -s to see them).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from faultline.lab import faults, service_ops
from faultline.lab.faults import dhcp_clients as dc
from faultline.lab.faults.applicability import label_scenarios
from faultline.lab.faults.base import FaultError, FaultNotVerified
from faultline.lab.namespaces import namespace_name
from faultline.lab.scenarios import build_topology
from faultline.lab.services import (
    main_ip,
    render_dhcp,
    resolv_conf,
    service_dir,
    service_problems,
)
from faultline.lab.state import LabState
from faultline.network import parse_services as ps
from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext, ProbeError, run_probe
from faultline.network.runner import CommandResult, Runner
from faultline.nika.labels import catalogue
from tests.labfixtures import lab_dir, lab_holder, offline_state

LAB_DIR = lab_dir("faults-dns-dhcp")
DNS_LABELS = ("host_incorrect_dns", "dns_record_error", "dns_service_down", "dns_port_blocked")
DHCP_LABELS = ("dhcp_service_down", "dhcp_missing_subnet", "dhcp_spoofed_gateway", "dhcp_spoofed_dns")
SERVICE_SCENARIOS = ["dc_clos_service", "ospf_enterprise_dhcp", "ospf_enterprise_static"]

CASES = [  # (scenario, label, target); grouped by scenario so each lab comes up once
    ("dc_clos_service", "host_incorrect_dns", "client_0"),
    ("dc_clos_service", "dns_record_error", "dns_pod0"),
    ("dc_clos_service", "dns_service_down", "dns_pod0"),
    ("dc_clos_service", "dns_port_blocked", "dns_pod0"),
    ("ospf_enterprise_dhcp", "host_incorrect_dns", "host_2_1_1_1"),
    ("ospf_enterprise_dhcp", "dns_record_error", "dns_server"),
    ("ospf_enterprise_dhcp", "dns_service_down", "dns_server"),
    ("ospf_enterprise_dhcp", "dns_port_blocked", "dns_server"),
    ("ospf_enterprise_dhcp", "dhcp_service_down", "dhcp_server"),
    ("ospf_enterprise_dhcp", "dhcp_missing_subnet", "host_1_1_1_1"),
    ("ospf_enterprise_dhcp", "dhcp_spoofed_gateway", "host_2_1_1_1"),
    ("ospf_enterprise_dhcp", "dhcp_spoofed_dns", "host_1_1_1_1"),
]


# --- pure -------------------------------------------------------------------------------------


def test_labels_apply_where_their_service_runs_and_target_by_role():
    info = {row.label: row for row in catalogue()}
    for label in DNS_LABELS + DHCP_LABELS:
        cls = faults.fault_class(label)
        assert info[label].status == "implemented" and info[label].category == cls.category
        expected = SERVICE_SCENARIOS if label in DNS_LABELS else ["ospf_enterprise_dhcp"]
        assert label_scenarios(label) == expected == label_scenarios(label, "m")
    dhcp_m = build_topology("ospf_enterprise_dhcp", "m")
    hosts = sorted(n.name for n in dhcp_m.nodes.values() if n.role == "host")
    assert len(hosts) == 16 and all(dhcp_m.nodes[h].dhcp for h in hosts)
    assert faults.fault_class("host_incorrect_dns").targets(dhcp_m) == hosts  # servers have resolvers but are no hosts
    assert faults.fault_class("host_incorrect_dns").targets(build_topology("dc_clos_service", "s")) == ["client_0"]
    for label in ("dhcp_missing_subnet", "dhcp_spoofed_gateway", "dhcp_spoofed_dns"):
        assert faults.fault_class(label).targets(dhcp_m) == hosts
    assert faults.fault_class("dhcp_service_down").targets(dhcp_m) == ["dhcp_server"]
    for label in ("dns_record_error", "dns_service_down", "dns_port_blocked"):
        assert faults.fault_class(label).targets(dhcp_m) == ["dns_server"]
    assert faults.fault_class("dns_port_blocked").targets(build_topology("dc_clos_service", "l")) == [
        f"dns_pod{p}" for p in range(4)]
    state = offline_state("ospf_enterprise_dhcp")
    picks = [faults.choose_target(state, "dhcp_spoofed_dns", seed) for seed in range(8)]
    assert picks == [faults.choose_target(state, "dhcp_spoofed_dns", seed) for seed in range(8)]
    assert set(picks) == {"host_1_1_1_1", "host_2_1_1_1"}
    with pytest.raises(FaultError, match="dhcp_missing_subnet needs a DHCP host") as err:
        faults.inject(offline_state("ospf_enterprise_static"), "dhcp_missing_subnet")
    assert "ospf_enterprise_dhcp (s, m, l)" in err.value.fix
    with pytest.raises(FaultError, match="dns_service_down needs a DNS node"):
        faults.inject(offline_state("simple_bgp"), "dns_service_down")
    with pytest.raises(FaultError, match="cannot target 'web_server_0'"):
        faults.inject(state, "host_incorrect_dns", "web_server_0")


UDHCPC_OK = """udhcpc: started, v1.35.0
udhcpc: broadcasting discover
udhcpc: broadcasting select for 10.1.0.10, server 10.1.2.11
udhcpc: lease of 10.1.0.10 obtained from 10.1.2.11, lease time 120
"""
UDHCPC_NONE = """udhcpc: started, v1.35.0
udhcpc: broadcasting discover
udhcpc: broadcasting discover
udhcpc: broadcasting discover
udhcpc: no lease, failing
"""


def test_parse_udhcpc():
    rec = ps.parse_udhcpc("h", "eth0", "", UDHCPC_OK, 0)
    assert (rec.status, rec.offered_ip, rec.acked_ip, rec.server, rec.lease_s) == (
        "ok", "10.1.0.10", "10.1.0.10", "10.1.2.11", 120)
    rec = ps.parse_udhcpc("h", "eth0", "", UDHCPC_NONE, 1)
    assert (rec.status, rec.acked_ip, rec.error) == ("no_lease", None, "no DHCP server answered")
    nak = UDHCPC_OK.splitlines()[:3] + ["udhcpc: received DHCP NAK", "udhcpc: no lease, failing"]
    rec = ps.parse_udhcpc("h", "eth0", "", "\n".join(nak), 1)
    assert (rec.status, rec.offered_ip, rec.server) == ("no_lease", "10.1.0.10", "10.1.2.11") and "NAK" in rec.error
    rec = ps.parse_udhcpc("h", "eth9", "", "udhcpc: started, v1.35.0\nudhcpc: SIOCGIFINDEX: No such device\n", 1)
    assert rec.status == "error" and rec.error == "udhcpc: SIOCGIFINDEX: No such device"
    assert ps.parse_udhcpc("h", "eth0", "", "udhcpc: broadcasting discover\n", None, timed_out=True).status == "error"


class _Recorder(Runner):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def run(self, device, argv, namespace=None, timeout_s=None, **kw):
        self.calls.append(list(argv))
        return CommandResult(device=device, namespace=namespace, argv=list(argv), exit_code=0, stdout="",
                             stderr=UDHCPC_OK, duration_s=0.01)


def test_dhcp_check_argv_and_refusals():
    runner = _Recorder()
    ctx = ProbeContext(StaticDirectory([Device("h", "host", "flp-h", ("10.1.0.10/24",))]), runner=runner)
    for args in ({"src": "h", "ifname": "eth0; reboot"}, {"src": "h", "ifname": "-R"}, {"src": "nosuch"},
                 {"src": "h", "script": "/bin/sh"}, {"src": "h", "timeout_s": 1e6}):
        with pytest.raises(ProbeError):
            run_probe(ctx, "dhcp_check", **args)
    assert runner.calls == []
    out = run_probe(ctx, "dhcp_check", src="h")
    # quits after the lease (-q) or without one (-n); the hook does nothing; no -R: nothing released
    assert runner.calls == [["busybox", "udhcpc", "-n", "-q", "-f", "-i", "eth0", "-t", "3", "-T", "1",
                             "-s", "/bin/true"]]
    assert out.record.status == "ok" and out.args == {"src": "h", "ifname": "eth0"}


def test_dhcp_config_edits_are_undone_exactly(tmp_path):
    topo = build_topology("ospf_enterprise_dhcp", "m")
    conf = tmp_path / "dnsmasq.conf"
    original = render_dhcp(topo, tmp_path, "dhcp_server")
    conf.write_text(original)
    lines = original.splitlines()
    for fault in (faults.fault_class(label)() for label in DHCP_LABELS[1:]):
        edits, what = fault.edits(lines, "lan1", "10.1.1.1")
        dc.apply_edits(conf, edits)
        changed = conf.read_text().splitlines()
        assert changed != lines and not any(e["old"] in changed for e in edits) and what
        # another edit made meanwhile survives the revert, and a second revert changes nothing
        conf.write_text(conf.read_text() + "log-queries\n")
        assert dc.revert_edits(conf, edits) and not dc.revert_edits(conf, edits)
        assert conf.read_text() == original + "log-queries\n"
        conf.write_text(original)
    missing, _ = faults.fault_class("dhcp_missing_subnet")().edits(lines, "lan1", "10.1.1.1")
    assert [e["old"].split(",")[0] for e in missing] == ["dhcp-range=set:lan1", "dhcp-option=tag:lan1",
                                                         "dhcp-option=tag:lan1"]
    with pytest.raises(FaultError, match="no block for lan9"):
        faults.fault_class("dhcp_missing_subnet")().edits(lines, "lan9", "10.1.9.1")


# --- real labs --------------------------------------------------------------------------------


labs = lab_holder(LAB_DIR, timeout=60)  # one lab up at a time; labs.get(scenario) switches


def _assert_healthy(state: LabState, ctx) -> None:
    """Every host reaches every host, every service answers, every DHCP client holds its own lease."""
    topo = build_topology(state.scenario, state.size)
    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, [r for r in matrix.rows if r.status != "ok"]
    assert service_problems(topo) == []
    for node in topo.nodes.values():
        if node.role in ("dns", "dhcp"):
            assert service_ops.service_running(state, node.name), node.name
        if node.resolvers:
            assert dc.read_nameservers(node.name) == tuple(main_ip(topo.nodes[r]) for r in node.resolvers)
    for host in dc.dhcp_hosts(topo):
        assert dc.client_state(namespace_name(host), host) == dc.healthy_client(topo, host)


@pytest.mark.lab
@pytest.mark.parametrize("scenario,label,target", CASES, ids=[f"{s}-{label}" for s, label, _ in CASES])
def test_inject_verify_recover(labs, scenario, label, target):
    state, ctx = labs.get(scenario)
    topo = build_topology(scenario, "s")
    t0 = time.monotonic()
    rec = faults.inject(state, label, target, seed=3)
    injected_s = time.monotonic() - t0
    truth = rec.ground_truth()
    server = "dhcp_server" if label in DHCP_LABELS[1:] else None
    devices = sorted([server, target]) if server else [target]
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": devices, "root_cause_name": label}
    assert truth["v2"] == {"resource_id": f"node/{server or target}", "fault_type": label}
    assert truth["category"] == faults.fault_class(label).category and rec.mechanism
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    if label in DHCP_LABELS[1:]:
        assert rec.params["renew_problem"] is None and rec.params["lan_hosts"] == [target]
        other = next(h for h in dc.dhcp_hosts(topo) if h != target)  # the other LAN keeps its lease
        assert dc.client_state(namespace_name(other), other) == dc.healthy_client(topo, other)
    t1 = time.monotonic()
    result = faults.recover(state)
    recover_s = time.monotonic() - t1
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):  # recovery really removed it
        faults.registry.rebuild(rec).verify(ctx)
    _assert_healthy(state, ctx)
    print(f"\nTIMING {scenario} {label} inject={injected_s:.2f}s inject+verify={verified_s:.2f}s "
          f"recover={recover_s:.2f}s")
    assert verified_s < 20 and recover_s < 20


@pytest.mark.lab
def test_dhcp_check_is_read_only(labs):
    state, ctx = labs.get("ospf_enterprise_dhcp")
    topo = build_topology(state.scenario, state.size)
    host, server_dir = "host_1_1_1_1", service_dir(Path(state.run_dir), "dhcp_server")
    server_log = Path(state.run_dir, "syslog", "dhcp_server", "messages")  # the lab's syslog collector
    log = server_log.read_text()
    before = dc.client_state(namespace_name(host), host)
    check = run_probe(ctx, "dhcp_check", src=host).record
    assert (check.status, check.acked_ip, check.server) == (
        "ok", dc.healthy_client(topo, host).address.split("/")[0], main_ip(topo.nodes["dhcp_server"]))
    assert dc.client_state(namespace_name(host), host) == before  # interface, route, resolv.conf untouched
    deadline = time.monotonic() + 5  # the collector files a line a moment after dnsmasq sends it
    while "DHCPACK" not in (new_log := server_log.read_text()[len(log):]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "DHCPACK" in new_log and "DHCPRELEASE" not in new_log  # asked, and released nothing
    assert host in (server_dir / "leases").read_text()
    # a device with no DHCP server on its LAN and no reservation gets nothing
    assert run_probe(ctx, "dhcp_check", src="backend_web_1").record.status == "no_lease"
    assert run_probe(ctx, "dhcp_check", src=host, ifname="eth7").record.status == "error"
    _assert_healthy(state, ctx)


@pytest.mark.lab
def test_wrong_dns_survives_a_lease_renewal(labs):
    state, ctx = labs.get("ospf_enterprise_dhcp")
    rec = faults.inject(state, "host_incorrect_dns", "host_1_1_1_1")
    out = service_dir(Path(state.run_dir), "host_1_1_1_1") / "udhcpc.out"
    leases = out.read_text().count(" obtained from ")
    service_ops.signal_service(state, "host_1_1_1_1", signal.SIGUSR2)
    service_ops.signal_service(state, "host_1_1_1_1", signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while out.read_text().count(" bound ") <= leases and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text().count(" obtained from ") > leases  # the client really renewed
    assert dc.read_nameservers("host_1_1_1_1") == ("8.8.8.8",)
    faults.verify(state, ctx, rec.id)
    faults.recover(state)
    _assert_healthy(state, ctx)


@pytest.mark.lab
def test_faults_undone_by_hand_are_not_verified(labs):
    state, ctx = labs.get("ospf_enterprise_dhcp")
    wrong = faults.inject(state, "host_incorrect_dns", "host_2_1_1_1")
    resolv_conf("host_2_1_1_1").write_text(wrong.params["before"])
    with pytest.raises(FaultNotVerified, match=r"resolv.conf lists \['10.1.2.10'\]"):
        faults.verify(state, ctx, wrong.id)
    down = faults.inject(state, "dns_service_down", "dns_server")
    service_ops.start_recorded(state, "dns_server")  # an operator starts the daemon again
    with pytest.raises(FaultNotVerified, match="artifact missing: dnsmasq still runs on dns_server"):
        faults.verify(state, ctx, down.id)
    faults.recover(state)  # idempotent: what the operator already undid is fine
    assert state.faults == []
    _assert_healthy(state, ctx)
    spoof = faults.inject(state, "dhcp_spoofed_gateway", "host_1_1_1_1")
    assert spoof.params["edits"][0]["new"].endswith(",10.1.0.254")
    # the operator fixes the host's route but not the server: the artifact is there, the symptom is not
    subprocess.run(["ip", "-n", "fl-host_1_1_1_1", "route", "replace", "default", "via", "10.1.0.1"], check=True)
    with pytest.raises(FaultNotVerified, match=r"no symptom: host_1_1_1_1 default via \['10.1.0.1'\]"):
        faults.verify(state, ctx, spoof.id)
    # and then the server's config too
    conf = Path(spoof.params["config"])
    conf.write_text(conf.read_text().replace(spoof.params["edits"][0]["new"], spoof.params["edits"][0]["old"]))
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.verify(state, ctx, spoof.id)
    faults.recover(state)
    assert state.faults == []
    _assert_healthy(state, ctx)
