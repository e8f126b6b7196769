"""A corpus folder for the nightly run: which subfolders it reads, in what order, and what each ingest did.

`history/` and `backlog/` hold generated incidents, `tickets/`, `logs/` and `docs/` plain exports; the Prefect flow
passes its tasks in as the ingest callables. docs/nightly.md#the-corpus-folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.ingest.api import FileReport, Kind, ingest_paths
from faultline.ingest.incidents import IncidentIngestReport, ingest_incidents
from faultline.nightly.progress import stage

CorpusFolder = Literal["history", "backlog", "tickets", "logs", "docs"]
# history before backlog, as `faultline ingest incidents` is documented; exports after the incidents
INCIDENT_FOLDERS: tuple[CorpusFolder, ...] = ("history", "backlog")
EXPORT_FOLDERS: tuple[Kind, ...] = ("tickets", "logs", "docs")

IngestFile = Callable[..., FileReport]  # the signature of `faultline.ingest.api.ingest_one`


class IngestFolder(Protocol):
    """Ingests one folder of generated incidents as a run inside the run `parent_run_id`."""

    def __call__(self, conn: duckdb.DuckDBPyConnection, settings: Settings, folder: Path, *,
                 parent_run_id: str | None = None) -> IncidentIngestReport: ...


class FolderIngest(BaseModel):
    """What the nightly run's ingest did with one subfolder of the corpus (failures also in `run_failures`)."""

    model_config = ConfigDict(extra="forbid")

    folder: CorpusFolder
    path: str
    files: int  # files read (history/ and backlog/: tickets and their archive's logs); exports: one task run each
    unchanged: int = 0  # skipped: same content as at their last ingest
    accepted: int = 0  # records written (tickets, log lines, doc chunks)
    quarantined: int = 0  # records kept in `quarantine` with the failed check
    incidents: int | None = None  # history/ and backlog/: incidents loaded
    invalid: int | None = None  # history/ and backlog/: incidents the generator marked invalid (quarantined)
    failed: dict[str, str] = Field(default_factory=dict)  # file or incident folder -> error


def _whole_folder(conn: duckdb.DuckDBPyConnection, settings: Settings, folder: Path, *,
                  parent_run_id: str | None = None) -> IncidentIngestReport:
    return ingest_incidents(conn, settings, [folder], parent_run_id=parent_run_id)


def ingest_corpus(conn: duckdb.DuckDBPyConnection, settings: Settings, corpus: Path, *,
                  prefect_flow_run_id: str | None = None, ingest_folder: IngestFolder = _whole_folder,
                  ingest_file: IngestFile | None = None, parent_run_id: str | None = None) -> list[FolderIngest]:
    """Ingest every subfolder the corpus has, in order, on ``conn``; one report per subfolder found.

    Each subfolder is a run of its own inside the run ``parent_run_id`` (the nightly's). A corpus that is not a
    folder is a `FaultlineError`; a bad file or incident inside it is a failure row and the others go on.
    """
    if not corpus.is_dir():
        raise FaultlineError(f"{corpus} is not a folder", fix="give a corpus folder such as data/sample")
    done: list[FolderIngest] = []
    for part in INCIDENT_FOLDERS:
        if (corpus / part).is_dir():
            stage(f"ingesting {part} ({corpus / part})")
            report = ingest_folder(conn, settings, corpus / part, parent_run_id=parent_run_id)
            done.append(_incidents_summary(part, corpus / part, report))
    for kind in EXPORT_FOLDERS:
        if (corpus / kind).is_dir():
            stage(f"ingesting {kind} ({corpus / kind})")
            files = ingest_paths(conn, settings, kind, [corpus / kind], per_file=ingest_file,
                                 prefect_flow_run_id=prefect_flow_run_id, parent_run_id=parent_run_id).files
            done.append(_files_summary(kind, corpus / kind, files))
    return done


def _files_summary(folder: CorpusFolder, path: Path, files: list[FileReport]) -> FolderIngest:
    return FolderIngest(folder=folder, path=str(path), files=len(files),
                        unchanged=sum(f.status == "unchanged" for f in files),
                        accepted=sum(f.accepted for f in files), quarantined=sum(f.quarantined for f in files),
                        failed={f.path: f.error or "failed" for f in files if f.status == "failed"})


def _incidents_summary(folder: CorpusFolder, path: Path, report: IncidentIngestReport) -> FolderIngest:
    summary = _files_summary(folder, path, report.files)
    return summary.model_copy(update={"incidents": len(report.loaded), "invalid": len(report.invalid),
                                      "failed": {**summary.failed, **report.failed}})
