"""The incident corpus: suite specs, generation from the real lab (root), ingestion, and a snapshot
replayed by an unprivileged process giving the recorded records."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from faultline.corpus.spec import load_suite, suite_names
from faultline.errors import FaultlineError
from tests.labfixtures import lab_dir, lab_fixture, lab_namespaces, settings_for, wait_until_no_lab

LAB_DIR = lab_dir("corpus")


def _suite_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yml"
    path.write_text(text)
    return path


def test_builtin_suites_load_and_tiny_has_a_healthy_control():
    assert "tiny" in suite_names()
    tiny = load_suite("tiny")
    assert sum(s.healthy for s in tiny.incidents) == 1 and len(tiny.incidents) == 3
    assert tiny.incident_ids() == ["tiny-001", "tiny-002", "tiny-003"]


@pytest.mark.parametrize("body,where", [
    ("suite: x\nincidents:\n  - {scenario: simple_bgp, seed: 1}\n", "incidents.0"),
    ("suite: x\nincidents:\n  - {scenario: simple_bgp, healthy: true, faults: [{label: link_down}]}\n", "incidents.0"),
    ("suite: x\nincidents:\n  - {scenario: nowhere, healthy: true}\n", "incidents.0.scenario"),
    ("suite: x\nincidents:\n  - {scenario: simple_bgp, faults: [{label: link_dwon}]}\n", "incidents.0.faults.0.label"),
    ("suite: x\nincidents:\n  - {scenario: simple_bgp, healthy: true, colour: red}\n", "incidents.0.colour"),
    ("suite: x\nincidents: [\n", "not valid YAML"),
])
def test_a_bad_suite_names_the_file_and_the_field(tmp_path, body, where):
    path = _suite_file(tmp_path, body)
    with pytest.raises(FaultlineError) as err:
        load_suite(path)
    assert str(path) in err.value.message and where in err.value.message


def test_an_unknown_suite_name_lists_the_builtins():
    with pytest.raises(FaultlineError) as err:
        load_suite("no-such-suite")
    assert "tiny" in err.value.fix


# --- generated for real (root) ---------------------------------------------------------------

SUITE = """suite: ci
incidents:
  - {scenario: simple_bgp, size: s, seed: 1, healthy: true}
  - {scenario: simple_bgp, size: s, seed: 2, faults: [{label: link_down, target: pc1, mechanism: standard}]}
  - {scenario: simple_bgp, size: s, seed: 3, faults: [{label: bgp_acl_block}]}
  - {scenario: simple_bgp, size: s, seed: 4, faults: [{label: sdn_controller_crash}]}
