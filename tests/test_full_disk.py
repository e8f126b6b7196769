"""A full disk under the warehouse: the run stops with the path and the space left, nothing is half-written, and the
same command completes once there is room. On a real small filesystem (a tmpfs, so root), never a mocked error."""

from __future__ import annotations

import os
import subprocess

import duckdb
import pytest

TICKETS = "".join(f'{{"key": "OPS-{n}", "summary": "router {n} down", "description": "{"bgp flap " * 200}", '
                  f'"created": "2024-01-0{1 + n % 9}T00:00:00Z"}}\n' for n in range(200))


@pytest.fixture
def disk(tmp_path):
    """A 16 MB tmpfs of its own, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root: mounts a small tmpfs to fill up")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=False)


@pytest.fixture
def settings(disk, tmp_path):
    from faultline.config import Settings

    return Settings(duckdb_path=disk / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)


def _fill(disk, leave: int = 0):
    """Take all the free space of `disk` but `leave` bytes; the filler's path (remove it to free the space)."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(1, free - leave))
    return filler


def _count(settings, sql):
    conn = duckdb.connect(str(settings.duckdb_path), read_only=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_an_ingest_on_a_full_disk_stops_naming_the_path_and_completes_once_there_is_room(settings, disk, tmp_path,
                                                                                         run_cli, capsys):
    tickets = tmp_path / "tickets.jsonl"
    tickets.write_text(TICKETS)
    run_cli("db", "migrate")
    filler = _fill(disk, leave=64 * 1024)  # room for the run's row, not for 200 tickets of 2 KB
    run_cli("ingest", "tickets", str(tickets), expect_exit=2)
    err = capsys.readouterr().err
    assert f"no space left writing {disk}/fl.duckdb" in err and "free there" in err
    assert "Traceback" not in err
    # nothing half-written: the warehouse opens, holds no ticket, and says the run failed and why
    assert _count(settings, "SELECT count(*) FROM tickets") == [(0,)]
    assert _count(settings, "SELECT status, error LIKE 'OutOfSpace%' FROM runs WHERE kind = 'ingest_tickets'") \
        == [("failed", True)]
    filler.unlink()
    run_cli("ingest", "tickets", str(tickets))
    assert _count(settings, "SELECT count(*), count(DISTINCT ticket_id) FROM tickets") == [(200, 200)]


def test_the_nightly_copy_of_the_warehouse_is_refused_without_room_and_leaves_the_warehouse_as_it_was(settings, disk):
    from faultline import db
    from faultline.diskspace import OutOfSpace
    from faultline.nightly.workspace import copy_warehouse

    conn = db.connect(settings.duckdb_path)
    conn.execute("CREATE TABLE padding AS SELECT range AS n, repeat('x', 100) AS text FROM range(20000)")
    conn.execute("CHECKPOINT")
    _fill(disk, leave=2 * 1024 * 1024)
    with pytest.raises(OutOfSpace, match=r"needs \d+\.\d MB in .*which has \d+\.\d MB free"):
        copy_warehouse(conn, settings, "run-analyse")
    assert not [p.name for p in (disk / ".faultline-work").iterdir()]  # no partial copy left behind
    assert conn.execute("SELECT count(*) FROM padding").fetchone() == (20000,)  # the warehouse still answers
    conn.close()
    assert _count(settings, "SELECT count(*) FROM padding") == [(20000,)]


def test_a_full_disk_error_is_recognised_wherever_it_surfaced():
    from faultline.diskspace import out_of_space

    try:
        try:
            raise duckdb.TransactionException('Failed to commit: Could not write file "/data/fl.duckdb.wal": '
                                              'No space left on device')
        except duckdb.Error:
            raise duckdb.TransactionException("cannot rollback - no transaction is active")  # noqa: B904
    except duckdb.Error as exc:
        full = out_of_space(exc)
    assert full is not None and "no space left writing /data/fl.duckdb.wal" in full.message
    assert out_of_space(duckdb.IOException('Could not read file "/data/x": permission denied')) is None
