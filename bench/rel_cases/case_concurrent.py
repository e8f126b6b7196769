"""Two runs on one warehouse started together, as a cron and a person would: `trials` races of two nightly runs,
then `trials` races of two ingests of the same folder.

Odd trials race two plain commands: one runs, the other refuses at once with exit code 75 and a message naming
the run that holds the warehouse (its pid, that it is a nightly run or an ingest, when it started). Even trials
give both `--wait 600`: both complete, one after the other. Either way the warehouse must hold what one run
alone leaves (the first trial's rows, and one settled ledger row per incident x method), with no run left
`running` or `failed` and no frozen copy left in the work folder.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from rel_cases.common import Trial, cli
from rel_cases.small_corpus import (
    INCIDENTS,
    INGEST_TABLES,
    RESULT_TABLES,
    counts,
    ledger_problems,
    make_corpus,
    rows,
    start,
    tail,
)

NAME = "concurrent"
CHECKS = ("2 nightly runs, then 2 ingests, started together: one refuses (exit 75, names the other's pid) or "
          "waits (--wait); rows equal one run's, 1 ledger row per incident x method")
DEFAULT_TRIALS = 5  # of each: nightly races, then ingest races
NEEDS_ROOT = False
WAIT = ("--wait", "600")
TIMEOUT_S = 900


def run(trials: int, work: Path) -> list[Trial]:
    corpus = make_corpus(work / "corpus")
    template = _indexed_warehouse(work / "template", corpus)
    small = make_corpus(work / "corpus-without-logs", archive=False)  # the ingest races: seconds, not a minute
    results: list[Trial] = []
    reference: dict[str, int] | None = None
    for number in range(trials):
        trial, reference = _nightly_trial(work / f"nightly-{number}", template, waiting=number % 2 == 1,
                                          reference=reference)
        results.append(trial)
    reference = None
    for number in range(trials):
        trial, reference = _ingest_trial(work / f"ingest-{number}", small, waiting=number % 2 == 1,
                                         reference=reference)
        results.append(trial)
    return results


def _indexed_warehouse(folder: Path, corpus: Path) -> Path:
    """A warehouse with the corpus ingested and indexed, for every nightly trial to start from."""
    db = folder / "wh.duckdb"
    if db.is_file():
        return folder
    for args in (("ingest", "incidents", str(corpus / "backlog")), ("ingest", "docs", str(corpus / "docs")),
                 ("index",)):
        done = cli(db, *args, lancedb=folder / "lance")
        if done.returncode != 0:
            raise RuntimeError(f"faultline {' '.join(args)} exited {done.returncode}: {tail(done.stderr)}")
    return folder


def _race(commands: list[tuple[Path, tuple[str, ...], Path | None]]) -> list[tuple[subprocess.Popen[str], str, str]]:
    """Start the commands together and wait for all: each process with its stdout and stderr."""
    started = [start(db, *args, lancedb=lancedb) for db, args, lancedb in commands]
    finished = []
    for process in started:
        try:
            out, err = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        finished.append((process, out, err))
    return finished


def _judge(finished: list[tuple[subprocess.Popen[str], str, str]], waiting: bool, what: str) -> list[str]:
    """What is wrong with the two runs' exit codes and messages."""
    codes = sorted(p.returncode for p, _, _ in finished)
    if waiting:
        if codes != [0, 0]:
            return [f"exit codes {codes} with --wait (expected 0 and 0): "
                    + "; ".join(tail(err) for p, _, err in finished if p.returncode)]
        if not any("waiting up to" in err for _, _, err in finished):
            return ["neither run said it was waiting for the other"]
        return []
    if codes != [0, 75]:
        return [f"exit codes {codes} (expected one 0 and one 75): "
                + "; ".join(tail(err) for p, _, err in finished if p.returncode)]
    winner = next(p for p, _, _ in finished if p.returncode == 0)
    refused = next(err for p, _, err in finished if p.returncode == 75)
    wanted = [f"pid {winner.pid} ", f"in use by {what}", "started ", "--wait SECONDS"]
    missing = [w.strip() for w in wanted if w not in refused]
    return [f"the refusal does not name {missing}: {tail(refused)}"] if missing else []


def _nightly_trial(folder: Path, template: Path, *, waiting: bool,
                   reference: dict[str, int] | None) -> tuple[Trial, dict[str, int] | None]:
    began = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(template, folder)
    db, lance = folder / "wh.duckdb", folder / "lance"
    args = ("nightly", "--json", *(WAIT if waiting else ()))
    finished = _race([(db, args, lance), (db, args, lance)])
    problems = _judge(finished, waiting, "nightly run")
    problems += ledger_problems(db)
    found = counts(db, RESULT_TABLES)
    reference = reference or (found if not problems else None)
    if reference and found != reference:
        problems.append(f"rows differ from one run's: {_diff(reference, found)}")
    runs = rows(db, "SELECT status FROM runs WHERE kind = 'nightly'")
    if len(runs) != (2 if waiting else 1) or any(s in ("running", "failed") for (s,) in runs):
        problems.append(f"nightly runs rows: {[s for (s,) in runs]}")
    leftovers = [p.name for p in (folder / ".faultline-work").glob("*")]
    if leftovers:
        problems.append(f"left in the work folder: {leftovers}")
    mode = "--wait" if waiting else "refuse"
    return _trial(problems, f"nightly {mode} ({time.monotonic() - began:.0f} s)", "a run lock per warehouse: the "
                  "second run refuses naming the first, or waits for it"), reference


def _ingest_trial(folder: Path, corpus: Path, *, waiting: bool,
                  reference: dict[str, int] | None) -> tuple[Trial, dict[str, int] | None]:
    began = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    db = folder / "wh.duckdb"
    args = ("ingest", "incidents", str(corpus / "backlog"), "--json", *(WAIT if waiting else ()))
    finished = _race([(db, args, None), (db, args, None)])
    problems = _judge(finished, waiting, "ingest incidents")
    found = counts(db, INGEST_TABLES)
    if found["incidents"] != len(INCIDENTS) or found["tickets"] != len(INCIDENTS):
        problems.append(f"{found['incidents']} incidents and {found['tickets']} tickets for {len(INCIDENTS)}")
    reference = reference or (found if not problems else None)
    if reference and found != reference:
        problems.append(f"rows differ from one ingest's: {_diff(reference, found)}")
    bad = rows(db, "SELECT kind, status FROM runs WHERE status <> 'completed'")
    if bad:
        problems.append(f"runs not completed: {bad}")
    mode = "--wait" if waiting else "refuse"
    return _trial(problems, f"ingest {mode} ({time.monotonic() - began:.0f} s)",
                  "a run lock per warehouse around every ingest"), reference


def _diff(reference: dict[str, int], found: dict[str, int]) -> str:
    return ", ".join(f"{t} {reference[t]} -> {found[t]}" for t in reference if reference[t] != found[t])


def _trial(problems: list[str], label: str, defect: str) -> Trial:
    if problems:
        return Trial(ok=False, detail=f"{label}: " + "; ".join(problems)[:600], defect=defect)
    return Trial(ok=True, detail=label)
