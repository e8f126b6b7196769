"""Task runs on the nightly's Dask worker processes (`flows.worker_client`): each is still its own named task run of
the flow run that submitted it, with its states, and a worker process keeps one Prefect API client for all of
them instead of building two per task run (each loading a CA bundle: over a third of a worker's CPU on
trivial units).

A real local Dask cluster of two worker processes from `make_task_runner`, on Prefect's ephemeral API; no LLM.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict

from prefect import flow, task

from faultline.config import Settings

UNITS = 12


@task(name="client-use", task_run_name="client-use: {n}")
def client_use_task(n: int) -> tuple[int, int]:
    """This process's id, and how many task runs, this one included, have used this task run's API client."""
    from prefect.client.orchestration import get_client

    client = get_client(sync_client=True)
    client.faultline_test_uses = getattr(client, "faultline_test_uses", 0) + 1  # type: ignore[attr-defined]
    return os.getpid(), client.faultline_test_uses  # type: ignore[attr-defined]


@flow(name="faultline-worker-client-test")
def client_use_flow(settings: Settings) -> list[tuple[int, int]]:
    from flows.task_runners import make_task_runner

    with make_task_runner(settings) as runner:
        futures = [runner.submit(client_use_task, {"n": n}) for n in range(UNITS)]
        return [future.result() for future in futures]


def _task_runs(flow_run_id):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    return asyncio.run(read())


def test_units_on_worker_processes_are_named_task_runs_of_the_flow_run_and_share_a_client_per_worker(tmp_path):
    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False,
                        nightly_task_runner="processes", nightly_workers=2)
    state = client_use_flow(settings, return_state=True)
    uses = state.result()

    by_worker: dict[int, list[int]] = defaultdict(list)
    for pid, count in uses:
        by_worker[pid].append(count)
    assert os.getpid() not in by_worker and 1 <= len(by_worker) <= 2  # run on the worker processes
    for pid, counts in by_worker.items():  # one client per worker: its task runs count 1, 2, 3, ...
        assert sorted(counts) == list(range(1, len(counts) + 1)), (pid, counts)

    expected = {f"client-use: {n}" for n in range(UNITS)}
    deadline = time.monotonic() + 60  # task run states reach the API as events, a moment after the flow ends
    while True:
        runs = [r for r in _task_runs(state.state_details.flow_run_id) if r.name in expected]
        if len(runs) == UNITS and all(r.state and r.state.is_completed() for r in runs) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {r.name for r in runs} == expected
    assert all(r.state and r.state.is_completed() for r in runs), sorted((r.name, r.state_name) for r in runs)


@task(name="carry", task_run_name="carry: {n}")
def carry_task(n: int, payload: str) -> int:
    return n + len(payload)


@flow(name="faultline-message-log-test")
def message_log_flow(settings: Settings) -> dict[str, list[tuple[int, int | None, int]]]:
    """Units through `make_task_runner`'s local cluster, then what each Dask connection it opened kept:
    (messages sent, log limit, messages kept) per connection."""
    from flows.task_runners import make_task_runner

    def kept(stream) -> tuple[int, int | None, int]:
        return stream.message_count, stream.recent_message_log.maxlen, len(stream.recent_message_log)

    with make_task_runner(settings) as runner:
        for n in range(UNITS):  # one at a time, as the nightly's window releases each unit once done
            runner.submit(carry_task, {"n": n, "payload": "x" * 50_000}).result()
        client = runner._client
        scheduler = client.cluster.scheduler
        workers = client.run(lambda dask_worker: kept(dask_worker.batched_stream))
        return {"client": [kept(client.scheduler_comm)],
                "scheduler": [kept(s) for s in (*scheduler.stream_comms.values(), *scheduler.client_comms.values())],
                "workers": list(workers.values())}


def test_dask_connections_keep_only_the_configured_recent_messages(tmp_path):
    """Each kept message holds a unit's task and parameters: Dask's default log of 1,000 per connection made the
    flow's process grow with every unit of a night until the logs filled."""
    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False,
                        nightly_task_runner="processes", nightly_workers=2, nightly_dask_message_log=3)
    logs = message_log_flow(settings)

    assert len(logs["scheduler"]) == 3 and len(logs["workers"]) == 2  # two workers and the client
    for where, streams in logs.items():
        for sent, limit, kept in streams:
            assert limit == 3 and kept <= 3, (where, sent, limit, kept)
    # the units went through these connections: more messages than the logs keep
    assert logs["client"][0][0] > 3 and max(sent for sent, _, _ in logs["scheduler"]) > 3
