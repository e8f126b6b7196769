"""Probe API: parsers on recorded output, argument validation/injection, and live probes on 3 namespaces.

The live tests build `flp-a` -- `flp-r` -- `flp-b` (two /30 links, flp-r forwards) and always delete
them. They are marked `lab`: they need root.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from faultline.network import parse_services as ps
from faultline.network import parsers as pp
from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext, ProbeError, probe_names, run_probe
from faultline.network.runner import Runner
from tests.labfixtures import lab_fixture

NS = {"a": "flp-a", "b": "flp-b", "r": "flp-r"}
DIRECTORY = StaticDirectory([
    Device("a", "host", "flp-a", ("10.99.1.2/30",)),
    Device("b", "server", "flp-b", ("10.99.2.2/30",)),
    Device("r", "router", "flp-r", ("10.99.1.1/30", "10.99.2.1/30")),
])


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


# ---------------------------------------------------------------- parsers on recorded output (no root)

PING_LOSS = """PING 10.0.2.2 (10.0.2.2) 56(84) bytes of data.

--- 10.0.2.2 ping statistics ---
10 packets transmitted, 7 received, 30% packet loss, time 1812ms
rtt min/avg/max/mdev = 0.051/0.083/0.120/0.020 ms
"""
TRACEROUTE = """traceroute to 10.0.2.2 (10.0.2.2), 15 hops max, 60 byte packets
 1  10.0.1.1  0.061 ms
 2  *
 3  10.0.2.2  0.102 ms
"""
BGP_SUMMARY = {"ipv4Unicast": {"routerId": "10.255.0.1", "as": 65001, "peers": {
    "10.9.0.1": {"remoteAs": 65000, "state": "Established", "pfxRcd": 4, "peerUptime": "00:01:02"},
    "10.9.0.5": {"remoteAs": 65000, "state": "Idle", "peerUptime": "never"}}}}
OSPF_NEIGHBORS = {"neighbors": {"10.255.0.2": [
    {"priority": 1, "state": "Full/-", "deadTimeMsecs": 3512, "address": "10.0.0.2", "ifaceName": "eth1:10.0.0.1"}]}}
DIG_OK = """; <<>> DiG 9.18 <<>> @10.0.1.53 -t A -q web.lab.test
;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 1
;; ANSWER SECTION:
web.lab.test.\t\t0\tIN\tA\t10.0.3.10

