"""Damaged state: a truncated warehouse, an index missing a data file, a truncated snapshot, a wrong baseline.

One warehouse is built (two sample incidents ingested and indexed); each trial damages a fresh copy of it, or one
file of its corpus (put back after the trial), and runs the commands a user would, as processes:

1. the warehouse file cut to half its size: `db sql` and `nightly` exit 2 naming the file and the recovery
   (`faultline ingest`, `faultline index --rebuild`), no traceback;
2. one data file of the LanceDB ticket table deleted: `search tickets` exits 2 naming the file and
   `faultline index --rebuild --kind tickets`; that command then mends it and the search answers;
3. one incident's snapshot.json.gz cut short: `nightly` records that incident's SADE as a failure row naming the
   file, and analyses the others (the batch goes on, exit 0);
4. another incident's baseline.json.gz replaced by another network's: the same, the failure saying it is not
   the snapshot's baseline. Trials 3 and 4 read one nightly run in which both incidents were damaged (a nightly
   run is most of this case's time).

More trials go round again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from rel_cases.common import REPO, Trial, cli
from rel_cases.small_corpus import QUICK_ENV, rows, tail

NAME = "damaged_state"
CHECKS = ("truncated warehouse, index missing a data file: exit 2 naming the file and the recovery command "
          "(index --rebuild mends the index); truncated snapshot, wrong baseline: a failure row, the batch goes on")
DEFAULT_TRIALS = 4
NEEDS_ROOT = False
BACKLOG = REPO / "data" / "sample" / "backlog"
# three incidents of one network (simple_bgp, size s): one cut snapshot, one swapped baseline, one left alone
SNAPSHOT_CUT, BASELINE_SWAPPED, GOOD = "sample-backlog-003", "sample-backlog-020", "sample-backlog-006"
OTHER_NETWORK = "sample-backlog-002"  # dc_clos_service: its baseline belongs to no simple_bgp incident


class _Place:
    """The case's corpus and its indexed warehouse under `work`, and fresh copies of the warehouse per trial."""

    def __init__(self, work: Path) -> None:
        self.work, self.corpus, self.template = work, work / "corpus", work / "template"
        self.night: tuple[int, list[tuple], dict[tuple[str, str], str]] | None = None
        if not self.corpus.is_dir():
            for name in ("inventory", SNAPSHOT_CUT, BASELINE_SWAPPED, GOOD):
                shutil.copytree(BACKLOG / name, self.corpus / name)
        if not (self.template / "wh.duckdb").is_file():
            for args in (("ingest", "incidents", str(self.corpus)), ("index", "--kind", "tickets")):
                done = cli(self.template / "wh.duckdb", *args, lancedb=self.template / "lance", env=QUICK_ENV)
                if done.returncode != 0:
                    raise RuntimeError(f"faultline {' '.join(args)} exited {done.returncode}: {tail(done.stderr)}")

    def fresh(self, name: str) -> tuple[Path, Path]:
        """A copy of the warehouse and its index folder: (db, lancedb)."""
        folder = self.work / name
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(self.template, folder)
        return folder / "wh.duckdb", folder / "lance"


def _said(proc, *needles: str, traceback_allowed: bool = False) -> str:
    out = proc.stdout + proc.stderr
    missing = [n for n in needles if n not in out]
    last = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    if not last or (not traceback_allowed and "Traceback" in out):
        missing.append("an 'error:' line and no traceback")
    return f"missing {missing!r} (exit {proc.returncode}): {tail(out)[-300:]}" if missing else ""


def _truncated_warehouse(place: _Place) -> Trial:
    db, lance = place.fresh("truncated-warehouse")
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    for args in (("db", "sql", "SELECT count(*) FROM tickets"), ("nightly", "--limit", "1")):
        proc = cli(db, *args, lancedb=lance, env=QUICK_ENV, timeout=300)
        # Prefect logs the traceback of any exception that ends a flow run; the command still ends on the error
        problem = _said(proc, f"the warehouse file {db} is damaged", "faultline ingest", "faultline index --rebuild",
                        traceback_allowed=args[0] == "nightly")
        if proc.returncode != 2 or problem:
            return Trial(False, f"faultline {args[0]}: {problem or f'exit {proc.returncode}'}",
                         "a truncated warehouse must be named with its recovery, exit 2")
    return Trial(True, "db sql and nightly: exit 2 naming the file and the recovery")


