"""Writing diagnoses and scores to the warehouse: `sade_steps`, `sade_flags`, `submissions`, `evaluations`.

Every write is idempotent per (incident, method): saving again replaces what that incident and
method wrote before, inside one transaction, so a re-run never leaves half of an old answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from faultline.sade.records import (
    Diagnosis,
    RootCause,
    Submission,
    SubmissionV1,
    SubmissionV2,
)
from faultline.sade.scoring import IncidentScore, Truth
from faultline.stale import MARK_SQL

DELETE_STEPS_SQL = "DELETE FROM sade_steps WHERE incident_id = ? AND method = ?"
DELETE_FLAGS_SQL = "DELETE FROM sade_flags WHERE incident_id = ? AND method = ?"
DELETE_SUBMISSION_SQL = "DELETE FROM submissions WHERE incident_id = ? AND method = ?"
DELETE_EVALUATIONS_SQL = "DELETE FROM evaluations WHERE incident_id = ? AND method = ?"
INSERT_STEP_SQL = """
INSERT INTO sade_steps (incident_id, method, seq, run_id, phase, tool, args, output_digest, flags, probe_calls,
                        elapsed_ms, note, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_FLAG_SQL = """
INSERT INTO sade_flags (incident_id, method, flag_no, run_id, scan, phase, device, kind, evidence, family, strength,
                        vs_baseline, attrs, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_SUBMISSION_SQL = """
INSERT INTO submissions (incident_id, method, run_id, policy, backend, status, is_anomaly, labels, devices, v1, v2,
                         families, fingerprints, summary, probe_calls, tool_calls, elapsed_s, error, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_EVALUATION_SQL = """
INSERT INTO evaluations (incident_id, method, metric, value, run_id, attributes, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""
SELECT_SUBMISSION_SQL = "SELECT v1, v2, status FROM submissions WHERE incident_id = ? AND method = ?"
SELECT_TRUTHS_SQL = """
SELECT g.incident_id, g.is_faulty, g.labels, g.devices, g.v2_resource_ids, g.v2_fault_types, i.scenario, i.size
FROM ground_truth g LEFT JOIN incidents i USING (incident_id)
ORDER BY g.incident_id
"""


def _now() -> datetime:
    return datetime.now(UTC)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _transaction(conn: duckdb.DuckDBPyConnection, writes: Sequence[tuple[str, list[Any]]]) -> None:
    conn.execute("BEGIN TRANSACTION")
    try:
        for sql, params in writes:
            conn.execute(sql, params)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def submission_writes(incident_id: str, method: str, *, v1: SubmissionV1 | None, v2: SubmissionV2 | None,
                      run_id: str | None, policy: str | None, backend: str | None, status: str,
                      submission: Submission | None = None, probe_calls: int | None = None,
                      tool_calls: int | None = None, elapsed_s: float | None = None,
                      error: str | None = None) -> list[tuple[str, list[Any]]]:
    """The statements that replace one `submissions` row (for callers that batch them with others)."""
    row = [incident_id, method, run_id, policy, backend, status,
           None if v1 is None else v1.is_anomaly,
           None if v1 is None else list(v1.root_cause_name),
           None if v1 is None else list(v1.faulty_devices),
           None if v1 is None else _json(v1.model_dump(mode="json")),
           None if v2 is None else _json(v2.model_dump(mode="json")),
           list(submission.families) if submission else [], list(submission.fingerprints) if submission else [],
           submission.summary if submission else None, probe_calls, tool_calls, elapsed_s, error, _now()]
    return [(DELETE_SUBMISSION_SQL, [incident_id, method]), (INSERT_SUBMISSION_SQL, row),
            (MARK_SQL, [incident_id, "sade", row[-1]])]


def save_submission(conn: duckdb.DuckDBPyConnection, incident_id: str, method: str, v1: SubmissionV1,
                    v2: SubmissionV2 | None = None, *, run_id: str | None = None, policy: str | None = None,
                    backend: str | None = None, probe_calls: int | None = None, tool_calls: int | None = None,
                    elapsed_s: float | None = None) -> None:
    """Store one answer that did not come from a SADE `Diagnosis` (an external agent over MCP)."""
    _transaction(conn, submission_writes(incident_id, method, v1=v1, v2=v2, run_id=run_id, policy=policy,
                                         backend=backend, status="submitted", probe_calls=probe_calls,
                                         tool_calls=tool_calls, elapsed_s=elapsed_s))


def save_diagnosis(conn: duckdb.DuckDBPyConnection, diagnosis: Diagnosis, *, run_id: str | None) -> None:
    """Replace the steps, flags and submission of (incident, method) with this diagnosis's."""
    d, now = diagnosis, _now()
    key = [d.incident_id, d.method]
    writes: list[tuple[str, list[Any]]] = [(DELETE_STEPS_SQL, key), (DELETE_FLAGS_SQL, key)]
    for step in d.steps:
        writes.append((INSERT_STEP_SQL, [d.incident_id, d.method, step.seq, run_id, step.phase, step.tool,
                                         _json(step.args), step.output_digest, list(step.flags), step.probe_calls,
                                         step.elapsed_ms, step.note, now]))
    for no, flag in enumerate(d.flags):
        writes.append((INSERT_FLAG_SQL, [d.incident_id, d.method, no, run_id, flag.scan, flag.phase, flag.device,
                                         flag.kind, flag.evidence, flag.family, flag.strength, flag.vs_baseline,
                                         _json(flag.attrs), now]))
    sub = d.submission
    writes += submission_writes(d.incident_id, d.method, v1=sub.v1 if sub else None, v2=sub.v2 if sub else None,
                                run_id=run_id, policy=d.policy, backend=d.backend, status=d.status, submission=sub,
                                probe_calls=d.probe_calls, tool_calls=d.tool_calls, elapsed_s=d.elapsed_s,
                                error=d.error)
    _transaction(conn, writes)


def save_scores(conn: duckdb.DuckDBPyConnection, scores: Sequence[IncidentScore], *, run_id: str | None) -> int:
    """Replace the `evaluations` rows of each scored (incident, method); returns the rows written."""
    writes: list[tuple[str, list[Any]]] = []
    now, rows = _now(), 0
    for score in scores:
        attrs = _json({"labels": score.labels, "family": score.family, "scenario": score.scenario,
                       "size": score.size})
        writes.append((DELETE_EVALUATIONS_SQL, [score.incident_id, score.method]))
        for metric, value in score.metrics().items():
            writes.append((INSERT_EVALUATION_SQL, [score.incident_id, score.method, metric, float(value), run_id,
                                                   attrs, now]))
            rows += 1
    _transaction(conn, writes)
    return rows


def load_submission(conn: duckdb.DuckDBPyConnection, incident_id: str,
                    method: str) -> tuple[SubmissionV1 | None, SubmissionV2 | None]:
    """The stored v1 and v2 answer of (incident, method); (None, None) when there is none."""
    row = conn.execute(SELECT_SUBMISSION_SQL, [incident_id, method]).fetchone()
    if row is None or row[0] is None:
        return None, None
    v1 = SubmissionV1.model_validate(json.loads(row[0]))
    v2 = SubmissionV2.model_validate(json.loads(row[1])) if row[1] is not None else None
    return v1, v2


def load_truths(conn: duckdb.DuckDBPyConnection) -> dict[str, Truth]:
    """Every incident's ground truth from the warehouse (with its scenario and size), by incident id."""
    truths = {}
    for inc, faulty, labels, devices, resources, types, scenario, size in conn.execute(SELECT_TRUTHS_SQL).fetchall():
        pairs = [RootCause(resource_id=r, fault_type=t) for r, t in zip(resources or [], types or [])]
        truths[inc] = Truth(incident_id=inc, is_anomaly=bool(faulty), devices=list(devices or []),
                            labels=list(labels or []), root_causes=pairs, scenario=scenario, size=size)
    return truths
