"""A unit's space over a frozen warehouse: what it writes comes back as rows and deletes, and the flow's replay of
them leaves the warehouse as the unit running on it would have; what cannot be replayed is refused."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import pyarrow as pa
import pytest

from faultline.errors import FaultlineError
from faultline.outcome import Outcome

EVAL = ("INSERT INTO evaluations (incident_id, method, metric, value, run_id, created_at) "
        "VALUES (?, 'sade', ?, ?, 'r0', now())")


def _outcome(incident: str = "inc-1") -> Outcome:
    return Outcome(incident_id=incident, method="sade", seconds=0.0)


@pytest.fixture
def frozen(settings, conn):
    """The warehouse with two incidents' scores, frozen; its path."""
    from faultline.nightly.workspace import copy_warehouse, remove_warehouse_copy

    conn.executemany(EVAL, [["inc-1", "rca_f1", 0.5], ["inc-2", "rca_f1", 1.0]])
    path = copy_warehouse(conn, settings, "test")
    yield path
    remove_warehouse_copy(path)
    assert not path.exists()


def test_the_replayed_unit_replaces_its_incident_rows_and_leaves_the_others(conn, frozen):
    from faultline.nightly.workspace import replay, unit_space

    with unit_space(frozen, "sade") as space:
        space.conn.execute("DELETE FROM evaluations WHERE incident_id = ? AND method = 'sade'", ["inc-1"])
        space.conn.execute(EVAL, ["inc-1", "rca_f1", 0.9])
        seen = space.conn.execute("SELECT count(*) FROM tickets").fetchone()[0]  # an input: read from the copy
        result = space.collect(_outcome())
    assert seen == 0 and result.row_counts() == {"evaluations": 1} and len(result.deletes) == 1
    assert conn.execute("SELECT count(*) FROM evaluations").fetchone()[0] == 2  # nothing written yet
    replay(conn, result)
    assert sorted(conn.execute("SELECT incident_id, value FROM evaluations").fetchall()) == [
        ("inc-1", 0.9), ("inc-2", 1.0)]


def test_a_delete_the_unit_rolled_back_is_not_replayed(conn, frozen):
    from faultline.nightly.workspace import replay, unit_space

    with unit_space(frozen, "sade") as space:
        cursor = space.conn.cursor()  # a second cursor of the unit shares its tables and its journal
        cursor.execute("BEGIN TRANSACTION")
        cursor.execute("DELETE FROM evaluations WHERE incident_id = ?", ["inc-2"])
        cursor.execute("ROLLBACK")
        cursor.execute("DELETE FROM evaluations WHERE incident_id = ?", ["inc-1"])
        result = space.collect(_outcome())
    assert [d.params for d in result.deletes] == [["inc-1"]]
    replay(conn, result)
    assert conn.execute("SELECT incident_id FROM evaluations").fetchall() == [("inc-2",)]


def test_writing_an_input_table_or_updating_rows_is_refused(frozen):
    from faultline.nightly.workspace import unit_space

    with unit_space(frozen, "sade") as space:
        with pytest.raises(duckdb.Error, match="read-only"):
            space.conn.execute("INSERT INTO runs (run_id, kind, status) VALUES ('x', 'nightly', 'running')")
        with pytest.raises(FaultlineError, match="UPDATE"):
            space.conn.execute("UPDATE evaluations SET value = 0")


def test_two_units_at_once_keep_their_rows_apart(frozen):
    from faultline.nightly.workspace import unit_space

    with unit_space(frozen, "sade") as one, unit_space(frozen, "sade") as other:
        one.conn.execute(EVAL, ["inc-1", "a", 1.0])
        other.conn.execute(EVAL, ["inc-2", "b", 2.0])
        first, second = one.collect(_outcome()), other.collect(_outcome("inc-2"))
    assert first.rows["evaluations"].to_pylist()[0]["metric"] == "a"
    assert second.rows["evaluations"].to_pylist()[0]["metric"] == "b"


def _excerpt_rows(incident: str):
    """One stored ASTRA round's log excerpt, about as large as the sample's (~250 KB of JSON)."""
    lines = [{"line_no": n, "text": f"{incident} zebra: interface eth{n % 4} changed state {n}" * 8}
             for n in range(500)]
    return pa.table({"incident_id": [incident], "round": [0], "input_lines": [500], "excerpt_lines": [500],
                     "level_counts": ["{}"], "suppressed": ["[]"], "collapsed_lines": [0], "truncated": [False],
                     "excerpt": [json.dumps({"lines": lines})], "ticket_terms": [["zebra"]],
                     "created_at": [datetime.now(UTC)]})


def test_a_nights_checkpoints_write_new_results_and_leave_stored_ones_alone(settings):
    """The nightly's writer persists results in batches and the warehouse checkpoints between them; each
    checkpoint writes the new rows only. With DuckDB's default, each one also rewrote every stored row of a
    documents table (its row groups merged again), so a night's memory and write time grew with all it had
    stored (docs/benchmarks.md, the nightly's memory)."""
    from faultline.nightly.backlog import BacklogItem
    from faultline.nightly.persist import ResultWriter
    from faultline.nightly.run import NightlyRun
    from faultline.nightly.workspace import UnitResult

    def stored_blocks(cursor):
        return cursor.execute("SELECT row_group_id, block_id FROM pragma_storage_info('log_excerpts') "
                              "WHERE column_name = 'excerpt' AND segment_type <> 'VALIDITY' "
                              "ORDER BY row_group_id").fetchall()

    with NightlyRun.begin(settings) as run:
        seen = []
        for batch in range(3):
            done = []
            for k in range(4):
                incident = f"inc-{batch}-{k}"
                item = BacklogItem(incident_id=incident, ticket_id=incident, title="t", digests={"astra": "d"})
                outcome = Outcome(incident_id=incident, method="astra", seconds=0.0)
                done.append((item, UnitResult(outcome=outcome, rows={"log_excerpts": _excerpt_rows(incident)})))
            assert [error for _, _, error in ResultWriter(run, total=4).write(done)] == [None] * 4
            with run.cursor() as cursor:
                cursor.execute("CHECKPOINT")
                seen.append(stored_blocks(cursor))
    first = seen[0]
    assert first, "the first batch's excerpts were written to the file"
    assert seen[1][:len(first)] == first and seen[2][:len(first)] == first
    assert len(seen[2]) > len(first)
