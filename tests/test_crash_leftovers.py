"""A run killed outright (SIGKILL of its own process, as the OOM killer does): the processes it started end by
themselves, and the next run clears what it left (its `running` row, its frozen copies, a half-written page).
`bench/reliability.py --case crashes` and `--case resources` do the many trials; here one of each kind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import REPO

INCIDENTS = ["sample-backlog-004", "sample-backlog-009"]
HISTORY = ["sample-history-003", "sample-history-004", "sample-history-009"]


def test_the_next_run_closes_a_dead_runs_row_and_removes_its_frozen_copies_only(conn, settings):
    from faultline.nightly.leftovers import clear_leftovers
    from faultline.nightly.workspace import work_dir
    from faultline.runs import start_run

    dead = start_run(conn, "nightly", settings=settings)
    current = start_run(conn, "nightly", settings=settings)
    folder = work_dir(settings)
    folder.mkdir(parents=True)
    dead_copy = folder / f"{dead}-analyse.duckdb"
    foreign = folder / "0f0e0d0c-0b0a-4909-8807-060504030201-analyse.duckdb"  # another warehouse's run
    ours = folder / f"{current}-analyse.duckdb"
    for path in (dead_copy, foreign, ours):
        path.write_bytes(b"copy")
    assert clear_leftovers(conn, settings, current) == [dead_copy]
    assert sorted(p.name for p in folder.iterdir()) == sorted([foreign.name, ours.name])
    status = dict(conn.execute("SELECT run_id, status || ' ' || coalesce(error, '') FROM runs").fetchall())
    assert status[dead].startswith("failed interrupted")
    assert status[current] == "running "


def test_a_dashboard_build_never_leaves_a_half_written_page(conn, tmp_path):
    from dashboards.build import build_dashboards

    site = tmp_path / "site"
    (site / "incidents").mkdir(parents=True)
    (site / "index.html.partial").write_text("<html><body>half of a page a killed build wa")
    result = build_dashboards(conn, site)
    assert not list(site.rglob("*.partial"))
    for page in result.pages:
        assert page.read_text(encoding="utf-8").rstrip().endswith("</html>"), page


def _link_corpus(root: Path) -> Path:
    sample = REPO / "data" / "sample"
    for suite, names in (("history", HISTORY), ("backlog", INCIDENTS)):
        for name in names:
            (root / suite / name).mkdir(parents=True)
            for entry in (sample / suite / name).iterdir():
                (root / suite / name / entry.name).symlink_to(entry)
        for shared in ("archive", "inventory"):
            (root / suite / shared).symlink_to(sample / suite / shared)
    (root / "docs").symlink_to(sample / "docs")
    return root


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_killed_nightly_leaves_no_process_and_the_next_run_finishes_and_clears_up(tmp_path):
    from faultline import db
    from faultline.config import Settings
    from flows.nightly import nightly_flow

    corpus = _link_corpus(tmp_path / "corpus")
    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False,
                        log_default_year=2026, nightly_llm_retries=0, nightly_probe_retries=0)
    argv = [sys.executable, "-m", "faultline.cli.main", "--db", str(settings.duckdb_path), "--lancedb",
            str(settings.lancedb_dir), "nightly", "--corpus", str(corpus), "--rounds", "1"]
    env = {**os.environ, "FAULTLINE_LOG_DEFAULT_YEAR": "2026", "FAULTLINE_PROGRESS": "false"}
    env.pop("PREFECT_API_URL", None)  # the run starts Prefect's temporary API server: it must not outlive the run
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
    frozen = tmp_path / ".faultline-work"
    started: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 600
        while not list(frozen.glob("*-analyse.duckdb")):  # mid-analysis: its docs server is up, its copy made
            assert proc.poll() is None and time.monotonic() < deadline, "the run never reached its analysis"
            time.sleep(0.2)
        started = psutil.Process(proc.pid).children(recursive=True)
        commands = " | ".join(" ".join(p.cmdline()) for p in started)
        assert "mcp docs" in commands and "uvicorn" in commands, "no docs server or Prefect API server seen"
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the run's own process only: no `finally`, no exit hook runs
        proc.wait()
    deadline = time.monotonic() + 40
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [" ".join(p.cmdline())[:100] for p in started if _alive(p)]
    for p in started:
        if _alive(p):
            p.kill()
    assert left == [], "processes the killed run had started are still running"
    assert list(frozen.glob("*.duckdb")), "the killed run left its frozen copy (what the next run must remove)"

    summary = nightly_flow(settings=settings, max_rounds=1)
    assert not summary["failures"]
    conn = db.connect(settings.duckdb_path)
    try:
        ledger = conn.execute("SELECT incident_id, method, status FROM analysis_ledger").fetchall()
        runs = conn.execute("SELECT status, error FROM runs WHERE kind = 'nightly' ORDER BY started_at").fetchall()
    finally:
        conn.close()
    assert sorted(ledger) == sorted((i, m, "done") for i in INCIDENTS for m in ("astra", "sade", "verdict"))
    assert runs[0][0] == "failed" and runs[0][1].startswith("interrupted")
    assert runs[-1][0] == "completed"
    assert not list(frozen.iterdir())
