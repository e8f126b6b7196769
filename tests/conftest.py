"""Shared fixtures: a fresh warehouse per test and the paths of the shared data sets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from faultline.offline import apply_offline_env

apply_offline_env()
# Prefect stops its ephemeral API server at interpreter exit, after pytest has closed the captured
# streams; its goodbye log line would otherwise end every run with a "Logging error" traceback.
logging.raiseExceptions = False

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture
def settings(tmp_path: Path):
    from faultline.config import Settings

    return Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False,
                    log_default_year=2017)


@pytest.fixture
def conn(settings):
    from faultline import db

    connection = db.connect(settings.duckdb_path)
    yield connection
    connection.close()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"shared data sets not found at {SHARED_DATA}; tests expect ../shared/data beside the repo")
    return SHARED_DATA


@pytest.fixture
def run_cli(settings):
    """Run the `faultline` CLI in-process against the test's warehouse; returns the exit code."""
    from faultline.cli.main import main

    def run(*args: str, expect_exit: int = 0) -> int:
        argv = ["--db", str(settings.duckdb_path), "--lancedb", str(settings.lancedb_dir), *args]
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        assert code == expect_exit, f"faultline {' '.join(args)} exited {code}, expected {expect_exit}"
        return code

    return run


LAB_LOCK = Path("/tmp/faultline-lab.lock")


@pytest.fixture(scope="session", autouse=True)
def _one_lab_session_at_a_time():
    """Only one lab fits on a machine (shared `fl-` prefix, `down --all`): pytest runs as root take a host lock.

    Anyone else driving labs by hand on the same machine wraps the command in `flock /tmp/faultline-lab.lock`.
    """
    import fcntl
    import os

    if os.geteuid() != 0:
        yield
        return
    with open(LAB_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # blocks until the other session is done
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