;; Query time: 3 msec
"""
NFT = {"nftables": [{"metainfo": {"version": "1.0.6"}},
                    {"table": {"family": "inet", "name": "fault", "handle": 1}},
                    {"chain": {"family": "inet", "table": "fault", "name": "in", "handle": 1, "type": "filter",
                               "hook": "input", "prio": -10, "policy": "accept"}},
                    {"rule": {"family": "inet", "table": "fault", "chain": "in", "handle": 2, "expr": [
                        {"match": {"op": "==", "left": {"payload": {"protocol": "tcp", "field": "dport"}},
                                   "right": 179}},
                        {"counter": {"packets": 12, "bytes": 720}}, {"drop": None}]}}]}


CPU_TWO_SAMPLES = """\
/proc/stat:cpu  4989454 197567 1178519 4873134 58002 0 37778 83340 0 0
/proc/stat:cpu0 1920448 100410 569877 3044089 13914 0 17586 43797 0 0
/proc/stat:cpu1 3069005 97156 608641 1829044 44087 0 20191 39543 0 0
/proc/stat:procs_running 4
/proc/7586/stat:7586 (sha256sum) R 7585 7581 32196 0 -1 4194304 156 0 1 0 97 0 0 0 20 0 1 0 5720788 3010560 432 18446744073709551615 94092771094528 94092771129705 140721995804688 0 0 0 0 6 0 0 0 0 17 1 0 0 0 0 0 94092771146704 94092771148384 94092820848640 140721995811539 140721995811559 140721995811559 140721995812837 0
/proc/7587/stat:7587 (sleep) S 7585 7581 32196 0 -1 4194304 145 0 0 0 0 0 0 0 20 0 1 0 5720788 2990080 378 18446744073709551615 94183515254784 94183515272713 140731670687872 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 94183515286800 94183515288064 94183733477376 140731670690534 140731670690543 140731670690543 140731670691817 0
/proc/stat:cpu  4989584 197567 1178549 4873174 58002 0 37778 83340 0 0
/proc/stat:cpu0 1920493 100410 569893 3044128 13914 0 17586 43797 0 0
/proc/stat:cpu1 3069091 97156 608655 1829045 44087 0 20191 39543 0 0
/proc/stat:procs_running 3
/proc/7586/stat:7586 (sha256sum) R 7585 7581 32196 0 -1 4194304 156 0 1 0 157 0 0 0 20 0 1 0 5720788 3010560 432 18446744073709551615 94092771094528 94092771129705 140721995804688 0 0 0 0 6 0 0 0 0 17 0 0 0 0 0 0 94092771146704 94092771148384 94092820848640 140721995811539 140721995811559 140721995811559 140721995812837 0
/proc/7587/stat:7587 (sleep) S 7585 7581 32196 0 -1 4194304 145 0 0 0 0 0 0 0 20 0 1 0 5720788 2990080 378 18446744073709551615 94183515254784 94183515272713 140731670687872 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 94183515286800 94183515288064 94183733477376 140731670690534 140731670690543 140731670690543 140731670691817 0
"""  # noqa: E501 - kept verbatim; recorded on this machine: sha256sum busy (60 % while the tests ran), sleep idle


def test_parse_cpu_usage_from_two_samples_of_proc():
    from faultline.network.parse_cpu import parse_cpu_usage

    rec = parse_cpu_usage("b", CPU_TWO_SAMPLES, 1.0)
    assert (rec.cpus, rec.running, rec.error) == (2, 3, None)
    assert rec.busy_pct == 80.0  # 40 idle jiffies of 200 over both CPUs
    by_comm = {p.comm: p for p in rec.processes}
    assert by_comm["sha256sum"].cpu_pct == 60.0 and by_comm["sha256sum"].state == "R"
    assert by_comm["sleep"].cpu_pct == 0.0 and by_comm["sleep"].state == "S"
    half = parse_cpu_usage("b", CPU_TWO_SAMPLES.split("/proc/stat:cpu  4989584")[0], 1.0)
    assert half.processes == [] and "two samples" in half.error


def test_parse_ping_loss_and_errors():
    rec = pp.parse_ping("a", "10.0.2.2", PING_LOSS)
    assert (rec.tx, rec.rx, rec.loss_pct, rec.rtt_avg_ms, rec.status) == (10, 7, 30.0, 0.083, "loss")
    rec = pp.parse_ping("a", "10.0.2.2", "", "ping: connect: Network is unreachable\n")
    assert rec.status == "unreachable" and "Network is unreachable" in rec.error
    assert pp.parse_ping("a", "10.0.2.2", "", "", timed_out=True).status == "timeout"
    assert pp.parse_ping("a", "10.0.2.2", "garbage").status == "error"


def test_parse_traceroute_and_json_errors():
    rec = pp.parse_traceroute("a", "10.0.2.2", TRACEROUTE)
    assert [h.addresses for h in rec.hops] == [["10.0.1.1"], [], ["10.0.2.2"]] and rec.reached
    assert rec.hops[0].rtts_ms == [0.061]
    assert pp.parse_routes("r", "not json").error.startswith("unparseable JSON")
    assert pp.parse_interfaces("r", '{"x": 1}').error == "expected a JSON list"


def test_parse_vtysh_bgp_ospf_and_daemon_down():
    rec = ps.parse_vtysh("r", "show bgp summary json", json.dumps(BGP_SUMMARY))
    assert [(p.peer, p.state, p.prefixes_received) for p in rec.bgp_peers] == [
        ("10.9.0.1", "Established", 4), ("10.9.0.5", "Idle", None)]
    rec = ps.parse_vtysh("r", "show ip ospf neighbor json", json.dumps(OSPF_NEIGHBORS))
    nbr = rec.ospf_neighbors[0]
    assert (nbr.neighbor_id, nbr.state, nbr.address, nbr.interface) == ("10.255.0.2", "Full/-", "10.0.0.2",
                                                                        "eth1:10.0.0.1")
    rec = ps.parse_vtysh("r", "show ip ospf neighbor json", "ospfd is not running\n", exit_code=0)
    assert rec.daemon_down and rec.error == "ospfd is not running" and rec.data is None


def test_parse_nft_iptables_ss_ps():
    rules = ps.parse_nft("r", json.dumps(NFT))
    assert rules.tables == ["inet fault"] and rules.chains[0].hook == "input"
    rule = rules.rules[0]
    assert (rule.matches, rule.verdict, rule.packets) == (["tcp dport == 179"], "drop", 12)
    ipt = ps.parse_iptables("r", "filter", "-P INPUT DROP\n-P FORWARD ACCEPT\n-A INPUT -p tcp --dport 80 -j DROP\n")
    assert (ipt.policies == {"INPUT": "DROP", "FORWARD": "ACCEPT"}
            and ipt.rules == ["-A INPUT -p tcp --dport 80 -j DROP"])
    ss = ps.parse_ss("b", 'tcp LISTEN 0 5 10.0.2.2:8080 0.0.0.0:* users:(("python3",pid=42,fd=3))\n')
    assert ss.sockets[0].local == "10.0.2.2:8080" and "python3" in ss.sockets[0].process
    procs = ps.parse_ps("b", "  42     1 root      0.5  1.2 nginx    nginx: master process nginx -c x\n")
    assert procs.processes[0].pid == 42 and procs.processes[0].comm == "nginx"


def test_parse_dig_and_curl():
    rec = ps.parse_dig("a", "web.lab.test", "10.0.1.53", "A", DIG_OK)
    assert rec.status == "NOERROR" and rec.answers[0].data == "10.0.3.10" and rec.query_time_ms == 3
    rec = ps.parse_dig("a", "web.lab.test", "10.0.1.53", "A",
                       ";; communications error to 10.0.1.53#53: timed out\n;; no servers could be reached\n")
    assert rec.status == "timeout" and rec.answers == []
    rec = ps.parse_curl("a", "http://x/", "FLHTTP 200 0.000010 0.000300 0.001000 0.001200 10.0.2.2 0 \n")
    assert (rec.status, rec.http_code, rec.time_connect_s, rec.remote_ip) == ("ok", 200, 0.0003, "10.0.2.2")
    rec = ps.parse_curl("a", "http://x/", "FLHTTP 000 0 0 0 3.0 10.0.2.2 7 Failed to connect to x port 80\n",
                        exit_code=7)
    assert rec.status == "refused" and rec.error.startswith("Failed to connect")


# ---------------------------------------------------------------- validation and injection (no process may start)

class RecordingRunner(Runner):
    """A runner that records every call instead of running it: refused probes must leave it empty."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def run(self, device, argv, **kwargs):  # type: ignore[override]
        self.calls.append(list(argv))
        raise AssertionError(f"a refused probe reached the runner: {argv}")


