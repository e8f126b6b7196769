"""Storing verdicts: `verdicts` (one row per incident), `verdict_claims` (its statements) and `verdict_checks`
(its follow-ups on the network), replaced together."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import duckdb

from faultline.stale import mark_stale
from faultline.verdict.records import Verdict

DELETE_SQL = ("DELETE FROM verdicts WHERE incident_id = ?", "DELETE FROM verdict_claims WHERE incident_id = ?",
              "DELETE FROM verdict_checks WHERE incident_id = ?")
INSERT_VERDICT_SQL = """
INSERT INTO verdicts (incident_id, run_id, status, labels, category, devices, interfaces, confidence, rule,
                      sources_used, agreeing, disagreeing, without_network, fix_known, symptom, root_cause, fix,
                      verification, disagreement, astra_analyst, sade_method, verdict, report_text, elapsed_s,
                      created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_CLAIM_SQL = """
INSERT INTO verdict_claims (incident_id, seq, section, text, quote, source, ref, device, detail, status, run_id,
                            created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_CHECK_SQL = """
INSERT INTO verdict_checks (incident_id, seq, label, source, asked_devices, checked_devices, outcome, reason,
                            matched_devices, probes, probe_calls, first_labels, run_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SELECT_SQL = "SELECT verdict FROM verdicts WHERE incident_id = ?"


def save_verdict(conn: duckdb.DuckDBPyConnection, verdict: Verdict, *, run_id: str | None = None,
                 elapsed_s: float = 0.0) -> None:
    """Replace the incident's verdict and its claims in one transaction."""
    v, now = verdict, datetime.now(timezone.utc)
    conn.execute("BEGIN TRANSACTION")
    try:
        for sql in DELETE_SQL:
            conn.execute(sql, [v.incident_id])
        conn.execute(INSERT_VERDICT_SQL, [
            v.incident_id, run_id, v.status, v.labels, v.category, v.devices, v.interfaces, v.confidence, v.rule,
            list(v.sources_used), list(v.agreeing), list(v.disagreeing), v.without_network, v.fix_known, v.symptom,
            v.root_cause, v.fix, v.verification, v.disagreement, v.astra_analyst, v.sade_method,
            v.model_dump_json(), v.text, elapsed_s, now])
        for c in v.claims:
            conn.execute(INSERT_CLAIM_SQL, [v.incident_id, c.seq, c.section, c.text, c.quote, c.citation.source,
                                            c.citation.ref, c.citation.device, c.citation.detail, c.status, run_id,
                                            now])
        first = v.rounds[0].labels if v.rounds else v.labels
        for seq, k in enumerate(v.checks, start=1):
            conn.execute(INSERT_CHECK_SQL, [v.incident_id, seq, k.label, k.source, k.asked_devices, k.checked_devices,
                                            k.outcome, k.reason, k.matched_devices, k.probes, k.probe_calls, first,
                                            run_id, now])
        mark_stale(conn, v.incident_id, "verdict")
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def load_verdict(conn: duckdb.DuckDBPyConnection, incident_id: str) -> Verdict | None:
    """The stored verdict of an incident, or None."""
    row = conn.execute(SELECT_SQL, [incident_id]).fetchone()
    return Verdict.model_validate(json.loads(row[0])) if row else None
