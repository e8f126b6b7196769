"""The warehouse's run lock with real processes: a second writer refuses naming the first, or waits for it; a killed
holder blocks no one; a command that is refused writes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

# holds the lock of the warehouse argv[1] (and, with argv[2] == "open", the DuckDB file too) until stdin closes
HOLDER = """
import sys
from faultline.runlock import warehouse_lock
with warehouse_lock(sys.argv[1], "test holder"):
    if sys.argv[2:] == ["open"]:
        import duckdb
        conn = duckdb.connect(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def holder(settings):
    """Start a process that holds the test warehouse's lock; returns it once it holds it."""
    started: list[subprocess.Popen] = []

    def start(*extra: str) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-c", HOLDER, str(settings.duckdb_path), *extra], cwd=REPO,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        started.append(process)
        assert process.stdout.readline().strip() == "held"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def _faultline(settings, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "faultline.cli.main", "--db", str(settings.duckdb_path), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def test_a_second_ingest_refuses_naming_the_run_that_holds_the_warehouse(settings, holder, run_cli, capsys,
                                                                       tmp_path):
    other = holder()
    tickets = tmp_path / "t.jsonl"
    tickets.write_text('{"key": "OPS-1", "summary": "router down", "created": "2024-01-01T00:00:00Z"}\n')
    run_cli("ingest", "tickets", str(tickets), expect_exit=75)
    err = capsys.readouterr().err
    assert f"pid {other.pid} on " in err and "test holder" in err and "started " in err
    assert f"`-c {settings.duckdb_path}`" in err  # the holder's command line
    assert "--wait SECONDS" in err
    assert not settings.duckdb_path.exists()  # refused before the warehouse was opened: nothing written


def test_a_second_run_waits_for_the_first_when_asked(settings, holder):
    other = holder()
    waiter = subprocess.Popen([sys.executable, "-m", "faultline.cli.main", "--db", str(settings.duckdb_path),
                               "db", "migrate"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "FAULTLINE_WAREHOUSE_LOCK_WAIT_S": "60"})
    line = waiter.stderr.readline()
    assert "waiting up to 60 s" in line and f"pid {other.pid}" in line
    assert waiter.poll() is None  # still waiting while the other run holds the warehouse
    other.stdin.close()  # the first run ends
    out, _ = waiter.communicate(timeout=60)
    assert waiter.returncode == 0 and "applied" in out


def test_a_wait_that_runs_out_refuses(settings, holder):
    holder()
    started = time.monotonic()
    result = _faultline(settings, "db", "migrate", env={"FAULTLINE_WAREHOUSE_LOCK_WAIT_S": "1"})
    assert result.returncode == 75
    assert "after waiting 1 s" in result.stderr
    assert time.monotonic() - started >= 1


def test_a_killed_holder_blocks_no_one(settings, holder):
    from faultline.runlock import read_holder, warehouse_lock

    other = holder()
    other.send_signal(signal.SIGKILL)
    other.wait(timeout=10)
    assert read_holder(settings.duckdb_path).pid == other.pid  # the file still names the dead run
    with warehouse_lock(settings.duckdb_path, "next run"):
        assert read_holder(settings.duckdb_path).pid == os.getpid()
    assert read_holder(settings.duckdb_path) is None  # a finished run is named by no one


def test_the_lock_nests_in_one_process_and_is_let_go_by_the_outer_block(settings):
    from faultline.runlock import WarehouseBusy, warehouse_lock

    probe = [sys.executable, "-c", "import sys; from faultline.runlock import warehouse_lock\n"
             "with warehouse_lock(sys.argv[1], 'probe'): pass", str(settings.duckdb_path)]
    with warehouse_lock(settings.duckdb_path, "cli"):
        with warehouse_lock(settings.duckdb_path, "flow"):
            pass
        assert subprocess.run(probe, cwd=REPO, capture_output=True, timeout=60).returncode != 0  # still held
    assert subprocess.run(probe, cwd=REPO, capture_output=True, timeout=60).returncode == 0
    assert issubclass(WarehouseBusy, Exception)


def test_duckdb_refusing_the_file_names_the_run_that_holds_it(settings, holder):
    from faultline import db
    from faultline.errors import FaultlineError

    other = holder("open")
    with pytest.raises(FaultlineError, match=f"in use by test holder .*pid {other.pid}"):
        db.connect(settings.duckdb_path)


def test_the_nightly_flow_refuses_a_held_warehouse_before_opening_a_run(settings, holder):
    from faultline.runlock import WarehouseBusy
    from flows.nightly import nightly_flow

    holder()
    with pytest.raises(WarehouseBusy, match="in use by test holder"):
        nightly_flow.fn(settings=settings, max_rounds=1)  # the flow's body, as a deployment runs it, minus the engine
    assert not settings.duckdb_path.exists()  # no `runs` row: the warehouse was never opened
