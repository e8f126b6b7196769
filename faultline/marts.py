"""SQL marts: `warehouse/marts/<name>.sql` (one SELECT) + `<name>.yml` (grain, columns, tests).

`refresh_marts` rebuilds every mart in dependency order in one transaction, with the taxonomy tables and scalar
functions SQL lacks registered for the while; incremental marts refresh only the incidents in ``marts_stale``.
Each mart's columns and declarative tests are checked afterwards. The rules: docs/marts.md.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import yaml

from faultline.diskspace import out_of_space, rollback
from faultline.errors import FaultlineError
from faultline.resources import warehouse_dir
from faultline.stale import MARKED_TABLES

if TYPE_CHECKING:
    from faultline.config import Settings

_NAME = re.compile(r"^mart_[a-z0-9_]+$")
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
TEST_KINDS = ("unique", "not_null", "accepted_range", "accepted_values")

TAXONOMY_LABELS_SQL = """
CREATE OR REPLACE TEMP TABLE taxonomy_labels (label VARCHAR PRIMARY KEY, family VARCHAR, domain VARCHAR,
                                              nika_category VARCHAR)
"""
TAXONOMY_NO_FAULT_SQL = "CREATE OR REPLACE TEMP TABLE taxonomy_no_fault (word VARCHAR PRIMARY KEY)"
DROP_TAXONOMY_SQL = "DROP TABLE IF EXISTS temp.main.taxonomy_labels; DROP TABLE IF EXISTS temp.main.taxonomy_no_fault"
INSERT_LABEL_SQL = "INSERT INTO taxonomy_labels VALUES (?, ?, ?, ?)"
INSERT_NO_FAULT_SQL = "INSERT INTO taxonomy_no_fault VALUES (?)"
TABLE_COLUMNS_SQL = "SELECT column_name FROM information_schema.columns WHERE table_name = ? " \
                    "AND table_schema = 'main' ORDER BY ordinal_position"
BUILT_WITH_SQL = "SELECT comment FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?"
STALE_IDS_SQL = "SELECT DISTINCT incident_id FROM marts_stale ORDER BY incident_id"
FINGERPRINT_PREFIX = "faultline mart "
# the helpers' code and data: a change to them changes what every mart computes
HELPER_FILES = ("truth/rubric.py", "truth/rubric.yml", "truth/taxonomy.py", "marts.py")


@dataclass(frozen=True)
class MartSpec:
    """One mart as its yml describes it, with the path of its SQL."""

    name: str
    grain: str
    description: str
    columns: dict[str, str]
    tests: list[dict[str, Any]]
    depends_on: list[str]
    sql_path: Path
    incremental: bool = False


@dataclass(frozen=True)
class FailedTest:
    """A declarative test that did not hold, and what was found."""

    test: str
    message: str


@dataclass(frozen=True)
class MartResult:
    """What refreshing one mart produced."""

    name: str
    rows: int
    seconds: float
    failed_tests: list[FailedTest] = field(default_factory=list)
    incremental: bool = False  # only the stale incidents' rows were rebuilt
    incidents: int | None = None  # how many, when incremental

    @property
    def ok(self) -> bool:
        return not self.failed_tests


def list_marts(folder: Path | None = None) -> list[MartSpec]:
    """Every mart of `folder` (default `warehouse/marts`) in dependency order; a broken yml is an error."""
    folder = folder or warehouse_dir() / "marts"
    specs: dict[str, MartSpec] = {}
    for path in sorted(folder.glob("*.yml")):
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise FaultlineError(f"{path}: not valid YAML ({exc})", fix="fix the mart's yml file") from exc
        name = str(data.get("mart") or path.stem)
        sql_path = path.with_suffix(".sql")
        if not _NAME.match(name) or name != path.stem or not sql_path.is_file():
            raise FaultlineError(f"{path}: a mart needs `mart: {path.stem}` (named mart_*) "
                                 f"and a sibling {sql_path.name}",
                                 fix="name the yml and sql files after the mart, e.g. mart_cost.yml + mart_cost.sql")
        tests = list(data.get("tests") or [])
        for test in tests:
            if not isinstance(test, dict) or len(test) != 1 or next(iter(test)) not in TEST_KINDS:
                raise FaultlineError(f"{path}: unknown test {test!r}", fix=f"use one of {', '.join(TEST_KINDS)}")
        specs[name] = MartSpec(name=name, grain=str(data.get("grain") or ""),
                               description=str(data.get("description") or ""),
                               columns={str(k): str(v or "") for k, v in (data.get("columns") or {}).items()},
                               tests=tests, depends_on=[str(d) for d in data.get("depends_on") or []],
                               sql_path=sql_path, incremental=data.get("incremental") is True)
        if specs[name].incremental and "incident_id" not in specs[name].columns:
            raise FaultlineError(f"{path}: an incremental mart needs an incident_id column",
                                 fix="document its incident_id column, or remove `incremental: true`")
    return _in_dependency_order(specs)


def _in_dependency_order(specs: dict[str, MartSpec]) -> list[MartSpec]:
    ordered: list[MartSpec] = []
    done: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in trail:
            raise FaultlineError(f"marts depend on each other in a cycle: {' -> '.join((*trail, name))}",
                                 fix="remove one depends_on entry")
        if name not in specs:
            raise FaultlineError(f"{trail[-1]} depends on {name}, which has no yml in the marts folder",
                                 fix="add the missing mart or correct depends_on")
        for dep in specs[name].depends_on:
            visit(dep, (*trail, name))
        done.add(name)
        ordered.append(specs[name])

    for name in sorted(specs):
        visit(name, ())
    return ordered


def mart_select(spec: MartSpec) -> str:
    """The mart's SELECT without a trailing semicolon; DDL or several statements are refused."""
    sql = spec.sql_path.read_text().strip().rstrip(";").strip()
    body = _COMMENT.sub(" ", sql).strip()
    if not re.match(r"(?i)^(with|select|from)\b", body) or ";" in body:
        raise FaultlineError(f"{spec.sql_path}: a mart file holds exactly one SELECT (WITH ... SELECT)",
                             fix="remove DDL and extra statements; refresh_marts creates the table itself")
    return sql


