"""Where one unit of nightly work runs: it reads a copy of the warehouse and writes only to tables of its own.

`copy_warehouse` checkpoints and copies the warehouse for a stage, `unit_space` gives a unit its own tables over
that copy, and `replay` runs what the unit did on the warehouse. docs/nightly.md#warehouse-copies-and-unit-spaces.
"""

from __future__ import annotations

import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import duckdb
import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from faultline.config import Settings
from faultline.diskspace import out_of_space, require_room, size
from faultline.errors import FaultlineError
from faultline.outcome import Method, Outcome

# the tables each kind of unit writes (its stores': astra/store.py, eval_store.py, logs/store.py,
# scope/store.py, sade/store.py, verdict/store.py, verdict/evaluate.py; llm_calls from the LLM gateway; marts_stale
# from stale.py, which those stores call)
OUTPUT_TABLES: dict[Method, tuple[str, ...]] = {
    "astra": ("astra_rounds", "claims", "evidence", "judge_scores", "followup_queries", "evaluations",
              "log_excerpts", "log_scopes", "llm_calls", "marts_stale"),
    "sade": ("sade_steps", "sade_flags", "submissions", "evaluations", "llm_calls", "marts_stale"),
    "verdict": ("verdicts", "verdict_claims", "verdict_checks", "evaluations", "llm_calls", "marts_stale"),
}
SNAPSHOT_ALIAS = "warehouse_copy"
# left free beside a warehouse copy: the run's results go to the warehouse's WAL, often on the same disk
COPY_HEADROOM = 16 * 1024 * 1024
_CREATE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:\"?[\w]+\"?\.)?\"?(\w+)\"?\s*\(", re.IGNORECASE)
_KEYWORD = re.compile(r"^\s*(?:--[^\n]*\n\s*)*(\w+)", re.IGNORECASE)


class Delete(BaseModel):
    """One DELETE statement a unit ran, to run again on the warehouse."""

    model_config = ConfigDict(extra="forbid")
    sql: str
    params: list[Any] = []


