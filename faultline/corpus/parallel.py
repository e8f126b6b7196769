"""Parallel corpus generation: a suite's incidents in N worker processes, each with a lab of its own.

Worker j keeps the lab prefix `fl<j>-`, its run dir and its prefix's lock for its whole life; a dying worker
costs one incident, and every worker's lab is brought down however the run ends. Why plain spawned processes,
and how stopping works: docs/corpus.md#parallel-generation.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

from faultline.config import Settings

T = TypeVar("T", bound=tuple)
R = TypeVar("R")

MAX_RESTARTS = 2  # per worker: a worker that keeps dying is retired, its slot's incidents go to the others
STOP_GRACE_S = 60.0  # how long a stopped worker may take to bring its lab down before it is killed


@dataclass
class Worker:
    """One worker process and the lab it owns."""

    slot: int  # 1..N
    settings: Settings  # its own lab_prefix and lab_dir
    process: BaseProcess | None = None
    conn: Connection | None = None
    position: int | None = None  # index (in the parent's list) of the item it is running
    restarts: int = 0
    retired: bool = False


def worker_settings(settings: Settings, slot: int) -> Settings:
    """Settings of worker `slot`: prefix `fl<slot>-` (from `lab_prefix`), run dir `<lab_dir>/fl<slot>`."""
    from faultline.lab.namespaces import worker_prefix

    try:
        prefix = worker_prefix(settings.lab_prefix, slot)
    except ValueError as exc:
        from faultline.errors import FaultlineError

        raise FaultlineError(f"no lab prefix for worker {slot}: {exc}", fix="use a shorter lab_prefix") from None
    return settings.model_copy(update={"lab_prefix": prefix, "progress": False,
                                       "lab_dir": Path(settings.lab_dir).resolve() / prefix[:-1],
                                       "lab_mgmt_subnet": _worker_subnet(settings.lab_mgmt_subnet, slot)})


def _worker_subnet(subnet: str, slot: int) -> str:
    """Worker `slot`'s management /24: the run's, `slot` /24s lower (labs side by side never share a bridge's
    addresses)."""
    import ipaddress

    base = ipaddress.ip_network(subnet, strict=False)
    return str(ipaddress.ip_network(f"{base.network_address - 256 * slot}/24"))


def run_in_labs(items: list[T], settings: Settings, *, jobs: int, work: Callable[..., R],
                lost: Callable[[T, str], R], labs: Iterable[tuple[str, str]]) -> Iterator[tuple[int, R]]:
    """Run `work(*item, settings=<the worker's settings>)` for every item in `jobs` worker processes.

    Yields (index in `items`, result) as each ends, every index once. `work` must be picklable (a
    module-level function or a partial of one). An item whose worker died gets `lost(item, reason)`,
    made in this process. `labs` are the (scenario, size) the items build, to size the machine-wide
    ARP table for N of the largest. Stopping early (Ctrl-C, closing the iterator) stops the workers,
    and every worker's lab is brought down either way.
    """
    from faultline.lab import teardown
    from faultline.lab.builder import raise_neigh_limits, restore_neigh_limits
    from faultline.lab.namespaces import active_prefix, use_prefix

    if not items:
        return
    pool = _Pool(items, settings, jobs, work)
    # a worker's `lab up` then finds the ARP limits big enough and leaves them alone
    limits = raise_neigh_limits(_largest_topology(labs), copies=len(pool.workers))
    parent_prefix = active_prefix()
    try:
        for worker in pool.workers:
            pool.start(worker)
        for worker in pool.workers:
            pool.feed(worker)
        while busy := [w for w in pool.workers if w.position is not None]:
            for worker in _ready(busy):
                position, reply = worker.position, _receive(worker)
                worker.position = None
                if reply is None:  # the worker died while running it
                    worker.process.join(5)  # its exit code
                    yield position, lost(items[position], f"worker {worker.slot} (lab prefix "
                                         f"{worker.settings.lab_prefix}) died with exit code "
                                         f"{worker.process.exitcode} while generating this incident")
                    pool.bury(worker)
                else:
                    yield reply
                pool.feed(worker)
        while pool.todo:  # left only when every worker kept dying
            position = pool.todo.popleft()
            yield position, lost(items[position], "not generated: every worker process kept dying")
    except BaseException:
        pool.stop(hurry=True)
        raise
    finally:
        pool.stop(hurry=False)
        for worker in pool.workers:
            _sweep(worker)
        if limits and not teardown.all_namespaces():
            restore_neigh_limits(limits)
        use_prefix(parent_prefix)


class _Pool:
    """The workers of one run, the items not handed out yet, and how to start, feed and stop workers."""

    def __init__(self, items: list[tuple], settings: Settings, jobs: int, work: Callable[..., Any]) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.items, self.work = items, work
        self.workers = [Worker(slot, worker_settings(settings, slot)) for slot in range(1, min(jobs, len(items)) + 1)]
        self.todo = deque(range(len(items)))

    def start(self, worker: Worker) -> None:
        """Start `worker`'s process (it then takes its prefix lock and clears its prefix's leftovers)."""
        parent_end, child_end = self.context.Pipe()
        worker.process = self.context.Process(target=worker_main, name=f"faultline-lab-worker-{worker.slot}",
                                              args=(worker.settings, child_end, self.work))
        worker.process.start()
        child_end.close()
        worker.conn = parent_end

    def feed(self, worker: Worker) -> None:
        """Hand `worker` the next item, or tell it to stop when none is left."""
        while self.todo and not worker.retired:
            position = self.todo.popleft()
            try:
                if not worker.process.is_alive():
                    raise BrokenPipeError
                worker.conn.send((position, self.items[position]))
            except OSError:  # it died idle: nothing lost, start another
                self.todo.appendleft(position)
                self.bury(worker)
                continue
            worker.position = position
            return
        if not worker.retired:
            _send_stop(worker)

    def bury(self, worker: Worker) -> None:
        """A worker died: remove what its lab left, then start another in its place (or retire the slot)."""
        worker.process.join(5)
        worker.conn.close()
        _sweep(worker)
        worker.restarts += 1
        if worker.restarts > MAX_RESTARTS:
            worker.retired = True
        else:
            self.start(worker)

    def stop(self, *, hurry: bool) -> None:
        """Stop every live worker (told to when idle; SIGTERM when `hurry`), wait, kill what hangs."""
        live = [w for w in self.workers if w.process is not None and w.process.is_alive()]
        for worker in live:
            if hurry:
                os.kill(worker.process.pid, signal.SIGTERM)
            else:
                _send_stop(worker)
        for worker in live:
            worker.process.join(STOP_GRACE_S)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)


def _largest_topology(labs: Iterable[tuple[str, str]]):  # -> Topology
    from faultline.lab.builder import neigh_entries_needed
    from faultline.lab.scenarios import build_topology

    return max((build_topology(*lab) for lab in sorted(set(labs))), key=neigh_entries_needed)


def _ready(busy: list[Worker]) -> list[Worker]:
    """The busy workers that sent a result or died (blocks until there is one)."""
    handles: dict[Any, Worker] = {}
    for worker in busy:
        handles[worker.conn] = worker
        handles[worker.process.sentinel] = worker
    ready = {id(handles[h]): handles[h] for h in wait(list(handles))}
    return list(ready.values())


def _receive(worker: Worker) -> tuple[int, Any] | None:
    """The worker's (position, result), or None when it died without sending one."""
    try:
        if worker.conn.poll():
            return worker.conn.recv()
    except (EOFError, OSError):
        return None
    return None


