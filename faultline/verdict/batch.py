"""`faultline eval verdict`: analyse a corpus both ways, fuse each incident's verdict, score all three.

Per open incident with ground truth: ASTRA (`faultline.astra.batch.evaluate_incidents`), the network diagnosis on
the incident's recorded snapshot (`faultline.nightly.work.run_sade`; an incident without one gets a verdict
without network evidence), then the verdict, stored and scored (`evaluations`, method ``verdict``). One incident
that fails is a `run_failures` row; the batch goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from faultline.config import Settings
from faultline.verdict.evaluate import (
    Summary,
    VerdictScore,
    save_scores,
    score_verdict,
    summarise,
)


@dataclass
class VerdictBatch:
    """What one verdict evaluation produced."""

    run_id: str
    scores: list[VerdictScore] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    without_network: dict[str, str] = field(default_factory=dict)
    summary: Summary | None = None

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "summary": self.summary.model_dump(mode="json") if self.summary else None,
                "failures": self.failures, "without_network": self.without_network,
                "incidents": [s.model_dump(mode="json") for s in self.scores]}


def snapshot_item(conn: duckdb.DuckDBPyConnection, incident_id: str):  # -> BacklogItem | None
    """The incident as a unit of work on its recorded snapshot, or None when it has none."""
    from faultline.nightly.backlog import BacklogItem

    row = conn.execute("SELECT ticket_id, title, snapshot_path FROM incidents WHERE incident_id = ?",
                       [incident_id]).fetchone()
    if row is None or not row[2] or not Path(row[2]).is_file():
        return None
    return BacklogItem(incident_id=incident_id, ticket_id=row[0] or incident_id, title=row[1] or "",
                       snapshot_path=row[2], digests={})


def _diagnose(conn: duckdb.DuckDBPyConnection, settings: Settings, incident_id: str, run_id: str):
    """Run the network diagnosis on the incident's snapshot: (why it could not or None, the verdict's checker)."""
    from faultline.nightly.work import network_checker, run_sade

    item = snapshot_item(conn, incident_id)
    if item is None:
        return "no recorded network snapshot", None
    run_sade(settings, conn, item, network_backend="snapshot", run_id=run_id)
    return None, network_checker(settings, item, "snapshot")


def evaluate_corpus(conn: duckdb.DuckDBPyConnection, settings: Settings, corpus: Path, *,
                    extra: list[Path] | None = None, analyst: str = "deterministic", max_rounds: int = 5,
                    limit: int | None = None, progress: bool = False) -> VerdictBatch:
    """Load the corpus, run ASTRA and SADE, fuse and score a verdict for every incident with ground truth."""
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.errors import FaultlineError
    from faultline.progress import track
    from faultline.runs import finish_run, record_failure, start_run
    from faultline.truth.store import load_truth
    from faultline.verdict.refine import refine
    from faultline.verdict.sources import load_inputs
    from faultline.verdict.store import save_verdict

    ids = load_corpus(conn, settings, corpus, extra=extra)[:limit]
    astra = evaluate_incidents(conn, settings, ids, analyst=analyst, max_rounds=max_rounds, progress=progress)
    batch = VerdictBatch(run_id=start_run(conn, "eval_verdict", settings=settings))
    for incident_id in track(ids, description="network diagnosis and verdict", enabled=progress):
        truth = load_truth(conn, incident_id)
        if truth is None:
            continue
        try:
            why, checker = _diagnose(conn, settings, incident_id, batch.run_id)
            if why:
                batch.without_network[incident_id] = why
            inputs = load_inputs(conn, incident_id, analyst=analyst)
            verdict, first = refine(conn, settings, inputs, checker)
            save_verdict(conn, verdict, run_id=batch.run_id)
            score = score_verdict(conn, verdict, inputs, truth)
            if verdict.checks:  # round 1 scored too: the paired per-round delta of the network follow-ups
                was = score_verdict(conn, first, inputs, truth)
                score = score.model_copy(update={"first_accuracy": was.accuracy,
                                                 "first_rca_f1": was.nika.get("rca_f1"),
                                                 "first_labels": was.labels})
            batch.scores.append(score)
        except Exception as exc:  # noqa: BLE001 - one failed incident is a row, the batch goes on
            record_failure(conn, run_id=batch.run_id, stage="verdict_eval", subject=incident_id, exc=exc)
            why = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
            batch.failures[incident_id] = why
    batch.failures.update({k: f"ASTRA: {v}" for k, v in astra.failures.items() if k not in batch.failures})
    save_scores(conn, batch.scores, run_id=batch.run_id)
    batch.summary = summarise(conn, batch.scores)
    finish_run(conn, batch.run_id, status="completed" if not batch.failures else "completed_with_failures",
               stats={"scored": len(batch.scores), "failed": len(batch.failures),
                      "share_accuracy_ge3": batch.summary.verdict.get("share_accuracy_ge3")})
    return batch
