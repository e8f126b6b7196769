"""The `runs` and `run_failures` tables: every run is a row, and so is every failure in it."""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import duckdb

from faultline.diskspace import out_of_space

RunStatus = Literal["running", "completed", "completed_with_failures", "failed"]


def start_run(conn: duckdb.DuckDBPyConnection, kind: str, *, settings: Any = None,
              prefect_flow_run_id: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> str:
    """Insert a `running` run row and return its id; `parent_run_id` names the run this one was started inside
    (None for a run started on its own)."""
    run_id = run_id or str(uuid.uuid4())
    payload = settings.model_dump_json() if hasattr(settings, "model_dump_json") else json.dumps(settings, default=str)
    conn.execute(
        "INSERT INTO runs (run_id, kind, started_at, status, prefect_flow_run_id, settings, parent_run_id) "
        "VALUES (?, ?, now(), 'running', ?, ?, ?)",
        [run_id, kind, prefect_flow_run_id, payload, parent_run_id],
    )
    return run_id


def finish_run(conn: duckdb.DuckDBPyConnection, run_id: str, *, status: RunStatus, stats: dict[str, Any] | None = None,
               error: str | None = None) -> None:
    """Close the run with its final status and counts."""
    conn.execute(
        "UPDATE runs SET finished_at = now(), status = ?, stats = ?, error = ? WHERE run_id = ?",
        [status, json.dumps(stats or {}, default=str), error, run_id],
    )


@contextmanager
def failed_on_raise(conn: duckdb.DuckDBPyConnection, run_id: str) -> Iterator[None]:
    """Close the run as ``failed`` when the block raises (a full disk, an interrupt), as far as the warehouse
    still takes the write; the error goes on up either way."""
    try:
        yield
    except BaseException as exc:
        try:
            finish_run(conn, run_id, status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
        except duckdb.Error:
            pass  # the disk that stopped the run may refuse this row too; the run's error matters more
        raise


def record_failure(conn: duckdb.DuckDBPyConnection, *, run_id: str | None, stage: str, subject: str | None,
                   exc: BaseException) -> None:
    """Store one failure (of an incident or an input file) as a row; the batch goes on.

    A full disk is not one subject's failure: every next write would fail too, this row included, so it is
    raised as `faultline.diskspace.OutOfSpace` and stops the batch.
    """
    full = out_of_space(exc)
    if full is not None:
        raise full from exc
    conn.execute(
        "INSERT INTO run_failures VALUES (?, ?, ?, ?, ?, ?, ?, now())",
        [str(uuid.uuid4()), run_id, subject, stage, type(exc).__name__, str(exc),
         "".join(traceback.format_exception(exc))],
    )
