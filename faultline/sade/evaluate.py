"""`eval sade` over a corpus folder of recorded incidents: SADE's unit on each one, its ticket and truth read from
the folder (`snapshot.json.gz`, `baseline.json.gz`, `ticket.json`, `ground_truth.json`): no warehouse needed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from faultline.errors import FaultlineError
from faultline.outcome import IncidentRef
from faultline.sade.records import Diagnosis
from faultline.sade.scoring import IncidentScore
from faultline.truth.store import truth_from_json

if TYPE_CHECKING:
    from faultline.config import Settings


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


def evaluate_folder(folder: Path, *, method: str = "sade", baseline: bool = True, ticket: bool = True,
                    settings: Settings | None = None, policy: Literal["deterministic", "llm"] = "deterministic",
                    llm_model: str | None = None) -> Evaluated:
    """SADE's unit on one recorded incident: its snapshot (with its baseline unless `baseline` is False), its ticket
    (unless `ticket` is False) and its ground truth, all read from the folder; nothing is stored but the model
    calls of the `llm` policy (`llm_model`, else `sade_llm_model`), in the settings' warehouse."""
    from faultline.sade.unit import run_sade

    info = json.loads((folder / "incident.json").read_text())
    truth = truth_from_json(info["incident_id"], json.loads((folder / "ground_truth.json").read_text()),
                            scenario=info.get("scenario"), size=info.get("size"))
    ref = IncidentRef(incident_id=info["incident_id"], ticket_id=info["incident_id"],
                      snapshot_path=str(folder / "snapshot.json.gz"))
    done = run_sade(settings or _default_settings(), ref, use_baseline=baseline,
                    ticket=ticket_text(folder) if ticket else "", truth=truth, method=method, on_error="score",
                    policy=policy, llm_model=llm_model)
    return Evaluated(diagnosis=done.diagnosis, score=done.score)


def evaluate_corpus(corpus: Path, *, method: str = "sade", limit: int | None = None, baseline: bool = True,
                    ticket: bool = True, settings: Settings | None = None) -> Iterator[Evaluated]:
    """Every valid incident of the corpus, one at a time (a broken incident yields an error diagnosis)."""
    settings = settings or _default_settings()
    for folder in incident_dirs(corpus)[:limit]:
        yield evaluate_folder(folder, method=method, baseline=baseline, ticket=ticket, settings=settings)


@dataclass(frozen=True)
class FailedIncident:
    """An incident whose evaluation could not run (a damaged snapshot, a broken folder), and why."""

    incident_id: str
    method: str
    error: str


def evaluate_each(corpus: Path, *, methods: list[str], limit: int | None = None,
                  settings: Settings | None = None, policy: Literal["deterministic", "llm"] = "deterministic",
                  llm_model: str | None = None) -> tuple[list[Evaluated], list[FailedIncident]]:
    """Evaluate every valid incident of the corpus with each method; an incident that fails is a
    `FailedIncident` and the others go on."""
    done: list[Evaluated] = []
    failed: list[FailedIncident] = []
    folders = incident_dirs(corpus)[:limit]
    settings = settings or _default_settings()
    for method in methods:
        for folder in folders:
            try:
                done.append(evaluate_folder(folder, method=method, settings=settings, policy=policy,
                                            llm_model=llm_model))
            except Exception as exc:  # noqa: BLE001 - one damaged incident is a failure, the batch goes on
                why = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
                failed.append(FailedIncident(folder.name, method, why))
    return done, failed


def _default_settings() -> Settings:
    from faultline.config import Settings

    return Settings()
