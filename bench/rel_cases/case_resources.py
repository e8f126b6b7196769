"""Every process a nightly run starts ends with the run, and a long-lived process running many nights stays flat.

Part one, `trials` nightly runs as commands, each looked at while its docs server is up (every process below
it is noted then): in turn the run completes, is killed (SIGKILL of its own process only), is interrupted
(SIGINT: the run fails) or terminated (SIGTERM). Within a grace period after the command ended, every
process it had started must be gone. Part two, one process that calls the nightly flow `trials` times in a
row (`nightly_worker.py`, as a Prefect worker would): after each run, the processes below it must be the
same as after the first, and its resident memory within 10 % of what it was after the second (the first
run loads the models and warms the caches).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from rel_cases.case_crashes import NIGHTLY, RUN_TIMEOUT_S, _corpus, _fresh
from rel_cases.common import REPO, Trial, cli
from rel_cases.killing import descendants, orphans, start
from rel_cases.small_corpus import tail

NAME = "resources"
CHECKS = ("children of a nightly (docs server, Prefect API) end when it completes, is killed, interrupted or "
          "terminated; N nights in one process: same children, RSS within 10 % of night 2's")
DEFAULT_TRIALS = 20  # runs ended each way (in turn), and nights in one process
NEEDS_ROOT = False
ENDINGS = ("completes", "killed", "interrupted", "terminated")
SIGNALS = {"killed": signal.SIGKILL, "interrupted": signal.SIGINT, "terminated": signal.SIGTERM}
DOCS_SERVER = "mcp docs"
MEMORY_TOLERANCE = 0.10


def run(trials: int, work: Path) -> list[Trial]:
    template = _indexed(work / "template", _corpus(work / "corpus"))
    results = [_ending_trial(work / f"ending-{n}", template, ENDINGS[n % len(ENDINGS)]) for n in range(trials)]
    return results + _worker_trials(work / "worker", template, trials)


def _indexed(folder: Path, corpus: Path) -> Path:
    if (folder / "wh.duckdb").is_file():
        return folder
    for args in (("ingest", "incidents", str(corpus / "history")), ("ingest", "incidents", str(corpus / "backlog")),
                 ("ingest", "docs", str(corpus / "docs")), ("index",)):
        done = cli(folder / "wh.duckdb", *args, lancedb=folder / "lance", env={"FAULTLINE_PROGRESS": "false"})
        if done.returncode != 0:
            raise RuntimeError(f"faultline {' '.join(args)} exited {done.returncode}: {tail(done.stderr)}")
    return folder


def _ending_trial(folder: Path, template: Path, ending: str) -> Trial:
    db, lance = _fresh(folder, template)
    watched = start(db, *NIGHTLY, lancedb=lance)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    seen = descendants(watched.process.pid)
    while not any(DOCS_SERVER in _cmdline(p) for p in seen) and watched.process.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
        seen = descendants(watched.process.pid)
    server_up = any(DOCS_SERVER in _cmdline(p) for p in seen)
    if ending in SIGNALS and watched.process.poll() is None:
        watched.process.send_signal(SIGNALS[ending])
    try:
        watched.process.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        watched.process.kill()
        watched.process.wait()
    left = orphans(seen)
    problems = [] if server_up else [f"no docs server was seen: {tail(watched.drain())}"]
    if left:
        problems.append(f"still running after the run ended: {left}")
    if ending == "completes" and watched.process.returncode != 0:
        problems.append(f"exited {watched.process.returncode}: {tail(watched.drain())}")
    shutil.rmtree(folder, ignore_errors=True)
    label = f"run {ending} (exit {watched.process.returncode}), {len(seen)} processes below it"
    if problems:
        return Trial(ok=False, detail=f"{label}: " + "; ".join(problems)[:700],
                     defect="a process the nightly starts must end with it, however it ends")
    return Trial(ok=True, detail=label)


def _cmdline(process) -> str:
    try:
        return " ".join(process.cmdline())
    except Exception:  # noqa: BLE001 - a process that ended has no command line any more
        return ""


def _worker_trials(folder: Path, template: Path, runs: int) -> list[Trial]:
    db, lance = _fresh(folder, template)
    worker = subprocess.run([sys.executable, str(Path(__file__).with_name("nightly_worker.py")), str(db), str(lance),
                             str(runs)], cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S * runs,
                            env=_worker_env(), check=False)
    nights = [json.loads(line) for line in worker.stdout.splitlines() if line.startswith("{")]
    results = []
    for night in nights:
        problems = []
        if night["failures"] or not night["outcomes"]:
            problems.append(f"{night['outcomes']} outcomes, {night['failures']} failures")
        if sorted(night["children"]) != sorted(nights[0]["children"]):
            problems.append(f"processes below it {night['children']}, after night 1 {nights[0]['children']}")
        base = nights[1]["rss_mb"] if len(nights) > 1 else night["rss_mb"]
        if night["run"] > 2 and abs(night["rss_mb"] - base) > MEMORY_TOLERANCE * base:
            problems.append(f"RSS {night['rss_mb']:.0f} MB, after night 2 {base:.0f} MB")
        label = (f"night {night['run']} in one process: RSS {night['rss_mb']:.0f} MB, {night['threads']} threads, "
                 f"{night['open_files']} open files, {len(night['children'])} child(ren) "
                 f"({night['children_rss_mb']:.0f} MB)")
        results.append(Trial(ok=not problems, detail=f"{label}: {'; '.join(problems)}" if problems else label,
                             defect="a long-lived process must not grow with every nightly run" if problems else ""))
    if len(nights) < runs:
        results.append(Trial(ok=False, detail=f"the worker stopped after {len(nights)} of {runs} nights "
                             f"(exit {worker.returncode}): {tail(worker.stderr)}", defect="the worker itself failed"))
    shutil.rmtree(folder, ignore_errors=True)
    return results


def _worker_env() -> dict[str, str]:
    import os

    from rel_cases.small_corpus import QUICK_ENV

    return {**os.environ, **QUICK_ENV, "PYTHONPATH": str(REPO)}
