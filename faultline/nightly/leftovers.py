"""What a killed nightly run leaves behind, cleared by the next run of the same warehouse: `running` rows of runs
that are dead (the next run holds the run lock, so no other is alive), closed as failed (interrupted), and the
warehouse copies named after them (`faultline.nightly.workspace`). Another warehouse's copies are left alone."""

from __future__ import annotations

from pathlib import Path

import duckdb

from faultline.config import Settings
from faultline.nightly.workspace import work_dir

RUN_ID_CHARS = 36  # a uuid4 in its text form: warehouse copies are named `<run id>-<phase>.duckdb`
NIGHTLY_RUNS_SQL = "SELECT run_id FROM runs WHERE kind = 'nightly'"
CLOSE_INTERRUPTED_SQL = """
UPDATE runs SET status = 'failed', finished_at = now(),
       error = 'interrupted: the process ended without closing the run (killed, or the machine stopped)'
WHERE kind = 'nightly' AND status = 'running' AND run_id <> ?
"""


def clear_leftovers(conn: duckdb.DuckDBPyConnection, settings: Settings, current_run_id: str) -> list[Path]:
    """Close dead runs' ``running`` rows and remove their warehouse copies (call holding the run lock); the files
    removed."""
    conn.execute(CLOSE_INTERRUPTED_SQL, [current_run_id])
    folder = work_dir(settings)
    if not folder.is_dir():
        return []
    earlier = {row[0] for row in conn.execute(NIGHTLY_RUNS_SQL).fetchall()} - {current_run_id}
    removed = []
    for path in folder.iterdir():
        if path.is_file() and path.name[:RUN_ID_CHARS] in earlier:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
