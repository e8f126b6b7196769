"""A nightly run's bookkeeping, kept out of the flow: its `runs` row (started, then finished or failed), stage
timings, a ``skipped`` ledger row per method an incident cannot run, a `run_failures` row and a ``failed`` ledger
row per unit that failed for good, and the run's summary. Everything goes through the flow process's shared
warehouse connection (`faultline.db.shared_warehouse`), the warehouse's one writer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Self

import duckdb

from faultline.config import Settings
from faultline.db import (
    keep_checkpoints_incremental,
    release_shared_warehouse,
    shared_warehouse,
)
from faultline.nightly import ledger, progress
from faultline.nightly.backlog import BacklogItem
from faultline.nightly.corpus import FolderIngest
from faultline.nightly.summary import Analysis, Failure, NightSummary, Skip
from faultline.outcome import Method
from faultline.runs import finish_run, record_failure, start_run

Stage = Literal["ingest", "index", "backlog", "analyse", "verdict", "marts", "dashboards"]


@dataclass
class NightlyRun:
    """One nightly run's bookkeeping. `NightlyRun.begin` opens a new run; `NightlyRun(settings, run_id)` is a handle
    on an open one."""

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
