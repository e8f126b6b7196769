"""The DuckDB warehouse: connections, numbered migrations, and read queries.

Migrations are `warehouse/migrations/NNNN_name.sql`, applied in order inside one transaction
each and recorded in `schema_migrations`. `connect()` applies pending ones on first use.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from faultline.damage import damaged_warehouse, short_warehouse
from faultline.errors import FaultlineError
from faultline.resources import warehouse_dir
from faultline.runlock import read_holder

if TYPE_CHECKING:
    from faultline.config import Settings

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

_LEDGER_SQL = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    checksum   VARCHAR NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True)
class Migration:
    """One numbered SQL file."""

    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def discover_migrations(folder: Path | None = None) -> list[Migration]:
    """Read the numbered migrations in version order; a malformed name is an error."""
    folder = folder or warehouse_dir() / "migrations"
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise FaultlineError(
                f"migration file {path} is not named NNNN_snake_case.sql",
                fix="rename it, e.g. 0002_add_log_templates.sql",
            )
        found.append(Migration(int(match.group(1)), path.name, path.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise FaultlineError(f"two migrations share a number in {folder}", fix="renumber one")
    return found


def migrate(conn: duckdb.DuckDBPyConnection, folder: Path | None = None) -> list[str]:
    """Apply pending migrations; return the names applied. Edited applied files are refused."""
    conn.execute(_LEDGER_SQL)
    applied = dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())
    done: list[str] = []
    for migration in discover_migrations(folder):
        if migration.version in applied:
            if applied[migration.version] != migration.checksum:
                raise FaultlineError(
                    f"migration {migration.name} changed after it was applied",
                    fix="never edit an applied migration; add a new numbered one instead",
                )
            continue
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(migration.sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
                [migration.version, migration.name, migration.checksum],
            )
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise
        done.append(migration.name)
    return done


def connect(path: Path | str, *, read_only: bool = False, auto_migrate: bool = True,
            memory_limit: str = "") -> duckdb.DuckDBPyConnection:
    """Open the warehouse file (creating its folder), applying pending migrations."""
    target = Path(path)
    if str(path) != ":memory:":
        target.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        damaged = damaged_warehouse(exc, path)
        if damaged is not None:
            raise damaged from exc
        holder = read_holder(path) if "lock" in str(exc).lower() else None
        raise FaultlineError(
            f"cannot open the warehouse {path}: {exc}"
            + (f"; the warehouse is in use by {holder.describe()}" if holder else ""),
            fix="another process may hold it open for writing; wait for it or use another "
            "--db / FAULTLINE_DUCKDB_PATH",
        ) from exc
    if memory_limit:
        try:
            conn.execute(f"SET memory_limit = '{memory_limit.replace(chr(39), '')}'")
        except duckdb.Error as exc:
            raise FaultlineError(f"invalid DuckDB memory limit {memory_limit!r}: {exc}",
                                 fix="set FAULTLINE_DUCKDB_MEMORY_LIMIT to a size such as 2GB or 512MB") from exc
    short = short_warehouse(conn, path)
    if short is not None:
        conn.close()
        raise short
    if auto_migrate and not read_only:
        try:
            migrate(conn)  # the first read: a file cut short fails here
        except duckdb.IOException as exc:
            conn.close()
            damaged = damaged_warehouse(exc, path)
            if damaged is None:
                raise
            raise damaged from exc
    return conn


@dataclass(frozen=True)
class QueryResult:
    """Column names and rows of a read query."""

    columns: list[str]
    rows: list[tuple[Any, ...]]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


def run_query(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> QueryResult:
    """Run one SQL statement and fetch its result; SQL errors become user errors."""
    try:
        cursor = conn.execute(sql, params or [])
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    except duckdb.Error as exc:
        raise FaultlineError(f"query failed: {exc}", fix="check the SQL; `faultline db tables` lists tables") from exc
    return QueryResult(columns, rows)


def open_warehouse(settings: Settings, *, auto_migrate: bool = True) -> duckdb.DuckDBPyConnection:
    """`connect()` with the warehouse path and memory cap from the settings."""
    return connect(settings.duckdb_path, auto_migrate=auto_migrate, memory_limit=settings.duckdb_memory_limit)


_SHARED: dict[str, duckdb.DuckDBPyConnection] = {}
_SHARED_LOCK = threading.Lock()


def shared_warehouse(settings: Settings) -> duckdb.DuckDBPyConnection:
    """The process's one read-write connection to the settings' warehouse, opened on first use.

    A DuckDB file has a single writer process, so concurrent work (Prefect's thread pool, in-process
    Dask workers) shares this connection and takes a ``.cursor()`` per unit of work.
    """
    key = str(Path(settings.duckdb_path).resolve())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = open_warehouse(settings)
        return _SHARED[key]


def keep_checkpoints_incremental(conn: duckdb.DuckDBPyConnection) -> None:
    """Stop DuckDB merging row groups at this database's checkpoints (`max_vacuum_tasks = 0`) while `conn`'s
    database stays open: for a writer that appends many large documents, such as the nightly's.

    A checkpoint writes what was appended since the last one as row groups of their own; by default it then merges
    small row groups with the ones before them ("vacuum"), rewriting the stored rows as well. Tables of documents
    (`astra_rounds.outputs` and `log_excerpts.excerpt`, 100-250 KB a row) never fill a row group's 122,880
    rows, so every checkpoint (one per 16 MB of write-ahead log) read and rewrote all of them: the writer's memory
    and the night's write time grew with everything stored (docs/architecture.md, memory). What is given up: the
    space of rows deleted meanwhile (an incident analysed again) is not reclaimed while merging is off."""
    conn.execute("SET max_vacuum_tasks = 0")


def release_shared_warehouse(settings: Settings) -> None:
    """Close the process's shared connection to the settings' warehouse (if open)."""
    key = str(Path(settings.duckdb_path).resolve())
    with _SHARED_LOCK:
        conn = _SHARED.pop(key, None)
    if conn is not None:
        conn.close()
