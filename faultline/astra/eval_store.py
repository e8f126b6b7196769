"""ASTRA's scores as `evaluations` rows: method ``astra`` for the deterministic analyst, ``astra:<analyst>`` for
any other (``astra:llm:gpt-4o-mini``), so the two compare side by side. Re-scoring an incident replaces its rows
for that method, in one transaction."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from faultline.astra.evaluate import AstraScore
from faultline.truth.records import Truth

if TYPE_CHECKING:
    import duckdb

INCIDENT_KEYS_SQL = "SELECT scenario, size FROM incidents WHERE incident_id = ?"
DELETE_ASTRA_EVALUATIONS_SQL = "DELETE FROM evaluations WHERE incident_id = ? AND method = ?"
INSERT_ASTRA_EVALUATION_SQL = """
INSERT INTO evaluations (incident_id, method, metric, value, run_id, attributes, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""


def method_name(analyst: str) -> str:
    """The `evaluations.method` of an ASTRA analyst."""
    return "astra" if analyst == "deterministic" else f"astra:{analyst}"


def score_metrics(score: AstraScore) -> dict[str, float]:
    """Metric name -> value: the rows one scored incident writes."""
    metrics: dict[str, float] = {
        "accuracy": float(score.accuracy),
        "accuracy_ge3": 1.0 if score.accuracy >= 3 else 0.0,
        "accuracy_ge4": 1.0 if score.accuracy >= 4 else 0.0,
        "completeness": score.completeness,
        "identifiers": float(score.identifiers),
        "fabricated_identifiers": float(len(score.fabricated)),
        "fabricated_rate": score.fabricated_rate,
        "claims": float(score.claims),
        "verified_claims": float(score.verified_claims),
        "rounds": float(len(score.rounds)),
        "accuracy_delta": float(score.accuracy_delta),
        "elapsed_s": score.elapsed_s,
    }
    metrics["reference_claims"] = float(score.reference_claims)
    metrics["incident_claims"] = float(score.incident_claims)
    if score.verified_share is not None:
        metrics["verified_share"] = score.verified_share  # over incident claims (REFERENCE ones left out)
    if score.reference_share is not None:
        metrics["reference_share"] = score.reference_share
    if score.judge_delta is not None:
        metrics["judge_delta"] = score.judge_delta
    if score.rounds and score.rounds[-1].judge_mean is not None:
        metrics["judge_mean"] = score.rounds[-1].judge_mean
    return metrics


def save_scores(conn: duckdb.DuckDBPyConnection, scores: list[AstraScore], truths: dict[str, Truth], *,
                run_id: str | None = None) -> int:
    """Replace the `evaluations` rows of each scored incident for its analyst's method; returns rows written."""
    now = datetime.now(timezone.utc)
    written = 0
    conn.execute("BEGIN TRANSACTION")
    try:
        for score in scores:
            method = method_name(score.analyst)
            keys = conn.execute(INCIDENT_KEYS_SQL, [score.incident_id]).fetchone() or (None, None)
            truth = truths.get(score.incident_id)
            attributes: dict[str, Any] = {
                "labels": truth.labels if truth else [], "scenario": keys[0], "size": keys[1],
                "analyst": score.analyst, "accuracy_rule": score.accuracy_rule, "label": score.label,
                "fabricated": score.fabricated, "missing_dimensions": score.missing_dimensions}
            conn.execute(DELETE_ASTRA_EVALUATIONS_SQL, [score.incident_id, method])
            for metric, value in score_metrics(score).items():
                conn.execute(INSERT_ASTRA_EVALUATION_SQL, [score.incident_id, method, metric, float(value), run_id,
                                                           json.dumps(attributes, sort_keys=True), now])
                written += 1
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    return written