"""


@lab_fixture
def corpus(tmp_path_factory):
    """The suite above generated on real labs (one at a time): (corpus folder, results by incident id)."""
    from faultline.corpus.generate import generate_suite

    wait_until_no_lab()
    out = tmp_path_factory.mktemp("corpus")
    suite = load_suite(_suite_file(tmp_path_factory.mktemp("suite"), SUITE))
    results = generate_suite(suite, out, settings_for(LAB_DIR))
    assert not lab_namespaces(), "the generator left a lab behind"
    return out, {r.incident_id: r for r in results}


@pytest.mark.lab
def test_valid_incidents_have_every_artifact_and_the_truth_of_their_spec(corpus):
    out, results = corpus
    assert [results[i].status for i in ("ci-001", "ci-002", "ci-003")] == ["valid"] * 3
    for incident in ("ci-001", "ci-002", "ci-003"):
        folder = out / incident
        for name in ("incident.json", "ticket.json", "ground_truth.json", "baseline.json.gz", "snapshot.json.gz"):
            assert (folder / name).is_file(), (incident, name)
        assert not (folder / "logs").exists() and not (folder / ".syslog.jsonl.gz").exists()  # merged, then gone
    archived = {p.parent.name for p in (out / "archive").glob("*/*.log.gz")}
    assert {"router1", "router2"} <= archived  # simple_bgp's hosts run no daemons
    healthy = json.loads((out / "ci-001" / "ground_truth.json").read_text())
    assert healthy["v1"]["is_anomaly"] is False
    down = json.loads((out / "ci-002" / "ground_truth.json").read_text())
    assert down["v1"] == {"is_anomaly": True, "faulty_devices": ["pc1"], "root_cause_name": "link_down",
                          "root_cause_names": ["link_down"]}
    assert down["categories"] == ["link_failure"] and down["resolution"]


@pytest.mark.lab
def test_tickets_are_symptom_level_and_open(corpus):
    out, _ = corpus
    for incident, hidden in (("ci-002", ("link_down", "link", "pc1")), ("ci-003", ("bgp", "acl", "router1", "179"))):
        ticket = json.loads((out / incident / "ticket.json").read_text())
        text = (ticket["title"] + " " + ticket["description"]).lower()
        assert ticket["status"] == "Open" and ticket["resolution_note"] is None
        for word in hidden:
            assert word not in text, (incident, word, text)


@pytest.mark.lab
def test_a_fault_the_lab_cannot_inject_makes_an_invalid_incident_with_its_reason(corpus):
    out, results = corpus
    assert results["ci-004"].status == "invalid"
    meta = json.loads((out / "ci-004" / "incident.json").read_text())
    assert meta["status"] == "invalid" and "sdn_controller_crash" in meta["reason"]
    assert not (out / "ci-004" / "ticket.json").exists()


@pytest.mark.lab
def test_ingest_loads_the_corpus_idempotently_and_quarantines_the_invalid_one(corpus, conn, settings):
    from faultline.ingest.incidents import ingest_incidents

    out, _ = corpus
    first = ingest_incidents(conn, settings, [out])
    assert sorted(first.loaded) == ["ci-001", "ci-002", "ci-003"] and first.invalid == ["ci-004"]

    def counts():
        return conn.execute("""select (select count(*) from incidents), (select count(*) from ground_truth),
                                      (select count(*) from tickets), (select count(*) from log_lines),
                                      (select count(*) from quarantine where target_table = 'incidents')""").fetchone()

    before = counts()
    assert before[:3] == (3, 3, 3) and before[3] > 0 and before[4] == 1
    again = ingest_incidents(conn, settings, [out])
    assert counts() == before and {f.status for f in again.files} == {"unchanged"}
    # the archive is ordinary logs: no incident id, the devices named by the lines themselves
    assert conn.execute("select count(*) from log_lines where incident_id is not null").fetchone() == (0,)
    hosts = {r[0] for r in conn.execute("select distinct host from log_lines").fetchall()}
    assert {"router1", "router2"} <= hosts
    # ci-003's lines sit in its own slot of the suite's timeline (the third hour from the epoch)
    slot = conn.execute("""select min(ts), max(ts) from log_lines
                           where ts >= timestamp '2026-01-05 02:00:00' and ts < timestamp '2026-01-05 03:00:00'
                           and message like '%ADJCHANGE%'""").fetchone()
    assert slot[0] is not None, "ci-003's BGP adjacency lines are not in its slot"
    truth = conn.execute("select labels, devices from ground_truth where incident_id = 'ci-003'").fetchone()
    assert truth == (["bgp_acl_block"], ["router1"])


@pytest.mark.lab
def test_a_snapshot_replays_without_root_to_the_recorded_records(corpus):
    """The replay runs in a child that dropped root (uid nobody) and has no lab to talk to."""
    from faultline.network import snapshot

    out, _ = corpus
    snap = snapshot.load(out / "ci-003" / "snapshot.json.gz")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop root, then replay from memory against the digests taken at record time
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            outputs = snapshot.replay(snap)
            payload = pickle.dumps((os.geteuid(), snapshot.replay_mismatches(snap),
                                    [type(o.record).__name__ for o in outputs]))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            payload = pickle.dumps(("error", [repr(exc)], []))
        with os.fdopen(write_fd, "wb") as fh:
            fh.write(payload)
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        euid, mismatches, types = pickle.loads(fh.read())
    os.waitpid(pid, 0)
    assert euid == 65534, mismatches
    assert mismatches == [] and len(types) == len(snap.calls) > 50
    assert "NotRecordedResult" not in types
    bgp = [c for c in snap.calls if c.probe == "vtysh_show" and "summary" in c.args["command"]]
    assert bgp, "the snapshot records the routers' BGP state"


def test_coverage_counts_labels_per_scenario_and_size_and_skips_invalid(tmp_path):
    from faultline.corpus.summary import coverage, render_markdown

    def incident(name, scenario, size, faults, status="valid"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "incident.json").write_text(json.dumps({
            "status": status, "scenario": scenario, "size": size, "spec": {"faults": [{"label": f} for f in faults]}}))

    incident("a", "simple_bgp", "s", ["link_down"])
    incident("b", "dc_clos_bgp", "m", ["link_down", "bgp_acl_block"])
    incident("c", "simple_bgp", "s", [])
    incident("d", "simple_bgp", "s", ["link_down"], status="invalid")
    table = coverage([tmp_path])
    assert (table["valid"], table["invalid"], table["healthy"], table["multi"]) == (3, 1, 1, 1)
    assert table["labels"]["link_down"] == {"simple_bgp/s": 1, "dc_clos_bgp/m": 1}
    text = render_markdown(table)
    assert "| link_down | 1 | 1 | 2 |" in text and "| (healthy) |" in text