def _injections(canary: Path) -> list[tuple[str, dict]]:
    touch = f"touch {canary}"
    return [
        ("ping", {"src": f"a; {touch}", "dst_ip": "10.99.2.2"}),
        ("ping", {"src": f"$({touch})", "dst_ip": "10.99.2.2"}),
        ("ping", {"src": "../x", "dst_ip": "10.99.2.2"}),
        ("ping", {"src": "a\n", "dst_ip": "10.99.2.2"}),
        ("ping", {"src": "nosuch", "dst_ip": "10.99.2.2"}),
        ("ping", {"src": "a", "dst_ip": f"1.2.3.4; {touch}"}),
        ("ping", {"src": "a", "dst_ip": "--help"}),
        ("ping", {"src": "a", "dst_ip": f"fe80::1%;{touch}"}),
        ("ping", {"src": "a", "dst_ip": "10.99.2.2", "count": "3; id"}),
        ("ping", {"src": "a", "dst_ip": "10.99.2.2", "count": 10_000}),
        ("ping", {"src": "a", "dst_ip": "10.99.2.2", "timeout_s": 1e9}),
        ("ping", {"src": "a", "dst_ip": "10.99.2.2", "flags": "-f"}),
        ("ip_addr", {"dev": ["a"]}),
        ("vtysh_show", {"dev": "r", "command": "configure terminal"}),
        ("vtysh_show", {"dev": "r", "command": "show run; write"}),
        ("vtysh_show", {"dev": "r", "command": "show ip bgp | tee /tmp/x"}),
        ("vtysh_show", {"dev": "r", "command": "show ip route\nconfigure terminal"}),
        ("vtysh_show", {"dev": "r", "command": "show running-config\n"}),
        ("vtysh_show", {"dev": "r", "command": "write memory"}),
        ("dig", {"src": "a", "name": f"x.test; {touch}"}),
        ("dig", {"src": "a", "name": "-f/etc/passwd"}),
        ("dig", {"src": "a", "name": "x.test", "rtype": "AXFR"}),
        ("dig", {"src": "a", "name": "x.test", "server": "@1.1.1.1"}),
        ("http_get", {"src": "a", "url": f"http://x/`{touch}`"}),
        ("http_get", {"src": "a", "url": "file:///etc/shadow"}),
        ("http_get", {"src": "a", "url": "http://x/ -o /tmp/x"}),
        ("http_get", {"src": "a", "url": "-K/etc/passwd"}),
        ("iptables_rules", {"dev": "r", "table": "filter -F"}),
        ("read_file", {"dev": "a", "path": "/tmp/flp-root/../../etc/shadow"}),
        ("read_file", {"dev": "a", "path": "etc/passwd"}),
        ("read_file", {"dev": "a", "path": "/etc/shadow"}),
        ("read_file", {"dev": "b", "path": "/tmp/flp-root/x"}),
        ("reachability", {"sources": "a"}),
        ("rm_rf", {"dev": "a"}),
    ]


