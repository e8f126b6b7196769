"""Exit codes and degraded sources: commands run as processes on a warehouse without a docs index.

Trials, in order (more trials go round again on the same warehouse):

1. `eval astra` on a one-incident corpus, no docs loaded: exit 0, the incident scored and not failed, the
   run's `degraded` and the stored report name the missing documentation (and how to build it);
2. `eval astra --llm` with a model no provider answers: every incident fails, exit 1 with the count;
3. `eval sade` on a corpus whose only snapshot is truncated: exit 1 with the count, the incident listed as
   failed (not "aborted");
4. `nightly --llm` with that model: exit 1 naming each method that failed on every incident, with its count.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from rel_cases.common import REPO, Trial, cli

NAME = "exit_codes"
CHECKS = ("a missing docs index degrades eval astra (exit 0, named in the report); eval astra, eval sade and "
          "nightly whose every unit failed exit 1 with the count")
DEFAULT_TRIALS = 4
NEEDS_ROOT = False
BACKLOG = REPO / "data" / "sample" / "backlog"
INCIDENT = "sample-backlog-003"
NO_MODEL = "faultline-fake/nobody"  # no script answers it: every LLM step fails at once
QUICK = {"FAULTLINE_PROGRESS": "false", "FAULTLINE_NIGHTLY_LLM_RETRY_DELAY_S": "0", "FAULTLINE_LLM_BACKOFF_S": "0"}


class _Place:
    """The case's warehouse, LanceDB folder and corpora under `work`."""

    def __init__(self, work: Path) -> None:
        self.db, self.lancedb = work / "fl.duckdb", work / "lancedb"
        self.corpus, self.damaged = work / "corpus", work / "damaged"
        if not self.corpus.is_dir():
            for name in ("archive", "inventory", INCIDENT):
                shutil.copytree(BACKLOG / name, self.corpus / name)
        if not self.damaged.is_dir():
            shutil.copytree(BACKLOG / INCIDENT, self.damaged / INCIDENT)
            snapshot = self.damaged / INCIDENT / "snapshot.json.gz"
            snapshot.write_bytes(snapshot.read_bytes()[:4000])  # a half-copied file

    def run(self, *args: str, timeout: float = 170):
        return cli(self.db, *args, lancedb=self.lancedb, timeout=timeout, env=QUICK)


def _said(proc, *needles: str) -> str:
    """'' when every needle is in the process's output, else what was missing and the output's tail."""
    out = proc.stdout + proc.stderr
    missing = [n for n in needles if n not in out]
    if not missing:
        return ""
    tail = " | ".join(line.strip() for line in out.strip().splitlines()[-3:])
    return f"missing {missing!r} in the output (exit {proc.returncode}): {tail[-400:]}"


def _degraded_eval(place: _Place) -> Trial:
    proc = place.run("eval", "astra", "--corpus", str(place.corpus), "--rounds", "1", "--json")
    if proc.returncode != 0:
        return Trial(False, f"eval astra without docs exited {proc.returncode}: {proc.stderr[-300:]}",
                     "a missing docs index must not fail the evaluation")
    batch = json.loads(proc.stdout)
    degraded = batch.get("degraded", {}).get(INCIDENT, [])
    if batch["failures"] or batch["summary"]["incidents"] != 1:
        return Trial(False, f"failures {batch['failures']}, scored {batch['summary']['incidents']}",
                     "a missing docs index must degrade the analysis, not fail it")
    if not any(line.startswith("documentation: ") and "faultline index" in line for line in degraded):
        return Trial(False, f"degraded sources {degraded!r} do not name the documentation and its fix",
                     "say which source was missing")
    report = place.run("report", INCIDENT, "--json")
    if report.returncode != 0 or "Sources missing" not in report.stdout:
        return Trial(False, f"the stored report does not list the missing source (exit {report.returncode})",
                     "the report must say which source was missing")
    return Trial(True, "exit 0, scored, documentation named as missing in the run and the report")


def _all_failed_eval(place: _Place) -> Trial:
    proc = place.run("eval", "astra", "--corpus", str(place.corpus), "--rounds", "1", "--llm", NO_MODEL)
    problem = _said(proc, f"all 1 incidents in {place.corpus} failed", f"failed {INCIDENT}")
    if proc.returncode != 1 or problem:
        return Trial(False, f"exit {proc.returncode}; {problem}", "eval astra whose every incident failed: exit 1")
    return Trial(True, "exit 1: all 1 incidents failed")


def _all_failed_sade(place: _Place) -> Trial:
    proc = place.run("eval", "sade", "--corpus", str(place.damaged))
    problem = _said(proc, "all 1 incident evaluations", f"failed sade {INCIDENT}", "snapshot.json.gz")
    if proc.returncode != 1 or problem:
        return Trial(False, f"exit {proc.returncode}; {problem}", "eval sade whose every incident failed: exit 1")
    return Trial(True, "exit 1: the truncated snapshot is a failed incident")


def _all_failed_nightly(place: _Place) -> Trial:
    proc = place.run("nightly", "--llm", NO_MODEL, "--rounds", "1", "--limit", "1", timeout=300)
    problem = _said(proc, "all 1 astra analyses failed tonight", "all 1 sade analyses failed tonight")
    if proc.returncode != 1 or problem:
        return Trial(False, f"exit {proc.returncode}; {problem}", "nightly whose method failed everywhere: exit 1")
    return Trial(True, "exit 1 naming astra and sade with their counts")


SCENARIOS: tuple[Callable[[_Place], Trial], ...] = (_degraded_eval, _all_failed_eval, _all_failed_sade,
                                                     _all_failed_nightly)


def run(trials: int, work: Path) -> list[Trial]:
    """The scenarios in order, `trials` of them (going round again past the fourth)."""
    place = _Place(work)
    return [SCENARIOS[n % len(SCENARIOS)](place) for n in range(trials)]
