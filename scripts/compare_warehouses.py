"""Do two warehouses hold the same results? For a change that must not change behaviour (a refactor).

    .venv/bin/python scripts/compare_warehouses.py BEFORE.duckdb AFTER.duckdb [--json]

Every table and mart of BEFORE is compared with AFTER's: its row count, and a digest of its rows with the
columns that differ between any two runs left out (wall-clock times, run ids, durations, generated ids; see
`VOLATILE`, and the timings inside JSON documents). A table whose digest differs names the columns whose values
differ, so a new score or a changed label shows at once. Exit status 1 when anything differs. Run both sides with
the same PYTHONHASHSEED: a few choices (which of two equal reasons a log scope records) follow set order.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import duckdb

# columns whose values depend on when or how fast a run went, never on what it found
VOLATILE = re.compile(r"(^|_)(run_id|runs?|created_at|started_at|finished_at|updated_at|ingested_at|at|"
                      r"elapsed(_s|_ms)?|"
                      r"seconds|duration(_s|_ms)?|ms|prefect_flow_run_id|flow_run_id|latency_ms|host|pid|"
                      r"mean_seconds|max_seconds|elapsed_mean|total_seconds|wall_s|when)$|_s$")
# rows that hold a duration (a metric measured in seconds): compared without them
TIMED_ROWS = {"evaluations": "WHERE metric <> 'elapsed_s'"}
# tables that describe the runs themselves rather than their results
RUN_TABLES = {"runs", "mart_runs", "schema_migrations", "analysis_ledger", "marts_stale"}


def tables(conn: duckdb.DuckDBPyConnection) -> list[str]:
    rows = conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                        "ORDER BY table_name").fetchall()
    return [r[0] for r in rows]


def stable_columns(conn: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The table's columns that hold results, each as an expression: floats rounded (a mean's last digits follow
    the order DuckDB's threads added it up in), a mart's lists sorted (`list(DISTINCT ...)` has no order)."""
    cols = conn.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                        "AND table_schema = 'main' ORDER BY ordinal_position", [table]).fetchall()

    def stable(column: str, kind: str) -> str:
        if kind in ("DOUBLE", "FLOAT", "REAL"):
            return f'round("{column}", 9)'
        if table.startswith("mart_") and re.fullmatch(r"(VARCHAR|INTEGER|BIGINT|DOUBLE)\[\]", kind):
            return f'list_sort("{column}")'
        return f'"{column}"'

    return [stable(c, kind) for c, kind in cols if not VOLATILE.search(c)]


ROOT = ""  # the checkout a side ran from: its paths are compared without it (set per side by `compare`)


def _stable_json(column: str) -> str:
    """A column's value as text, with volatile keys of JSON documents (timings, durations) masked."""
    text = f"CAST({column} AS VARCHAR)"
    if ROOT:
        text = f"replace({text}, '{ROOT}', '<checkout>')"
    return (f"regexp_replace({text}, "
            "'\"(elapsed_s|elapsed_ms|seconds|run_id|created_at|timings|duration_ms)\": ?(\\{[^}]*\\}|[^,}]*)', "
            "'\"\\1\": _', 'g')")


def digest(conn: duckdb.DuckDBPyConnection, table: str, columns: list[str], where: str = "") -> str | None:
    if not columns:
        return None
    parts = ", ".join(_stable_json(c) for c in columns)
    return conn.execute(f"SELECT md5(coalesce(string_agg(h, '|' ORDER BY h), '')) FROM "
                        f"(SELECT md5(concat_ws('\x1f', {parts})) AS h FROM \"{table}\" {where})").fetchone()[0]


def column_digest(conn: duckdb.DuckDBPyConnection, table: str, column: str, where: str = "") -> str:
    return conn.execute(f"SELECT md5(coalesce(string_agg(v, '|' ORDER BY v), '')) FROM "
                        f"(SELECT {_stable_json(column)} AS v FROM \"{table}\" {where})").fetchone()[0]


def _digests(conn: duckdb.DuckDBPyConnection, root: str, table: str, cols: list[str], where: str) -> tuple:
    global ROOT
    ROOT = root
    try:
        return digest(conn, table, cols, where), {c: column_digest(conn, table, c, where) for c in cols}
    finally:
        ROOT = ""


def compare(before: Path, after: Path, roots: tuple[str, str] = ("", "")) -> dict:
    a = duckdb.connect(str(before), read_only=True)
    b = duckdb.connect(str(after), read_only=True)
    report: dict = {"same": [], "differ": {}, "missing": [], "new": []}
    ours = set(tables(b))
    for table in tables(a):
        if table not in ours:
            report["missing"].append(table)
            continue
        count_a = a.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        count_b = b.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        cols = [c for c in stable_columns(a, table) if c in set(stable_columns(b, table))]
        if table in RUN_TABLES:
            cols = []
        where = TIMED_ROWS.get(table, "")
        whole_a, by_column_a = _digests(a, roots[0], table, cols, where)
        whole_b, by_column_b = _digests(b, roots[1], table, cols, where)
        if count_a == count_b and whole_a == whole_b:
            report["same"].append(table)
            continue
        columns = [c for c in cols if by_column_a[c] != by_column_b[c]]
        report["differ"][table] = {"rows": [count_a, count_b], "columns": columns}
    report["new"] = sorted(ours - set(tables(a)))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--roots", nargs=2, default=("", ""), metavar=("BEFORE_ROOT", "AFTER_ROOT"),
                        help="the checkouts the two runs ran from: paths under them compare equal")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = compare(args.before, args.after, tuple(args.roots))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"same rows and values: {len(report['same'])} tables")
        for table, diff in report["differ"].items():
            print(f"DIFFERS {table}: rows {diff['rows'][0]} -> {diff['rows'][1]}; columns {', '.join(diff['columns'])}")
        for table in report["missing"]:
            print(f"MISSING {table}")
        for table in report["new"]:
            print(f"NEW {table}")
    return 1 if report["differ"] or report["missing"] else 0


if __name__ == "__main__":
    sys.exit(main())
