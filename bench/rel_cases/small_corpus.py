"""A small corpus and warehouse for the reliability cases that run whole commands: a few sample incidents, and
what several cases check in a warehouse afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import duckdb

from rel_cases.common import FAULTLINE, REPO

SAMPLE = REPO / "data" / "sample"
INCIDENTS = ("sample-backlog-001", "sample-backlog-002")
METHODS = ("astra", "sade", "verdict")
# what a nightly run writes (its results and bookkeeping) and what an ingest writes
RESULT_TABLES = ("analysis_ledger", "astra_rounds", "claims", "evidence", "judge_scores", "followup_queries",
                 "log_excerpts", "sade_steps", "sade_flags", "submissions", "evaluations", "verdicts",
                 "verdict_claims", "run_failures")
INGEST_TABLES = ("tickets", "incidents", "ground_truth", "log_lines", "ingest_files", "quarantine",
                 "inventory_hosts", "inventory_links", "doc_chunks")
# no waiting between retries: a case's failures should show at once, not after the nightly's back-off
QUICK_ENV = {"FAULTLINE_NIGHTLY_LLM_RETRY_DELAY_S": "0", "FAULTLINE_NIGHTLY_PROBE_RETRY_DELAY_S": "0",
             "FAULTLINE_NIGHTLY_SQL_RETRY_DELAY_S": "0", "FAULTLINE_PROGRESS": "false"}


def make_corpus(target: Path, incidents: tuple[str, ...] = INCIDENTS, *, archive: bool = True) -> Path:
    """Copy `incidents` of the sample backlog, the backlog's inventories and (with `archive`) its log archive, and
    the sample docs into `target` (backlog/ and docs/); returns `target`."""
    if target.is_dir():
        return target
    for name in (*incidents, "inventory", *(["archive"] if archive else [])):
        shutil.copytree(SAMPLE / "backlog" / name, target / "backlog" / name)
    shutil.copytree(SAMPLE / "docs", target / "docs")
    return target


def start(db: Path, *args: str, lancedb: Path | None = None,
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start `faultline --db DB [--lancedb DIR] ARGS` without waiting for it (two of them make a race)."""
    argv = [*FAULTLINE, "--db", str(db), *(["--lancedb", str(lancedb)] if lancedb else []), *args]
    return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **QUICK_ENV, **(env or {})})


def counts(db: Path, tables: tuple[str, ...]) -> dict[str, int]:
    """Rows per table of the warehouse `db` (opened read-only)."""
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return {table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables}
    finally:
        conn.close()


def rows(db: Path, sql: str) -> list[tuple]:
    """The rows of one query on the warehouse `db` (opened read-only)."""
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def ledger_problems(db: Path, incidents: tuple[str, ...] = INCIDENTS) -> list[str]:
    """What is wrong with the ledger: not one row per incident x method, or an incident x method not settled."""
    problems = []
    (total, distinct), = rows(db, "SELECT count(*), count(DISTINCT (incident_id, method)) FROM analysis_ledger")
    if total != distinct:
        problems.append(f"ledger has {total} rows for {distinct} incident x method")
    found = {(i, m): s for i, m, s in rows(db, "SELECT incident_id, method, status FROM analysis_ledger")}
    for incident in incidents:
        for method in METHODS:
            status = found.get((incident, method))
            if status not in ("done", "skipped"):
                problems.append(f"{incident} x {method}: {status or 'no ledger row'}")
    return problems


def tail(text: str, lines: int = 3) -> str:
    """The last lines of a process's output, on one line."""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])
