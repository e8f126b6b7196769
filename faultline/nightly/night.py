"""The bookkeeping of one nightly run, kept out of the flow: its `runs` row, stage timings, the ledger, the summary.

The flow names stages and wires tasks; this module writes what the run leaves behind besides the analyses
themselves — the `runs` row (started, then finished or failed), a ``skipped`` ledger row per method that
cannot run, a ``done`` ledger row per finished unit, a `run_failures` row and a ``failed`` ledger row per
unit that raised — and builds the `NightSummary`. It is also where units run (`Night.run_unit`, on a frozen
copy of the warehouse, anywhere) and where their results are persisted (`Harvest`, in batches, in the flow's
process): everything written goes through the flow process's shared warehouse connection
(`faultline.db.shared_warehouse`), the warehouse's one writer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal, Self

import duckdb

from faultline.config import Settings
from faultline.db import (
    keep_checkpoints_incremental,
    release_shared_warehouse,
    shared_warehouse,
)
from faultline.diskspace import out_of_space, rollback
from faultline.nightly import ledger, progress
from faultline.nightly.backlog import BacklogItem, Method
from faultline.nightly.corpus import FolderIngest
from faultline.nightly.summary import Analysis, Failure, NightSummary, Skip
from faultline.nightly.work import Outcome
from faultline.nightly.workspace import UnitResult, persist, unit_space
from faultline.runs import finish_run, record_failure, start_run

Stage = Literal["ingest", "index", "backlog", "analyse", "verdict", "marts", "dashboards"]
# `run_astra`, `run_sade` or `run_verdict`: (settings, cursor, item, *, run_id, **options)
Unit = Callable[..., Outcome]


@dataclass
class Night:
    """One nightly run's bookkeeping. `Night.begin` opens a new run; `Night(settings, run_id)` is a handle on
    an open one, for the tasks and the analysis (which get the run id, not this object)."""

    settings: Settings
    run_id: str
    prefect_flow_run_id: str | None = None
    stage_seconds: dict[Stage, float] = field(default_factory=dict)
    skips: list[Skip] = field(default_factory=list)

    @classmethod
    def begin(cls, settings: Settings, *, prefect_flow_run_id: str | None = None) -> Self:
        """Open the run: a ``running`` row in `runs`. Its checkpoints write new results only
        (`keep_checkpoints_incremental`)."""
        writer = shared_warehouse(settings)
        keep_checkpoints_incremental(writer)
        with closing(writer.cursor()) as cursor:
            run_id = start_run(cursor, "nightly", settings=settings, prefect_flow_run_id=prefect_flow_run_id)
        return cls(settings, run_id, prefect_flow_run_id)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        """A raise (an interrupt included) marks the run failed and goes on up; the connection is released."""
        try:
            if exc is not None:
                self.fail(exc)
        except duckdb.Error:
            pass  # a full disk may refuse the run's last row too; the error that stopped it goes on up
        finally:
            release_shared_warehouse(self.settings)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the shared warehouse connection, for one step or task."""
        return shared_warehouse(self.settings).cursor()

    @contextmanager
    def stage(self, name: Stage, announce: str | None = None) -> Iterator[None]:
        """Time the block as stage `name`; `announce` goes to the progress reporter first."""
        started = time.perf_counter()
        if announce:
            progress.stage(announce)
        yield
        self.stage_seconds[name] = time.perf_counter() - started

    def record_skips(self, items: list[BacklogItem]) -> None:
        """A ``skipped`` ledger row, with its reason, for every method an item cannot run."""
        with closing(self.cursor()) as cursor:
            for item in items:
                for method, reason in item.skips.items():
                    ledger.record(cursor, item.incident_id, method, item.digests[method], "skipped", reason=reason,
                                  run_id=self.run_id)
                    self.skips.append(Skip(incident_id=item.incident_id, method=method, reason=reason))

    def run_unit(self, item: BacklogItem, method: Method, unit: Unit, frozen: Path, **options: object) -> UnitResult:
        """Run one unit of work on the frozen warehouse `frozen` (`faultline.nightly.workspace`); what it wrote
        comes back as a result for `Harvest` to persist. Opens nothing for writing; a raise goes up (to be
        retried)."""
        with unit_space(frozen, method, self.settings.duckdb_memory_limit) as space:
            outcome = unit(self.settings, space.conn, item, run_id=self.run_id, **options)
            return space.collect(outcome)

    def persist(self, done: list[tuple[BacklogItem, UnitResult]]
                ) -> list[tuple[BacklogItem, UnitResult, Exception | None]]:
        """Write finished units to the warehouse, each with its ``done`` ledger row: the batch in one transaction,
        or, when that fails, one transaction per unit so that a unit whose rows cannot be written fails alone
        (its error comes back in its place). A full disk stops the run (`OutOfSpace`): the batch is not written,
        its units have no ledger row, and the next run does them again."""
        with closing(self.cursor()) as cursor:
            try:
                cursor.execute("BEGIN TRANSACTION")
                for item, result in done:
                    self._persist_one(cursor, item, result)
                cursor.execute("COMMIT")
                return [(item, result, None) for item, result in done]
            except Exception as exc:  # noqa: BLE001 - the batch is written again unit by unit, each error kept
                rollback(cursor)
                full = out_of_space(exc, self.settings.duckdb_path)
                if full is not None:
                    raise full from exc
            kept: list[tuple[BacklogItem, UnitResult, Exception | None]] = []
            for item, result in done:
                try:
                    cursor.execute("BEGIN TRANSACTION")
                    self._persist_one(cursor, item, result)
                    cursor.execute("COMMIT")
                    kept.append((item, result, None))
                except Exception as exc:  # noqa: BLE001 - a unit that cannot be stored is a failure row
                    rollback(cursor)
                    kept.append((item, result, exc))
            return kept

    def _persist_one(self, cursor: duckdb.DuckDBPyConnection, item: BacklogItem, result: UnitResult) -> None:
        outcome = result.outcome
        persist(cursor, result)
        ledger.record(cursor, item.incident_id, outcome.method, item.digests[outcome.method], "done",
                      run_id=self.run_id, seconds=outcome.seconds)

    def record_failure(self, item: BacklogItem, method: Method, exc: BaseException) -> Failure:
        """A unit that failed for good: a `run_failures` row and a ``failed`` ledger row (retried next night)."""
        with closing(self.cursor()) as cursor:
            record_failure(cursor, run_id=self.run_id, stage=method, subject=item.incident_id, exc=exc)
            ledger.record(cursor, item.incident_id, method, item.digests[method], "failed", reason=str(exc)[:500],
                          run_id=self.run_id)
        return Failure(incident_id=item.incident_id, method=method, error_type=type(exc).__name__,
                       message=str(exc))

    def summary(self, *, ingest: list[FolderIngest], backlog: int, analysis: Analysis, marts: dict[str, int],
                dashboard: str | None) -> NightSummary:
        """What the run did, with the stage times so far."""
        return NightSummary(run_id=self.run_id, prefect_flow_run_id=self.prefect_flow_run_id, ingest=ingest,
                            backlog=backlog, outcomes=analysis.outcomes, failures=analysis.failures,
                            skips=self.skips, marts=marts, dashboard=dashboard,
                            stage_seconds={k: round(v, 2) for k, v in self.stage_seconds.items()})

    def finish(self, summary: NightSummary) -> None:
        """Close the run: ``completed``, or ``completed_with_failures`` when a unit failed."""
        with closing(self.cursor()) as cursor:
            finish_run(cursor, self.run_id, status="completed_with_failures" if summary.failures else "completed",
                       stats={"backlog": summary.backlog, "per_method": summary.per_method()})

    def fail(self, exc: BaseException) -> None:
        """Close the run as ``failed`` with the error that stopped it."""
        with closing(self.cursor()) as cursor:
            finish_run(cursor, self.run_id, status="failed", error=f"{type(exc).__name__}: {exc}")


