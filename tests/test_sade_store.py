"""Diagnoses and scores in a real DuckDB warehouse: what lands in each table, and re-saving replaces."""

from __future__ import annotations

import json

from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2
from faultline.sade.records import Diagnosis, Flag, Step, Submission
from faultline.sade.scoring import score_incident
from faultline.sade.store import (
    load_diagnosis,
    save_diagnosis,
    save_scores,
    save_submission,
)
from faultline.truth.records import Truth


def _diagnosis(incident="inc-1", *, steps=3, flags=2, label="bgp_acl_block", device="r1") -> Diagnosis:
    sub = Submission(
        v1=SubmissionV1(is_anomaly=True, faulty_devices=[device], root_cause_name=[label]),
        v2=SubmissionV2(is_anomaly=True, root_causes=[RootCause(resource_id=f"node/{device}", fault_type=label)]),
        families=["acl"], fingerprints=["acl/bgp_port_drop"], summary="nft drops tcp/179 on r1")
    return Diagnosis(
        incident_id=incident, method="sade", policy="deterministic", backend="snapshot", submission=sub,
        steps=[Step(seq=i, phase="B", tool="nft_ruleset", args={"dev": device},
                    flags=["nft_drop_rule"] if i == 0 else [],
                    probe_calls=1, elapsed_ms=1.5) for i in range(steps)],
        flags=[Flag(scan="acl_sweep", phase="B", device=device, kind="nft_drop_rule", evidence="tcp dport 179 drop",
                    family="acl", attrs={"port": 179}) for _ in range(flags)],
        probe_calls=steps, tool_calls=steps, elapsed_s=0.25)


def test_save_diagnosis_writes_steps_flags_and_submission(conn):
    save_diagnosis(conn, _diagnosis(), run_id="run-1")
    assert conn.execute("SELECT count(*) FROM sade_steps WHERE incident_id = 'inc-1'").fetchone()[0] == 3
    flag = conn.execute("SELECT device, kind, family, attrs FROM sade_flags ORDER BY flag_no").fetchall()
    assert len(flag) == 2 and flag[0][:3] == ("r1", "nft_drop_rule", "acl") and json.loads(flag[0][3]) == {"port": 179}
    row = conn.execute("SELECT method, status, is_anomaly, labels, devices, probe_calls, tool_calls, elapsed_s, "
                       "json_extract_string(v2, '$.root_causes[0].resource_id') FROM submissions").fetchone()
    assert row == ("sade", "submitted", True, ["bgp_acl_block"], ["r1"], 3, 3, 0.25, "node/r1")
    stored = load_diagnosis(conn, "inc-1", "sade")
    v1, v2 = stored.v1, stored.v2
    assert stored.status == "submitted" and stored.flags[0].attrs == {"port": 179} and len(stored.steps) == 3
    assert v1.root_cause_name == ["bgp_acl_block"] and v2.root_causes[0].fault_type == "bgp_acl_block"


def test_resaving_replaces_and_other_methods_stay(conn):
    save_diagnosis(conn, _diagnosis(steps=5, flags=4), run_id="run-1")
    flat = _diagnosis().model_copy(update={"method": "flat"})
    save_diagnosis(conn, flat, run_id="run-1")
    save_diagnosis(conn, _diagnosis(steps=2, flags=1, label="ospf_acl_block"), run_id="run-2")
    counts = dict(conn.execute("SELECT method, count(*) FROM sade_steps GROUP BY 1").fetchall())
    assert counts == {"sade": 2, "flat": 3}
    assert conn.execute("SELECT count(*) FROM sade_flags WHERE method = 'sade'").fetchone()[0] == 1
    rows = conn.execute("SELECT method, labels, run_id FROM submissions ORDER BY method").fetchall()
    assert rows == [("flat", ["bgp_acl_block"], "run-1"), ("sade", ["ospf_acl_block"], "run-2")]