def test_injection_strings_are_refused_before_anything_runs(tmp_path):
    canary = tmp_path / "canary"
    runner = RecordingRunner()
    ctx = ProbeContext(DIRECTORY, runner=runner, file_roots={"a": ["/tmp/flp-root"]})
    for name, args in _injections(canary):
        with pytest.raises(ProbeError):
            run_probe(ctx, name, **args)
    assert runner.calls == [] and not canary.exists()


def test_registry_lists_the_allowlist_and_reports_missing_arguments():
    assert {"ping", "reachability", "vtysh_show", "read_file", "http_get"} <= set(probe_names())
    with pytest.raises(ProbeError, match="arguments"):
        run_probe(ProbeContext(DIRECTORY, runner=RecordingRunner()), "ping", src="a")


# ---------------------------------------------------------------- live probes on real namespaces (root)

def _delete_namespaces() -> None:
    listed = sh("ip", "netns", "list").stdout.split()
    for ns in NS.values():
        if ns in listed:
            sh("ip", "netns", "delete", ns, check=False)


@lab_fixture
def lab():
    """flp-a (10.99.1.2/30) -- flp-r (forwarding) -- flp-b (10.99.2.2/30); deleted whatever happens."""
    _delete_namespaces()
    try:
        for ns in NS.values():
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", "eth0", "netns", "flp-a", "type", "veth", "peer", "name", "eth0", "netns", "flp-r")
        sh("ip", "link", "add", "eth1", "netns", "flp-r", "type", "veth", "peer", "name", "eth0", "netns", "flp-b")
        for ns, dev, cidr in (("flp-a", "eth0", "10.99.1.2/30"), ("flp-r", "eth0", "10.99.1.1/30"),
                              ("flp-r", "eth1", "10.99.2.1/30"), ("flp-b", "eth0", "10.99.2.2/30")):
            sh("ip", "-n", ns, "addr", "add", cidr, "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "netns", "exec", "flp-r", "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "-n", "flp-a", "route", "add", "default", "via", "10.99.1.1")
        sh("ip", "-n", "flp-b", "route", "add", "default", "via", "10.99.2.1")
        yield ProbeContext(DIRECTORY)
    finally:
        _delete_namespaces()


