"""Shared fixtures and the suite's requirements.

A fresh warehouse per test; the public data sets through the `data_dir` setting. Tests marked
`data` need those data sets, tests marked `lab` need root and tests marked `local_model` the local
model's packages; without them they are skipped with
one line saying what to do, and `--require-all` makes those skips failures (CI runs with it).

The suite runs on two pytest-xdist worker processes (`-n 2 --dist loadgroup`, pyproject's addopts): every
module with `lab` tests is in one group, handed out first and run in file order on one worker (one lab fits on
a machine), while the other worker, at a lower CPU priority, takes the rest module by module (a module's tests
stay together, in order, so its module fixtures are built once). Each worker has a Prefect home of its own.
`-n 0` runs everything in one process, as before.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import IO

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
    if item.get_closest_marker("local_model") is not None:
        return _local_model_missing()
    return None


def _local_model_missing() -> str | None:
    """Why the local model cannot run here, or None (its weights, transformers, gguf and accelerate found)."""
    import importlib.util

    from faultline.errors import FaultlineError
    from faultline.llm.local import DEFAULT, INSTALL_FIX, weights

    try:
        weights(DEFAULT)
    except FaultlineError as exc:
        return str(exc)
    missing = [name for name in ("transformers", "gguf", "accelerate") if importlib.util.find_spec(name) is None]
    return f"the local model needs {', '.join(missing)}: {INSTALL_FIX}" if missing else None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Give each xdist worker a Prefect home of its own, before anything imports Prefect.

    Without an API URL every process that runs a flow starts Prefect's ephemeral API on the SQLite database
    in its home: two workers sharing ~/.prefect would migrate a fresh database at the same time and then
    contend for its write lock, and share each other's result storage. Under pytest's temporary folder
    for this run, so pytest prunes it with the rest. (trylast: after pytest's own tmp_path set-up.)
    """
    if os.environ.get("PYTEST_XDIST_WORKER") and not os.environ.get("PREFECT_API_URL"):
        home = config._tmp_path_factory.getbasetemp() / "prefect-home"  # popen-gwN/, this worker's own
        home.mkdir(exist_ok=True)
        os.environ["PREFECT_HOME"] = str(home)  # read when Prefect is imported; its subprocesses inherit it


LAB_GROUP = "lab"
_GROUP = pytest.StashKey[str]()
_RUNS_LABS = pytest.StashKey[bool]()
_MADE_WAY = pytest.StashKey[bool]()
LAB_LANE_NICENESS = 10  # the other worker's CPU share, against the lab's processes, drops to about a tenth


def _xdist_group(item: pytest.Item, lab_modules: set[Path]) -> str:
    """The pytest-xdist group of a test: `lab` for every test of a module with lab tests, else its module's
    name (`test_marts`).

    The lab tests share the machine's one `fl-` lab and its lock, and some rely on the order of their
    module; the pure tests beside them read the same names and paths (a running lab's /etc/netns/fl-*
    files show in an offline state's inventory). One group runs all of them in file order on one worker.
    Any other test goes with its module, the real local model's too: on the lab's worker they cost the
    longest lane about a minute, and the DHCP failures once blamed on them came back without them.
    """
    if item.path in lab_modules:
        return LAB_GROUP
    return item.path.stem


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a run in which a test uses the data or the lab without the marker that says so; group for xdist.

    On an xdist worker the lab group also moves to the front (in its own order): with
    `--no-loadscope-reorder` it is then the first unit handed out, as it is the longest.
    """
    problems = []
    for item in items:
        uses = getattr(item, "fixturenames", ())
        if "data_dir" in uses and item.get_closest_marker("data") is None:
            problems.append(f"{item.nodeid} uses the data_dir fixture: mark it @pytest.mark.data")
        lab_fixtures = sorted(name for name in uses if _is_lab_fixture(item, name))
        if lab_fixtures and item.get_closest_marker("lab") is None:
            problems.append(f"{item.nodeid} uses the lab fixture {', '.join(lab_fixtures)}: mark it @pytest.mark.lab")
    if problems:
        raise pytest.UsageError("tests use the data sets or the lab without the marker that says so (the "
                                "skip, or the --require-all failure, goes by marker):\n  " + "\n  ".join(problems))
    if config.pluginmanager.hasplugin("xdist"):
        lab_modules = {item.path for item in items if item.get_closest_marker("lab") is not None}
        for item in items:
            item.stash[_GROUP] = _xdist_group(item, lab_modules)
            item.add_marker(pytest.mark.xdist_group(item.stash[_GROUP]))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.stash[_GROUP] != LAB_GROUP)  # stable: each group keeps its order


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note whether this run builds labs: root, and lab tests left after `-m`/`-k` deselection."""
    session.config.stash[_RUNS_LABS] = os.geteuid() == 0 and any(
        item.get_closest_marker("lab") is not None for item in session.items)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: on the controller, as each worker reports its collection
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """Stop an xdist run whose groups did not take (every lab test would wait for the lab lock on its worker).

    pytest-xdist's loadgroup marks a test's group by a suffix on its node id, `...::test@lab`; with pytest 9.2's
    structured node ids that write is lost without a word (pytest-dev/pytest-xdist#1386).
    """
    if node.config.getoption("dist") == "loadgroup" and ids and not any("@" in nodeid for nodeid in ids):
        pytest.exit("pytest-xdist did not group the tests (--dist loadgroup under this pytest: "
                    "pytest-dev/pytest-xdist#1386); install the dev extra's pytest (pip install -e '.[dev]'), "
                    "or run in one process with -n 0", returncode=pytest.ExitCode.USAGE_ERROR)


