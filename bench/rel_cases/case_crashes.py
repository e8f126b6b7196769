"""SIGKILL at random moments of an ingest, a nightly run and an index sync; the next run must complete and leave
what a run that was never killed leaves.

Each target's clean run is timed first, and each kill lands after a delay drawn uniformly within that time, so
kills fall in every stage. A quarter of the nightly trials wait for the marts refresh to start and a quarter for
the dashboards build, and kill within that stage's measured time (those start from a warehouse whose incidents
are analysed, so the run goes straight to them). Only the command's own process is killed, as the OOM killer
or `kill -9` would: the processes it started (the docs server, Prefect's temporary API) must end by
themselves. After the next run: the ingest ledger balances per file and the tables hold one clean ingest's
rows; one settled ledger row per incident x method; the marts equal a clean rebuild on a copy; the dashboards
are whole; the LanceDB tables equal the warehouse; no frozen copy is left.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from rel_cases import crash_checks as checks
from rel_cases.common import Trial, cli
from rel_cases.killing import crash, orphans, start
from rel_cases.small_corpus import (
    INGEST_TABLES,
    SAMPLE,
    counts,
    ledger_problems,
    make_corpus,
    tail,
)

NAME = "crashes"
CHECKS = ("SIGKILL at a random moment of ingest, nightly (also in marts, dashboards), index: no orphan; next run "
          "completes; ledger per file, 1 ledger row per incident x method, marts = clean rebuild, index = warehouse")
DEFAULT_TRIALS = 20  # per target: ingest, nightly, index
NEEDS_ROOT = False
HISTORY = ("sample-history-003", "sample-history-004", "sample-history-009")
NIGHTLY = ("nightly", "--rounds", "1")
MARTS_START = "-- refreshing the marts"
DASHBOARDS_START = "Task run 'refresh-marts"  # its 'Finished' line: the dashboards build starts next
RUN_TIMEOUT_S = 900


def run(trials: int, work: Path) -> list[Trial]:
    rng = random.Random(20)
    corpus = _corpus(work / "corpus")
    stages = _Templates(work / "templates", corpus)
    results = [_ingest_trial(work / f"ingest-{n}", stages, rng) for n in range(trials)]
    results += [_index_trial(work / f"index-{n}", stages, rng) for n in range(trials)]
    results += [_nightly_trial(work / f"nightly-{n}", stages, rng, n) for n in range(trials)]
    return results


def _corpus(target: Path) -> Path:
    """The small corpus of `small_corpus` and a few history incidents (ASTRA's similar tickets)."""
    make_corpus(target)
    for name in (*HISTORY, "inventory"):
        if not (target / "history" / name).is_dir():
            shutil.copytree(SAMPLE / "history" / name, target / "history" / name)
    return target


class _Templates:
    """Warehouses at each point the trials start from, made once by clean runs that are also timed."""

    def __init__(self, folder: Path, corpus: Path) -> None:
        self.corpus = corpus
        self.seconds: dict[str, float] = {}
        self.ingest_args = ("ingest", "incidents", str(corpus / "backlog"))
        self.ingested = self._make(folder / "ingested", None, [
            ("ingest", "incidents", str(corpus / "history")), self.ingest_args,
            ("ingest", "docs", str(corpus / "docs"))], timed=None)
        self.backlog_only = self._make(folder / "backlog-only", None, [self.ingest_args], timed=0)
        self.ingest_reference = counts(self.backlog_only / "wh.duckdb", INGEST_TABLES)
        self.indexed = self._make(folder / "indexed", self.ingested, [("index",)], timed=0)
        self.analysed = self._make(folder / "analysed", self.indexed, [NIGHTLY], timed=0)
        self.stage_seconds = self._time_last_stages()

    def _make(self, folder: Path, base: Path | None, commands: list[tuple[str, ...]],
              timed: int | None) -> Path:
        timing = folder.with_suffix(".seconds.json")  # a kept work folder's templates keep their clean times
        if (folder / "wh.duckdb").is_file() and timing.is_file():
            self.seconds.update(json.loads(timing.read_text()))
        else:
            shutil.rmtree(folder, ignore_errors=True)
            if base is not None:
                shutil.copytree(base, folder)
            for number, args in enumerate(commands):
                began = time.monotonic()
                done = cli(folder / "wh.duckdb", *args, lancedb=folder / "lance", env={"FAULTLINE_PROGRESS": "false"})
                if done.returncode != 0:
                    raise RuntimeError(f"faultline {' '.join(args)} exited {done.returncode}: {tail(done.stderr)}")
                if number == timed:
                    self.seconds[args[0]] = time.monotonic() - began
                    timing.write_text(json.dumps({args[0]: self.seconds[args[0]]}))
            if timed is None:
                timing.write_text("{}")
        return folder

    def _time_last_stages(self) -> dict[str, float]:
        """How long the marts refresh and the dashboards build take, from a clean run's output."""
        folder = self.analysed.parent / "timing"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.analysed, folder)
        watched = start(folder / "wh.duckdb", *NIGHTLY, lancedb=folder / "lance")
        marts = watched.wait_for(MARTS_START, RUN_TIMEOUT_S)
        dashboards = watched.wait_for(DASHBOARDS_START, RUN_TIMEOUT_S)
        ended = watched.wait_for("Flow run 'nightly", RUN_TIMEOUT_S)
        watched.process.wait(timeout=RUN_TIMEOUT_S)
        if None in (marts, dashboards, ended) or watched.process.returncode != 0:
            raise RuntimeError(f"the timing run did not show its stages: {tail(watched.drain(), 5)}")
        shutil.rmtree(folder, ignore_errors=True)
        return {"marts": dashboards - marts, "dashboards": ended - dashboards}