@pytest.mark.lab
def test_ping_ok_then_loss_and_drop_through_nft(lab):
    out = run_probe(lab, "ping", src="a", dst_ip="10.99.2.2", count=3)
    assert out.record.status == "ok" and out.record.rx == 3 and out.record.rtt_avg_ms is not None
    assert out.result.argv[:4] == ["ip", "netns", "exec", "flp-a"] and "3 packets transmitted" in out.raw
    nft = ["ip", "netns", "exec", "flp-r", "nft"]
    sh(*nft, "add table inet flptest")
    try:
        sh(*nft, "add chain inet flptest chk { type filter hook forward priority 0 ; }")
        sh(*nft, "add rule inet flptest chk ip daddr 10.99.2.2 numgen inc mod 2 == 0 counter drop")
        lossy = run_probe(lab, "ping", src="a", dst_ip="10.99.2.2", count=6).record
        assert (lossy.status, lossy.tx, lossy.rx) == ("loss", 6, 3)
        sh(*nft, "flush chain inet flptest chk")
        sh(*nft, "add rule inet flptest chk ip daddr 10.99.2.2 counter drop")
        dead = run_probe(lab, "ping", src="a", dst_ip="10.99.2.2", count=2).record
        assert (dead.status, dead.rx, dead.loss_pct) == ("unreachable", 0, 100.0)
        rules = run_probe(lab, "nft_ruleset", dev="r").record
        drop = [r for r in rules.rules if r.table == "flptest"]
        assert drop[0].verdict == "drop" and drop[0].packets == 2 and "ip daddr == 10.99.2.2" in drop[0].matches
    finally:
        sh(*nft, "delete table inet flptest")
    assert run_probe(lab, "ping", src="a", dst_ip="10.99.2.2", count=1).record.status == "ok"


@pytest.mark.lab
def test_ip_addr_route_link_neigh_records(lab):
    ifaces = {i.ifname: i for i in run_probe(lab, "ip_addr", dev="r").record.interfaces}
    v4 = {name: [a for a in i.addresses if ":" not in a] for name, i in ifaces.items()}
    assert v4["eth0"] == ["10.99.1.1/30"] and v4["eth1"] == ["10.99.2.1/30"]
    assert ifaces["eth0"].up and ifaces["lo"].addresses[0] == "127.0.0.1/8"
    routes = run_probe(lab, "ip_route", dev="a").record.routes
    default = [r for r in routes if r.dst == "default"]
    assert default[0].gateway == "10.99.1.1" and default[0].dev == "eth0"
    links = {i.ifname: i for i in run_probe(lab, "ip_link", dev="a").record.interfaces}
    assert links["eth0"].operstate == "UP" and links["eth0"].addresses == [] and links["eth0"].tx_packets is not None
    run_probe(lab, "ping", src="a", dst_ip="10.99.1.1", count=1)
    neigh = run_probe(lab, "ip_neigh", dev="a").record.neighbors
    assert any(n.dst == "10.99.1.1" and n.lladdr for n in neigh)


@pytest.mark.lab
def test_traceroute_iptables_nstat_fdb(lab):
    trace = run_probe(lab, "traceroute", src="a", dst_ip="10.99.2.2").record
    assert [h.addresses for h in trace.hops] == [["10.99.1.1"], ["10.99.2.2"]] and trace.reached
    ipt = run_probe(lab, "iptables_rules", dev="r").record
    assert ipt.error is None and ipt.policies.get("INPUT") == "ACCEPT"
    counters = run_probe(lab, "nstat", dev="a").record.counters
    assert counters.get("IcmpOutEchos", 0) >= 1
    fdb = run_probe(lab, "bridge_fdb", dev="a").record
    assert fdb.error is None


