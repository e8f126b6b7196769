"""The ingest pipeline shared by tickets, logs and docs.

For each file: read → skip if unchanged → prepare (kind-specific) → validate with the table's
Great Expectations suite → write accepted rows, quarantine and ledger in one transaction.
A file that fails is recorded in `run_failures` and the others go on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa

from faultline.config import Settings
from faultline.diskspace import rollback
from faultline.errors import FaultlineError
from faultline.ingest import store
from faultline.ingest.prepared import Prepared
from faultline.ingest.reading import FileIdentity, Reject, identify, read_file
from faultline.runs import failed_on_raise, finish_run, record_failure, start_run

Kind = Literal["tickets", "logs", "docs"]
KINDS: tuple[str, ...] = ("tickets", "logs", "docs")


@dataclass
class FileReport:
    """What happened to one file."""

    path: str
    kind: str
    status: Literal["ingested", "unchanged", "failed"]
    records_in: int = 0
    accepted: int = 0
    quarantined: int = 0
    inserted: int = 0
    updated: int = 0
    messages: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class IngestReport:
    """What one ingest run did, file by file."""

    run_id: str
    kind: str
    files: list[FileReport]

    def totals(self) -> dict[str, int]:
        keys = ("records_in", "accepted", "quarantined", "inserted", "updated")
        out = {k: sum(getattr(f, k) for f in self.files) for k in keys}
        out["files"] = len(self.files)
        out["failed_files"] = sum(f.status == "failed" for f in self.files)
        out["unchanged_files"] = sum(f.status == "unchanged" for f in self.files)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "kind": self.kind, "totals": self.totals(),
                "files": [asdict(f) for f in self.files]}


def expand_paths(kind: str, paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: files as given, folders searched recursively for the kind's file types."""
    from faultline.ingest.doc_ingest import DOC_SUFFIXES
    from faultline.ingest.ticket_sources import TICKET_SUFFIXES

    suffixes = {"tickets": TICKET_SUFFIXES, "docs": DOC_SUFFIXES}.get(kind)
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
                bare = child.with_suffix("") if child.suffix == ".gz" else child
                if suffixes is None or bare.suffix.lower() in suffixes:
                    out.append(child)
        elif path.is_file():
            out.append(path)
        else:
            raise FaultlineError(f"{path} does not exist", fix="check the path (folders are searched recursively)")
    return out


def _prepare(conn: duckdb.DuckDBPyConnection, kind: str, ident: FileIdentity, source_file: str, settings: Settings,
             options: dict[str, Any]) -> Prepared:
    if kind == "logs":
        from faultline.ingest.log_ingest import prepare_logs

        return prepare_logs(ident, source_file, settings, log_format=options.get("log_format"),
                            incident_id=options.get("incident_id"), host=options.get("host"), conn=conn,
                            roots=tuple(options.get("roots") or ()))
    raw = read_file(ident.path)
    if kind == "tickets":
        from faultline.ingest.ticket_ingest import prepare_tickets

        return prepare_tickets(raw, source_file, settings, options.get("mapping_file"))
    if kind == "docs":
        from faultline.ingest.doc_ingest import prepare_docs

        return prepare_docs(raw, source_file, settings)
    raise FaultlineError(f"unknown ingest kind {kind!r}", fix=f"use one of {', '.join(KINDS)}")


def _validate(cand: pa.Table, prepared: Prepared, suite: Any) -> tuple[pa.Table, list[Reject]]:
    """Split one batch of candidates into accepted rows and Great Expectations rejections."""
    from faultline.quality.suites import validate_frame

    if cand.num_rows == 0:
        return _split(cand, prepared, {})
    return _split(cand, prepared, validate_frame(_columns(cand, suite).to_pandas(), suite))


def _columns(cand: pa.Table, suite: Any) -> pa.Table:
    """The candidate columns the suite's expectations read."""
    needed = sorted({e.kwargs.get("column") for e in suite.expectations if e.kwargs.get("column")})
    return cand.select([c for c in needed if c in cand.column_names])


