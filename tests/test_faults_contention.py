"""CPU contention (LB, sender, receiver) and DNS lookup latency: helpers and probe offline, then a real lab.

Pure tests first: the netlink messages of the NFQUEUE impairer and of the cgroup keeper, the
`cgroup_cpu` probe on scripted output (and its refusals), targets and catalogue rows. Then
inject → verify → recover on one ospf_enterprise_dhcp lab (it has a load balancer, web servers,
DHCP hosts and a DNS server), that a fault repaired by hand is not verified, that the cap stays on
its node, and that `lab down` with faults still injected leaves no cgroup and no helper behind.
The lab tests (marked `lab`) need root.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import pytest

from faultline.lab import faults
from faultline.lab.faults import cgroup_join, nfqueue_delay
from faultline.lab.faults.base import FaultNotVerified, helper_alive
from faultline.lab.faults.contention import CPU_ROOT, PREFIX, http_median_ms
from faultline.lab.scenarios import build_topology
from faultline.lab.state import LabState
from faultline.network import parse_cgroup as pc
from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext, ProbeError, run_probe
from faultline.network.runner import CommandResult
from faultline.nika.labels import catalogue
from tests.labfixtures import lab_dir, module_lab, offline_state, settings_for

LAB_DIR = lab_dir("contention")
SCENARIO = "ospf_enterprise_dhcp"
LABELS = ("load_balancer_overload", "sender_resource_contention", "receiver_resource_contention",
          "dns_lookup_latency")
CASES = [
    ("load_balancer_overload", "load_balancer"),
    ("sender_resource_contention", "web_server_1"),
    ("receiver_resource_contention", "host_2_1_1_1"),
    ("dns_lookup_latency", "dns_server"),
]


# --- pure: helper protocols -----------------------------------------------------------------------


def test_nfqueue_messages_are_well_formed():
    bind, params, maxlen, flags = nfqueue_delay.config_messages(53, 4096)
    length, mtype, nlflags, seq, _ = struct.unpack_from("=IHHII", bind)
    assert length == len(bind) == 16 + 4 + 8 and mtype == (3 << 8) | 2 and nlflags == 0x5 and seq == 1
    assert bind[16:20] == bytes([0, 0, 0, 53])  # AF_UNSPEC, version 0, queue 53 big-endian
    assert bind[20:28] == struct.pack("=HH", 8, 1) + bytes([1, 0, 0, 0])  # NFQA_CFG_CMD: BIND
    assert params[24:29] == struct.pack("!IB", 0, 1) and len(params) == 16 + 4 + 12  # copy META, padded
    assert len(maxlen) == 28 and len(flags) == 36
    verdict = nfqueue_delay.verdict_message(7, 0x01020304)
    assert struct.unpack_from("=IH", verdict)[1] == (3 << 8) | 1
    assert verdict[-8:] == struct.pack("!II", 1, 0x01020304)  # NF_ACCEPT for that packet id
    # a queued packet (id 9, with a nested-flag bit on an unrelated attribute) and an error ack
    hdr = nfqueue_delay.nlattr(1, struct.pack("!IHB", 9, 0x0800, 4))
    other = nfqueue_delay.nlattr(0x8000 | 11, b"\0" * 6)
    body = struct.pack("=BBH", 2, 0, 0) + other + hdr
    packet = struct.pack("=IHHII", 16 + len(body), 3 << 8, 0, 0, 0) + body
    ack = struct.pack("=IHHII", 36, 2, 0, 4, 0) + struct.pack("=i", -1) + b"\0" * 16
    assert nfqueue_delay.parse(packet + ack) == ([9], [(4, 1)])
    assert nfqueue_delay.parse(b"\x01\x00") == ([], [])


def test_proc_connector_messages_are_well_formed():
    msg = cgroup_join.listen_message()
    assert len(msg) == struct.unpack_from("=I", msg)[0] == 16 + 20 + 8
    assert struct.unpack_from("=II", msg, 16) == (1, 1)  # CN_IDX_PROC, CN_VAL_PROC
    assert struct.unpack_from("=II", msg, 36) == (1, 2)  # LISTEN, exec events only
    event = struct.pack("=IIQ", 2, 0, 123) + struct.pack("=ii", 4242, 4241)
    cn = struct.pack("=IIIIHH", 1, 1, 0, 0, len(event), 0) + event
    datagram = struct.pack("=IHHII", 16 + len(cn), 3, 0, 0, 0) + cn
    fork = datagram.replace(struct.pack("=IIQ", 2, 0, 123), struct.pack("=IIQ", 1, 0, 123))
    assert cgroup_join.exec_pids(datagram) == [4241] and cgroup_join.exec_pids(fork) == []


# --- pure: the cgroup_cpu probe ---------------------------------------------------------------------


class ScriptedRunner:
    """Answers each command from a table keyed by its first two words; records what was run."""

    def __init__(self, answers: dict[tuple[str, str], str]) -> None:
        self.answers, self.calls, self.timeout_s = answers, [], 10.0

    def run(self, device, argv, *, namespace, timeout_s=None, output_cap=None) -> CommandResult:
        self.calls.append(list(argv))
        out = self.answers.get((argv[0], argv[1]), "")
        return CommandResult(device=device, namespace=namespace, argv=list(argv), exit_code=0, stdout=out,
                             stderr="", duration_s=0.01)


def test_cgroup_cpu_probe_reads_groups_and_refuses_odd_paths():
    directory = StaticDirectory([Device("web", "web", "fl-web", ("10.0.0.2/24",))])
    runner = ScriptedRunner({
        ("ip", "netns"): "101\n102\n103\n104\n",
        ("grep", "-H"): "\n".join([
            "/proc/101/cgroup:1:cpu:/faultline_cpu_f1", "/proc/102/cgroup:1:cpu:/faultline_cpu_f1",
            "/proc/103/cgroup:3:cpu,cpuacct:/", "/proc/104/cgroup:1:cpu:/x/../etc",
            "/proc/101/cgroup:4:memory:/m",
        ]),
    })
    ctx = ProbeContext(directory=directory, runner=runner)
    rec = run_probe(ctx, "cgroup_cpu", dev="web").record
    assert [g.path for g in rec.groups] == ["/", "/faultline_cpu_f1"] and "/x/../etc" in rec.error
    assert rec.groups[1].pids == [101, 102] and all(c[1] != "netns" or c[3] == "fl-web" for c in runner.calls)
    files = runner.calls[-1][3:]
    assert files == pc.group_files(["/", "/faultline_cpu_f1"]) and not any(".." in f for f in files)
    stats = "\n".join([
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us:-1", "/sys/fs/cgroup/cpu/cpu.cfs_period_us:100000",
        "/sys/fs/cgroup/cpu/cpu.stat:nr_periods 0",
        "/sys/fs/cgroup/cpu/faultline_cpu_f1/cpu.cfs_quota_us:5000",
        "/sys/fs/cgroup/cpu/faultline_cpu_f1/cpu.cfs_period_us:100000",
        "/sys/fs/cgroup/cpu/faultline_cpu_f1/cpu.stat:nr_periods 40",
        "/sys/fs/cgroup/cpu/faultline_cpu_f1/cpu.stat:nr_throttled 39",
        "/sys/fs/cgroup/cpu/faultline_cpu_f1/cpu.stat:throttled_time 3800000000",
    ])
    rec = pc.parse_cgroup_cpu("web", {101: "/faultline_cpu_f1", 103: "/"}, stats)
    root, capped = rec.groups
    assert (root.cfs_quota_us, root.cpu_limit_pct, root.nr_throttled) == (-1, None, None)
    assert (capped.cpu_limit_pct, capped.nr_periods, capped.nr_throttled, capped.throttled_time_ns) == (
        5.0, 40, 39, 3_800_000_000)
    assert not pc.safe_group("/a b") and not pc.safe_group("/a/./b") and pc.safe_group("/") and pc.safe_group("/a/b")
    with pytest.raises(ProbeError, match="invalid device name"):
        run_probe(ctx, "cgroup_cpu", dev="web; rm -rf /")
    with pytest.raises(ProbeError, match="no argument"):
        run_probe(ctx, "cgroup_cpu", dev="web", path="/etc")


# --- pure: targets and catalogue ---------------------------------------------------------------------


def test_targets_catalogue_and_applicability():
    rows = {r.label: r for r in catalogue()}
    for label in LABELS:
        cls = faults.fault_class(label)
        assert rows[label].status == "implemented" and rows[label].category == cls.category == "resource_contention"
        assert rows[label].feasible == "R" or rows[label].how.startswith("PARTIAL")
        assert "SUBSTITUTE" in rows[label].how
    assert faults.label_scenarios("load_balancer_overload") == ["ospf_enterprise_dhcp"]
    assert "simple_bgp" not in faults.label_scenarios("receiver_resource_contention")  # nothing to fetch from
    assert "rip_small_internet" not in faults.label_scenarios("dns_lookup_latency")  # no DNS server
    topo = build_topology(SCENARIO, "s")
    assert faults.fault_class("receiver_resource_contention").targets(topo) == ["host_1_1_1_1", "host_2_1_1_1"]
    assert faults.fault_class("sender_resource_contention").targets(topo) == [f"web_server_{i}" for i in range(4)]
    assert faults.fault_class("dns_lookup_latency").query(topo, "dns_server") == ("host_1_1_1_1", "dns.local")
    clos = build_topology("dc_clos_service", "s")
    assert faults.fault_class("receiver_resource_contention").targets(clos) == ["client_0"]
    state = offline_state(SCENARIO)
    picks = {faults.choose_target(state, "sender_resource_contention", seed) for seed in range(12)}
    assert len(picks) > 1 and picks == {faults.choose_target(state, "sender_resource_contention", s) for s in range(12)}
    with pytest.raises(faults.FaultError, match="cannot target 'dns_server'"):
        faults.inject(state, "load_balancer_overload", "dns_server")


# --- a real lab ---------------------------------------------------------------------------------------


lab = module_lab(SCENARIO, LAB_DIR, timeout=90)  # (state, probe context), torn down whatever happens


def _our_groups() -> list[str]:
    return sorted(p.name for p in CPU_ROOT.glob(f"{PREFIX}*"))


def _assert_healthy(state: LabState, ctx) -> None:
    """Reachability all ok, every service answering from its original PID in the root cpu group."""
    from faultline.lab import service_ops
    from faultline.lab.readiness import routing_problems
    from faultline.lab.services import service_problems

    topo = build_topology(state.scenario, state.size)
    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, [r for r in matrix.rows if r.status != "ok"]
    assert service_problems(topo) == []
    assert routing_problems(topo, Path(state.run_dir))[1] == []
    for node in ("load_balancer", "web_server_1", "host_2_1_1_1", "dns_server"):
        assert service_ops.service_running(state, node), node
        groups = run_probe(ctx, "cgroup_cpu", dev=node).record.groups
        assert [g.path for g in groups] == ["/"], (node, groups)
    rules = run_probe(ctx, "iptables_rules", dev="dns_server", table="mangle").record.rules
    assert not any("NFQUEUE" in r for r in rules)
    assert _our_groups() == []


@pytest.mark.lab
@pytest.mark.parametrize("label,target", CASES)
def test_inject_verify_recover(lab, label, target):
    state, ctx = lab
    pids_before = sorted(p.pid for p in state.processes)
    t0 = time.monotonic()
    rec = faults.inject(state, label, target, seed=3)
    truth = rec.ground_truth()
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": [target], "root_cause_name": label}
    assert truth["v2"] == {"resource_id": f"node/{target}", "fault_type": label}
    assert truth["category"] == "resource_contention" and "SUBSTITUTE" in rec.mechanism
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    if label == "dns_lookup_latency":
        late = run_probe(ctx, "dig", src="host_2_1_1_1", name="web0.local", server=rec.params["server"]).record
        assert late.status == "NOERROR" and late.answers and late.query_time_ms >= 900
        assert helper_alive(rec.params["helper_pid"], rec.params["helper_marker"])
    else:
        group = next(g for g in run_probe(ctx, "cgroup_cpu", dev=target).record.groups if g.path != "/")
        assert group.cpu_limit_pct == 5.0 and group.nr_throttled > 0 and rec.params["load_pid"] in group.pids
        # the node's service PIDs (none on a static host; udhcpc on a DHCP host) are in the capped group
        assert set(rec.params["moved"]) <= set(group.pids)
    t1 = time.monotonic()
    result = faults.recover(state)
    recover_s = time.monotonic() - t1
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):  # recovery really removed it
        faults.registry.rebuild(rec).verify(ctx)
    assert not helper_alive(rec.params["helper_pid"], rec.params["helper_marker"])
    assert sorted(p.pid for p in state.processes) == pids_before  # nothing restarted: same services, same PIDs
    _assert_healthy(state, ctx)
    if label == "dns_lookup_latency":
        fast = run_probe(ctx, "dig", src="host_2_1_1_1", name="web0.local", server=rec.params["server"]).record
        assert fast.status == "NOERROR" and fast.query_time_ms < 100
    else:
        median, samples = http_median_ms(ctx, rec.params["src"], rec.params["url"])
        assert median is not None and median < rec.params["baseline_ms"] + 20, samples
    assert str(CPU_ROOT / f"{PREFIX}{rec.id}") not in state.extra_paths
    assert verified_s < 30 and recover_s < 10 and result["healthy_s"] < 20
    print(f"\n{label} on {target}: inject+verify {verified_s:.2f} s, recover {recover_s:.2f} s, "
          f"healthy {result['healthy_s']} s")


@pytest.mark.lab
def test_the_cap_stays_on_its_node(lab):
    state, ctx = lab
    rec = faults.inject(state, "sender_resource_contention", "web_server_2")
    faults.verify(state, ctx)
    capped, capped_samples = http_median_ms(ctx, "host_1_1_1_1", rec.params["url"], samples=9)
    neighbour, samples = http_median_ms(ctx, "host_1_1_1_1", "http://10.1.2.12/", samples=9)  # web_server_0, same LAN
    # how much slower a request to the capped server is depends on where its 5 % slice falls: several times the
    # neighbour's, not a fixed figure (medians of 14.7 to 60 ms were measured here, the neighbour's ~1 ms)
    assert capped is not None and neighbour is not None and neighbour < 20, (capped_samples, samples)
    assert capped > max(5 * neighbour, 8), (capped_samples, samples)
    throttled = [g for g in run_probe(ctx, "cgroup_cpu", dev="web_server_2").record.groups if g.path != "/"]
    assert throttled and all(g.nr_throttled and g.nr_throttled >= g.nr_periods // 2 for g in throttled), throttled
    assert [g.path for g in run_probe(ctx, "cgroup_cpu", dev="web_server_0").record.groups] == ["/"]
    with pytest.raises(faults.FaultError, match="already CPU-capped by fault"):  # two keepers would fight
        faults.inject(state, "sender_resource_contention", "web_server_2")
    # a process started on the capped node later (this probe's curl) is held in the group too
    slow = run_probe(ctx, "http_get", src="web_server_2", url="http://10.1.2.12/")
    assert slow.record.status == "ok" and slow.result.duration_s > 0.1
    faults.recover(state)
    _assert_healthy(state, ctx)


@pytest.mark.lab
def test_faults_undone_by_hand_are_not_verified(lab):
    state, ctx = lab
    dns = faults.inject(state, "dns_lookup_latency", "dns_server")
    from faultline.lab.faults.delay import rule_spec

    spec = ["iptables", "-t", "mangle", "-D", *rule_spec("eth0", 53)]  # an operator deletes the rule
    subprocess.run(["ip", "netns", "exec", "fl-dns_server", *spec], check=True)
    with pytest.raises(FaultNotVerified, match="dns_lookup_latency on dns_server .*artifact missing: no NFQUEUE rule"):
        faults.verify(state, ctx, dns.id)
    cpu = faults.inject(state, "load_balancer_overload", "load_balancer")
    os.killpg(cpu.params["load_pid"], signal.SIGKILL)  # an operator kills the hog
    time.sleep(0.3)
    with pytest.raises(FaultNotVerified, match=r"load_balancer_overload on load_balancer .*stress-ng.*not running"):
        faults.verify(state, ctx, cpu.id)
    faults.recover(state)  # idempotent: what the operator already undid is fine
    assert state.faults == []
    _assert_healthy(state, ctx)


@pytest.mark.lab
def test_lab_down_with_faults_injected_leaves_nothing(lab):
    """Last test of the module: it takes the lab down itself (the fixture's down is then a no-op)."""
    from faultline.lab import lifecycle as netlab

    state, ctx = lab
    recs = [faults.inject(state, label, target) for label, target in CASES]
    faults.verify(state, ctx)
    helpers = [(r.params["helper_pid"], r.params["helper_marker"]) for r in recs]
    loads = [r.params["load_pid"] for r in recs if "load_pid" in r.params]
    assert len(_our_groups()) == 3
    netlab.down(settings_for(LAB_DIR))
    assert _our_groups() == []
    assert not any(helper_alive(pid, marker) for pid, marker in helpers)
    assert not any(Path(f"/proc/{pid}").exists() and "stress" in Path(f"/proc/{pid}/comm").read_text()
                   for pid in loads)
