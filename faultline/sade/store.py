"""Writing diagnoses and scores to the warehouse: `sade_steps`, `sade_flags`, `submissions`, `evaluations`.

Every write is idempotent per (incident, method): saving again replaces what that incident and
method wrote before, inside one transaction, so a re-run never leaves half of an old answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from faultline.nika.answers import SubmissionV1, SubmissionV2
from faultline.sade.records import Diagnosis, Flag, Step, Submission
from faultline.sade.scoring import IncidentScore
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
SELECT_SUBMISSION_SQL = """
SELECT status, v1, v2, families, summary, backend, error
FROM submissions WHERE incident_id = ? AND method = ?
"""
SELECT_FLAGS_SQL = """
SELECT scan, phase, device, kind, evidence, family, strength, vs_baseline, attrs
FROM sade_flags WHERE incident_id = ? AND method = ? ORDER BY flag_no
"""
SELECT_STEPS_SQL = """
SELECT seq, phase, tool, args, output_digest, flags, probe_calls, elapsed_ms, note
FROM sade_steps WHERE incident_id = ? AND method = ? ORDER BY seq
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


@dataclass
class StoredDiagnosis:
    """A diagnosis as stored: its answer (v1, v2; None when it ended without one), flags and steps."""

    method: str
    status: str  # submitted | no_submission | error
    v1: SubmissionV1 | None
    v2: SubmissionV2 | None
    families: list[str]
    summary: str
    backend: str | None
    flags: list[Flag]
    steps: list[Step]

    def step_for(self, flag: Flag) -> Step | None:
        """The probe step that raised `flag` (its kind, on its device), else the first step that raised the kind."""
        raised = [s for s in self.steps if flag.kind in s.flags]
        on_device = [s for s in raised if s.args.get("dev") == flag.device]
        return (on_device or raised or [None])[0]


def load_diagnosis(conn: duckdb.DuckDBPyConnection, incident_id: str, method: str = "sade") -> StoredDiagnosis | None:
    """The stored diagnosis of (incident, method), or None when there is none."""
    row = conn.execute(SELECT_SUBMISSION_SQL, [incident_id, method]).fetchone()
    if row is None:
        return None
    status, v1, v2, families, summary, backend, _error = row
    flags = [Flag(scan=r[0], phase=r[1], device=r[2], kind=r[3], evidence=r[4], family=r[5], strength=r[6],
                  vs_baseline=r[7], attrs=json.loads(r[8]) if r[8] else {})
             for r in conn.execute(SELECT_FLAGS_SQL, [incident_id, method]).fetchall()]
    steps = [Step(seq=r[0], phase=r[1], tool=r[2], args=json.loads(r[3]) if r[3] else {}, output_digest=r[4],
                  flags=list(r[5] or []), probe_calls=r[6], elapsed_ms=r[7], note=r[8])
             for r in conn.execute(SELECT_STEPS_SQL, [incident_id, method]).fetchall()]
    return StoredDiagnosis(method=method, status=status, v1=SubmissionV1.model_validate_json(v1) if v1 else None,
                           v2=SubmissionV2.model_validate_json(v2) if v2 else None, families=list(families or []),
                           summary=summary or "", backend=backend, flags=flags, steps=steps)
