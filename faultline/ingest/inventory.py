"""`faultline ingest inventory`: one inventory folder as one run, with the ingest ledger and quarantine.

Each present file (hosts.yaml, groups.yaml, defaults.yaml) gets its `ingest_files` line (kind
`inventory`) with accepted + quarantined = records read; rejected hosts, groups and links go to
`quarantine`. The inventory's rows, its quarantine and its ledger lines are replaced in one
transaction, so a failed ingest leaves the previous snapshot whole.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.ingest import store as ingest_store
from faultline.ingest.api import FileReport, IngestReport
from faultline.ingest.reading import FileIdentity, Reject, identify
from faultline.inventory.load import inventory_folder, load_inventory
from faultline.inventory.models import INVENTORY_FILES, InventoryReject
from faultline.inventory.store import replace_inventory, stored_folder
from faultline.runs import finish_run, record_failure, start_run

KIND = "inventory"
_TARGETS = ("inventory_hosts", "inventory_links")


def ingest_inventory(conn: duckdb.DuckDBPyConnection, settings: Settings, path: Path, *, name: str | None = None,
                     force: bool = False, run_id: str | None = None,
                     parent_run_id: str | None = None) -> IngestReport:
    """Validate and store the inventory at `path` as one run; a failure is a `run_failures` row and a failed report.

    An inventory whose files are all unchanged since the last ingest is skipped unless `force`. ``parent_run_id``
    names the run this one is part of (the `ingest_incidents` run that found the inventory).
    """
    folder = inventory_folder(path)
    run_id = start_run(conn, f"ingest_{KIND}", settings=settings, run_id=run_id, parent_run_id=parent_run_id)
    present = {f: identify(folder / f) for f in INVENTORY_FILES if (folder / f).is_file()}
    try:
        reports = _ingest(conn, folder, present, name=name, force=force, run_id=run_id)
    except Exception as exc:  # noqa: BLE001 -- a failed inventory is a row; the previous snapshot stays
        record_failure(conn, run_id=run_id, stage=f"ingest_{KIND}", subject=str(folder), exc=exc)
        message = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
        reports = [FileReport(str(folder / "hosts.yaml"), KIND, "failed", error=message)]
    report = IngestReport(run_id, KIND, reports)
    failed = report.totals()["failed_files"]
    finish_run(conn, run_id, status="failed" if failed else "completed", stats=report.totals())
    return report


def _ingest(conn: duckdb.DuckDBPyConnection, folder: Path, present: dict[str, FileIdentity], *, name: str | None,
            force: bool, run_id: str) -> list[FileReport]:
    absent = [str(folder / f) for f in INVENTORY_FILES if f not in present]
    stale = [f for f in absent if ingest_store.known_sha(conn, KIND, f) is not None]
    same_snapshot = stored_folder(conn, name or folder.name) == str(folder)
    if not force and not stale and same_snapshot and all(
            ingest_store.known_sha(conn, KIND, str(i.path)) == i.sha256 for i in present.values()):
        return [FileReport(str(i.path), KIND, "unchanged", messages=["unchanged since the last ingest; skipped"])
                for i in present.values()]
    loaded = load_inventory(folder, name)
    for count in loaded.files.values():
        if count.accepted + count.quarantined != count.records_in:
            raise RuntimeError(f"inventory load lost records in {count.path}: {count.records_in} read, "
                               f"{count.accepted} accepted, {count.quarantined} quarantined")
    messages = list(loaded.messages)
    before = stored_folder(conn, loaded.name)
    if before and before != loaded.folder:
        messages.append(f"replaced inventory {loaded.name!r} that was ingested from {before}")
    conn.execute("BEGIN TRANSACTION")
    try:
        written = replace_inventory(conn, loaded)
        for source_file in stale:  # a groups.yaml or defaults.yaml removed since the last ingest
            for target in _TARGETS:
                ingest_store.replace_quarantine(conn, target_table=target, source_file=source_file, rejects=[],
                                                run_id=run_id)
            conn.execute("DELETE FROM ingest_files WHERE kind = ? AND source_file = ?", [KIND, source_file])
        for file_name, ident in present.items():
            count = loaded.files[file_name]
            for target in _TARGETS:
                ingest_store.replace_quarantine(conn, target_table=target, source_file=count.path, run_id=run_id,
                                                rejects=_rejects(loaded.rejects, file_name, target))
            ingest_store.record_file(conn, kind=KIND, source_file=count.path, sha256=ident.sha256,
                                     size_bytes=ident.size_bytes, records_in=count.records_in,
                                     accepted=count.accepted, quarantined=count.quarantined, run_id=run_id)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    derived = sum(link.derived for link in loaded.links)
    messages.insert(0, f"inventory {loaded.name!r}: {written['hosts']} host(s), {written['links']} link row(s) "
                    f"({derived} derived reverse(s)); replaced {written['replaced_hosts']} stored host(s)")
    if loaded.rejects:
        checks = sorted({r.check for r in loaded.rejects})
        messages.append(f"{len(loaded.rejects)} record(s) quarantined ({', '.join(checks)}); "
                        "see: faultline db sql \"select * from quarantine where target_table like 'inventory%'\"")
    reports = []
    for file_name in present:
        count = loaded.files[file_name]
        inserted = written["hosts"] if file_name == "hosts.yaml" else 0
        reports.append(FileReport(count.path, KIND, "ingested", count.records_in, count.accepted, count.quarantined,
                                  inserted=inserted, messages=messages if file_name == "hosts.yaml" else []))
    return reports


def _rejects(rejects: list[InventoryReject], file_name: str, target: str) -> list[Reject]:
    return [Reject(r.record_no, r.check, r.reason, r.raw) for r in rejects
            if r.file == file_name and r.target_table == target]