def _split(cand: pa.Table, prepared: Prepared, failures: dict[int, list]) -> tuple[pa.Table, list[Reject]]:
    """Accepted rows (without the pipeline's own columns) and one quarantine row per failed candidate."""
    drop = [c for c in prepared.drop_columns if c in cand.column_names]
    rejects: list[Reject] = []
    if failures:
        record_nos = cand.column(prepared.record_no_column)
        raws = cand.column(prepared.raw_column)
        for pos in sorted(failures):
            specs = failures[pos]
            rejects.append(Reject(
                int(record_nos[pos].as_py() or 0), "; ".join(s.label for s in specs),
                "; ".join(s.reason for s in specs), str(raws[pos].as_py()),
            ))
        keep = [True] * cand.num_rows
        for pos in failures:
            keep[pos] = False
        cand = cand.filter(pa.array(keep))
    return cand.drop_columns(drop), rejects


def _validate_together(batches: list[tuple[pa.Table, Prepared]], suite: Any) -> list[tuple[pa.Table, list[Reject]]]:
    """`_validate` for the candidates of many files in one Great Expectations run (its fixed cost, ~20 ms a
    call, was most of the time of a corpus of small files). Only for suites whose every expectation judges a
    row on its own, so a row's result does not depend on its neighbours; otherwise file by file."""
    import pandas as pd

    from faultline.quality.suites import validate_frame

    if len(batches) < 2 or not all(e.type.startswith(ROW_WISE) for e in suite.expectations):
        return [_validate(cand, prepared, suite) for cand, prepared in batches]
    frames, offsets, at = [], [], 0
    for cand, _ in batches:
        offsets.append(at)
        if cand.num_rows:
            frames.append(_columns(cand, suite).to_pandas())
            at += cand.num_rows
    failures = validate_frame(pd.concat(frames, ignore_index=True), suite) if frames else {}
    out = []
    for (cand, prepared), start in zip(batches, offsets):
        mine = {pos - start: specs for pos, specs in failures.items() if start <= pos < start + cand.num_rows}
        out.append(_split(cand, prepared, mine))
    return out


# expectations that judge each row alone (Great Expectations' column map expectations)
ROW_WISE = ("expect_column_values_", "expect_column_value_lengths_")


@dataclass
class _Staged:
    """A changed file, read and prepared, waiting for validation and its write."""

    path: Path
    ident: FileIdentity
    source_file: str
    prepared: Prepared


def _stage(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, path: Path, force: bool,
           options: dict[str, Any]) -> FileReport | _Staged:
    source_file = str(path.resolve())
    ident = identify(path)
    if not force and store.known_sha(conn, kind, source_file) == ident.sha256 and not _year_changed(
            conn, settings, kind, source_file):
        return FileReport(source_file, kind, "unchanged", messages=["unchanged since the last ingest; skipped"])
    return _Staged(path, ident, source_file, _prepare(conn, kind, ident, source_file, settings, options))


def _year_changed(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, source_file: str) -> bool:
    """A log file read before in another year than the one now given (`--year`) is read again."""
    if kind != "logs" or settings.log_default_year is None:
        return False
    stored = store.known_log_year(conn, source_file)
    return stored is not None and stored != settings.log_default_year


def _commit(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, staged: _Staged, run_id: str | None,
            batches: Iterable[pa.Table], validated: list[tuple[pa.Table, list[Reject]]] | None = None, *,
            own_transaction: bool = True) -> FileReport:
    """Write one staged file: each batch validated (or already `validated`), its accepted rows, its quarantine
    and its ledger line. With `own_transaction=False` the file is written inside the caller's transaction (a
    group of one-batch files), which commits or rolls back; a raise leaves that to the caller."""
    from faultline.quality.suites import load_suite

    prepared, source_file, ident = staged.prepared, staged.source_file, staged.ident
    suite = load_suite(prepared.table, settings)
    streamed = prepared.batches is not None
    rejects = list(prepared.rejects)
    accepted = 0
    counts: dict[str, int] = {}
    if own_transaction:
        conn.execute("BEGIN TRANSACTION")
    try:
        for number, batch in enumerate(batches):
            kept, gx_rejects = validated[number] if validated is not None else _validate(batch, prepared, suite)
            rejects += gx_rejects
            accepted += kept.num_rows
            for key, value in prepared.writer(conn, kept, source_file, number == 0).items():
                counts[key] = counts.get(key, 0) + value
            if streamed and own_transaction:  # in a group the file is one batch: the group commits it
                conn.execute("COMMIT")
                conn.execute("BEGIN TRANSACTION")
        if accepted + len(rejects) != prepared.records_in:
            raise RuntimeError(f"ingest lost records in {source_file}: {prepared.records_in} read, "
                               f"{accepted} accepted, {len(rejects)} quarantined")
        store.replace_quarantine(conn, target_table=prepared.table, source_file=source_file, rejects=rejects,
                                 run_id=run_id)
        store.record_file(conn, kind=kind, source_file=source_file, sha256=ident.sha256,
                          size_bytes=ident.size_bytes, records_in=prepared.records_in, accepted=accepted,
                          quarantined=len(rejects), run_id=run_id, log_year=prepared.stats.get("log_year"),
                          log_year_source=prepared.stats.get("log_year_source"))
        if own_transaction:
            conn.execute("COMMIT")
    except Exception:
        if not own_transaction:
            raise
        rollback(conn)
        if streamed:
            conn.execute(f"DELETE FROM {prepared.table} WHERE source_file = ?", [source_file])
        raise
    messages = list(prepared.messages)
    if rejects:
        checks = sorted({r.check for r in rejects})
        messages.append(f"{len(rejects)} record(s) quarantined ({', '.join(checks)}); "
                        "see: faultline db sql \"select * from quarantine\"")
    return FileReport(source_file, kind, "ingested", prepared.records_in, accepted, len(rejects),
                      counts.get("inserted", 0), counts.get("updated", 0), messages)