def register_helpers(conn: duckdb.DuckDBPyConnection) -> None:
    """Create the taxonomy temp tables and the scalar Python functions the mart SQL uses."""
    from faultline.truth.taxonomy import taxonomy

    tax = taxonomy()
    conn.execute(TAXONOMY_LABELS_SQL)
    conn.executemany(INSERT_LABEL_SQL, [[label, family, tax.domains.get(family), tax.categories.get(label)]
                                        for label, family in sorted(tax.families.items())])
    conn.execute(TAXONOMY_NO_FAULT_SQL)
    conn.executemany(INSERT_NO_FAULT_SQL, [[w] for w in sorted(tax.no_fault)])
    for name, func, params, returns, nulls in _functions():
        try:
            conn.remove_function(name)
        except duckdb.Error:
            pass  # not registered by this connection
        conn.create_function(name, func, params, returns, null_handling=nulls)


def unregister_helpers(conn: duckdb.DuckDBPyConnection) -> None:
    """Drop the helpers again. DuckDB shares Python functions with every connection to the same database
    and one left behind by a closed connection would crash the next caller; the temp tables would show
    up as undocumented tables in the connection's information_schema."""
    conn.execute(DROP_TAXONOMY_SQL)
    for name, *_ in _functions():
        try:
            conn.remove_function(name)
        except duckdb.Error:
            pass  # never registered (the refresh failed before)


def _functions() -> list[tuple[str, Any, list[Any], Any, str]]:
    from scipy import stats

    from faultline.truth.records import Truth
    from faultline.truth.rubric import score_accuracy, stated_label

    try:
        from duckdb import sqltypes as types
    except ImportError:  # duckdb < 1.4
        from duckdb import typing as types  # type: ignore[no-redef]
    text_list = duckdb.list_type(types.VARCHAR)

    def chi2_sf(x: float, df: float) -> float:
        return float(stats.chi2.sf(x, df))

    def t_ppf(q: float, df: float) -> float:
        return float(stats.t.ppf(q, df))

    def rubric_accuracy(label: str | None, category: str | None, devices: list[str] | None, root_cause: str | None,
                        is_faulty: bool | None, truth_labels: list[str] | None,
                        truth_devices: list[str] | None) -> int | None:
        if is_faulty is None:
            return None  # no ground truth: nothing to score against
        truth = Truth(incident_id="mart", is_faulty=is_faulty, labels=list(truth_labels or []),
                      devices=list(truth_devices or []))
        return score_accuracy(label=label, category=category, devices=list(devices or []),
                              root_cause=root_cause or "", truth=truth).score

    def label_of(label: str | None, root_cause: str | None) -> str | None:
        return stated_label(label, root_cause or "")

    return [
        ("chi2_sf", chi2_sf, [types.DOUBLE, types.DOUBLE], types.DOUBLE, "default"),
        ("t_ppf", t_ppf, [types.DOUBLE, types.DOUBLE], types.DOUBLE, "default"),
        ("rubric_accuracy", rubric_accuracy, [types.VARCHAR, types.VARCHAR, text_list, types.VARCHAR,
                                              types.BOOLEAN, text_list, text_list], types.INTEGER, "special"),
        ("stated_label", label_of, [types.VARCHAR, types.VARCHAR], types.VARCHAR, "special"),
    ]


