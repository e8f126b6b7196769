"""`eval verdict` over a corpus: ASTRA's unit on every open incident with ground truth (`astra.batch`), then per
incident SADE's unit on its recorded snapshot (none: a verdict without network evidence) and the verdict's unit.
One incident that fails is a `run_failures` row; the batch goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from faultline.config import Settings
from faultline.verdict.evaluate import Summary, VerdictScore, summarise


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


def evaluate_corpus(conn: duckdb.DuckDBPyConnection, settings: Settings, corpus: Path, *,
                    extra: list[Path] | None = None, analyst: str = "deterministic", max_rounds: int = 5,
                    limit: int | None = None, progress: bool = False) -> VerdictBatch:
    """Load the corpus, run ASTRA and SADE, fuse and score a verdict for every incident with ground truth."""
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.errors import FaultlineError
    from faultline.outcome import incident_ref
    from faultline.progress import track
    from faultline.runs import finish_run, record_failure, start_run
    from faultline.sade.unit import run_sade
    from faultline.truth.store import load_truth
    from faultline.verdict.unit import run_verdict

    ids = load_corpus(conn, settings, corpus, extra=extra)[:limit]
    astra = evaluate_incidents(conn, settings, ids, analyst=analyst, max_rounds=max_rounds, progress=progress)
    batch = VerdictBatch(run_id=start_run(conn, "eval_verdict", settings=settings))
    for incident_id in track(ids, description="network diagnosis and verdict", enabled=progress):
        if load_truth(conn, incident_id) is None:
            continue
        try:
            ref = incident_ref(conn, incident_id)
            if ref.snapshot_path:
                run_sade(settings, ref, conn=conn, network_backend="snapshot", run_id=batch.run_id)
            else:
                batch.without_network[incident_id] = "no recorded network snapshot"
            done = run_verdict(settings, conn, ref, analyst=analyst, network_backend="snapshot", run_id=batch.run_id)
            batch.scores.append(done.score)
        except Exception as exc:  # noqa: BLE001 - one failed incident is a row, the batch goes on
            record_failure(conn, run_id=batch.run_id, stage="verdict_eval", subject=incident_id, exc=exc)
            why = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
            batch.failures[incident_id] = why
    batch.failures.update({k: f"ASTRA: {v}" for k, v in astra.failures.items() if k not in batch.failures})
    batch.summary = summarise(conn, batch.scores)
    finish_run(conn, batch.run_id, status="completed" if not batch.failures else "completed_with_failures",
               stats={"scored": len(batch.scores), "failed": len(batch.failures),
                      "share_accuracy_ge3": batch.summary.verdict.get("share_accuracy_ge3")})
    return batch