class UnitResult(BaseModel):
    """What a unit of work brings back to the flow: its outcome, the deletes it ran, the rows it inserted."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    outcome: Outcome
    deletes: list[Delete] = []
    rows: dict[str, pa.Table] = {}  # table -> the rows the unit inserted (and kept)

    def row_counts(self) -> dict[str, int]:
        """Table -> rows, for logs and tests."""
        return {table: rows.num_rows for table, rows in self.rows.items()}


_READERS: dict[str, duckdb.DuckDBPyConnection] = {}
_READERS_LOCK = threading.Lock()


def work_dir(settings: Settings) -> Path:
    """Where the warehouse copies go: `nightly_work_dir`, or `.faultline-work/` beside the warehouse file."""
    return Path(settings.nightly_work_dir or Path(settings.duckdb_path).resolve().parent / ".faultline-work")


def copy_warehouse(conn: duckdb.DuckDBPyConnection, settings: Settings, name: str) -> Path:
    """Checkpoint the warehouse and copy its file to `<work dir>/<name>.duckdb`; the copy's path.

    The caller is the only writer and writes nothing while the copy is made. Older copies of this run's
    name are replaced; `remove_warehouse_copy` removes one when its stage is over. Without room for the checkpoint,
    the copy and the run's writes after it, the warehouse is left as it is (`OutOfSpace`, with the space needed and
    free).
    """
    folder = work_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.duckdb"
    source = Path(settings.duckdb_path)
    _check_room(source, folder)
    try:
        conn.execute("CHECKPOINT")
    except duckdb.Error as exc:
        full = out_of_space(exc, source)
        if full is not None:
            raise full from exc
        raise
    partial = target.with_suffix(".partial")
    try:
        shutil.copyfile(source, partial)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise FaultlineError(f"cannot copy the warehouse to {partial}: {exc}", fix=_ROOM_FIX) from exc
    partial.replace(target)
    return target


_ROOM_FIX = ("free space there, or point nightly_work_dir (FAULTLINE_NIGHTLY_WORK_DIR) at a folder on another disk; "
             "then run the nightly again (finished incidents are not redone)")


def _check_room(source: Path, folder: Path) -> None:
    """Refuse before writing: a checkpoint that runs out of space invalidates the warehouse for this process (DuckDB
    treats it as fatal), and a copy that does leaves the run nothing to read."""
    wal = source.with_name(source.name + ".wal")
    pending = wal.stat().st_size if wal.exists() else 0  # the checkpoint moves it into the file
    copy = source.stat().st_size + pending
    same_disk = folder.stat().st_dev == source.parent.stat().st_dev
    own = pending + COPY_HEADROOM + (copy if same_disk else 0)
    require_room(source.parent, own, f"the nightly's checkpoint ({size(pending)}), results ({size(COPY_HEADROOM)} "
                 f"kept free){f' and copy ({size(copy)})' if same_disk else ''} of the warehouse {source}", _ROOM_FIX)
    if not same_disk:
        require_room(folder, copy, f"the copy of the warehouse {source} ({size(copy)})", _ROOM_FIX)


def remove_warehouse_copy(path: Path) -> None:
    """Remove a warehouse copy (and its write-ahead log, if a reader left one); this process lets go of it first."""
    with _READERS_LOCK:
        reader = _READERS.pop(str(path), None)
    if reader is not None:
        reader.close()
    for leftover in (path, path.with_suffix(".duckdb.wal")):
        leftover.unlink(missing_ok=True)


READER_MEMORY_LIMIT = "1GB"  # a unit reads one incident's rows; a worker's cache need not grow with the warehouse


def _reader(snapshot: Path, memory_limit: str = "") -> duckdb.DuckDBPyConnection:
    """This process's in-memory database with `snapshot` attached read-only (one per process; the copy of an
    earlier stage is let go when a new one is asked for), its buffer cache capped (`duckdb_memory_limit`, or
    1 GB)."""
    key = str(snapshot)
    with _READERS_LOCK:
        if key not in _READERS:
            for old in list(_READERS):
                _READERS.pop(old).close()
            if not snapshot.is_file():
                raise FaultlineError(f"the warehouse copy {snapshot} is not there",
                                     fix="workers on other machines need nightly_work_dir on a shared filesystem")
            # one thread: a unit's queries read one incident's rows, and a worker is one of several on the machine
            db = duckdb.connect(":memory:", config={"memory_limit": memory_limit or READER_MEMORY_LIMIT,
                                                    "threads": 1})
            db.execute(f"ATTACH '{key}' AS {SNAPSHOT_ALIAS} (READ_ONLY)")
            _READERS[key] = db
        return _READERS[key]


class JournalingConnection:
    """A cursor that runs everything on the unit's space and notes the DELETE statements that took effect.

    Behaves as the DuckDB connection the units expect (`execute`, `executemany`, `sql`, `register`, `cursor`...);
    a new cursor shares the journal and the search path. A rolled-back transaction takes its deletes back.
    """

    def __init__(self, cursor: duckdb.DuckDBPyConnection, search_path: str, journal: list[Delete],
                 lock: threading.Lock) -> None:
        self._cursor = cursor
        self._search_path = search_path
        self._journal = journal
        self._lock = lock
        self._began: int | None = None
        cursor.execute(f"SET search_path = '{search_path}'")

    def _note(self, sql: str, params: Any) -> None:
        match = _KEYWORD.match(sql)
        keyword = match.group(1).upper() if match else ""
        if keyword == "DELETE":
            with self._lock:
                self._journal.append(Delete(sql=sql, params=list(params or [])))
        elif keyword in ("UPDATE", "MERGE", "TRUNCATE", "DROP", "ALTER"):
            raise FaultlineError(f"a unit of nightly work ran {keyword}, which cannot be replayed on the warehouse",
                                 fix="units may insert and delete rows only (faultline/nightly/workspace.py)")
        elif keyword == "BEGIN":
            self._began = len(self._journal)
        elif keyword == "COMMIT":
            self._began = None
        elif keyword == "ROLLBACK" and self._began is not None:
            with self._lock:
                del self._journal[self._began:]
            self._began = None

    def execute(self, sql: str, parameters: Any = None) -> duckdb.DuckDBPyConnection:
        self._note(sql, parameters)
        return self._cursor.execute(sql, parameters) if parameters is not None else self._cursor.execute(sql)

    def executemany(self, sql: str, parameters: Any = None) -> duckdb.DuckDBPyConnection:
        for params in parameters or []:
            self._note(sql, params)
        return self._cursor.executemany(sql, parameters)

    def sql(self, query: str, **options: Any) -> duckdb.DuckDBPyRelation:
        self._note(query, options.get("params"))
        return self._cursor.sql(query, **options)

    def cursor(self) -> JournalingConnection:
        return JournalingConnection(self._cursor.cursor(), self._search_path, self._journal, self._lock)

    def __getattr__(self, name: str) -> Any:  # register, unregister, fetch*, close...
        return getattr(self._cursor, name)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._cursor.close()


class UnitSpace:
    """One unit's tables, its journal and its cursor (`conn`)."""

    def __init__(self, db: duckdb.DuckDBPyConnection, method: Method) -> None:
        self.schema = f"unit_{uuid.uuid4().hex}"
        self.tables = OUTPUT_TABLES[method]
        self.journal: list[Delete] = []
        setup = db.cursor()
        try:
            setup.execute(f"CREATE SCHEMA memory.{self.schema}")
            ddl = dict(setup.execute("SELECT table_name, sql FROM duckdb_tables() WHERE database_name = ?",
                                     [SNAPSHOT_ALIAS]).fetchall())
            for table in self.tables:
                if table not in ddl:
                    raise FaultlineError(f"the warehouse copy has no table {table}",
                                         fix="upgrade the warehouse (`faultline db migrate`) before the nightly run")
                setup.execute(_CREATE.sub(f"CREATE TABLE memory.{self.schema}.{table} (", ddl[table], count=1))
        finally:
            setup.close()
        self._db = db
        self.conn = JournalingConnection(db.cursor(), f"memory.{self.schema},{SNAPSHOT_ALIAS}.main", self.journal,
                                         threading.Lock())

    def collect(self, outcome: Outcome) -> UnitResult:
        """The unit's result: its outcome, its deletes in order, and the rows left in its tables."""
        rows: dict[str, pa.Table] = {}
        reader = self._db.cursor()
        try:
            for table in self.tables:
                found = reader.sql(f"SELECT * FROM memory.{self.schema}.{table}").to_arrow_table()
                if found.num_rows:
                    rows[table] = found
        finally:
            reader.close()
        return UnitResult(outcome=outcome, deletes=list(self.journal), rows=rows)

    def drop(self) -> None:
        self.conn.close()
        cleanup = self._db.cursor()
        try:
            cleanup.execute(f"DROP SCHEMA IF EXISTS memory.{self.schema} CASCADE")
        finally:
            cleanup.close()


@contextmanager
def unit_space(snapshot: Path, method: Method, memory_limit: str = "") -> Iterator[UnitSpace]:
    """A fresh space for one `method` unit over the warehouse copy `snapshot`; dropped on exit."""
    space = UnitSpace(_reader(snapshot, memory_limit), method)
    try:
        yield space
    finally:
        space.drop()


def replay(conn: duckdb.DuckDBPyConnection, result: UnitResult) -> None:
    """Replay one unit's result on the warehouse (the caller holds the transaction): deletes, then rows."""
    for delete in result.deletes:
        conn.execute(delete.sql, delete.params)
    for table, rows in result.rows.items():
        view = f"unit_rows_{table}"
        conn.register(view, rows)
        try:
            conn.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {view}")
        finally:
            conn.unregister(view)