class Harvest:
    """Tonight's units as they finish: results are persisted in batches (the flow is the warehouse's one writer),
    each outcome kept and reported once stored; each error becomes its rows."""

    def __init__(self, night: Night, total: int, analysis: Analysis | None = None) -> None:
        self.night = night
        self.total = total
        self.analysis = analysis or Analysis()  # earlier stages' outcomes, when this harvest continues them
        self.done = 0
        self.batch = night.settings.nightly_persist_batch
        self.max_wait_s = night.settings.nightly_persist_max_wait_s
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
        self.analysis.failures.append(self.night.record_failure(item, method, result))
        self._report(f"{method} {item.incident_id}: FAILED {type(result).__name__}")

    def flush(self) -> None:
        """Persist what is waiting (call once more when the last unit is in)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        for item, result, error in self.night.persist(pending):
            outcome = result.outcome
            if error is None:
                self.analysis.outcomes.append(outcome)
                self._report(f"{outcome.method} {item.incident_id}: {outcome.label or 'no fault named'} "
                             f"({outcome.seconds:.1f} s)")
            else:
                self.analysis.failures.append(self.night.record_failure(item, outcome.method, error))
                self._report(f"{outcome.method} {item.incident_id}: FAILED {type(error).__name__}")

    def _report(self, message: str) -> None:
        self.done += 1
        progress.report(message, self.done, self.total)