def ingest_file(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, path: Path, *,
                run_id: str | None, force: bool = False, **options: Any) -> FileReport:
    """Ingest one file; raises on unexpected errors (the caller records them).

    Whole files (tickets, docs) are written in one transaction. Streamed files (logs) commit
    batch by batch, so memory stays bounded; if one fails midway its partial rows are removed
    and, with no ledger line written, the next ingest processes it again.
    """
    staged = _stage(conn, settings, kind, path, force, options)
    if isinstance(staged, FileReport):
        return staged
    return _commit(conn, settings, kind, staged, run_id, staged.prepared.candidate_batches())


def ingest_one(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, path: Path, *,
               run_id: str | None, force: bool = False, **options: Any) -> FileReport:
    """`ingest_file`, with any failure recorded in `run_failures` and returned as a failed report."""
    try:
        return ingest_file(conn, settings, kind, path, run_id=run_id, force=force, **options)
    except Exception as exc:  # noqa: BLE001 - a failed file is a row, the batch goes on
        record_failure(conn, run_id=run_id, stage=f"ingest_{kind}", subject=str(path), exc=exc)
        message = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
        return FileReport(str(path.resolve()), kind, "failed", error=message)


TOGETHER_FILES = 500  # small files validated in one Great Expectations run
TOGETHER_ROWS = 100_000  # and their candidate rows at most