def _fresh(folder: Path, template: Path | None) -> tuple[Path, Path]:
    shutil.rmtree(folder, ignore_errors=True)
    if template is None:
        folder.mkdir(parents=True)
    else:
        shutil.copytree(template, folder)
    return folder / "wh.duckdb", folder / "lance"


def _kill_and_resume(db: Path, lance: Path, args: tuple[str, ...], delay: Callable[..., float | None],
                     ) -> tuple[str, list[str]]:
    """Start the command, kill it when `delay(watched)` says (None: it never reached the moment), then run it
    again to the end; where the kill landed and the problems seen so far."""
    watched = start(db, *args, lancedb=lance)
    at = delay(watched)
    if at is None:
        watched.process.wait(timeout=RUN_TIMEOUT_S)
        ended = f"the run ended ({watched.process.returncode}) before the moment to kill: {tail(watched.drain())}"
        return "never killed", [ended]
    ended_first = watched.process.poll() is not None
    left = orphans(crash(watched))
    where = f"killed at {at:.1f} s" + (" (it had already ended)" if ended_first else "")
    problems = [f"left running after the kill: {left}"] if left else []
    again = cli(db, *args, lancedb=lance, env={"FAULTLINE_PROGRESS": "false"}, timeout=RUN_TIMEOUT_S)
    if again.returncode != 0:
        problems.append(f"the next run exited {again.returncode}: {tail(again.stderr)}")
    return where, problems


def _sleep_until(seconds: float) -> Callable[..., float | None]:
    """Kill `seconds` after the start (the command may already have ended)."""
    def wait(watched) -> float:
        watched.wait_for("\0never", seconds)
        return time.monotonic() - watched.started
    return wait


def _after(marker: str, within: float, rng: random.Random) -> Callable[..., float | None]:
    """Kill a random moment within `within` seconds after the line with `marker`."""
    def wait(watched) -> float | None:
        if watched.wait_for(marker, RUN_TIMEOUT_S) is None:
            return None
        time.sleep(rng.uniform(0, within))
        return time.monotonic() - watched.started
    return wait


def _ingest_trial(folder: Path, stages: _Templates, rng: random.Random) -> Trial:
    db, lance = _fresh(folder, None)
    where, problems = _kill_and_resume(db, lance, stages.ingest_args,
                                       _sleep_until(rng.uniform(0, stages.seconds["ingest"])))
    if not any("next run exited" in p for p in problems):
        problems += checks.ingest_problems(db, stages.ingest_reference) + checks.run_problems(db, "ingest_incidents")
    return _trial(f"ingest {where}", problems, folder, "an ingest killed part-way is completed by the next one")


def _index_trial(folder: Path, stages: _Templates, rng: random.Random) -> Trial:
    db, lance = _fresh(folder, stages.ingested)
    where, problems = _kill_and_resume(db, lance, ("index",), _sleep_until(rng.uniform(0, stages.seconds["index"])))
    if not any("next run exited" in p for p in problems):
        problems += checks.index_problems(db, lance)
    return _trial(f"index {where}", problems, folder, "an index sync killed part-way is repaired by the next one")


def _nightly_trial(folder: Path, stages: _Templates, rng: random.Random, number: int) -> Trial:
    aim = ("anywhere", "anywhere", "marts", "dashboards")[number % 4]
    if aim == "anywhere":
        db, lance = _fresh(folder, stages.indexed)
        delay = _sleep_until(rng.uniform(0, stages.seconds["nightly"]))
    else:
        db, lance = _fresh(folder, stages.analysed)
        delay = _after(MARTS_START if aim == "marts" else DASHBOARDS_START, stages.stage_seconds[aim], rng)
    where, problems = _kill_and_resume(db, lance, NIGHTLY, delay)
    if not any("next run exited" in p for p in problems):
        problems += (ledger_problems(db) + checks.mart_problems(db, folder)
                     + checks.dashboard_problems(folder / "dashboards") + checks.leftover_problems(db)
                     + checks.run_problems(db, "nightly"))
    return _trial(f"nightly ({aim}) {where}", problems, folder,
                  "a nightly run killed part-way leaves nothing the next run does not complete or remove")


def _trial(label: str, problems: list[str], folder: Path, defect: str) -> Trial:
    shutil.rmtree(folder, ignore_errors=True)
    if problems:
        return Trial(ok=False, detail=f"{label}: " + "; ".join(problems)[:700], defect=defect)
    return Trial(ok=True, detail=label)
