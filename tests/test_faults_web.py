"""Web faults: http_acl_block, sender_application_delay, web_dos_attack, incast_traffic_network_limitation.

Pure tests first (where the labels apply, catalogue rows, the access-log parser, both traffic
generators against local servers, the tail_file probe's argument checks), then inject → verify →
recover on real labs (ospf_enterprise_static: `host` clients, dc_clos_service: `client` clients),
and faults undone by hand that must be reported FaultNotVerified. The lab tests (marked `lab`) need root.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from faultline.lab import faults
from faultline.lab.faults import cgroups, loadgen
from faultline.lab.faults.base import FaultNotVerified
from faultline.lab.faults.web import access_log_entries
from faultline.lab.scenarios import build_topology
from faultline.lab.services import render_web, service_problems
from faultline.lab.state import LabState
from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext, ProbeError, run_probe
from faultline.nika.labels import catalogue
from tests.labfixtures import lab_dir, module_lab, offline_state, settings_for

LAB_DIR = lab_dir("faults-web")
LABELS = ("http_acl_block", "sender_application_delay", "web_dos_attack", "incast_traffic_network_limitation")
WEB_SCENARIOS = {"dc_clos_service", "ospf_enterprise_static", "ospf_enterprise_dhcp", "rip_small_internet"}


# --- pure ---------------------------------------------------------------------------------------


def test_labels_apply_where_web_servers_and_clients_are():
    from faultline.lab.faults.applicability import label_scenarios

    for label in LABELS:
        assert set(label_scenarios(label)) == WEB_SCENARIOS, label
    topo = build_topology("dc_clos_service", "s")
    assert faults.fault_class("http_acl_block").targets(topo) == ["client_0"]  # NIKA: on a client host
    assert faults.fault_class("web_dos_attack").targets(topo) == ["webserver1_pod0"]
    static = build_topology("ospf_enterprise_static", "s")
    assert faults.fault_class("http_acl_block").targets(static) == ["host_1_1_1_1", "host_2_1_1_1"]
    assert faults.fault_class("incast_traffic_network_limitation").targets(static) == [
        "web_server_0", "web_server_1", "web_server_2", "web_server_3"]


def test_catalogue_rows_are_implemented_and_honest():
    info = {row.label: row for row in catalogue()}
    for label in LABELS:
        row, cls = info[label], faults.fault_class(label)
        assert row.status == "implemented" and row.category == cls.category, label
    assert "PARTIAL" in info["web_dos_attack"].how and "SUBSTITUTE" in info["sender_application_delay"].how
    assert "PARTIAL" in info["incast_traffic_network_limitation"].how
    assert "SUBSTITUTE" in info["incast_traffic_network_limitation"].how


def test_seeded_targets_are_deterministic():
    topo = build_topology("ospf_enterprise_static", "s")
    state = offline_state("ospf_enterprise_static")
    for label in LABELS:
        picks = [faults.choose_target(state, label, seed) for seed in range(6)]
        assert picks == [faults.choose_target(state, label, seed) for seed in range(6)]
        assert set(picks) <= set(faults.fault_class(label).targets(topo))


def test_access_log_entries_parse_nginx_default_format():
    text = ('10.1.1.2 - - [29/Nov/2026:23:40:01 +0000] "GET / HTTP/1.1" 200 44 "-" "faultline-loadgen"\n'
            "garbage line\n"
            '10.1.2.3 - - [29/Nov/2026:23:40:02 +0000] "GET /big.bin HTTP/1.1" 200 262132 "-" "curl/8"\n')
    entries = access_log_entries(text)
    assert [a for a, _ in entries] == ["10.1.1.2", "10.1.2.3"] and entries[1][1] - entries[0][1] == 1.0


class _Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as nginx

    def do_GET(self):
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.hits += 1

    def log_message(self, *args):
        pass


def test_http_flood_keeps_connections_alive_and_respects_its_rate_cap():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    server.hits = 0
    server.handle_error = lambda request, address: None  # the flood ends by dropping its connections
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        done = loadgen.http_flood(url, conns=4, max_rate=200, max_seconds=1.0)
        assert 50 <= done <= 260 and server.hits >= done  # ~200/s for 1 s (plus the initial burst of 4)
    finally:
        server.shutdown()
        server.server_close()


def test_udp_flood_is_paced():
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.2)
    sent = loadgen.udp_flood("127.0.0.1", rx.getsockname()[1], kbps=480, size=600, max_seconds=1.0)
    got = 0
    try:
        while rx.recv(2048):
            got += 1
    except TimeoutError:
        pass
    rx.close()
    assert 90 <= sent <= 101 and got == sent  # 480 kbit/s of 600-byte datagrams = 100 per second


def test_cgroup_wrapper_joins_the_group_before_entering_the_namespace():
    argv = cgroups.exec_in(Path("/sys/fs/cgroup/cpu/faultline_web_f9"), "fl-x", ["python", "-V"])
    assert argv[:2] == ["sh", "-c"] and "cgroup.procs" in argv[2] and argv[2].index("echo") < argv[2].index("exec")
    assert argv[3:] == ["sh", "/sys/fs/cgroup/cpu/faultline_web_f9", "fl-x", "python", "-V"]
    with pytest.raises(faults.FaultError, match="not a faultline cgroup"):
        cgroups.remove(Path("/sys/fs/cgroup/cpu/user.slice"))


def test_tail_file_refuses_bad_arguments(tmp_path):
    log = tmp_path / "access.log"
    log.write_text("".join(f"line {i}\n" for i in range(10)))
    ctx = ProbeContext(StaticDirectory([Device("w", "web", "flp-none", ())]), file_roots={"w": [str(tmp_path)]})
    for args in ({"lines": 0}, {"lines": 5001}, {"lines": "5"}, {"path": "/etc/passwd"},
                 {"path": str(tmp_path / ".." / "x")}):
        with pytest.raises(ProbeError):
            run_probe(ctx, "tail_file", **{"dev": "w", "path": str(log), **args})


# --- real labs ----------------------------------------------------------------------------------


def _no_loadgen_left() -> None:
    assert not _loadgens(), "a traffic generator survived lab down"


# (state, probe context) of one lab of the scenario given as the indirect parameter; always torn down
lab = module_lab(None, LAB_DIR, timeout=90, after_down=_no_loadgen_left)


def _loadgens() -> list[str]:
    """Command lines of running traffic generators (and their sh parent) of any web fault."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "loadgen.py" in args and "--tag job-" in args:
            found.append(args)
    return found