def refresh_marts(conn: duckdb.DuckDBPyConnection, settings: Settings | None = None, *,
                  folder: Path | None = None, full: bool = False) -> list[MartResult]:
    """Refresh every mart in one transaction, then run its tests; returns one result per mart.

    Incremental marts rebuild only the incidents in ``marts_stale`` (docs/marts.md#incremental-marts), unless `full`;
    the others are rebuilt whole. `settings` is accepted so callers pass the one settings object down; no
    setting affects marts yet.
    """
    del settings
    specs = list_marts(folder)
    selects = {spec.name: mart_select(spec) for spec in specs}
    fingerprints = _fingerprints(conn, specs, selects)
    timings: dict[str, float] = {}
    scoped: dict[str, list[str]] = {}  # incremental mart -> the incidents refreshed
    register_helpers(conn)
    try:
        conn.execute("BEGIN TRANSACTION")
        try:
            stale = [r[0] for r in conn.execute(STALE_IDS_SQL).fetchall()]
            for spec in specs:
                started = time.perf_counter()
                reads = _check_incremental(conn, spec, selects[spec.name], specs) if spec.incremental else []
                if (not full and spec.incremental and all(d in scoped for d in spec.depends_on)
                        and _built_with(conn, spec.name) == fingerprints[spec.name]):
                    _refresh_incidents(conn, spec, selects[spec.name], reads, stale)
                    scoped[spec.name] = stale
                else:
                    _rebuild(conn, spec, selects[spec.name], fingerprints[spec.name])
                timings[spec.name] = time.perf_counter() - started
            conn.execute("DELETE FROM marts_stale")
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise
    finally:
        unregister_helpers(conn)
    results = []
    for spec in specs:
        rows = conn.execute(f'SELECT count(*) FROM "{spec.name}"').fetchone()[0]
        ids = scoped.get(spec.name)
        results.append(MartResult(name=spec.name, rows=int(rows), seconds=timings[spec.name],
                                  failed_tests=run_tests(conn, spec, incidents=ids), incremental=ids is not None,
                                  incidents=None if ids is None else len(ids)))
    return results


def _fingerprints(conn: duckdb.DuckDBPyConnection, specs: list[MartSpec], selects: dict[str, str]) -> dict[str, str]:
    """Mart -> what its table was built by: its SQL, the warehouse's schema version and the helpers' code."""
    helpers = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for name in HELPER_FILES:
        helpers.update((package / name).read_bytes())
    schema = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    helpers.update(f"schema {schema}".encode())
    return {spec.name: FINGERPRINT_PREFIX + hashlib.sha256(helpers.digest() + selects[spec.name].encode())
            .hexdigest()[:24] for spec in specs}


def _built_with(conn: duckdb.DuckDBPyConnection, name: str) -> str | None:
    row = conn.execute(BUILT_WITH_SQL, [name]).fetchone()
    return row[0] if row else None


def _check_incremental(conn: duckdb.DuckDBPyConnection, spec: MartSpec, select: str,
                       specs: list[MartSpec]) -> list[str]:
    """The tables an incremental mart reads; refused when one's writers do not mark `marts_stale` (its rows
    would go stale without anyone noticing)."""
    incremental = {s.name for s in specs if s.incremental}
    try:
        tables = sorted(conn.get_table_names(select))
    except duckdb.Error as exc:
        raise FaultlineError(f"{spec.sql_path}: cannot list the tables an incremental mart reads ({exc})",
                             fix="write its joins with ON instead of USING, or remove `incremental: true`") from exc
    unmarked = [t for t in tables if t not in MARKED_TABLES and not (t in incremental and t in spec.depends_on)]
    if unmarked:
        raise FaultlineError(f"{spec.sql_path}: incremental mart {spec.name} reads {', '.join(unmarked)}, whose "
                             "writers do not mark incidents in marts_stale",
                             fix="remove `incremental: true` from its yml, or read only "
                                 f"{', '.join(sorted(MARKED_TABLES))} and incremental marts in depends_on")
    return tables


def _rebuild(conn: duckdb.DuckDBPyConnection, spec: MartSpec, select: str, fingerprint: str) -> None:
    _run(conn, spec, f'CREATE OR REPLACE TABLE "{spec.name}" AS\n{select}')
    conn.execute(f"COMMENT ON TABLE \"{spec.name}\" IS '{fingerprint}'")


