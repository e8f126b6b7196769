"""One stage of the nightly's analysis on the task runner: copy the warehouse, submit one task run per incident
and method a few at a time, write each result as it comes back, remove the copy."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from queue import Queue
from typing import Any

from prefect import Task
from prefect.futures import PrefectFuture
from prefect.task_runners import TaskRunner

from faultline.nightly.backlog import BacklogItem
from faultline.nightly.persist import ResultWriter
from faultline.nightly.run import NightlyRun
from faultline.nightly.summary import Analysis
from faultline.nightly.workspace import (
    UnitResult,
    copy_warehouse,
    remove_warehouse_copy,
)
from faultline.outcome import Method

Unit = tuple[Task, Method, BacklogItem, dict[str, Any]]  # a task to submit, what for, and its keyword arguments


def fan_out(task: Task, method: Method, items: list[BacklogItem], **same: Any) -> list[Unit]:
    """One unit per item that still needs `method`; the keyword arguments are the same for every one."""
    return [(task, method, item, same) for item in items if method in item.todo]


def run_stage(run: NightlyRun, runner: TaskRunner, name: str, items: list[BacklogItem], methods: set[Method],
              units: Callable[[str], list[Unit]], analysis: Analysis) -> Analysis:
    """Copy the warehouse, run the stage's units (`units(copy path)`) on the copy, write them as they finish;
    nothing (no copy) when no item needs one of the stage's `methods`."""
    if not any(methods & set(item.todo) for item in items):
        return analysis
    with closing(run.cursor()) as cursor:
        copy = copy_warehouse(cursor, run.settings, f"{run.run_id}-{name}")
    try:
        todo = units(str(copy))
        writer = ResultWriter(run, total=len(todo), analysis=analysis)
        _run_window(runner, todo, writer, run.settings.nightly_in_flight or 4 * run.settings.nightly_workers)
        writer.flush()
        return writer.analysis
    finally:
        remove_warehouse_copy(copy)


def _run_window(runner: TaskRunner, units: list[Unit], writer: ResultWriter, window: int) -> None:
    """Submit the units `window` at a time, one more as each finishes: the task runner, its futures and the
    results waiting to be written hold a few units per worker, never the whole backlog."""
    finished: Queue[PrefectFuture] = Queue()
    in_flight: dict[PrefectFuture, tuple[Method, BacklogItem]] = {}
    waiting = iter(units)

    def submit_next() -> bool:
        unit = next(waiting, None)
        if unit is None:
            return False
        task, method, item, options = unit
        future = runner.submit(task, {"item": item, **options})
        in_flight[future] = (method, item)
        future.add_done_callback(finished.put)
        return True

    while len(in_flight) < window and submit_next():
        pass
    while in_flight:
        future = finished.get()
        method, item = in_flight.pop(future)
        writer.take(method, item, _result_or_error(future))
        submit_next()


def _result_or_error(future: PrefectFuture) -> UnitResult | BaseException:
    """What a finished task run brought back: its result, or what it failed with."""
    result = future.result(raise_on_failure=False)
    if isinstance(result, (UnitResult, BaseException)):
        return result
    return RuntimeError(f"task ended {future.state.name}")
