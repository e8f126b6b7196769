"""Recorded snapshots: a live lab recorded once answers the same probe calls with the same records
without root or a lab; calls it did not record are answered "not recorded", never invented."""

from __future__ import annotations

import pytest

from faultline.errors import FaultlineError
from faultline.network import snapshot
from faultline.network.devices import Device
from faultline.network.probes import run_probe
from faultline.network.records import NotRecordedResult
from faultline.network.runner import CommandResult
from tests.labfixtures import lab_dir, lab_fixture, running_lab, settings_for

LAB_DIR = lab_dir("snapshot")


def _tiny_snapshot() -> snapshot.Snapshot:
    result = CommandResult(device="h1", namespace="fl-h1", argv=["ip", "netns", "exec", "fl-h1", "ip", "-j", "addr"],
                           exit_code=0, stdout="[]", stderr="", duration_s=0.01)
    return snapshot.Snapshot(scenario="x", size="s", phase="incident", taken_at="2026-01-01T00:00:00+00:00",
                             devices=[{"name": "h1", "role": "host", "namespace": "fl-h1",
                                       "addresses": ["10.1.0.10/24"]}],
                             file_roots={}, vty_dirs={}, runner_timeout_s=10.0, runner_output_cap=1024,
                             calls=[], commands=[result])


def test_a_call_the_snapshot_lacks_is_answered_not_recorded():
    ctx = _tiny_snapshot().context()
    out = run_probe(ctx, "ping", src="h1", dst_ip="10.1.0.11", count=2)
    assert isinstance(out.record, NotRecordedResult)
    assert out.record.status == "not_recorded" and "ping" in out.record.missing
    assert out.raw.startswith("not recorded") and out.device == "h1"


def test_a_bad_call_is_still_refused_on_a_snapshot():
    from faultline.network.validate import ProbeError

    ctx = _tiny_snapshot().context()
    with pytest.raises(ProbeError):
        run_probe(ctx, "ping", src="h1; reboot", dst_ip="10.1.0.11")


def test_load_names_a_file_that_is_not_a_snapshot(tmp_path):
    bad = tmp_path / "snapshot.json.gz"
    bad.write_text("hello")
    with pytest.raises(FaultlineError, match="not a Faultline snapshot"):
        snapshot.load(bad)


def test_client_positions_take_one_user_per_subnet():
    devices = [Device("h1", "host", "fl-h1", ("10.1.0.10/24",)), Device("h2", "host", "fl-h2", ("10.1.0.11/24",)),
               Device("c1", "client", "fl-c1", ("10.1.5.10/24",)), Device("dns", "dns", "fl-dns", ("10.1.6.10/24",))]
    assert snapshot.client_positions(devices) == ["h1", "c1"]


@lab_fixture
def recorded():
    """A dc_clos_service lab (size s) recorded with the standard battery, then torn down."""
    with running_lab("dc_clos_service", settings_for(LAB_DIR), timeout=60) as (_, ctx):
        calls = snapshot.standard_calls(ctx, "bgp", names=["web1.pod0", "ns0.pod0"], urls=["http://web1.pod0/"])
        snap, outputs = snapshot.record(ctx, calls, scenario="dc_clos_service", size="s", phase="baseline")
    return snap, outputs


@pytest.mark.lab
def test_replay_without_a_lab_gives_the_recorded_records(recorded, tmp_path):
    snap, outputs = recorded
    size = snapshot.save(snap, tmp_path / "snapshot.json.gz")
    assert 0 < size < 2_000_000
    loaded = snapshot.load(tmp_path / "snapshot.json.gz")
    replayed = snapshot.replay(loaded)
    assert len(replayed) == len(outputs) > 50
    for live, again in zip(outputs, replayed):
        assert type(again.record) is type(live.record), live.probe
        assert again.record.model_dump() == live.record.model_dump(), (live.probe, live.args)
        assert again.raw == live.raw
    assert snapshot.replay_mismatches(loaded) == []


@pytest.mark.lab
def test_the_snapshot_covers_every_device_and_the_services(recorded):
    snap, outputs = recorded
    probes_by_device = {}
    for call in snap.calls:
        dev = call.args.get("dev") or call.args.get("src")
        probes_by_device.setdefault(dev, set()).add(call.probe)
    for device in snap.devices:
        assert {"ip_addr", "ip_route", "nft_ruleset", "processes"} <= probes_by_device[device["name"]]
    kinds = {o.probe: o for o in outputs}
    assert kinds["reachability"].record.summary == {"ok": len(kinds["reachability"].record.rows)}
    dig = next(o for o in outputs if o.probe == "dig" and o.args["name"] == "web1.pod0")
    assert dig.record.answers, dig.raw
    files = [c.args["path"] for c in snap.calls if c.probe == "read_file"]
    # daemons log to the lab's syslog collector, not to files on the box; nginx keeps its access log file
    assert any(p.endswith("dnsmasq.conf") for p in files) and any(p.endswith("bgpd.conf") for p in files)
    assert any(p.endswith("access.log") for p in files) and not any(p.endswith(("bgpd.log", "dnsmasq.log"))
                                                                    for p in files)


def test_traceroutes_follow_failing_pairs_one_per_destination_then_per_source_capped():
    from faultline.network.probes import ProbeOutput
    from faultline.network.reachability import ReachabilityMatrix, ReachabilityRow

    rows = [ReachabilityRow(src=s, dst=d, dst_ip=ip, tx=2, rx=0, loss=100.0, rtt=None, status="unreachable")
            for s in ("a", "b", "c") for d, ip in (("x", "10.0.0.1"), ("y", "10.0.0.2"))]
    rows.append(ReachabilityRow(src="a", dst="z", dst_ip="10.0.0.3", tx=2, rx=2, loss=0.0, rtt=0.1, status="ok"))
    matrix = ProbeOutput(probe="reachability", device=None, args={}, result=None, raw="",
                         record=ReachabilityMatrix(hosts={}, rows=rows, summary={}))
    calls = snapshot.traceroute_calls([matrix])
    pairs = [(c[1]["src"], c[1]["dst_ip"]) for c in calls]
    assert pairs[:2] == [("a", "10.0.0.1"), ("a", "10.0.0.2")]  # every unreachable destination first
    assert {s for s, _ in pairs} == {"a", "b", "c"} and "10.0.0.3" not in {d for _, d in pairs}
    assert len(snapshot.traceroute_calls([matrix], limit=2)) == 2


def test_a_command_asked_twice_while_recording_has_one_answer():
    from faultline.network.runner import Runner

    class Counting(Runner):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def run(self, device, argv, *, namespace, timeout_s=None, output_cap=None):
            self.calls += 1
            return CommandResult(device=device, namespace=namespace, argv=["echo", str(self.calls)], exit_code=0,
                                 stdout=str(self.calls), stderr="", duration_s=0.0)

    inner = Counting()
    recording = snapshot.RecordingRunner(inner)
    first = recording.run("h1", ["ip", "netns", "pids", "fl-h1"], namespace=None)
    second = recording.run("h1", ["ip", "netns", "pids", "fl-h1"], namespace=None)
    assert first.stdout == second.stdout == "1" and inner.calls == 1