def _send_stop(worker: Worker) -> None:
    try:
        worker.conn.send(None)
    except OSError:
        pass


def _sweep(worker: Worker) -> None:
    """`lab down --all` for the worker's prefix and run dir (its process is gone, so its lock is free)."""
    from faultline.lab import lifecycle

    try:
        lifecycle.down(worker.settings, all=True)
    except Exception as exc:  # noqa: BLE001 - reported; the next run's worker sweeps its prefix again
        logging.getLogger(__name__).warning("lab down --all for worker %s (prefix %s) failed: %s",
                                            worker.slot, worker.settings.lab_prefix, exc)


# --- the worker process ---------------------------------------------------------------------------


def worker_main(settings: Settings, conn: Connection, work: Callable[..., Any]) -> None:
    """A worker's life: hold its prefix lock, clear leftovers, run items until told to stop."""
    from faultline.lab import lifecycle, locks
    from faultline.lab.namespaces import use_prefix

    # Ctrl-C reaches the whole process group: the parent decides, and stops workers with SIGTERM.
    # A no-op handler rather than SIG_IGN, which the lab's daemons would inherit.
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGTERM, _exit_on_term)
    use_prefix(settings.lab_prefix)
    with locks.holding(locks.prefix_lock(settings.lab_prefix), what=f"the lab with prefix {settings.lab_prefix}"):
        lifecycle.down(settings, all=True)  # what an earlier run of this prefix left behind
        while True:
            try:
                task = conn.recv()
            except EOFError:  # the parent is gone
                return
            if task is None:
                return
            position, item = task
            conn.send((position, work(*item, settings=settings)))


def _exit_on_term(signum: int, _frame: Any) -> None:
    # once: a second SIGTERM must not cut the lab's teardown short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)
