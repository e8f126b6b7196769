"""Ingest and the nightly on a small filesystem made for the purpose (a 64 MB tmpfs) that fills up.

Each trial fills the disk but a few hundred KB or MB (a different amount per trial, so it fills at a different
point) and runs, on the full disk:

- an ingest of two incidents and their log archive into an empty warehouse;
- a nightly run: on odd trials on an ingested, indexed warehouse (the copy of the warehouse for the units does
  not fit), on even trials with `--corpus` on an empty warehouse (its ingest stage fills the disk).

A passed trial: the command exits 2 with the path it could not write and the space left (or needed) and no
traceback; the warehouse still opens, with no run left `running`; once the filler is removed the same command
completes, and the warehouse holds what a run on a roomy disk leaves (the ingest's rows; one settled ledger row
per incident x method).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from rel_cases.common import Trial, cli
from rel_cases.small_corpus import INGEST_TABLES, QUICK_ENV, counts, ledger_problems, make_corpus, rows, tail

NAME = "full_disk"
CHECKS = ("ingest and nightly on a full 64 MB tmpfs: exit 2 naming the path and space, warehouse opens, nothing "
          "left running; after freeing, the same command completes with a clean run's rows")
DEFAULT_TRIALS = 2
NEEDS_ROOT = True
DISK_MB = 64
LEAVE_KB = (256, 3072, 1024, 6144)  # free space left on the disk, trial by trial


def run(trials: int, work: Path) -> list[Trial]:
    corpus = make_corpus(work / "corpus")
    reference = _reference(work / "reference", corpus)
    disk = work / "disk"
    disk.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk)], check=True)
    try:
        results: list[Trial] = []
        for number in range(trials):
            leave = LEAVE_KB[number % len(LEAVE_KB)] * 1024
            results.append(_ingest_trial(disk, corpus, leave, reference["ingest"]))
            results.append(_nightly_trial(disk, corpus, leave, reference["indexed"], with_corpus=number % 2 == 1))
        return results
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=False)


def _reference(folder: Path, corpus: Path) -> dict:
    """An ingest on a roomy disk (its rows), and a warehouse with the corpus ingested and indexed."""
    db = folder / "wh.duckdb"
    if not db.is_file():
        for args in (("ingest", "incidents", str(corpus / "backlog")), ("ingest", "docs", str(corpus / "docs")),
                     ("index",)):
            done = cli(db, *args, lancedb=folder / "lance", env=QUICK_ENV)
            if done.returncode != 0:
                raise RuntimeError(f"faultline {' '.join(args)} exited {done.returncode}: {tail(done.stderr)}")
    found = counts(db, INGEST_TABLES)
    # the ingest trials load the incidents only, not the docs
    found["doc_chunks"] = 0
    found["ingest_files"] -= rows(db, "SELECT count(*) FROM ingest_files WHERE kind = 'docs'")[0][0]
    return {"ingest": found, "indexed": folder}


def _empty(disk: Path) -> None:
    for entry in disk.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def _fill(disk: Path, leave: int) -> Path:
    """Take the free space of `disk` but `leave` bytes; the filler (remove it to free the space)."""
    filler = disk / "filler"
    stats = os.statvfs(disk)
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(1, stats.f_bavail * stats.f_frsize - leave))
    return filler


def _stopped_well(done: subprocess.CompletedProcess[str], disk: Path) -> list[str]:
    """What is wrong with how a command stopped on the full disk."""
    problems = []
    if done.returncode != 2:
        problems.append(f"exit {done.returncode} (expected 2): {tail(done.stderr)}")
    said = done.stderr
    if str(disk) not in said or not ("free there" in said or " free" in said):
        problems.append(f"the error does not name the path and the space: {tail(said)}")
    if "Traceback" in said and "error: " not in said:
        problems.append("a traceback instead of an error message")
    return problems


def _left_running(db: Path) -> list[str]:
    try:
        running = rows(db, "SELECT kind FROM runs WHERE status = 'running'")
    except Exception as exc:  # noqa: BLE001 - a warehouse that does not open is what this trial looks for
        return [f"the warehouse does not open: {type(exc).__name__}: {str(exc)[:200]}"]
    return [f"runs left running: {[k for (k,) in running]}"] if running else []


def _ingest_trial(disk: Path, corpus: Path, leave: int, reference: dict[str, int]) -> Trial:
    _empty(disk)
    db = disk / "wh.duckdb"
    cli(db, "db", "migrate")
    filler = _fill(disk, leave)
    args = ("ingest", "incidents", str(corpus / "backlog"))
    problems = _stopped_well(cli(db, *args, env=QUICK_ENV), disk)
    problems += _left_running(db)
    filler.unlink()
    again = cli(db, *args, env=QUICK_ENV)
    if again.returncode != 0:
        problems.append(f"the resumed ingest exited {again.returncode}: {tail(again.stderr)}")
    elif (found := counts(db, INGEST_TABLES)) != reference:
        problems.append("rows differ from a clean ingest's: " + ", ".join(
            f"{t} {reference[t]} -> {found[t]}" for t in reference if reference[t] != found[t]))
    label = f"ingest, {leave // 1024} KB left"
    if problems:
        return Trial(ok=False, detail=f"{label}: " + "; ".join(problems)[:600],
                     defect="ingest on a full disk: stop with the path and the space, resume once freed")
    return Trial(ok=True, detail=label)


def _nightly_trial(disk: Path, corpus: Path, leave: int, indexed: Path, *, with_corpus: bool) -> Trial:
    _empty(disk)
    db, lance = disk / "wh.duckdb", disk / "lance"
    if not with_corpus:
        shutil.copy(indexed / "wh.duckdb", db)
        shutil.copytree(indexed / "lance", lance)
    else:
        cli(db, "db", "migrate")
    filler = _fill(disk, leave)
    args = ("nightly", "--json", *(["--corpus", str(corpus)] if with_corpus else []))
    problems = _stopped_well(cli(db, *args, lancedb=lance, env=QUICK_ENV), disk)
    problems += _left_running(db)
    leftovers = [p.name for p in (disk / ".faultline-work").glob("*")]
    if leftovers:
        problems.append(f"left in the work folder: {leftovers}")
    filler.unlink()
    again = cli(db, *args, lancedb=lance, env=QUICK_ENV)
    if again.returncode != 0:
        problems.append(f"the resumed nightly exited {again.returncode}: {tail(again.stderr)}")
    else:
        problems += ledger_problems(db)
    label = f"nightly{' --corpus' if with_corpus else ''}, {leave // 1024} KB left"
    if problems:
        return Trial(ok=False, detail=f"{label}: " + "; ".join(problems)[:600],
                     defect="nightly on a full disk: stop with the path and the space, resume once freed")
    return Trial(ok=True, detail=label)
