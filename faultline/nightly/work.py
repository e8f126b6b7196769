"""One unit of nightly work: analyse one incident with one method, store it, score it when the truth is known.

Plain functions over a DuckDB connection: a warehouse cursor when run by hand, and in the nightly run the
cursor of a unit's own space over a frozen copy of the warehouse (`faultline.nightly.workspace`), where
what they write stays until the flow persists it. `Night.run_unit` (`faultline.nightly.night`) runs one
there, and the Prefect tasks in `tasks/nightly.py` wrap that with names, retries and concurrency. A unit
either returns an `Outcome` or raises — once its retries are spent, `Night.record_failure` turns the
raise into a `run_failures` row and a ``failed`` ledger entry.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from pydantic import BaseModel, ConfigDict

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.nightly.backlog import BacklogItem, Method, NetworkBackend

if TYPE_CHECKING:
    from faultline.sade.backend import Backend


class Outcome(BaseModel):
    """What one unit produced, for the run summary (the full results are in the warehouse)."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    method: Method
    label: str | None = None  # the fault named (ASTRA: report label or category; SADE: v1 root cause)
    devices: list[str] = []
    scored: bool = False  # ground truth existed and evaluations were written
    accuracy: float | None = None  # when scored: ASTRA's and the verdict's rubric 0-5; SADE's RCA F1 (detection
    # for healthy truths)
    probe_calls: int | None = None
    llm_calls: int = 0
    seconds: float


def run_astra(settings: Settings, conn: duckdb.DuckDBPyConnection, item: BacklogItem, *,
              analyst: str = "deterministic", max_rounds: int = 5, run_id: str | None = None) -> Outcome:
    """ASTRA's report for one incident, stored per round, scored against its truth when there is one."""
    from faultline.astra.engine import analyse
    from faultline.astra.eval_store import save_scores
    from faultline.astra.evaluate import score_result
    from faultline.astra.incident import load_incident
    from faultline.astra.store import save_result
    from faultline.truth.store import load_truth

    started = time.perf_counter()
    incident = load_incident(conn, item.incident_id)
    result = analyse(incident, settings=settings, conn=conn, analyst=analyst, max_rounds=max_rounds, run_id=run_id)
    save_result(conn, result, run_id=run_id)
    final = result.rounds[-1].report
    accuracy = None
    truth = load_truth(conn, item.incident_id)
    if truth is not None:
        score = score_result(result, incident, truth)
        save_scores(conn, [score], {item.incident_id: truth}, run_id=run_id)
        accuracy = float(score.accuracy)
    calls = conn.execute("SELECT count(*) FROM llm_calls WHERE incident_id = ? AND run_id = ?",
                         [item.incident_id, run_id]).fetchall()[0][0] if run_id else 0
    return Outcome(incident_id=item.incident_id, method="astra", label=final.label or final.category,
                   devices=list(final.devices), scored=truth is not None, accuracy=accuracy, llm_calls=int(calls),
                   seconds=round(time.perf_counter() - started, 3))


def open_backend(settings: Settings, item: BacklogItem, network_backend: NetworkBackend) -> Backend:
    """The network an incident is probed on: its recorded snapshot, or the running lab."""
    from faultline.sade.backend import lab_backend, snapshot_backend

    if network_backend == "snapshot":
        if not item.snapshot_path:
            raise FaultlineError(f"{item.incident_id} has no recorded snapshot",
                                 fix="record one or use the lab backend")
        return snapshot_backend(Path(item.snapshot_path))
    if network_backend == "lab":
        return lab_backend(settings)
    if network_backend == "ssh":
        return _ssh_network(settings)
    raise FaultlineError(f"unknown network backend {network_backend!r}", fix="use snapshot, lab or ssh")


_SSH_RUNNERS: dict[str, object] = {}  # inventory folder -> SshRunner: one connection pool for the whole night
_SSH_LOCK = threading.Lock()


def _ssh_network(settings: Settings) -> Backend:
    from faultline.sade.backend import ssh_backend

    if settings.ssh_inventory is None:
        raise FaultlineError("the ssh network backend needs an inventory",
                             fix="pass --inventory DIR or set ssh_inventory (FAULTLINE_SSH_INVENTORY)")
    key = str(Path(settings.ssh_inventory).resolve())
    with _SSH_LOCK:
        backend = ssh_backend(settings, settings.ssh_inventory, runner=_SSH_RUNNERS.get(key))
        _SSH_RUNNERS.setdefault(key, backend.ctx.runner)
    return backend


