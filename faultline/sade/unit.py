"""SADE on one incident: the unit every entry point runs (the nightly, `eval sade|verdict`, `diagnose`, the benches).

It diagnoses the network it is lent, or opens the incident's network from the backend registry and closes it when
it ends, however it ends; with a warehouse it reads the ticket and the truth there and stores the diagnosis and
its scores, without one it is given them (a corpus folder's) and stores nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from faultline.errors import FaultlineError
from faultline.outcome import IncidentRef, Outcome
from faultline.sade.records import Diagnosis
from faultline.sade.scoring import IncidentScore
from faultline.truth.records import Truth

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings
    from faultline.network.backend import Backend

TICKET_SQL = "SELECT title, coalesce(description, '') FROM tickets WHERE ticket_id = ?"


@dataclass
class SadeRun:
    """One unit's results: its outcome, the diagnosis, and its NIKA score when the truth is known."""

    outcome: Outcome
    diagnosis: Diagnosis
    truth: Truth | None = None
    score: IncidentScore | None = None


def run_sade(settings: Settings, incident: IncidentRef, *, conn: duckdb.DuckDBPyConnection | None = None,
             network: Backend | None = None, network_backend: str = "snapshot", use_baseline: bool = True,
             ticket: str | None = None, truth: Truth | None = None, method: Literal["sade", "flat"] = "sade",
             policy: Literal["deterministic", "llm"] = "deterministic", llm_model: str | None = None,
             run_id: str | None = None,
             on_error: Literal["fail", "score"] = "fail") -> SadeRun:
    """Diagnose one incident, store the diagnosis and its scores (with `conn`), score it when the truth is known.

    `network`: a backend to probe (the caller closes it), else the `network_backend` of the registry opened on the
    incident's snapshot. `ticket`, `truth`: what the user reported and what happened, read from `conn` when not
    given. `policy` "llm" (or an `llm_model`) lets a model choose the probes (`sade_llm_model` by default).
    A diagnosis the backend broke (status error) raises when `on_error` is "fail" (a failure row, retried)
    and is scored as NIKA's missing submission when it is "score".
    """
    from faultline.nika.labels import skill_of
    from faultline.sade.engine import diagnose
    from faultline.sade.scoring import score_incident
    from faultline.sade.session import Breadth
    from faultline.sade.store import save_diagnosis, save_scores
    from faultline.truth.store import load_truth

    started = time.perf_counter()
    run_policy, policy_name = None, "deterministic"
    if policy == "llm" or llm_model:
        from faultline.sade.llm_policy import llm_policy_runner

        run_policy, policy_name = llm_policy_runner(settings, model=llm_model, incident_id=incident.incident_id,
                                                    run_id=run_id, conn=conn)
    if ticket is None:
        ticket = _reported(conn, incident.ticket_id) if conn is not None else ""
    with _network(settings, incident, network, network_backend, use_baseline) as backend:
        diag = diagnose(backend, incident_id=incident.incident_id, method=method, policy=policy_name,
                        run_policy=run_policy, ticket=ticket,
                        breadth=Breadth(settings.sade_second_look_users, settings.sade_second_look_pages,
                                        settings.sade_second_look_own_device, settings.sade_second_look_sweep,
                                        settings.sade_second_look_routes))
    if diag.status == "error" and on_error == "fail":  # the backend failed: a failure row, not an answer
        raise FaultlineError(f"SADE could not probe {incident.incident_id}: {diag.error}",
                             fix="check the incident's snapshot file or the lab")
    if conn is not None:
        save_diagnosis(conn, diag, run_id=run_id)
    if truth is None and conn is not None:
        truth = load_truth(conn, incident.incident_id)
    sub, score = diag.submission, None
    if truth is not None:
        family = skill_of(truth.labels[0]) if truth.labels else "healthy"
        score = score_incident(truth, sub.v1 if sub else None, sub.v2 if sub else None, method=method, family=family)
        if conn is not None:
            save_scores(conn, [score], run_id=run_id)
    metrics = score.metrics() if score else {}
    outcome = Outcome(incident_id=incident.incident_id, method="sade",
                      label=(", ".join(sub.v1.root_cause_name) if sub.v1.is_anomaly else "healthy") if sub else None,
                      devices=list(sub.v1.faulty_devices) if sub else [], scored=score is not None,
                      rca_f1=metrics.get("rca_f1"), detection=metrics.get("detection"),
                      probe_calls=diag.probe_calls, seconds=round(time.perf_counter() - started, 3))
    return SadeRun(outcome=outcome, diagnosis=diag, truth=truth, score=score)


def _reported(conn: duckdb.DuckDBPyConnection, ticket_id: str) -> str:
    """What the user reported (title and description; never the resolution), "" without a ticket: a lead when the
    network itself shows nothing."""
    row = conn.execute(TICKET_SQL, [ticket_id]).fetchone()
    return "\n".join(row).strip() if row else ""


@contextmanager
def _network(settings: Settings, incident: IncidentRef, lent: Backend | None, kind: str,
             use_baseline: bool) -> Iterator[Backend]:
    if lent is not None:
        yield lent
        return
    from faultline.network.backends import NetworkTarget, open_backend

    target = NetworkTarget(incident_id=incident.incident_id, use_baseline=use_baseline,
                           snapshot=Path(incident.snapshot_path) if incident.snapshot_path else None)
    with open_backend(kind, settings, target) as backend:
        yield backend
