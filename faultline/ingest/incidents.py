"""`faultline ingest incidents DIR`: a generated corpus into the warehouse.

Each valid incident folder becomes its ticket, an `incidents` row and a `ground_truth` row; the suites' syslog
archives go in as ordinary logs and their inventories as inventories; invalid incidents are quarantined. Running
it again changes nothing. docs/corpus.md#loading-a-corpus.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.ingest.api import FileReport, expand_paths, ingest_many, ingest_one
from faultline.ingest.reading import Reject
from faultline.ingest.store import replace_quarantine
from faultline.runs import failed_on_raise, finish_run, record_failure, start_run
from faultline.stale import mark_stale

INCIDENT_FILE = "incident.json"
ARCHIVE = "archive"  # a suite's syslog archive (faultline.corpus.archive)


@dataclass
class IncidentIngestReport:
    """What `ingest_incidents` did, per incident folder."""

    run_id: str
    loaded: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    files: list[FileReport] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for f in self.files:
            counts[f.status] = counts.get(f.status, 0) + 1
        return {"run_id": self.run_id, "loaded": len(self.loaded), "invalid": self.invalid, "failed": self.failed,
                "files": counts}


def incident_folders(paths: list[Path]) -> list[Path]:
    """Every folder holding an incident.json under `paths` (a corpus, a suite output, one incident)."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise FaultlineError(f"{path} does not exist",
                                 fix="give a corpus folder written by `faultline corpus generate`")
        if path.is_file():
            raise FaultlineError(f"{path} is a file", fix="give the incident or corpus folder")
        found += sorted(p.parent for p in path.rglob(INCIDENT_FILE) if ARCHIVE not in p.relative_to(path).parts)
    if not found:
        raise FaultlineError(f"no incidents (no {INCIDENT_FILE}) under {', '.join(map(str, paths))}",
                             fix="generate some with `faultline corpus generate --suite tiny --out DIR`")
    return found


def _suite_roots(path: Path) -> list[Path]:
    """Where a suite's shared folders (archive, inventory) may sit for `path`: the path itself, its children (a
    corpus of suites), or its parent when `path` is one incident of a suite."""
    roots = [path, *(child for child in sorted(path.iterdir()) if child.is_dir())]
    if (path / INCIDENT_FILE).is_file():
        roots.append(path.parent)
    return roots


def archive_folders(paths: list[Path]) -> list[Path]:
    """The syslog archives of `paths`: `<path>/archive` (a suite's output), one level down (a corpus), or beside
    an incident folder (the incident's suite: its lines are in the suite's archive)."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            continue
        for candidate in (root / ARCHIVE for root in _suite_roots(path)):
            if candidate.is_dir() and candidate not in found:
                found.append(candidate)
    return found


def inventory_folders(paths: list[Path]) -> list[Path]:
    """Inventory folders of the suites of `paths` (`<suite>/inventory/*/hosts.yaml`), found as the archives are."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            continue
        for root in (r / "inventory" for r in _suite_roots(path)):
            for hosts in sorted(root.glob("*/hosts.yaml")) if root.is_dir() else []:
                if hosts.parent not in found:
                    found.append(hosts.parent)
    return found


def ingest_incidents(conn: duckdb.DuckDBPyConnection, settings: Settings, paths: list[Path], *,
                     force: bool = False, progress: bool = False,
                     parent_run_id: str | None = None) -> IncidentIngestReport:
    """Load every incident under `paths`; one broken incident is a failure row, the others go on.

    ``parent_run_id`` names the run this one is part of (the nightly's); each inventory found is a run of its own
    inside this one.
    """
    from faultline.progress import track

    run_id = start_run(conn, "ingest_incidents", settings=settings, parent_run_id=parent_run_id)
    report = IncidentIngestReport(run_id)
    with failed_on_raise(conn, run_id):  # a full disk stops the run (faultline.diskspace)
        folders = incident_folders(paths)
        tickets = _tickets_together(conn, settings, folders, run_id, force)
        for folder in track(folders, description="ingest incidents", enabled=progress):
            try:
                _one(conn, settings, folder, report, force, tickets.get(folder))
            except Exception as exc:  # noqa: BLE001 - recorded as a row; the batch goes on
                record_failure(conn, run_id=run_id, stage="ingest_incident", subject=str(folder), exc=exc)
                report.failed[folder.name] = (exc.message if isinstance(exc, FaultlineError)
                                              else f"{type(exc).__name__}: {exc}")
        # the suites' syslog archives: ordinary logs, no incident id (the lines name their devices)
        report.files += ingest_many(conn, settings, "logs", expand_paths("logs", archive_folders(paths)),
                                    run_id=run_id, force=force)
        # the inventories of the networks the suites ran (`<suite>/inventory/<scenario>_<size>/hosts.yaml`)
        from faultline.ingest.inventory import ingest_inventory

        for folder in inventory_folders(paths):
            inventory = ingest_inventory(conn, settings, folder, name=folder.name, force=force,
                                         parent_run_id=run_id)  # a run of its own, inside this one
            report.files.extend(inventory.files)
    failed_files = any(f.status == "failed" for f in report.files)
    status = "completed" if not (report.failed or failed_files) else "completed_with_failures"
    finish_run(conn, run_id, status=status, stats=report.as_dict())
    return report


