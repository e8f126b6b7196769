"""`eval astra` over a corpus: load it (`load_corpus`), then ASTRA's unit on every open incident with ground truth.

One incident whose analysis fails is a `run_failures` row and the batch goes on; a source an analysis had to do
without (no docs index, no ticket history, no log lines) is listed by its report and kept in `degraded`.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultline.astra.evaluate import AstraScore, summarise
from faultline.astra.records import AstraResult
from faultline.errors import FaultlineError
from faultline.truth.records import Truth

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings


@dataclass
class EvalBatch:
    """What one evaluation run produced."""

    run_id: str
    scores: list[AstraScore] = field(default_factory=list)
    truths: dict[str, Truth] = field(default_factory=dict)
    results: dict[str, AstraResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # no ground truth
    degraded: dict[str, list[str]] = field(default_factory=dict)  # incident -> sources its analysis did without

    def missing_sources(self) -> dict[str, tuple[int, str]]:
        """Per missing source ("documentation", "ticket history", "device logs"): how many incidents went
        without it, and the first reason given."""
        found: dict[str, tuple[int, str]] = {}
        for incident_id in sorted(self.degraded):
            for line in self.degraded[incident_id]:
                source, _, why = line.partition(": ")
                count, first = found.get(source, (0, why))
                found[source] = (count + 1, first)
        return found

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "summary": summarise(self.scores).model_dump(mode="json"),
                "failures": self.failures, "skipped": self.skipped, "degraded": self.degraded,
                "incidents": [s.model_dump(mode="json") for s in self.scores]}


def load_corpus(conn: duckdb.DuckDBPyConnection, settings: Settings, corpus: Path, *,
                extra: list[Path] | None = None) -> list[str]:
    """Ingest the corpus (and `extra` incident or doc folders), sync both indexes; return the ids to evaluate.

    A corpus root laid out like `data/sample/` (``history/``, ``backlog/``, optionally ``docs/``) gives its open
    backlog incidents; a folder of incidents without that layout gives every incident in it. Unchanged files are
    skipped, so an already loaded corpus only re-syncs the indexes."""
    from faultline.ingest.api import ingest_paths
    from faultline.ingest.incidents import incident_folders, ingest_incidents
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    if not corpus.is_dir():
        raise FaultlineError(f"{corpus} is not a folder", fix="give a corpus folder such as data/sample")
    layout = (corpus / "backlog").is_dir()
    incident_paths = [p for p in (corpus / "history", corpus / "backlog") if p.is_dir()] if layout else [corpus]
    docs = [p for p in [corpus / "docs", *(extra or [])] if p.is_dir() and not any(p.rglob("incident.json"))]
    incident_paths += [p for p in (extra or []) if p.is_dir() and any(p.rglob("incident.json"))]
    report = ingest_incidents(conn, settings, incident_paths)
    if docs:
        ingest_paths(conn, settings, "docs", docs)
    embedder = Embedder(settings)
    for kind in ("tickets", "docs"):
        sync_index(conn, settings, kind, embedder)  # type: ignore[arg-type]
    evaluated = []
    for folder in incident_folders([corpus / "backlog"] if layout else [corpus]):
        meta = json.loads((folder / "incident.json").read_text())
        incident_id = meta.get("incident_id") or folder.name
        if incident_id in report.loaded and not (layout and meta.get("historical")):
            evaluated.append(incident_id)
    return evaluated


def evaluate_incidents(conn: duckdb.DuckDBPyConnection, settings: Settings, incident_ids: list[str], *,
                       analyst: str = "deterministic", max_rounds: int = 5, progress: bool = False,
                       agents: Any = None) -> EvalBatch:
    """Run ASTRA's unit on each incident with ground truth, one docs session for the batch; rows in the ASTRA tables
    and `evaluations`. `agents` (an `engine.Agents`) replaces the project's agents, as in `analyse`."""
    from faultline.astra.unit import docs_session, run_astra
    from faultline.progress import track
    from faultline.runs import finish_run, record_failure, start_run
    from faultline.truth.store import load_truth

    batch = EvalBatch(run_id=start_run(conn, "eval_astra", settings=settings))
    with docs_session(settings) if agents is None else nullcontext() as docs:
        for incident_id in track(incident_ids, description="ASTRA evaluation", enabled=progress):
            if load_truth(conn, incident_id) is None:
                batch.skipped.append(incident_id)
                continue
            try:
                done = run_astra(settings, conn, incident_id, analyst=analyst, max_rounds=max_rounds,
                                 run_id=batch.run_id, docs=docs, agents=agents)
            except Exception as exc:  # noqa: BLE001 - one failed incident is a row, the batch goes on
                record_failure(conn, run_id=batch.run_id, stage="astra_eval", subject=incident_id, exc=exc)
                batch.failures[incident_id] = exc.message if isinstance(exc, FaultlineError) \
                    else f"{type(exc).__name__}: {exc}"
                continue
            batch.scores.append(done.score)
            batch.truths[incident_id] = done.truth
            batch.results[incident_id] = done.result
            if done.result.rounds[-1].report.missing:
                batch.degraded[incident_id] = list(done.result.rounds[-1].report.missing)
    summary = summarise(batch.scores)
    status = "completed" if not batch.failures else "completed_with_failures" if batch.scores else "failed"
    finish_run(conn, batch.run_id, status=status,
               stats={"scored": len(batch.scores), "failed": len(batch.failures), "skipped": len(batch.skipped),
                      "degraded": len(batch.degraded), "share_accuracy_ge3": summary.share_accuracy_ge3})
    return batch
