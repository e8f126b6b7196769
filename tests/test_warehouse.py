"""Migrations, the documentation of every table and column, and `faultline db`."""

from __future__ import annotations

import json

import duckdb
import pytest

from faultline import db
from faultline.catalog import load_table_docs
from faultline.errors import FaultlineError

CORE_TABLES = {"tickets", "log_lines", "doc_chunks", "incidents", "ground_truth", "runs", "llm_calls",
               "run_failures", "quarantine", "schema_migrations"}


def _columns(conn) -> dict[str, set[str]]:
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main'"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def test_first_connect_applies_and_records_migrations(conn):
    assert set(_columns(conn)) >= CORE_TABLES
    applied = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert applied[0] == (1, "0001_core.sql")
    assert db.migrate(conn) == []  # nothing pending the second time


def test_every_table_and_column_is_documented(conn):
    docs = load_table_docs()
    for table, columns in _columns(conn).items():
        assert table in docs, f"table {table} has no warehouse/tables/{table}.yml"
        doc = docs[table]
        assert doc.grain.strip(), f"{table} has no grain"
        assert doc.description.strip(), f"{table} has no description"
        undocumented = {c for c in columns if not doc.columns.get(c, "").strip()}
        assert not undocumented, f"{table} columns without a description: {sorted(undocumented)}"
        stale = set(doc.columns) - columns
        assert not stale, f"{table}.yml documents columns the table lacks: {sorted(stale)}"


def test_edited_applied_migration_is_refused(tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_a.sql").write_text("CREATE TABLE a (x INTEGER);")
    conn = db.connect(":memory:", auto_migrate=False)
    assert db.migrate(conn, folder) == ["0001_a.sql"]
    (folder / "0001_a.sql").write_text("CREATE TABLE a (x INTEGER, y INTEGER);")
    with pytest.raises(FaultlineError, match="changed after it was applied"):
        db.migrate(conn, folder)


def test_failed_migration_leaves_nothing_half_applied(tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_ok.sql").write_text("CREATE TABLE a (x INTEGER);")
    (folder / "0002_bad.sql").write_text("CREATE TABLE b (x INTEGER); CREATE TABLE broken (;")
    conn = db.connect(":memory:", auto_migrate=False)
    with pytest.raises(duckdb.ParserException):
        db.migrate(conn, folder)
    tables = {r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "a" in tables and "b" not in tables
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()] == [1]


def test_badly_named_migration_is_an_error(tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "create_things.sql").write_text("SELECT 1;")
    with pytest.raises(FaultlineError, match="NNNN_snake_case"):
        db.discover_migrations(folder)


def test_db_sql_prints_table_and_json(settings, capsys, run_cli):
    run_cli("db", "migrate")
    capsys.readouterr()
    run_cli("db", "sql", "select 1 as one, 'x' as letter")
    out = capsys.readouterr().out
    assert "one" in out and "letter" in out and "1 row(s)" in out
    run_cli("db", "sql", "select 1 as one, 'x' as letter", "--json")
    assert json.loads(capsys.readouterr().out) == [{"one": 1, "letter": "x"}]


def test_db_sql_error_names_the_problem(run_cli, capsys):
    code = run_cli("db", "sql", "select * from no_such_table", expect_exit=2)
    assert code == 2
    err = capsys.readouterr().err
    assert "no_such_table" in err and "fix:" in err


def test_memory_limit_setting_reaches_duckdb_and_bad_values_are_clear(settings):
    conn = db.open_warehouse(settings.model_copy(update={"duckdb_memory_limit": "512MB"}))
    limit = conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.replace(" ", "").upper().startswith(("512", "488"))  # DuckDB prints MiB
    conn.close()
    with pytest.raises(FaultlineError, match="FAULTLINE_DUCKDB_MEMORY_LIMIT"):
        db.open_warehouse(settings.model_copy(update={"duckdb_memory_limit": "lots"}))