def test_no_submission_is_a_row(conn):
    d = _diagnosis().model_copy(update={"submission": None, "status": "error", "error": "probe timed out"})
    save_diagnosis(conn, d, run_id=None)
    row = conn.execute("SELECT status, is_anomaly, labels, v1, error FROM submissions").fetchone()
    assert row == ("error", None, None, None, "probe timed out")
    stored = load_diagnosis(conn, "inc-1", "sade")
    assert (stored.status, stored.v1, stored.v2) == ("error", None, None)


def test_external_submission_without_v2(conn):
    save_submission(conn, "inc-9", "mcp", SubmissionV1(is_anomaly=False), backend="snapshot", tool_calls=7)
    stored = load_diagnosis(conn, "inc-9", "mcp")
    v1, v2 = stored.v1, stored.v2
    assert v1.is_anomaly is False and v2 is None
    assert conn.execute("SELECT tool_calls, labels FROM submissions").fetchone() == (7, [])


def test_save_scores_is_per_metric_and_idempotent(conn):
    truth = Truth(incident_id="inc-1", is_faulty=True, devices=["r1"], labels=["bgp_acl_block"], size="s")
    good = score_incident(truth, SubmissionV1(is_anomaly=True, faulty_devices=["r1", "r2"],
                                              root_cause_name=["bgp_acl_block"]), method="sade", family="acl")
    missing = score_incident(truth, None, method="flat")
    written = save_scores(conn, [good, missing], run_id="run-1")
    assert written == conn.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    value = dict(conn.execute("SELECT metric, value FROM evaluations WHERE method = 'sade'").fetchall())
    assert value["loc_precision"] == 0.5 and value["rca_f1"] == 1.0 and value["detection"] == 1.0
    assert "v2_f1" not in value  # no v2 answer given: no v2 rows
    assert conn.execute("SELECT value FROM evaluations WHERE method = 'flat' AND metric = 'rca_f1'").fetchone()[0] == -1
    # SADE's convention in SQL: -1 counts as 0 in means
    mean = conn.execute("SELECT avg(greatest(value, 0)) FROM evaluations WHERE metric = 'rca_f1'").fetchone()[0]
    assert mean == 0.5
    save_scores(conn, [good], run_id="run-2")
    assert conn.execute("SELECT count(DISTINCT run_id) FROM evaluations WHERE method = 'sade'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM evaluations WHERE method = 'flat'").fetchone()[0] > 0
    attrs = json.loads(conn.execute("SELECT attributes FROM evaluations LIMIT 1").fetchone()[0])
    assert attrs["labels"] == ["bgp_acl_block"]



def test_truths_from_ingested_incidents_score_stored_answers(conn, settings):
    from pathlib import Path

    from faultline.ingest.incidents import ingest_incidents
    from faultline.truth.store import load_truths

    backlog = Path(__file__).resolve().parents[1] / "data/sample/backlog"
    ingest_incidents(conn, settings, [backlog / "sample-backlog-043", backlog / "sample-backlog-047"])
    truths = load_truths(conn)
    multi, healthy = truths["sample-backlog-043"], truths["sample-backlog-047"]
    assert sorted(multi.labels) == ["dns_service_down", "link_down"] and multi.scenario and multi.size
    assert [(rc.resource_id, rc.fault_type) for rc in multi.root_causes][0] == ("interface/host_1_1_1_1/eth0",
                                                                                 "link_down")
    assert not healthy.is_faulty and healthy.labels == [] and healthy.root_causes == []
    # one fault of two found: RCA P 1, R 1/2; the healthy control answered healthy scores 1
    save_submission(conn, "sample-backlog-043", "mcp", SubmissionV1(is_anomaly=True, faulty_devices=["dns_server"],
                                                                    root_cause_name=["dns_service_down"]))
    save_submission(conn, "sample-backlog-047", "mcp", SubmissionV1(is_anomaly=False))
    scores = [score_incident(truths[i], load_diagnosis(conn, i, "mcp").v1,
                             load_diagnosis(conn, i, "mcp").v2, method="mcp") for i in sorted(truths)]
    assert [(s.rca.precision, s.rca.recall, s.rca.f1) for s in scores] == [(1.0, 0.5, 0.6667), (1.0, 1.0, 1.0)]
