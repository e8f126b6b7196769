"""A unit's space over a frozen warehouse: what it writes comes back as rows and deletes, and the flow's replay of
them leaves the warehouse as the unit running on it would have; what cannot be replayed is refused."""

from __future__ import annotations

import duckdb
import pytest

from faultline.errors import FaultlineError
from faultline.nightly.work import Outcome

EVAL = ("INSERT INTO evaluations (incident_id, method, metric, value, run_id, created_at) "
        "VALUES (?, 'sade', ?, ?, 'r0', now())")


def _outcome(incident: str = "inc-1") -> Outcome:
    return Outcome(incident_id=incident, method="sade", seconds=0.0)


@pytest.fixture
def frozen(settings, conn):
    """The warehouse with two incidents' scores, frozen; its path."""
    from faultline.nightly.workspace import freeze, thaw

    conn.executemany(EVAL, [["inc-1", "rca_f1", 0.5], ["inc-2", "rca_f1", 1.0]])
    path = freeze(conn, settings, "test")
    yield path
    thaw(path)
    assert not path.exists()


def test_the_replayed_unit_replaces_its_incident_rows_and_leaves_the_others(conn, frozen):
    from faultline.nightly.workspace import persist, unit_space

    with unit_space(frozen, "sade") as space:
        space.conn.execute("DELETE FROM evaluations WHERE incident_id = ? AND method = 'sade'", ["inc-1"])
        space.conn.execute(EVAL, ["inc-1", "rca_f1", 0.9])
        seen = space.conn.execute("SELECT count(*) FROM tickets").fetchone()[0]  # an input: read from the copy
        result = space.collect(_outcome())
    assert seen == 0 and result.row_counts() == {"evaluations": 1} and len(result.deletes) == 1
    assert conn.execute("SELECT count(*) FROM evaluations").fetchone()[0] == 2  # nothing written yet
    persist(conn, result)
    assert sorted(conn.execute("SELECT incident_id, value FROM evaluations").fetchall()) == [
        ("inc-1", 0.9), ("inc-2", 1.0)]


def test_a_delete_the_unit_rolled_back_is_not_replayed(conn, frozen):
    from faultline.nightly.workspace import persist, unit_space

    with unit_space(frozen, "sade") as space:
        cursor = space.conn.cursor()  # a second cursor of the unit shares its tables and its journal
        cursor.execute("BEGIN TRANSACTION")
        cursor.execute("DELETE FROM evaluations WHERE incident_id = ?", ["inc-2"])
        cursor.execute("ROLLBACK")
        cursor.execute("DELETE FROM evaluations WHERE incident_id = ?", ["inc-1"])
        result = space.collect(_outcome())
    assert [d.params for d in result.deletes] == [["inc-1"]]
    persist(conn, result)
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
