"""Run SADE over a corpus folder of recorded incidents and score it the way NIKA does.

Reads incident folders (`snapshot.json.gz`, `baseline.json.gz`, `ground_truth.json`,
`incident.json`) directly — no warehouse needed — so a corpus can be evaluated anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.nika.labels import skill_of
from faultline.sade.backend import snapshot_backend
from faultline.sade.engine import diagnose
from faultline.sade.records import Diagnosis
from faultline.sade.scoring import IncidentScore, score_incident
from faultline.truth.store import truth_from_json


@dataclass
class Evaluated:
    """One incident's diagnosis and score."""

    diagnosis: Diagnosis
    score: IncidentScore


def incident_dirs(corpus: Path) -> list[Path]:
    """Valid recorded incidents under `corpus` (folders holding incident.json with status valid + a snapshot)."""
    if not corpus.exists():
        raise FaultlineError(f"{corpus}: no such corpus folder", fix="point at a folder written by "
                             "`faultline corpus generate` (e.g. data/sample/backlog)")
    out = []
    for meta in sorted(corpus.rglob("incident.json")):
        folder = meta.parent
        info = json.loads(meta.read_text())
        if info.get("status") == "valid" and (folder / "snapshot.json.gz").is_file():
            out.append(folder)
    return out


def ticket_text(folder: Path) -> str:
    """What the user reported in a corpus incident's ticket.json (title and description; never the
    resolution), "" without one."""
    path = folder / "ticket.json"
    if not path.is_file():
        return ""
    data = json.loads(path.read_text())
    return "\n".join(str(data.get(key) or "") for key in ("title", "description")).strip()


def evaluate_folder(folder: Path, *, method: str = "sade", baseline: bool = True, ticket: bool = True) -> Evaluated:
    """Diagnose one recorded incident from its snapshot (and baseline, and ticket) and score it against its
    truth."""
    info = json.loads((folder / "incident.json").read_text())
    truth = truth_from_json(info["incident_id"], json.loads((folder / "ground_truth.json").read_text()),
                            scenario=info.get("scenario"), size=info.get("size"))
    backend = snapshot_backend(folder / "snapshot.json.gz", use_baseline=baseline)
    diag = diagnose(backend, incident_id=info["incident_id"], method=method,
                    ticket=ticket_text(folder) if ticket else "")
    sub = diag.submission
    family = skill_of(truth.labels[0]) if truth.labels else "healthy"
    score = score_incident(truth, sub.v1 if sub else None, sub.v2 if sub else None, method=method, family=family)
    return Evaluated(diagnosis=diag, score=score)


def evaluate_corpus(corpus: Path, *, method: str = "sade", limit: int | None = None,
                    baseline: bool = True, ticket: bool = True) -> Iterator[Evaluated]:
    """Every valid incident of the corpus, one at a time (a broken incident yields an error diagnosis)."""
    for folder in incident_dirs(corpus)[:limit]:
        yield evaluate_folder(folder, method=method, baseline=baseline, ticket=ticket)


@dataclass(frozen=True)
class FailedIncident:
    """An incident whose evaluation could not run (a damaged snapshot, a broken folder), and why."""

    incident_id: str
    method: str
    error: str


def evaluate_each(corpus: Path, *, methods: list[str], limit: int | None = None) -> tuple[list[Evaluated],
                                                                                       list[FailedIncident]]:
    """Evaluate every valid incident of the corpus with each method; an incident that fails is a
    `FailedIncident` and the others go on."""
    done: list[Evaluated] = []
    failed: list[FailedIncident] = []
    folders = incident_dirs(corpus)[:limit]
    for method in methods:
        for folder in folders:
            try:
                done.append(evaluate_folder(folder, method=method))
            except Exception as exc:  # noqa: BLE001 - one damaged incident is a failure, the batch goes on
                why = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
                failed.append(FailedIncident(folder.name, method, why))
    return done, failed
