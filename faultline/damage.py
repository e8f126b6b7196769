"""Damaged state on disk: a warehouse file or a search index cut short, recognised and named with its fix.

A half-copied DuckDB file fails on its first read past its end (or is no DuckDB file at all), a LanceDB table
missing a data file fails with "Not found" and its path; neither is a bug nor mended by a retry, so both become a
`DamagedState` naming the file and its recovery (`faultline index --rebuild`; the warehouse: a copy, or re-ingest).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from faultline.errors import FaultlineError

if TYPE_CHECKING:
    import duckdb

_DUCKDB_DAMAGE = re.compile(r"could not read enough bytes|not a valid duckdb database file|corrupt|checksum",
                            re.IGNORECASE)
# used blocks, not total: a checkpoint cuts free blocks off the file's end while still counting them in the total
_SIZE_SQL = "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = current_database()"
_HEADER_BYTES = 3 * 4096  # DuckDB's file header and its two database headers come before the first block
_LANCE_MISSING = re.compile(r"not found: (\S+?\.lance/\S+?\.lance)", re.IGNORECASE)


class DamagedState(FaultlineError):
    """A file Faultline keeps its state in is damaged (truncated, missing a part): names it and the recovery."""


def damaged_warehouse(exc: BaseException, path: Path | str) -> DamagedState | None:
    """`exc` as a `DamagedState` when it says the DuckDB file `path` is truncated or corrupt; None otherwise."""
    if not _DUCKDB_DAMAGE.search(str(exc)) or "set lock" in str(exc).lower():
        return None
    return DamagedState(
        f"the warehouse file {path} is damaged (truncated or corrupt): {_first_line(exc)}",
        fix=f"restore {path} from a copy; or move it aside (mv {path} {path}.damaged) and load the sources "
            "again with `faultline ingest ...`, then rebuild the search indexes with `faultline index --rebuild`")


def short_warehouse(conn: duckdb.DuckDBPyConnection, path: Path | str) -> DamagedState | None:
    """A `DamagedState` when the DuckDB file `path` is shorter than the blocks it has in use (a copy cut short:
    DuckDB opens it and fails only on the first read past the end); None when it is long enough."""
    if str(path) == ":memory:" or Path(f"{path}.wal").exists():
        return None  # blocks a write-ahead log replays are counted before they reach the file
    row = conn.execute(_SIZE_SQL).fetchone()
    if row is None or not row[1]:
        return None
    block_size, blocks = row
    needed = _HEADER_BYTES + block_size * blocks
    have = Path(path).stat().st_size
    if have >= needed:
        return None
    return damaged_warehouse(RuntimeError(f"Corrupt: the file holds {have} bytes, fewer than its {blocks} blocks "
                                          f"in use of {block_size} bytes need ({needed})"), path)


def damaged_index(exc: BaseException, folder: Path | str, kind: str) -> DamagedState | None:
    """`exc` as a `DamagedState` when Lance says a file of the `kind` index under `folder` is missing or
    unreadable; None for any other error."""
    text = str(exc)
    missing = _LANCE_MISSING.search(text)
    if missing is None and not ("lance error" in text.lower() and "corrupt" in text.lower()):
        return None
    where = f"/{missing.group(1).lstrip('/')}" if missing else str(folder)
    return DamagedState(
        f"the {kind} search index in {folder} is damaged: {where} is missing or unreadable",
        fix=f"rebuild it from the warehouse with `faultline index --rebuild --kind {kind}`")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