@pytest.mark.lab
def test_tc_qdisc_parses_tbf(lab):
    sh("tc", "-n", "flp-r", "qdisc", "add", "dev", "eth1", "root", "tbf", "rate", "10mbit", "burst", "32kb",
       "latency", "50ms")
    try:
        qdiscs = run_probe(lab, "tc_qdisc", dev="r").record.qdiscs
        tbf = [q for q in qdiscs if q.dev == "eth1" and q.kind == "tbf"]
        assert tbf and tbf[0].root and "rate" in tbf[0].options
    finally:
        sh("tc", "-n", "flp-r", "qdisc", "del", "dev", "eth1", "root")


@pytest.mark.lab
def test_reachability_matrix_ok_then_unreachable(lab):
    out = run_probe(lab, "reachability", count=1)
    rows = out.record.rows
    assert [(r.src, r.dst, r.dst_ip, r.status) for r in rows] == [
        ("a", "b", "10.99.2.2", "ok"), ("b", "a", "10.99.1.2", "ok")]
    assert out.record.summary == {"ok": 2} and out.device is None and "a -> b" in out.raw
    dumped = json.loads(out.model_dump_json())  # the typed record survives serialisation
    assert set(dumped["record"]["rows"][0]) >= {"src", "dst", "dst_ip", "tx", "rx", "loss", "rtt", "status"}
    sh("ip", "-n", "flp-r", "link", "set", "eth1", "down")
    try:
        rows = run_probe(lab, "reachability", count=1).record.rows
        assert [(r.src, r.dst, r.status, r.rx) for r in rows] == [("a", "b", "unreachable", 0),
                                                                   ("b", "a", "unreachable", 0)]
        link = {i.ifname: i for i in run_probe(lab, "ip_link", dev="b").record.interfaces}["eth0"]
        assert not link.up and "NO-CARRIER" in link.flags
    finally:
        sh("ip", "-n", "flp-r", "link", "set", "eth1", "up")
    assert run_probe(lab, "ping", src="b", dst_ip="10.99.1.2", count=2).record.status == "ok"


@pytest.mark.lab
def test_timeout_produces_timed_out_record(lab):
    start = time.monotonic()
    out = run_probe(lab, "ping", src="a", dst_ip="10.99.2.2", count=100, timeout_s=1)
    assert out.result.timed_out and out.result.exit_code is None and out.record.status == "timeout"
    assert time.monotonic() - start < 5
    assert sh("ip", "netns", "pids", "flp-a").stdout.strip() == ""  # the killed ping left nothing behind


@pytest.mark.lab
def test_output_cap_truncates_and_record_reports_error(lab, tmp_path):
    small = ProbeContext(DIRECTORY, runner=Runner(output_cap=64), file_roots={"a": [str(tmp_path)]})
    out = run_probe(small, "ip_addr", dev="r")
    assert out.result.truncated and len(out.result.stdout) == 64 and out.record.error
    (tmp_path / "big.log").write_text("x" * 1000)
    read = run_probe(small, "read_file", dev="a", path=str(tmp_path / "big.log")).record
    assert read.truncated and read.text == "x" * 64


@pytest.mark.lab
def test_read_file_roots_and_symlink_escape(lab, tmp_path):
    (tmp_path / "frr.conf").write_text("hostname r\n")
    (tmp_path / "escape").symlink_to("/etc/hostname")
    ctx = ProbeContext(DIRECTORY, file_roots={"r": [str(tmp_path)]})
    assert run_probe(ctx, "read_file", dev="r", path=str(tmp_path / "frr.conf")).record.text == "hostname r\n"
    with pytest.raises(ProbeError, match="outside"):
        run_probe(ctx, "read_file", dev="r", path=str(tmp_path / "escape"))
    missing = run_probe(ctx, "read_file", dev="r", path=str(tmp_path / "nope.log")).record
    assert missing.error and "No such file" in missing.error