def _assert_healthy(state: LabState, ctx) -> None:
    from faultline.lab.readiness import routing_problems

    topo = build_topology(state.scenario, state.size)
    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, [r for r in matrix.rows if r.status != "ok"]
    what, problems = routing_problems(topo, Path(state.run_dir))
    assert not problems, (what, problems)
    assert service_problems(topo) == []
    assert not _loadgens() and not any(cgroups.procs(g) for g in cgroups.CPU_ROOT.glob("faultline_web_*"))
    for web in (n.name for n in topo.nodes.values() if n.role == "web"):
        qdiscs = run_probe(ctx, "tc_qdisc", dev=web).record.qdiscs
        assert {q.kind for q in qdiscs} == {"noqueue"}, (web, qdiscs)
        conf = Path(state.run_dir) / "svc" / web / "nginx.conf"
        assert conf.read_text() == render_web(topo, Path(state.run_dir), web)


@pytest.mark.lab
@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("lab", ["ospf_enterprise_static", "dc_clos_service"], indirect=True)
def test_inject_verify_recover(lab, label):
    state, ctx = lab
    services = {(p.device, p.name): p.pid for p in state.processes}
    t0 = time.monotonic()
    rec = faults.inject(state, label, seed=3)
    truth = rec.ground_truth()
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": [rec.target], "root_cause_name": label}
    assert truth["category"] == next(r.category for r in catalogue() if r.label == label)
    assert truth["v2"]["fault_type"] == faults.fault_class(label).fault_type
    expected_resource = (f"interface/{rec.target}/eth0" if label == "incast_traffic_network_limitation"
                         else f"node/{rec.target}")
    assert truth["v2"]["resource_id"] == expected_resource and rec.mechanism
    client_role = "client" if state.scenario == "dc_clos_service" else "host"
    assert state.device(rec.target).role == (client_role if label == "http_acl_block" else "web")
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    result = faults.recover(state)
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):  # recovery really removed it
        faults.registry.rebuild(rec).verify(ctx)
    faults.registry.rebuild(rec).recover(state)  # idempotent
    assert {(p.device, p.name): p.pid for p in state.processes} == services  # reloaded, never restarted
    if label == "web_dos_attack":
        assert not Path(rec.params["cgroup"]).exists()
    _assert_healthy(state, ctx)
    print(f"\n{state.scenario} {label}: inject+verify {verified_s:.2f}s, recover {result['healthy_s']}s")
    assert verified_s < 30 and result["healthy_s"] < 30


