"""Storing what the night's units bring back: the flow is the warehouse's one writer, so it replays each unit's
rows (`faultline.nightly.workspace.replay`) in batches, each unit with its ``done`` ledger row in the same
transaction; a unit whose rows cannot be written fails alone, and a full disk stops the run."""

from __future__ import annotations

import time
from contextlib import closing

import duckdb

from faultline.diskspace import out_of_space, rollback
from faultline.nightly import ledger, progress
from faultline.nightly.backlog import BacklogItem
from faultline.nightly.run import NightlyRun
from faultline.nightly.summary import Analysis
from faultline.nightly.workspace import UnitResult, replay
from faultline.outcome import Method


class ResultWriter:
    """Tonight's units as they finish: results are written in batches, each outcome kept and reported once stored;
    each error becomes its rows."""

    def __init__(self, run: NightlyRun, total: int, analysis: Analysis | None = None) -> None:
        self.run = run
        self.total = total
        self.analysis = analysis or Analysis()  # earlier stages' outcomes, when this writer continues them
        self.done = 0
        self.batch = run.settings.nightly_persist_batch
        self.max_wait_s = run.settings.nightly_persist_max_wait_s
        self._pending: list[tuple[BacklogItem, UnitResult]] = []
        self._oldest = 0.0

    def take(self, method: Method, item: BacklogItem, result: UnitResult | BaseException) -> None:
        """Keep one finished unit (its retries spent); a failure never stops the others. Results wait for a
        batch (`nightly_persist_batch` units, or `nightly_persist_max_wait_s` since the oldest waiting one)."""
        if isinstance(result, UnitResult):
            if not self._pending:
                self._oldest = time.monotonic()
            self._pending.append((item, result))
            if len(self._pending) >= self.batch or time.monotonic() - self._oldest >= self.max_wait_s:
                self.flush()
            return
        self.analysis.failures.append(self.run.record_failure(item, method, result))
        self._report(f"{method} {item.incident_id}: FAILED {type(result).__name__}")

    def flush(self) -> None:
        """Write what is waiting (call once more when the last unit is in)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        for item, result, error in self.write(pending):
            outcome = result.outcome
            if error is None:
                self.analysis.outcomes.append(outcome)
                self._report(f"{outcome.method} {item.incident_id}: {outcome.label or 'no fault named'} "
                             f"({outcome.seconds:.1f} s)")
            else:
                self.analysis.failures.append(self.run.record_failure(item, outcome.method, error))
                self._report(f"{outcome.method} {item.incident_id}: FAILED {type(error).__name__}")

    def write(self,
              done: list[tuple[BacklogItem, UnitResult]]) -> list[tuple[BacklogItem, UnitResult, Exception | None]]:
        """Write finished units to the warehouse, each with its ``done`` ledger row: the batch in one transaction,
        or, when that fails, one transaction per unit so that a unit whose rows cannot be written fails alone
        (its error comes back in its place). A full disk stops the run (`OutOfSpace`): the batch is not written,
        its units have no ledger row, and the next run does them again."""
        with closing(self.run.cursor()) as cursor:
            try:
                cursor.execute("BEGIN TRANSACTION")
                for item, result in done:
                    self._write_one(cursor, item, result)
                cursor.execute("COMMIT")
                return [(item, result, None) for item, result in done]
            except Exception as exc:  # noqa: BLE001 - the batch is written again unit by unit, each error kept
                rollback(cursor)
                full = out_of_space(exc, self.run.settings.duckdb_path)
                if full is not None:
                    raise full from exc
            kept: list[tuple[BacklogItem, UnitResult, Exception | None]] = []
            for item, result in done:
                try:
                    cursor.execute("BEGIN TRANSACTION")
                    self._write_one(cursor, item, result)
                    cursor.execute("COMMIT")
                    kept.append((item, result, None))
                except Exception as exc:  # noqa: BLE001 - a unit that cannot be stored is a failure row
                    rollback(cursor)
                    kept.append((item, result, exc))
            return kept

    def _write_one(self, cursor: duckdb.DuckDBPyConnection, item: BacklogItem, result: UnitResult) -> None:
        outcome = result.outcome
        replay(cursor, result)
        ledger.record(cursor, item.incident_id, outcome.method, item.digests[outcome.method], "done",
                      run_id=self.run.run_id, seconds=outcome.seconds)

    def _report(self, message: str) -> None:
        self.done += 1
        progress.report(message, self.done, self.total)