@pytest.mark.lab
def test_service_probes_http_sockets_processes_dig_vtysh(lab, tmp_path):
    (tmp_path / "index.html").write_text("hello\n")
    server = subprocess.Popen(["ip", "netns", "exec", "flp-b", "python3", "-m", "http.server", "8080", "--bind",
                               "10.99.2.2", "--directory", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            socks = run_probe(lab, "sockets", dev="b").record.sockets
            if any(s.local == "10.99.2.2:8080" and s.state == "LISTEN" for s in socks):
                break
            time.sleep(0.1)
        else:
            pytest.fail("http.server did not start listening in flp-b")
        http = run_probe(lab, "http_get", src="a", url="http://10.99.2.2:8080/").record
        assert (http.status, http.http_code, http.remote_ip) == ("ok", 200, "10.99.2.2") and http.time_total_s > 0
        refused = run_probe(lab, "http_get", src="a", url="http://10.99.2.2:8081/").record
        assert refused.status == "refused"
        procs = run_probe(lab, "processes", dev="b").record.processes
        assert any(p.pid == server.pid for p in procs)
        assert not any(p.pid == server.pid for p in run_probe(lab, "processes", dev="a").record.processes)
    finally:
        server.kill()
        server.wait()
    dns = run_probe(lab, "dig", src="a", name="web.lab.test", server="10.99.2.2").record
    assert dns.status in {"refused", "timeout"} and dns.answers == []
    vty = run_probe(lab, "vtysh_show", dev="r", command="show ip route json")
    assert vty.result.argv[:3] == ["vtysh", "-N", "flp-r"] and vty.record.error  # no FRR here: an error record


@pytest.mark.lab
def test_cpu_usage_sees_what_a_process_uses_now_on_its_own_device(lab):
    busy = subprocess.Popen(["ip", "netns", "exec", "flp-b", "sha256sum", "/dev/zero"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = run_probe(lab, "cpu_usage", dev="b", interval_s=1.0)
        assert out.result.argv[:2] == ["sh", "-c"] and out.result.namespace is None
        rec = out.record
        assert rec.error is None and rec.cpus and rec.cpus >= 1
        assert any(p.comm == "sha256sum" and p.cpu_pct >= 30 for p in rec.processes), rec.processes
        assert not any(p.comm == "sha256sum" for p in run_probe(lab, "cpu_usage", dev="a").record.processes)
    finally:
        busy.kill()
        busy.wait()
    with pytest.raises(ProbeError, match="interval_s"):
        run_probe(lab, "cpu_usage", dev="b", interval_s=60)


@pytest.mark.lab
def test_vtysh_show_against_a_real_zebra(lab):
    """zebra with pathspace flp-r: routes come back as JSON; a daemon that is not running is flagged."""
    dirs = [Path(p) / "flp-r" for p in ("/etc/frr", "/var/run/frr", "/var/log/frr")]
    pidfile = dirs[1] / "zebra.pid"
    try:
        for d in dirs:
            sh("install", "-d", "-o", "frr", "-g", "frr", "-m", "755", str(d))
        (dirs[0] / "frr.conf").write_text("hostname r\n")
        (dirs[0] / "vtysh.conf").write_text("service integrated-vtysh-config\n")
        sh("ip", "netns", "exec", "flp-r", "/usr/lib/frr/zebra", "-d", "-N", "flp-r", "-P", "0",
           "-f", str(dirs[0] / "frr.conf"), "-i", str(pidfile), "--log", f"file:{dirs[2] / 'zebra.log'}")
        deadline = time.monotonic() + 10
        while not (dirs[1] / "zserv.api").exists():
            assert time.monotonic() < deadline, "zebra did not start"
            time.sleep(0.05)
        routes = run_probe(lab, "vtysh_show", dev="r", command="show ip route json").record
        assert routes.error is None and "10.99.1.0/30" in routes.data
        ospf = run_probe(lab, "vtysh_show", dev="r", command="show ip ospf neighbor json").record
        assert ospf.daemon_down and ospf.ospf_neighbors == [] and ospf.error == "ospfd is not running"
    finally:
        if pidfile.exists():
            sh("kill", pidfile.read_text().strip(), check=False)
            deadline = time.monotonic() + 5
            while sh("ip", "netns", "pids", "flp-r").stdout.strip() and time.monotonic() < deadline:
                time.sleep(0.05)
        for d in dirs:
            sh("rm", "-rf", str(d))