@pytest.mark.lab
@pytest.mark.parametrize("lab", ["ospf_enterprise_static"], indirect=True)
def test_a_distributed_flood_comes_from_several_subnets_and_stops_on_recover(lab):
    state, ctx = lab
    rec = faults.inject(state, "web_dos_attack", "web_server_1", mechanism="distributed")
    try:
        assert rec.mechanism_id == "distributed" and rec.ground_truth()["mechanism_id"] == "distributed"
        assert sorted(rec.params["attackers"]) == ["host_1_1_1_1", "host_2_1_1_1"]  # one per subnet of the lab
        assert [r.id for r in faults.verify(state, ctx)] == [rec.id]  # verified: every client's requests arrive
        text = run_probe(ctx, "tail_file", dev="web_server_1", path=rec.params["access_log"], lines=5000).record.text
        senders = Counter(addr for addr, _ in access_log_entries(text))
        print(f"\ndistributed flood, requests per sender in the last 5000 log lines: {dict(senders)}")
        assert set(rec.params["attacker_ips"]) <= set(senders)
    finally:
        result = faults.recover(state)  # the lab is the module's: a flood left running would fail later tests
    assert result["recovered"] == [rec.id]
    assert not any(Path(f"/proc/{pid}").exists() for _, pid, _ in rec.params["helpers"])
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.registry.rebuild(rec).verify(ctx)
    _assert_healthy(state, ctx)


@pytest.mark.lab
@pytest.mark.parametrize("lab", ["ospf_enterprise_static"], indirect=True)
def test_web_faults_undone_by_hand_are_not_verified(lab):
    state, ctx = lab
    acl = faults.inject(state, "http_acl_block", "host_1_1_1_1")
    subprocess.run(["ip", "netns", "exec", "fl-host_1_1_1_1", "nft", "delete", "table", "inet", acl.params["table"]],
                   check=True)
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.verify(state, ctx, acl.id)

    dos = faults.inject(state, "web_dos_attack", "web_server_1")
    assert dos.params["attacker"] == "host_2_1_1_1"  # NIKA: hosts[-1]
    os.kill(dos.params["helper_pid"], signal.SIGSTOP)  # still listed, but the flood stops
    try:
        time.sleep(6)  # past the symptom's 5 s window of recent requests
        with pytest.raises(FaultNotVerified, match="no symptom: no request from"):
            faults.verify(state, ctx, dos.id)
    finally:
        os.kill(dos.params["helper_pid"], signal.SIGCONT)
    faults.verify(state, ctx, dos.id)  # flooding again
    os.kill(dos.params["helper_pid"], signal.SIGKILL)
    with pytest.raises(FaultNotVerified, match="artifact missing: no process with job-"):
        faults.verify(state, ctx, dos.id)

    slow = faults.inject(state, "sender_application_delay", "web_server_2")
    conf = Path(slow.params["conf"])
    conf.write_text(slow.params["original_conf"])
    from faultline.lab.faults.web import reload_and_wait

    reload_and_wait(state, "web_server_2")
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.verify(state, ctx, slow.id)
    conf.write_text(render_web(build_topology(state.scenario, state.size), Path(state.run_dir), "web_server_2",
                               limit_rate="10k"))  # on disk again, but nginx was not reloaded
    with pytest.raises(FaultNotVerified, match="no symptom: .* fetched .*big.bin"):
        faults.verify(state, ctx, slow.id)

    incast = faults.inject(state, "incast_traffic_network_limitation", "web_server_3")
    subprocess.run(["tc", "-n", "fl-web_server_3", "qdisc", "del", "dev", "eth0", "ingress"], check=True)
    with pytest.raises(FaultNotVerified, match="no ingress qdisc"):
        faults.verify(state, ctx, incast.id)

    result = faults.recover(state)  # idempotent: what was undone by hand is fine
    assert sorted(result["recovered"]) == sorted([acl.id, dos.id, slow.id, incast.id]) and state.faults == []
    _assert_healthy(state, ctx)


@pytest.mark.lab
@pytest.mark.parametrize("lab", ["ospf_enterprise_dhcp"], indirect=True)  # a lab of its own: it is taken down
def test_lab_down_stops_the_generators(lab):
    from faultline.lab import lifecycle as netlab

    state, _ = lab
    dos = faults.inject(state, "web_dos_attack")
    incast = faults.inject(state, "incast_traffic_network_limitation")
    assert len(_loadgens()) == 4 and Path(dos.params["cgroup"]).is_dir()  # flood, sh + 2 UDP senders
    assert incast.params["senders"] == ["host_1_1_1_1", "host_2_1_1_1"] and incast.params["kbps_each"] == 1500
    faults.verify(state, lab[1])
    netlab.down(settings_for(LAB_DIR))  # the fixture's down then finds nothing to do
    assert not _loadgens()
    assert not cgroups.procs(Path(dos.params["cgroup"]))  # left empty; the next injection sweeps it
    cgroups.sweep()
    assert not Path(dos.params["cgroup"]).exists()
