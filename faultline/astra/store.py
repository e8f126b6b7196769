"""Saving and loading ASTRA analyses: `astra_rounds`, `claims`, `evidence`, `judge_scores`, `followup_queries`.

An analysis is identified by (incident_id, analyst). Saving it again replaces every row the same
analyst wrote for the same incident, in one transaction, so a re-run never leaves a mix of old and new rounds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from faultline.astra.orchestrator import query_key
from faultline.astra.records import (
    AgentOutput,
    AstraResult,
    AstraRound,
    Claim,
    Evidence,
    FollowupQuery,
    JudgeScore,
    Report,
)
from faultline.stale import mark_stale

if TYPE_CHECKING:
    import duckdb

ASTRA_TABLES = ("astra_rounds", "claims", "evidence", "judge_scores", "followup_queries")
DELETE_SQL = {table: f"DELETE FROM {table} WHERE incident_id = ? AND analyst = ?" for table in ASTRA_TABLES}
INSERT_ROUND_SQL = """
INSERT INTO astra_rounds (incident_id, analyst, round, run_id, label, category, devices, components, symptom,
    root_cause, fix, verification, report, report_text, min_score, mean_score, revise, is_final, outputs,
    elapsed_s, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_CLAIM_SQL = """
INSERT INTO claims (incident_id, analyst, claim_id, seq, round, agent, text, tag, run_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_EVIDENCE_SQL = """
INSERT INTO evidence (incident_id, analyst, claim_id, source, quote, method, overlap, confidence, status, run_id,
    created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_SCORE_SQL = """
INSERT INTO judge_scores (incident_id, analyst, round, criterion, score, reason, judge, version, run_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_FOLLOWUP_SQL = """
INSERT INTO followup_queries (incident_id, analyst, round, seq, agent, query, query_key, criterion, run_id, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
SELECT_ROUNDS_SQL = """
SELECT round, report, outputs, revise, elapsed_s, run_id FROM astra_rounds
WHERE incident_id = ? AND analyst = ? ORDER BY round
"""
SELECT_CLAIMS_SQL = """
SELECT claim_id, round, agent, text, tag FROM claims WHERE incident_id = ? AND analyst = ? ORDER BY seq
"""
SELECT_EVIDENCE_SQL = """
SELECT e.claim_id, e.source, e.quote, e.method, e.overlap, e.confidence, e.status
FROM evidence e LEFT JOIN claims c USING (incident_id, analyst, claim_id)
WHERE e.incident_id = ? AND e.analyst = ? ORDER BY c.seq NULLS LAST, e.claim_id
"""
SELECT_SCORES_SQL = """
SELECT round, criterion, score, reason, judge, version FROM judge_scores WHERE incident_id = ? AND analyst = ?
"""
SELECT_FOLLOWUPS_SQL = """
SELECT round, agent, query, criterion FROM followup_queries WHERE incident_id = ? AND analyst = ? ORDER BY round, seq
"""


def save_result(conn: duckdb.DuckDBPyConnection, result: AstraResult, *, run_id: str | None = None) -> None:
    """Write an analysis, replacing the rows of any earlier one by the same analyst for the same incident."""
    key = [result.incident_id, result.analyst]
    now = datetime.now(UTC)
    outputs_json = json.dumps([o.model_dump(mode="json") for o in result.outputs])
    conn.execute("BEGIN TRANSACTION")
    try:
        for table in ASTRA_TABLES:
            conn.execute(DELETE_SQL[table], key)
        last = result.rounds[-1].round if result.rounds else None
        for rnd in result.rounds:
            scores = [s.score for s in rnd.scores] or [0]
            r = rnd.report
            conn.execute(INSERT_ROUND_SQL, [*key, rnd.round, run_id, r.label, r.category, r.devices, r.components,
                                            r.symptom, r.root_cause, r.fix, r.verification, r.model_dump_json(),
                                            r.text, min(scores), sum(scores) / len(scores), rnd.revise,
                                            rnd.round == last, outputs_json if rnd.round == last else None,
                                            rnd.elapsed_s, now])
            for s in rnd.scores:
                conn.execute(INSERT_SCORE_SQL, [*key, s.round, s.criterion, s.score, s.reason, s.judge, s.version,
                                                run_id, now])
            for seq, q in enumerate(rnd.followups, start=1):
                conn.execute(INSERT_FOLLOWUP_SQL, [*key, q.round, seq, q.agent, q.query, query_key(q.agent, q.query),
                                                   q.criterion, run_id, now])
        for seq, c in enumerate(result.claims, start=1):
            conn.execute(INSERT_CLAIM_SQL, [*key, c.claim_id, seq, c.round, c.agent, c.text, c.tag, run_id, now])
        for e in result.evidence:
            conn.execute(INSERT_EVIDENCE_SQL, [*key, e.claim_id, e.source, e.quote, e.method, e.overlap,
                                               e.confidence, e.status, run_id, now])
        mark_stale(conn, result.incident_id, "astra")
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def load_result(conn: duckdb.DuckDBPyConnection, incident_id: str,
                analyst: str = "deterministic") -> AstraResult | None:
    """The stored analysis of `incident_id` by `analyst`, or None when there is none."""
    key = [incident_id, analyst]
    rows = conn.execute(SELECT_ROUNDS_SQL, key).fetchall()
    if not rows:
        return None
    scores: dict[int, list[JudgeScore]] = {}
    for rnd, criterion, score, reason, judge, version in conn.execute(SELECT_SCORES_SQL, key).fetchall():
        scores.setdefault(rnd, []).append(JudgeScore(incident_id=incident_id, round=rnd, criterion=criterion,
                                                     score=score, reason=reason, judge=judge, version=version))
    followups: dict[int, list[FollowupQuery]] = {}
    for rnd, agent, query, criterion in conn.execute(SELECT_FOLLOWUPS_SQL, key).fetchall():
        followups.setdefault(rnd, []).append(FollowupQuery(incident_id=incident_id, round=rnd, agent=agent,
                                                           query=query, criterion=criterion))
    rounds, outputs, total = [], [], 0.0
    for rnd, report, outputs_json, revise, elapsed, _ in rows:
        rounds.append(AstraRound(incident_id=incident_id, round=rnd, report=Report.model_validate_json(report),
                                 scores=scores.get(rnd, []), followups=followups.get(rnd, []), revise=revise,
                                 elapsed_s=elapsed))
        total += elapsed
        if outputs_json:
            outputs = [AgentOutput.model_validate(o) for o in json.loads(outputs_json)]
    claims = [Claim(claim_id=cid, incident_id=incident_id, round=rnd, agent=agent, text=text, tag=tag)
              for cid, rnd, agent, text, tag in conn.execute(SELECT_CLAIMS_SQL, key).fetchall()]
    evidence = [Evidence(claim_id=cid, source=src, quote=quote, method=method, overlap=overlap,
                         confidence=conf, status=status)
                for cid, src, quote, method, overlap, conf, status in conn.execute(SELECT_EVIDENCE_SQL, key).fetchall()]
    return AstraResult(incident_id=incident_id, analyst=analyst, outputs=outputs, claims=claims, evidence=evidence,
                       rounds=rounds, elapsed_s=total)