def _missing_fragment(place: _Place) -> Trial:
    db, lance = place.fresh("missing-fragment")
    fragment = min((lance / "tickets.lance" / "data").glob("*.lance"))
    fragment.unlink()
    proc = cli(db, "search", "tickets", "cannot reach the server", lancedb=lance, env=QUICK_ENV)
    problem = _said(proc, fragment.name, "faultline index --rebuild --kind tickets")
    if proc.returncode != 2 or problem:
        return Trial(False, f"search: {problem or f'exit {proc.returncode}'}",
                     "an index missing a data file must be named with `faultline index --rebuild`")
    rebuilt = cli(db, "index", "--rebuild", "--kind", "tickets", lancedb=lance, env=QUICK_ENV)
    again = cli(db, "search", "tickets", "cannot reach the server", "--json", lancedb=lance, env=QUICK_ENV)
    if rebuilt.returncode != 0 or again.returncode != 0 or '"id"' not in again.stdout:
        return Trial(False, f"index --rebuild exit {rebuilt.returncode}, search after it exit {again.returncode}: "
                     f"{tail(rebuilt.stderr + again.stderr)[-300:]}", "index --rebuild must mend a damaged index")
    return Trial(True, "search: exit 2 naming the missing file and --rebuild; index --rebuild mended it")


def _damaged_night(place: _Place) -> tuple[int, list[tuple], dict[tuple[str, str], str]]:
    """One nightly run with SNAPSHOT_CUT's snapshot cut short and BASELINE_SWAPPED's baseline from another network
    (the corpus is put back after): exit status, failure rows, ledger. Trials 3 and 4 both read it."""
    if place.night is None:
        db, lance = place.fresh("damaged-night")
        kept = {path: path.read_bytes() for path in (place.corpus / SNAPSHOT_CUT / "snapshot.json.gz",
                                                     place.corpus / BASELINE_SWAPPED / "baseline.json.gz")}
        snapshot, baseline = kept
        snapshot.write_bytes(kept[snapshot][:4000])
        shutil.copy(BACKLOG / OTHER_NETWORK / "baseline.json.gz", baseline)
        try:
            proc = cli(db, "nightly", lancedb=lance, env=QUICK_ENV, timeout=600)
        finally:
            for path, data in kept.items():
                path.write_bytes(data)
        ledger = {(i, m): s for i, m, s in rows(db, "SELECT incident_id, method, status FROM analysis_ledger")}
        place.night = (proc.returncode, rows(db, "SELECT incident_id, stage, message FROM run_failures"), ledger)
    return place.night


def _failure_row(place: _Place, incident: str, label: str, expected: str) -> Trial:
    code, failures, ledger = _damaged_night(place)
    ours = [f for f in failures if f[0] == incident and f[1] == "sade" and expected in f[2]]
    goes_on = (all(ledger.get((GOOD, m)) == "done" for m in ("astra", "sade"))
               and ledger.get((incident, "astra")) == "done")
    if code != 0 or not ours or not goes_on:
        return Trial(False, f"nightly exit {code}; failures {[(f[0], f[1], f[2][:120]) for f in failures]}; "
                     f"ledger {ledger}", f"a {label} must be that incident's failure row while the batch goes on")
    return Trial(True, f"{incident}: SADE failure row ({ours[0][2][:100]}); {GOOD} done, {incident}'s ASTRA done")


def _truncated_snapshot(place: _Place) -> Trial:
    return _failure_row(place, SNAPSHOT_CUT, "truncated snapshot", "snapshot.json.gz: not a Faultline snapshot")


def _wrong_baseline(place: _Place) -> Trial:
    return _failure_row(place, BASELINE_SWAPPED, "wrong baseline", "is not the baseline of")


SCENARIOS: tuple[Callable[[_Place], Trial], ...] = (_truncated_warehouse, _missing_fragment, _truncated_snapshot,
                                                     _wrong_baseline)


def run(trials: int, work: Path) -> list[Trial]:
    """The four damages in order, `trials` of them (going round again past the fourth)."""
    place = _Place(work)
    return [SCENARIOS[n % len(SCENARIOS)](place) for n in range(trials)]