def ingest_many(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, paths: Iterable[Path], *,
                run_id: str | None, force: bool = False, **options: Any) -> list[FileReport]:
    """`ingest_one` for each of `paths`, in order, with the files that fit in one batch validated together
    and written in one transaction.

    Each file keeps its own quarantine rows and ledger line (accepted + quarantined = records read, per
    file); a file that fails is a `run_failures` row and a failed report, and nothing of it is written, the
    others go on. A file of several batches (a large log) goes through the streamed pipeline on its own.
    """
    reports: list[FileReport | None] = []
    waiting: list[tuple[int, _Staged, pa.Table]] = []

    def failed(path: Path, exc: Exception) -> FileReport:
        record_failure(conn, run_id=run_id, stage=f"ingest_{kind}", subject=str(path), exc=exc)
        message = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
        return FileReport(str(path.resolve()), kind, "failed", error=message)

    def flush() -> None:
        from faultline.quality.suites import load_suite

        if not waiting:
            return
        suite = load_suite(waiting[0][1].prepared.table, settings)
        try:
            results = _validate_together([(batch, staged.prepared) for _, staged, batch in waiting], suite)
        except Exception:  # noqa: BLE001 - validated again file by file, so the error lands on its own file
            results = [None] * len(waiting)  # type: ignore[list-item]
        # one transaction for the group (a commit per small file was the other half of the time); if any file
        # fails, the group is rolled back and written again file by file, so the failure lands on its own file
        conn.execute("BEGIN TRANSACTION")
        try:
            done = [_commit(conn, settings, kind, staged, run_id, [batch], [result] if result is not None else None,
                            own_transaction=False) for (_, staged, batch), result in zip(waiting, results)]
            conn.execute("COMMIT")
        except Exception:  # noqa: BLE001 - redone file by file below
            rollback(conn)
            done = []
            for (_, staged, batch), result in zip(waiting, results):
                try:
                    done.append(_commit(conn, settings, kind, staged, run_id, [batch],
                                        [result] if result is not None else None))
                except Exception as exc:  # noqa: BLE001 - a failed file is a row, the batch goes on
                    done.append(failed(staged.path, exc))
        for (slot, _, _), report in zip(waiting, done):
            reports[slot] = report
        waiting.clear()

    for path in paths:
        reports.append(None)
        slot = len(reports) - 1
        try:
            staged = _stage(conn, settings, kind, path, force, options)
            if isinstance(staged, FileReport):
                reports[slot] = staged
                continue
            batches = staged.prepared.candidate_batches()
            first = next(batches, None)
            second = next(batches, None)
        except Exception as exc:  # noqa: BLE001 - a failed file is a row, the batch goes on
            reports[slot] = failed(path, exc)
            continue
        if first is None:  # nothing but rejects (or nothing at all): no candidate to validate
            try:
                reports[slot] = _commit(conn, settings, kind, staged, run_id, [])
            except Exception as exc:  # noqa: BLE001 - a failed file is a row, the batch goes on
                reports[slot] = failed(path, exc)
            continue
        if second is None:  # the whole file in one batch: validated with its neighbours
            waiting.append((slot, staged, first))
            if len(waiting) >= TOGETHER_FILES or sum(b.num_rows for _, _, b in waiting) >= TOGETHER_ROWS:
                flush()
            continue
        flush()
        try:
            reports[slot] = _commit(conn, settings, kind, staged, run_id, itertools.chain([first, second], batches))
        except Exception as exc:  # noqa: BLE001 - a failed file is a row, the batch goes on
            reports[slot] = failed(path, exc)
    flush()
    return [r for r in reports if r is not None]


def ingest_paths(conn: duckdb.DuckDBPyConnection, settings: Settings, kind: str, paths: Iterable[Path], *,
                 force: bool = False, run_id: str | None = None, progress: bool = False,
                 prefect_flow_run_id: str | None = None, per_file: Callable[..., FileReport] | None = None,
                 parent_run_id: str | None = None, **options: Any) -> IngestReport:
    """Ingest files or folders of one kind as one run; one bad file never stops the others.

    ``per_file`` replaces `ingest_one` (the Prefect flow passes it wrapped as a task); ``parent_run_id`` names the
    run this one is part of (the nightly's). Logs get the folders given as `roots`: a year in a file's path below
    them dates its year-less lines (`faultline.ingest.logyear`).
    """
    if kind not in KINDS:
        raise FaultlineError(f"unknown ingest kind {kind!r}", fix=f"use one of {', '.join(KINDS)}")
    paths = list(paths)
    if kind == "logs":
        options.setdefault("roots", [str(p.resolve()) for p in paths if p.is_dir()])
    files = expand_paths(kind, paths)
    run_id = start_run(conn, f"ingest_{kind}", settings=settings, run_id=run_id,
                       prefect_flow_run_id=prefect_flow_run_id, parent_run_id=parent_run_id)
    from faultline.progress import track

    tracked = track(files, description=f"ingest {kind}", enabled=progress)
    with failed_on_raise(conn, run_id):  # a full disk stops the run (faultline.diskspace)
        if per_file is None:  # small files validated together
            reports = ingest_many(conn, settings, kind, tracked, run_id=run_id, force=force, **options)
        else:  # one call (the flow's task run) per file
            reports = [per_file(conn, settings, kind, path, run_id=run_id, force=force, **options)
                       for path in tracked]
    if kind == "tickets" and reports:  # logs ingested before them may have dated their lines by a copy's mtime
        from faultline.ingest.logyear import redate_from_tickets

        reports[-1].messages.extend(redate_from_tickets(conn, settings.log_timezone))
    report = IngestReport(run_id, kind, reports)
    failed = report.totals()["failed_files"]
    status = "completed" if not failed else ("failed" if failed == len(reports) else "completed_with_failures")
    finish_run(conn, run_id, status=status, stats=report.totals())
    return report