def network_checker(settings: Settings, item: BacklogItem, network_backend: NetworkBackend):  # -> Checker | None
    """The verdict's way to ask the incident's network again (`faultline.verdict.refine`), or None when the
    incident has no network to ask (an imported ticket, no snapshot); opened on first use."""
    from faultline.sade.crosscheck import cross_check

    if network_backend == "snapshot" and not (item.snapshot_path and Path(item.snapshot_path).is_file()):
        return None
    opened: list[Backend] = []

    def check(label: str, devices: list[str]):
        if not opened:
            opened.append(open_backend(settings, item, network_backend))
        return cross_check(opened[0], label=label, devices=devices, why="the logs point here")

    return check


def run_sade(settings: Settings, conn: duckdb.DuckDBPyConnection, item: BacklogItem, *,
             network_backend: NetworkBackend = "snapshot", llm_model: str | None = None,
             run_id: str | None = None) -> Outcome:
    """SADE's diagnosis for one incident on its network backend, stored, scored when the truth is known."""
    from faultline.nika.labels import skill_of
    from faultline.sade.engine import diagnose
    from faultline.sade.scoring import score_incident
    from faultline.sade.store import save_diagnosis, save_scores
    from faultline.truth.store import load_truths

    started = time.perf_counter()
    backend = open_backend(settings, item, network_backend)
    run_policy, policy = None, "deterministic"
    if llm_model:
        from faultline.sade.llm_policy import llm_policy_runner

        run_policy, policy = llm_policy_runner(settings, model=llm_model, incident_id=item.incident_id)
    row = conn.execute("SELECT title, coalesce(description, '') FROM tickets WHERE ticket_id = ?",
                       [item.ticket_id]).fetchone()
    ticket = "\n".join(row).strip() if row else ""  # what the user reported: a lead when the network shows nothing
    diag = diagnose(backend, incident_id=item.incident_id, policy=policy, run_policy=run_policy, ticket=ticket)
    if diag.status == "error":  # the backend failed: a failure row, not an answer
        raise FaultlineError(f"SADE could not probe {item.incident_id}: {diag.error}",
                             fix="check the incident's snapshot file or the lab")
    save_diagnosis(conn, diag, run_id=run_id)
    sub = diag.submission
    truth = load_truths(conn).get(item.incident_id)
    accuracy = None
    if truth is not None:
        family = skill_of(truth.labels[0]) if truth.labels else "healthy"
        score = score_incident(truth, sub.v1 if sub else None, sub.v2 if sub else None, method="sade", family=family)
        save_scores(conn, [score], run_id=run_id)
        metrics = score.metrics()
        accuracy = metrics.get("rca_f1", metrics["detection"])  # healthy truths have detection only
    return Outcome(incident_id=item.incident_id, method="sade",
                   label=(", ".join(sub.v1.root_cause_name) if sub.v1.is_anomaly else "healthy") if sub else None,
                   devices=list(sub.v1.faulty_devices) if sub else [], scored=truth is not None,
                   accuracy=None if accuracy is None else float(accuracy), probe_calls=diag.probe_calls,
                   seconds=round(time.perf_counter() - started, 3))


def run_verdict(settings: Settings, conn: duckdb.DuckDBPyConnection, item: BacklogItem, *,
                analyst: str = "deterministic", network_backend: NetworkBackend | None = "snapshot",
                run_id: str | None = None) -> Outcome:
    """The verdict of one incident from what ASTRA and SADE stored, refined by asking the network about what the
    logs point at (`network_backend` None: never ask), stored, scored when the truth is known."""
    from faultline.truth.store import load_truth
    from faultline.verdict.evaluate import save_scores, score_verdict
    from faultline.verdict.refine import refine
    from faultline.verdict.sources import load_inputs
    from faultline.verdict.store import save_verdict

    started = time.perf_counter()
    inputs = load_inputs(conn, item.incident_id, analyst=analyst)
    checker = network_checker(settings, item, network_backend) if network_backend else None
    verdict, _first = refine(conn, settings, inputs, checker)
    save_verdict(conn, verdict, run_id=run_id, elapsed_s=round(time.perf_counter() - started, 3))
    truth = load_truth(conn, item.incident_id)
    accuracy = None
    if truth is not None:
        score = score_verdict(conn, verdict, inputs, truth)
        save_scores(conn, [score], run_id=run_id)
        accuracy = float(score.accuracy)
    label = ", ".join(verdict.labels) if verdict.labels else verdict.status
    return Outcome(incident_id=item.incident_id, method="verdict", label=label, devices=list(verdict.devices),
                   scored=truth is not None, accuracy=accuracy, seconds=round(time.perf_counter() - started, 3))
