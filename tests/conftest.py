"""Shared fixtures and the suite's requirements.

A fresh warehouse per test; the public data sets through the `data_dir` setting. Tests marked
`data` need those data sets and tests marked `lab` need root; without them they are skipped with
one line saying what to do, and `--require-all` makes those skips failures (CI runs with it).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from faultline.offline import apply_offline_env
from tests.labfixtures import drives_the_lab

apply_offline_env()
# Prefect stops its ephemeral API server at interpreter exit, after pytest has closed the captured
# streams; its goodbye log line would otherwise end every run with a "Logging error" traceback.
logging.raiseExceptions = False

REPO = Path(__file__).resolve().parents[1]
LAB_NEEDS_ROOT = "needs root: the lab builds Linux network namespaces; run pytest as root"
_DATA_DIR = pytest.StashKey[Path | None]()
_RUNS_LABS = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-all", action="store_true", default=False,
                     help="fail, instead of skip, tests marked `data` or `lab` whose data sets or root are "
                          "missing (CI runs with it, so nothing it claims to check is silently skipped)")


def _data_dir(config: pytest.Config) -> Path | None:
    """The `data_dir` setting (env FAULTLINE_DATA_DIR), read once per run."""
    if _DATA_DIR not in config.stash:
        from faultline.config import Settings

        config.stash[_DATA_DIR] = Settings().data_dir
    return config.stash[_DATA_DIR]


def _data_missing(config: pytest.Config) -> str | None:
    """Why the data sets cannot be read, in one line naming the setting and the script; None when they can."""
    from faultline.datasets import FETCH_HINT

    folder = _data_dir(config)
    if folder is None:
        return f"needs the public data sets: {FETCH_HINT}"
    if not folder.is_dir():
        return f"needs the public data sets ({folder} is not a folder): {FETCH_HINT}"
    return None


def _missing_requirement(item: pytest.Item) -> str | None:
    """The first requirement of `item`'s markers this run cannot meet, as the reason to show."""
    if item.get_closest_marker("data") is not None:
        reason = _data_missing(item.config)
        if reason:
            return reason
    if item.get_closest_marker("lab") is not None and os.geteuid() != 0:
        return LAB_NEEDS_ROOT
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a run in which a test uses the data or the lab without the marker that says so."""
    problems = []
    for item in items:
        uses = getattr(item, "fixturenames", ())
        if "data_dir" in uses and item.get_closest_marker("data") is None:
            problems.append(f"{item.nodeid} uses the data_dir fixture: mark it @pytest.mark.data")
        lab_fixtures = sorted(name for name in uses if _is_lab_fixture(item, name))
        if lab_fixtures and item.get_closest_marker("lab") is None:
            problems.append(f"{item.nodeid} uses the lab fixture {', '.join(lab_fixtures)}: mark it @pytest.mark.lab")
    config.stash[_RUNS_LABS] = any(item.get_closest_marker("lab") is not None for item in items)
    if problems:
        raise pytest.UsageError("tests use the data sets or the lab without the marker that says so (the "
                                "skip, or the --require-all failure, goes by marker):\n  " + "\n  ".join(problems))


def _is_lab_fixture(item: pytest.Item, name: str) -> bool:
    """Whether the fixture `name`, as `item` sees it, was made by tests.labfixtures.lab_fixture."""
    # pytest has no public way to get the fixture definitions an item resolved; this covers fixtures
    # reached through other fixtures too, since `fixturenames` is the whole closure.
    definitions = getattr(item, "_fixtureinfo", None)
    defs = definitions.name2fixturedefs.get(name, ()) if definitions else ()
    return bool(defs) and drives_the_lab(defs[-1].func)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, with --require-all, fail) a test whose data sets or root are missing, before its fixtures run."""
    reason = _missing_requirement(item)
    if reason is None:
        return
    if item.config.getoption("require_all"):
        pytest.fail(reason, pytrace=False)
    # A skip mark rather than pytest.skip(): the built-in skipping hook, which runs after this one,
    # then reports the skip at the test's own line instead of at this file's.
    item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def data_dir(request: pytest.FixtureRequest) -> Path:
    """The folder of the public data sets (tests using it are marked `data`, so it exists here)."""
    reason = _data_missing(request.config)
    if reason:
        pytest.fail(reason, pytrace=False)
    return _data_dir(request.config)


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
def _one_lab_session_at_a_time(request: pytest.FixtureRequest):
    """Lab tests use the default `fl-` prefix and run dir names (and time-sensitive symptoms): a root session
    that will build labs takes the machine lock first; one without lab tests never waits for it.

    Anyone else driving labs by hand on the same machine wraps the command in `flock /tmp/faultline-lab.lock`;
    `faultline corpus generate` takes it itself (faultline/lab/locks.py, docs/lab.md#several-labs-at-once).
    """
    import fcntl

    if os.geteuid() != 0 or not request.config.stash.get(_RUNS_LABS, True):
        yield
        return
    with open(LAB_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # blocks until the other session is done
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