def _is_lab_fixture(item: pytest.Item, name: str) -> bool:
    """Whether the fixture `name`, as `item` sees it, was made by tests.labfixtures.lab_fixture."""
    # pytest has no public way to get the fixture definitions an item resolved; this covers fixtures
    # reached through other fixtures too, since `fixturenames` is the whole closure.
    definitions = getattr(item, "_fixtureinfo", None)
    defs = definitions.name2fixturedefs.get(name, ()) if definitions else ()
    return bool(defs) and drives_the_lab(defs[-1].func)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A lab test that fails says what the lab looked like then (processes, last log lines): a lab failure that
    shows only under a full run is otherwise gone with the lab."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed and item.get_closest_marker("lab") is not None:
        from tests.labfixtures import lab_at_failure

        try:
            text = lab_at_failure(getattr(item, "funcargs", {}), item.nodeid)
        except (OSError, ValueError, AttributeError) as exc:  # the evidence must never hide the failure
            text = f"(could not read the lab: {exc!r})"
        if text:
            report.sections.append(("lab at failure", text))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (or, with --require-all, fail) a test whose data sets or root are missing, before its fixtures run;
    before a lab test's fixtures build a lab, hold the machine's lab lock."""
    if os.environ.get("PYTEST_XDIST_WORKER") and item.stash.get(_GROUP, LAB_GROUP) != LAB_GROUP:
        _make_way_for_the_lab(item.config)
    reason = _missing_requirement(item)
    if reason is None:
        if item.get_closest_marker("lab") is not None:
            _hold_the_lab_lock(item.config)
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
_LAB_LOCK_HANDLE = pytest.StashKey[IO[str]]()


def _hold_the_lab_lock(config: pytest.Config) -> None:
    """Lab tests use the default `fl-` prefix and run dir names (and time-sensitive symptoms): the session that
    runs one takes the machine lock before its first lab test (and its lab fixtures) and keeps it to its end.

    Under xdist only the worker running the lab tests takes it; the other worker, and a session without lab
    tests, never waits for it. Anyone else driving labs by hand on the same machine wraps the command in
    `flock /tmp/faultline-lab.lock`; `faultline corpus generate` takes it itself (faultline/lab/locks.py,
    docs/lab.md#several-labs-at-once).
    """
    import fcntl

    if _LAB_LOCK_HANDLE in config.stash:
        return
    handle = open(LAB_LOCK, "a")  # noqa: SIM115 - held until pytest_unconfigure
    fcntl.flock(handle, fcntl.LOCK_EX)  # blocks until the other session is done
    config.stash[_LAB_LOCK_HANDLE] = handle


def _make_way_for_the_lab(config: pytest.Config) -> None:
    """Lower this xdist worker's CPU priority (and that of everything it starts) once it runs a test outside
    the lab group, so that the lab's time-based symptoms see the machine they expect while the other worker
    keeps both cores busy: a CPU-capped node's own load must use up its slice (test_faults_contention), a
    neighbour must answer in milliseconds. The lab worker comes here only after its last lab test. A run that
    builds no lab (not root, or `-m "not lab"`) keeps its priority.
    """
    if config.stash.get(_RUNS_LABS, False) and not config.stash.get(_MADE_WAY, False):
        os.nice(LAB_LANE_NICENESS)
        config.stash[_MADE_WAY] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    """Release the machine lock (closing the file releases the flock), after every fixture's teardown."""
    handle = config.stash.get(_LAB_LOCK_HANDLE, None)
    if handle is not None:
        handle.close()