def _tickets_together(conn: duckdb.DuckDBPyConnection, settings: Settings, folders: list[Path], run_id: str,
                      force: bool) -> dict[Path, FileReport]:
    """The tickets of the valid incidents, ingested (and validated) together ahead of their incidents; an
    incident whose metadata cannot be read is left to `_one`, which fails it with the reason."""
    files: dict[Path, Path] = {}
    for folder in folders:
        try:
            valid = _read_json(folder / INCIDENT_FILE).get("status") == "valid"
        except FaultlineError:
            continue
        if valid and (folder / "ticket.json").is_file():
            files[folder] = folder / "ticket.json"
    done = ingest_many(conn, settings, "tickets", list(files.values()), run_id=run_id, force=force)
    return dict(zip(files, done))


def _one(conn: duckdb.DuckDBPyConnection, settings: Settings, folder: Path, report: IncidentIngestReport,
         force: bool, ticket_report: FileReport | None = None) -> None:
    meta = _read_json(folder / INCIDENT_FILE)
    incident_id = meta.get("incident_id") or folder.name
    source = str((folder / INCIDENT_FILE).resolve())
    if meta.get("status") != "valid":
        reason = meta.get("reason") or "the generator marked this incident invalid"
        replace_quarantine(conn, target_table="incidents", source_file=source, run_id=report.run_id,
                           rejects=[Reject(0, "incident_valid", reason, json.dumps(meta, sort_keys=True))])
        report.invalid.append(incident_id)
        return
    replace_quarantine(conn, target_table="incidents", source_file=source, rejects=[], run_id=report.run_id)
    ticket_file = folder / "ticket.json"
    ticket = _read_json(ticket_file)
    file_report = ticket_report or ingest_one(conn, settings, "tickets", ticket_file, run_id=report.run_id, force=force)
    report.files.append(file_report)
    if file_report.status == "failed":
        raise FaultlineError(f"{ticket_file}: {file_report.error}", fix="see run_failures for the details")
    for host in sorted(p for p in (folder / "logs").glob("*") if p.is_dir()):  # a corpus from before the archive
        logs = sorted(p for p in host.iterdir() if p.is_file())
        report.files += ingest_many(conn, settings, "logs", logs, run_id=report.run_id, force=force,
                                    incident_id=incident_id, host=host.name)
    truth = _read_json(folder / "ground_truth.json")
    _upsert_incident(conn, folder, incident_id, meta, ticket)
    _upsert_truth(conn, incident_id, truth)
    report.loaded.append(incident_id)


def _upsert_incident(conn: duckdb.DuckDBPyConnection, folder: Path, incident_id: str, meta: dict[str, Any],
                     ticket: dict[str, Any]) -> None:
    attributes = {"baseline_path": str((folder / "baseline.json.gz").resolve()), "spec": meta.get("spec"),
                  "timings": meta.get("timings"), "sizes": meta.get("sizes"), "fault_at": meta.get("fault_at"),
                  "lab_up_at": meta.get("lab_up_at"), "lab_down_at": meta.get("lab_down_at"),
                  "inventory": f"{meta['scenario']}_{meta['size']}"}  # the network's inventory (faultline.scope)
    if (folder / "logs").is_dir():  # a corpus from before the syslog archive
        attributes["logs_dir"] = str((folder / "logs").resolve())
    conn.execute("DELETE FROM incidents WHERE incident_id = ?", [incident_id])
    conn.execute(
        "INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [incident_id, ticket["ticket_id"], ticket["title"], meta["scenario"], meta["size"], meta["seed"],
         bool(meta.get("historical")), ticket.get("created_at"), meta.get("window_start"), meta.get("recorded_at"),
         str((folder / "snapshot.json.gz").resolve()), json.dumps(attributes, sort_keys=True),
         datetime.now(timezone.utc)],
    )


def _upsert_truth(conn: duckdb.DuckDBPyConnection, incident_id: str, truth: dict[str, Any]) -> None:
    v1 = truth["v1"]
    labels = v1.get("root_cause_names") or ([v1["root_cause_name"]] if v1.get("is_anomaly") else [])
    mark_stale(conn, incident_id, "truth")  # first: a mark without the write only costs a refresh of the same rows
    conn.execute("DELETE FROM ground_truth WHERE incident_id = ?", [incident_id])
    conn.execute(
        "INSERT INTO ground_truth VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [incident_id, bool(v1["is_anomaly"]), labels, list(v1.get("faulty_devices") or []),
         [v["resource_id"] for v in truth.get("v2", [])], [v["fault_type"] for v in truth.get("v2", [])],
         ",".join(truth.get("categories") or []) or None, truth.get("resolution"), "lab", datetime.now(timezone.utc)],
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise FaultlineError(f"{path} is missing",
                             fix="regenerate the incident with `faultline corpus generate`") from None
    except ValueError as exc:
        raise FaultlineError(f"{path}: not valid JSON ({exc})", fix="regenerate the incident") from None
    if not isinstance(data, dict):
        raise FaultlineError(f"{path}: expected a JSON object", fix="regenerate the incident")
    return data