def _refresh_incidents(conn: duckdb.DuckDBPyConnection, spec: MartSpec, select: str, tables: list[str],
                       incidents: list[str]) -> None:
    """Replace the mart's rows of `incidents` with what its SELECT gives for them now.

    Each table the SELECT reads is shadowed, for this statement, by a temporary view of those incidents' rows:
    a filter on the finished SELECT would not reach below its joins and window functions, which would then
    hold the whole history (DuckDB pushes an IN list into a scan only as an optional zone-map filter)."""
    if not incidents:
        return
    ids = _id_list(incidents)
    stored = _q(conn.execute("SELECT current_database()").fetchone()[0]) + ".main."
    # no finally: after a failed statement the transaction takes nothing but its rollback, which drops the views
    for table in tables:
        conn.execute(f"CREATE OR REPLACE TEMP VIEW {_q(table)} AS SELECT * FROM {stored}{_q(table)} "
                     f"WHERE incident_id IN ({ids})")
    conn.execute(f"DELETE FROM {stored}{_q(spec.name)} WHERE incident_id IN ({ids})")
    _run(conn, spec, f"INSERT INTO {stored}{_q(spec.name)} SELECT * FROM (\n{select}\n) WHERE incident_id IN ({ids})")
    for table in tables:
        conn.execute(f"DROP VIEW temp.main.{_q(table)}")


def _run(conn: duckdb.DuckDBPyConnection, spec: MartSpec, sql: str) -> None:
    try:
        conn.execute(sql)
    except duckdb.Error as exc:
        full = out_of_space(exc)
        if full is not None:
            raise full from exc
        raise FaultlineError(f"mart {spec.name} failed ({spec.sql_path}): {exc}",
                             fix=f"fix the SELECT in {spec.sql_path}; nothing was refreshed") from exc


def run_tests(conn: duckdb.DuckDBPyConnection, spec: MartSpec, *,
              incidents: list[str] | None = None) -> list[FailedTest]:
    """The mart's documentation check and declarative tests; each failure with what was found. With
    `incidents`, the tests check those incidents' rows (what an incremental refresh rebuilt)."""
    actual = [r[0] for r in conn.execute(TABLE_COLUMNS_SQL, [spec.name]).fetchall()]
    failed: list[FailedTest] = []
    undocumented = [c for c in actual if not spec.columns.get(c, "").strip()]
    stale = [c for c in spec.columns if c not in actual]
    if undocumented or stale:
        failed.append(FailedTest("columns", f"undocumented columns {undocumented}, documented but missing {stale}"))
    for test in spec.tests:
        kind, arg = next(iter(test.items()))
        label = f"{kind}: {arg}"
        columns = arg if kind in ("unique", "not_null") else [arg.get("column")] if isinstance(arg, dict) else []
        missing = [c for c in columns if c not in actual]
        if missing or not columns:
            failed.append(FailedTest(label, f"no such column(s) {missing or arg!r} in {spec.name}"))
            continue
        whole = incidents is None or (kind == "unique" and "incident_id" not in arg)
        bad = _violations(conn, _q(spec.name) if whole else _only(spec.name, incidents or []), kind, arg)
        if bad:
            failed.append(FailedTest(label, bad))
    return failed


def _q(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _id_list(incidents: list[str]) -> str:
    return ", ".join("'" + i.replace("'", "''") + "'" for i in incidents) or "NULL"


def _only(table: str, incidents: list[str]) -> str:
    """The mart's rows of `incidents`, as a FROM item."""
    return f"(SELECT * FROM {_q(table)} WHERE incident_id IN ({_id_list(incidents)}))"


def _violations(conn: duckdb.DuckDBPyConnection, t: str, kind: str, arg: Any) -> str:
    """What breaks the test in `t` (a quoted table, or a subquery), in words; empty when it holds."""
    if kind == "unique":
        cols = ", ".join(_q(c) for c in arg)
        n = conn.execute(f"SELECT count(*) FROM (SELECT {cols} FROM {t} "
                         f"GROUP BY ALL HAVING count(*) > 1)").fetchone()[0]
        return f"{n} key(s) of ({', '.join(arg)}) occur more than once" if n else ""
    if kind == "not_null":
        nulls = {c: conn.execute(f"SELECT count(*) FROM {t} WHERE {_q(c)} IS NULL").fetchone()[0] for c in arg}
        found = {c: n for c, n in nulls.items() if n}
        return f"null values: {found}" if found else ""
    col = _q(arg["column"])
    if kind == "accepted_range":
        n = conn.execute(f"SELECT count(*) FROM {t} WHERE {col} < ? OR {col} > ?",
                         [arg.get("min", float("-inf")), arg.get("max", float("inf"))]).fetchone()[0]
        return f"{n} row(s) outside [{arg.get('min')}, {arg.get('max')}]" if n else ""
    values = [str(v) for v in arg.get("values") or []]
    found = [r[0] for r in conn.execute(f"SELECT DISTINCT CAST({col} AS VARCHAR) FROM {t} WHERE {col} IS NOT NULL "
                                        "AND NOT list_contains(?, CAST({col} AS VARCHAR))".replace("{col}", col),
                                        [values]).fetchall()]
    return f"values outside {values}: {sorted(found)}" if found else ""
