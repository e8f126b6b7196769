"""The verdict of one incident: the unit every entry point runs (the nightly, `eval verdict`, `verdict`, the benches).

It fuses what ASTRA and SADE stored, asks the incident's network about what the logs point at (the network it is
lent, or one it opens from the backend registry on first question and closes when it ends), stores the verdict
and, when the incident has a ground truth, its scores — round 1's too when the follow-ups changed anything.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from faultline.outcome import IncidentRef, Outcome
from faultline.truth.records import Truth
from faultline.verdict.evaluate import VerdictScore
from faultline.verdict.records import Verdict
from faultline.verdict.sources import Inputs

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings
    from faultline.network.backend import Backend
    from faultline.verdict.refine import Checker


@dataclass
class VerdictRun:
    """One unit's results: its outcome, the verdict and round 1's, and the score when the truth is known."""

    outcome: Outcome
    verdict: Verdict
    first: Verdict
    inputs: Inputs
    truth: Truth | None = None
    score: VerdictScore | None = None  # with round 1's accuracy, RCA F1 and labels when there were follow-ups
    first_score: VerdictScore | None = None  # round 1's own score (the same verdict when nothing was asked)


def run_verdict(settings: Settings, conn: duckdb.DuckDBPyConnection, incident: IncidentRef, *,
                analyst: str = "deterministic", network_backend: str | None = "snapshot",
                network: Backend | None = None, run_id: str | None = None) -> VerdictRun:
    """Fuse, refine on the network, store and score the verdict of one incident.

    `network`: a backend to ask (the caller closes it); else the `network_backend` of the registry, opened on the
    incident's snapshot at the first question (None: never ask; an incident without a recorded snapshot on the
    snapshot backend has no network to ask).
    """
    from faultline.truth.store import load_truth
    from faultline.verdict.evaluate import save_scores, score_verdict
    from faultline.verdict.refine import refine
    from faultline.verdict.sources import load_inputs
    from faultline.verdict.store import save_verdict

    started = time.perf_counter()
    inputs = load_inputs(conn, incident.incident_id, analyst=analyst)
    with _follow_ups(settings, incident, network, network_backend) as checker:
        verdict, first = refine(conn, settings, inputs, checker)
    save_verdict(conn, verdict, run_id=run_id, elapsed_s=round(time.perf_counter() - started, 3))
    truth = load_truth(conn, incident.incident_id)
    score = was = None
    if truth is not None:
        score = was = score_verdict(verdict, inputs, truth)
        if verdict.checks:  # round 1 scored too: the paired per-round delta of the network follow-ups
            was = score_verdict(first, inputs, truth)
            score = score.model_copy(update={"first_accuracy": was.accuracy, "first_rca_f1": was.nika.get("rca_f1"),
                                             "first_labels": was.labels})
        save_scores(conn, [score], run_id=run_id)
    outcome = Outcome(incident_id=incident.incident_id, method="verdict",
                      label=", ".join(verdict.labels) if verdict.labels else verdict.status,
                      devices=list(verdict.devices), scored=score is not None,
                      rubric_accuracy=float(score.accuracy) if score else None,
                      rca_f1=score.nika.get("rca_f1") if score else None,
                      detection=score.nika.get("detection") if score else None,
                      seconds=round(time.perf_counter() - started, 3))
    return VerdictRun(outcome=outcome, verdict=verdict, first=first, inputs=inputs, truth=truth, score=score,
                      first_score=was)


@contextmanager
def _follow_ups(settings: Settings, incident: IncidentRef, lent: Backend | None,
                kind: str | None) -> Iterator[Checker | None]:
    """How the verdict asks the network again (`faultline.verdict.refine`): through the lent backend, or one opened
    on first use and closed when the block ends; None when there is no network to ask."""
    from faultline.sade.crosscheck import cross_check

    snapshot = Path(incident.snapshot_path) if incident.snapshot_path else None
    if lent is None and (kind is None or (kind == "snapshot" and not (snapshot and snapshot.is_file()))):
        yield None
        return
    opened: list[Backend] = []

    def check(label: str, devices: list[str]):
        if lent is None and not opened:
            from faultline.network.backends import NetworkTarget, open_backend

            opened.append(open_backend(kind, settings, NetworkTarget(incident_id=incident.incident_id,
                                                                     snapshot=snapshot)))
        return cross_check(lent or opened[0], label=label, devices=devices, why="the logs point here")

    try:
        yield check
    finally:
        for backend in opened:
            backend.close()
