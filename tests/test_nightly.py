"""The nightly flow on real recorded incidents: both analyses per incident, failures as rows, resume, Dask.

A small corpus (history + backlog + docs of the sample, by symlink) is ingested once per module, and a corpus
of plain exports (tickets/, logs/, docs/) by one test of its own; the flow runs on Prefect's ephemeral API and
the deterministic analyst, never a real LLM.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
HISTORY = [f"sample-history-{n:03d}" for n in (3, 4, 9, 15, 16, 37, 40, 42)]
BACKLOG = ["sample-backlog-004", "sample-backlog-009", "sample-backlog-042", "sample-backlog-047"]


def _link(source, target):
    """The incident folder's entries as symlinks (the corpus walk does not follow a symlinked folder)."""
    target.mkdir(parents=True)
    for entry in source.iterdir():
        (target / entry.name).symlink_to(entry)


def _corpus(root, backlog, *, broken=(), history=tuple(HISTORY)):
    for name in history:
        _link(SAMPLE / "history" / name, root / "history" / name)
    for name in backlog:
        if name in broken:  # a copy whose snapshot is not a snapshot: SADE cannot probe it
            shutil.copytree(SAMPLE / "backlog" / name, root / "backlog" / name)
            with gzip.open(root / "backlog" / name / "snapshot.json.gz", "wt") as handle:
                handle.write("{not json")
        else:
            _link(SAMPLE / "backlog" / name, root / "backlog" / name)
    for suite in ("history", "backlog"):  # the collector's archive and the networks' inventories are the suite's
        for shared in ("archive", "inventory"):
            (root / suite / shared).symlink_to(SAMPLE / suite / shared)
    (root / "docs").symlink_to(SAMPLE / "docs")
    return root


def _settings(base, **extra):
    from faultline.config import Settings

    return Settings(duckdb_path=base / "fl.duckdb", lancedb_dir=base / "lancedb", progress=False,
                    log_default_year=2026, nightly_llm_retries=0, nightly_probe_retries=0, **extra)


def _rows(settings, sql, params=()):
    from faultline import db

    conn = db.connect(settings.duckdb_path)
    try:
        return conn.execute(sql, list(params)).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    """One nightly run over the corpus (one incident's snapshot broken); its settings, corpus and summary."""
    from flows.nightly import nightly_flow

    base = tmp_path_factory.mktemp("nightly")
    corpus = _corpus(base / "corpus", BACKLOG, broken=("sample-backlog-009",))
    settings = _settings(base)
    summary = nightly_flow(corpus=str(corpus), settings=settings, max_rounds=2)
    _copy_night(settings, base / "as-run")  # the warehouse as this (thread pool) run left it, before other tests
    return settings, corpus, summary


def test_every_backlog_incident_is_analysed_both_ways_and_evaluated(night):
    settings, _, summary = night
    done = _rows(settings, "SELECT incident_id, method FROM analysis_ledger WHERE status = 'done'")
    assert {(i, "astra") for i in BACKLOG} <= set(done)
    assert {(i, "sade") for i in BACKLOG if i != "sample-backlog-009"} <= set(done)
    scored = _rows(settings, "SELECT DISTINCT incident_id, method FROM evaluations WHERE method IN ('astra', 'sade')")
    assert {(i, "astra") for i in BACKLOG} <= set(scored)
    marts = _rows(settings, "SELECT count(*) FROM mart_sade_metrics WHERE method = 'sade'")[0][0]
    assert marts > 0 and summary["marts"]["mart_agreement"] >= 3
    by_method = {o["method"]: o for o in summary["outcomes"] if o["incident_id"] == "sample-backlog-042"}
    assert by_method["astra"]["label"] == "web_dos_attack" and by_method["sade"]["label"] == "web_dos_attack"
    # and one verdict per incident, fused after both; the incident SADE could not probe gets one from ASTRA's side
    assert {(i, "verdict") for i in BACKLOG} <= set(done)
    assert by_method["verdict"]["label"] == "web_dos_attack" and by_method["verdict"]["rubric_accuracy"] >= 4
    (rule, without), = _rows(settings, "SELECT rule, without_network FROM verdicts "
                                       "WHERE incident_id = 'sample-backlog-009'")
    assert not rule.startswith("network") and "diagnosis" in without


def test_a_failed_incident_is_a_row_and_the_run_goes_on(night):
    settings, _, summary = night
    (stage, error_type, message), = _rows(settings, "SELECT stage, error_type, message FROM run_failures "
                                                    "WHERE incident_id = 'sample-backlog-009'")
    assert stage == "sade" and error_type == "FaultlineError" and "sample-backlog-009" in message
    assert _rows(settings, "SELECT status FROM analysis_ledger WHERE incident_id = 'sample-backlog-009' "
                           "AND method = 'sade'") == [("failed",)]
    status, = _rows(settings, "SELECT status FROM runs WHERE run_id = ?", [summary["run_id"]])[0]
    assert status == "completed_with_failures"
    assert [f["incident_id"] for f in summary["failures"]] == ["sample-backlog-009"]


def test_the_runs_the_night_starts_are_its_sub_runs(night):
    settings, _, summary = night
    night_id = summary["run_id"]
    assert _rows(settings, "SELECT parent_run_id FROM runs WHERE run_id = ?", [night_id]) == [(None,)]
    children = _rows(settings, "SELECT run_id, kind FROM runs WHERE parent_run_id = ? ORDER BY started_at", [night_id])
    assert [kind for _, kind in children] == ["ingest_incidents", "ingest_incidents", "ingest_docs"]  # history, backlog
    incident_runs = [run_id for run_id, kind in children if kind == "ingest_incidents"]
    inventories = _rows(settings, "SELECT parent_run_id, count(*) FROM runs WHERE kind = 'ingest_inventory' "
                                  "GROUP BY ALL ORDER BY 2")
    assert {parent for parent, _ in inventories} == set(incident_runs)  # each inside the folder's run that found it
    assert sum(n for _, n in inventories) == len(list(SAMPLE.glob("*/inventory/*/hosts.yaml")))


def test_task_runs_are_named_by_incident_and_the_summary_is_an_artifact(night):
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterKey,
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterName,
    )

    _, _, summary = night
    expected = [*(f"astra: {i}" for i in BACKLOG), "sade: sample-backlog-042"]

    async def read():
        async with get_client() as client:
            parent = await client.read_flow_run(summary["prefect_flow_run_id"])
            # by name: the test server keeps every test's task runs, more than one unfiltered page holds
            runs = await client.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(any_=expected)))
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=["nightly-summary"])),
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent.id])))
            return parent, runs, artifacts

    parent, runs, artifacts = asyncio.run(read())
    assert parent.name.startswith("nightly ")
    names = {r.name for r in runs}
    assert set(expected) <= names
    assert artifacts and "sample-backlog-009" in artifacts[0].data and "| astra |" in artifacts[0].data


def test_the_analyses_are_task_runs_of_the_nightly_flow_run_which_does_not_carry_the_backlog(night):
    """Prefect sends the submitting flow run's context, parameters included, with every task run, and Dask keeps
    its last thousand messages: the units are submitted from the nightly flow run (a few parameters), not from a
    subflow given the whole backlog (each unit then carried all of it; the flow's memory grew with its square)."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    _, _, summary = night

    async def read():
        async with get_client() as client:
            parent = await client.read_flow_run(summary["prefect_flow_run_id"])
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[parent.id])))
            return parent, {r.name for r in runs}

    parent, names = asyncio.run(read())
    assert {f"astra: {i}" for i in BACKLOG} | {"sade: sample-backlog-042", "verdict: sample-backlog-042"} <= names
    assert not any("sample-backlog" in str(value) for value in parent.parameters.values())


def test_running_the_same_night_again_duplicates_nothing(night):
    from flows.nightly import nightly_flow

    settings, corpus, _ = night
    keys = {"astra_rounds": "incident_id, analyst, round", "submissions": "incident_id, method",
            "evaluations": "incident_id, method, metric", "claims": "claim_id",
            "analysis_ledger": "incident_id, method", "verdicts": "incident_id",
            "verdict_claims": "incident_id, seq"}
    before = {t: _rows(settings, f"SELECT count(*) FROM {t}")[0][0] for t in keys}
    again = nightly_flow(corpus=str(corpus), settings=settings, max_rounds=2)
    assert [o for o in again["outcomes"] if o["method"] == "astra"] == []  # nothing left but the failed SADE one
    assert {(f["incident_id"], f["method"]) for f in again["failures"]} == {("sample-backlog-009", "sade")}
    for table, key in keys.items():
        total, distinct = _rows(settings, f"SELECT count(*), count(DISTINCT ({key})) FROM {table}")[0]
        assert total == distinct == before[table], table


def test_an_imported_ticket_without_a_network_gets_astra_and_a_recorded_skip(night):
    from faultline import db
    from flows.nightly import nightly_flow

    settings, _, _ = night
    conn = db.connect(settings.duckdb_path)
    conn.execute("INSERT INTO tickets (ticket_id, source, title, description, status, content_hash, source_file, "
                 "source_record, first_ingested_at, ingested_at, created_at) VALUES ('OPS-1', 'jira', "
                 "'BGP session to the core flaps', 'Peers keep going down since noon.', 'Open', 'h1', 'x.jsonl', 1, "
                 "now(), now(), now())")
    conn.close()
    summary = nightly_flow(settings=settings, incidents=["OPS-1"], max_rounds=1)
    assert [(o["incident_id"], o["method"]) for o in summary["outcomes"]] == [("OPS-1", "astra"), ("OPS-1", "verdict")]
    assert [(s["incident_id"], s["method"]) for s in summary["skips"]] == [("OPS-1", "sade")]
    (status, reason), = _rows(settings, "SELECT status, reason FROM analysis_ledger WHERE incident_id = 'OPS-1' "
                                        "AND method = 'sade'")
    assert status == "skipped" and "no lab incident" in reason


OPS_TICKETS = [  # an operator tracker's export, JIRA layout
    {"key": "OPS-101", "project": "OPS", "summary": "BGP session to the core router flaps", "status": "Open",
     "description": "Since 10:00 the eBGP session between router1 and the core keeps going down; packet loss.",
     "priority": "Major", "created": "2026-05-01T10:05:00+00:00"},
    {"key": "OPS-102", "project": "OPS", "summary": "Web portal unreachable from building 2", "status": "Open",
     "description": "Users in building 2 cannot open the intranet portal; DNS answers but HTTP times out.",
     "priority": "Minor", "created": "2026-05-01T11:30:00+00:00"},
]
FRR_LOG = """\
2026/05/01 10:00:01 BGP: [ZWCSR-M7FG9] %ADJCHANGE: neighbor 10.0.0.2(core) in vrf default Down BGP Notification send
2026/05/01 10:00:31 BGP: [M59KS-A3ZXZ] %ADJCHANGE: neighbor 10.0.0.2(core) in vrf default Up
2026/05/01 10:02:01 BGP: [ZWCSR-M7FG9] %ADJCHANGE: neighbor 10.0.0.2(core) in vrf default Down Peer closed the session
"""


def _exports_corpus(root):
    """A corpus of plain exports: tickets/ (JSONL), logs/ (an FRR log) and docs/ (the sample runbook)."""
    import json

    (root / "tickets").mkdir(parents=True)
    (root / "tickets" / "ops.jsonl").write_text("".join(json.dumps(t) + "\n" for t in OPS_TICKETS))
    (root / "logs" / "router1").mkdir(parents=True)
    (root / "logs" / "router1" / "frr.log").write_text(FRR_LOG)
    (root / "docs").symlink_to(SAMPLE / "docs")
    return root


def test_a_corpus_of_exports_is_ingested_a_task_run_per_file_and_analysed_by_astra(tmp_path):
    import asyncio
    import contextlib
    import io

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from faultline.cli.nightly import print_summary
    from faultline.nightly.summary import NightSummary, markdown
    from flows.nightly import nightly_flow

    settings = _settings(tmp_path)
    summary = nightly_flow(corpus=str(_exports_corpus(tmp_path / "corpus")), settings=settings, max_rounds=1)

    ingested = {f["folder"]: f for f in summary["ingest"]}
    assert list(ingested) == ["tickets", "logs", "docs"]
    assert [(f["files"], f["failed"]) for f in ingested.values()] == [(1, {})] * 3
    assert ingested["tickets"]["accepted"] == 2 and ingested["logs"]["accepted"] == 3
    assert ingested["docs"]["accepted"] == _rows(settings, "SELECT count(*) FROM doc_chunks")[0][0] > 0
    assert _rows(settings, "SELECT ticket_id, source FROM tickets ORDER BY 1") == [("OPS-101", "jira"),
                                                                                  ("OPS-102", "jira")]
    assert _rows(settings, "SELECT count(*) FROM log_lines")[0][0] == 3

    # ASTRA analysed both tickets; SADE has no network behind an imported ticket: a recorded skip
    assert sorted((o["incident_id"], o["method"]) for o in summary["outcomes"]) == [
        ("OPS-101", "astra"), ("OPS-101", "verdict"), ("OPS-102", "astra"), ("OPS-102", "verdict")]
    assert _rows(settings, "SELECT DISTINCT incident_id FROM astra_rounds ORDER BY 1") == [("OPS-101",), ("OPS-102",)]
    assert _rows(settings, "SELECT incident_id, method, status FROM analysis_ledger ORDER BY 1, 2") == [
        ("OPS-101", "astra", "done"), ("OPS-101", "sade", "skipped"), ("OPS-101", "verdict", "done"),
        ("OPS-102", "astra", "done"), ("OPS-102", "sade", "skipped"), ("OPS-102", "verdict", "done")]
    assert all("imported ticket" in w for (w,) in _rows(settings, "SELECT without_network FROM verdicts"))
    assert [s["method"] for s in summary["skips"]] == ["sade", "sade"]
    assert all("no lab incident" in s["reason"] for s in summary["skips"])

    async def task_run_names():
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[summary["prefect_flow_run_id"]])))
            return {r.name for r in runs}

    # every file is a task run of the night's flow run, named after the file, as the Prefect UI lists them
    assert {"ingest tickets: ops.jsonl", "ingest logs: frr.log", "ingest docs: noc-runbook.md"} <= asyncio.run(
        task_run_names())
    # and the run summary says what each folder brought in: at the end of `faultline nightly` and in the artifact
    out = io.StringIO()  # not capsys: ASTRA's docs MCP client needs real std streams to spawn its server
    with contextlib.redirect_stdout(out):
        print_summary(summary)
    printed = out.getvalue()
    assert all(f"{folder}/" in printed for folder in ingested)
    assert "| tickets/ | 1 | 0 | 2 | 0 | - | 0 |" in markdown(NightSummary.model_validate(summary))


VOLATILE = {"run_id", "created_at", "elapsed_s", "elapsed_ms"}  # differ from one run to the next by nature
TIMINGS = __import__("re").compile(r'"elapsed_(?:s|ms)": [0-9.e-]+|"timings":\{[^}]*\}')  # the same, in JSON
UNIT_TABLES = ("astra_rounds", "claims", "evidence", "judge_scores", "followup_queries", "evaluations",
               "log_excerpts", "log_scopes", "sade_steps", "sade_flags", "submissions", "verdicts", "verdict_claims",
               "verdict_checks")


def _unit_rows(path, incidents):
    """Every table a unit writes, the incidents' rows, without the columns that change from run to run."""
    import duckdb

    conn = duckdb.connect(str(path), read_only=True)
    try:
        found = {}
        for table in UNIT_TABLES:
            columns = [c for (c,) in conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                                                  "table_name = ? ORDER BY ordinal_position", [table]).fetchall()
                       if c not in VOLATILE]
            listed = ", ".join(columns)
            timed = " AND metric <> 'elapsed_s'" if "metric" in columns else ""
            rows = conn.execute(f"SELECT {listed} FROM {table} WHERE incident_id IN (SELECT unnest(?)){timed}",
                                [list(incidents)]).fetchall()
            found[table] = sorted(TIMINGS.sub("", repr(row)) for row in rows)
        return found
    finally:
        conn.close()


def _copy_night(settings, target):
    """A copy of the night's warehouse and indexes, with settings pointing at it."""
    target.mkdir()
    shutil.copyfile(settings.duckdb_path, target / "fl.duckdb")
    shutil.copytree(settings.lancedb_dir, target / "lancedb")
    return settings.model_copy(update={"duckdb_path": target / "fl.duckdb", "lancedb_dir": target / "lancedb"})


def test_a_unit_run_on_a_warehouse_copy_stores_what_it_would_store_running_on_the_warehouse(night, tmp_path):
    """Each method's unit run on the warehouse itself and the nightly's way (reading a copy of the warehouse, its
    rows replayed by the flow) leaves the same rows behind, deletes of earlier rows included."""
    from contextlib import closing

    from faultline import db
    from faultline.astra.unit import run_astra
    from faultline.nightly import lent
    from faultline.nightly.backlog import select_backlog
    from faultline.nightly.run import NightlyRun
    from faultline.nightly.units import run_unit
    from faultline.nightly.workspace import (
        copy_warehouse,
        remove_warehouse_copy,
        replay,
    )
    from faultline.sade.unit import run_sade
    from faultline.verdict.unit import run_verdict

    settings, _, _ = night
    direct, copied = _copy_night(settings, tmp_path / "direct"), _copy_night(settings, tmp_path / "copied")
    incident = "sample-backlog-042"
    conn = db.connect(direct.duckdb_path)
    try:
        conn.execute("DELETE FROM analysis_ledger WHERE incident_id = ?", [incident])  # so it has work to do
        item, = select_backlog(conn, analyst="deterministic", network_backend="snapshot", incidents=[incident])
        run_astra(direct, conn, item, max_rounds=1, run_id="r-direct")
        run_sade(direct, item, conn=conn, run_id="r-direct")
        run_verdict(direct, conn, item, run_id="r-direct")
    finally:
        conn.close()
    run = NightlyRun(copied, "r-copied")
    try:
        for method, options in (("astra", {"max_rounds": 1}), ("sade", {}), ("verdict", {})):
            with closing(run.cursor()) as cursor:
                copy = copy_warehouse(cursor, copied, f"check-{method}")
            result = run_unit(copied, run.run_id, item, method, copy, **options)
            remove_warehouse_copy(copy)
            assert result.rows and result.deletes, method  # the night's rows of this incident are replaced
            with closing(run.cursor()) as cursor:
                replay(cursor, result)
    finally:
        lent.close_all()  # what a night lends its units (here, a docs server spawned for this process)
        db.release_shared_warehouse(copied)
    assert _unit_rows(copied.duckdb_path, [incident]) == _unit_rows(direct.duckdb_path, [incident])


def test_a_nightly_run_on_a_dask_scheduler_and_two_worker_processes_equals_the_threads_run(night, tmp_path):
    """The dask command-line tools start a scheduler and two workers on localhost; two incidents of the night
    (a thread pool run) are analysed again on them, in a copy of the warehouse as that run left it: every
    report, submission and score is the same."""
    from flows.nightly import nightly_flow

    settings, _, _ = night
    incidents = ["sample-backlog-004", "sample-backlog-042"]
    as_run = settings.duckdb_path.parent / "as-run"
    cluster = _copy_night(settings.model_copy(update={"duckdb_path": as_run / "fl.duckdb",
                                                      "lancedb_dir": as_run / "lancedb"}), tmp_path / "cluster")
    threads_rows = _unit_rows(cluster.duckdb_path, incidents)
    _rows(cluster, "DELETE FROM analysis_ledger WHERE incident_id IN (SELECT unnest(?))", [incidents])
    dask = [sys.executable, "-m", "dask"]
    address_file = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                 "--scheduler-file", str(address_file)], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists():
            assert time.monotonic() < deadline, "the dask scheduler did not start"
            time.sleep(0.2)
        address = __import__("json").loads(address_file.read_text())["address"]
        for n in range(2):  # w1 started as the README asks, w0 and the scheduler not
            own = {**env, "DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH": "20"} if n else env
            started.append(subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                             "--no-dashboard", "--name", f"w{n}", "--local-directory",
                                             str(tmp_path / f"w{n}")], cwd=REPO, env=own,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            start_new_session=True))
        from distributed import Client

        from flows.worker_client import longer_message_logs

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            names = {a: w["name"] for a, w in client.scheduler_info()["workers"].items()}
            longer = longer_message_logs(client, 20)  # what the runner warns about
            assert {names.get(p, p): n for p, n in longer.items()} == {"scheduler": 1000, "w0": 1000}
            summary = nightly_flow(settings=cluster.model_copy(update={"nightly_task_runner": "cluster",
                                                                       "nightly_dask_address": address}),
                                   incidents=incidents, max_rounds=2)
            workers = client.run(os.getpid)
    finally:
        for proc in started:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in started:
            proc.wait(timeout=30)
    assert len(set(workers.values()) - {os.getpid()}) == 2  # two worker processes, neither of them this one
    assert {(o["incident_id"], o["method"]) for o in summary["outcomes"]} == {
        (i, m) for i in incidents for m in ("astra", "sade", "verdict")}
    assert _unit_rows(cluster.duckdb_path, incidents) == threads_rows


def test_an_edited_ticket_is_analysed_again_on_local_worker_processes(night):
    from flows.nightly import nightly_flow

    settings, _, _ = night
    from faultline import db

    conn = db.connect(settings.duckdb_path)
    conn.execute("UPDATE tickets SET description = description || ' (edited)', content_hash = 'edited' "
                 "WHERE ticket_id = (SELECT ticket_id FROM incidents WHERE incident_id = 'sample-backlog-042')")
    conn.close()
    dask = settings.model_copy(update={"nightly_task_runner": "processes", "nightly_workers": 1})
    summary = nightly_flow(settings=dask, incidents=["sample-backlog-042"], max_rounds=1)
    assert sorted(o["method"] for o in summary["outcomes"]) == ["astra", "sade", "verdict"]
    assert _rows(settings, "SELECT count(*) FROM astra_rounds WHERE incident_id = 'sample-backlog-042'")[0][0] == 1


def test_a_run_killed_mid_way_resumes_without_redoing_finished_incidents(tmp_path):
    from flows.nightly import nightly_flow

    backlog = BACKLOG[:2]  # one incident finishes before the kill, the other is left for the resumed run
    corpus = _corpus(tmp_path / "corpus", backlog, history=HISTORY[:3])
    settings = _settings(tmp_path, nightly_workers=1)
    argv = [sys.executable, "-m", "faultline.cli.main", "--db", str(settings.duckdb_path), "--lancedb",
            str(settings.lancedb_dir), "nightly", "--corpus", str(corpus), "--rounds", "2"]
    env = {**os.environ, "FAULTLINE_LOG_DEFAULT_YEAR": "2026", "FAULTLINE_NIGHTLY_WORKERS": "1",
           "FAULTLINE_NIGHTLY_PERSIST_BATCH": "1"}  # each finished unit stored at once, so the kill finds one
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                            cwd=REPO, start_new_session=True)
    finished: list[str] = []
    deadline = time.monotonic() + 600
    for line in proc.stdout:  # "[n/N] astra sample-backlog-004: ..." per finished unit
        if line.startswith("[") and " astra " in line:
            finished.append(line.split()[2].rstrip(":"))
            os.killpg(proc.pid, signal.SIGKILL)
            break
        assert time.monotonic() < deadline, "the nightly run never finished an incident"
    proc.wait(timeout=60)
    assert len(finished) == 1, "the run was not killed mid-way"
    first_run = _rows(settings, "SELECT incident_id, method, run_id FROM analysis_ledger WHERE status = 'done'")
    assert (finished[0], "astra") in {(i, m) for i, m, _ in first_run}
    resumed = nightly_flow(corpus=str(corpus), settings=settings, max_rounds=2)
    redone = {(o["incident_id"], o["method"]) for o in resumed["outcomes"]}
    assert not redone & {(i, m) for i, m, _ in first_run}  # finished work is not done again
    ledger = _rows(settings, "SELECT incident_id, method, run_id FROM analysis_ledger WHERE status = 'done'")
    assert {(i, m) for i, m, _ in ledger} == {(i, m) for i in backlog for m in ("astra", "sade", "verdict")}
    assert set(first_run) <= set(ledger)  # the first run's outcomes keep its run id
    for table, key in {"astra_rounds": "incident_id, analyst, round", "submissions": "incident_id, method",
                       "evaluations": "incident_id, method, metric"}.items():
        total, distinct = _rows(settings, f"SELECT count(*), count(DISTINCT ({key})) FROM {table}")[0]
        assert total == distinct, table


def test_every_sql_cookbook_query_runs_on_a_nightly_warehouse(night):
    import re

    from faultline import db

    settings, _, _ = night
    queries = re.findall(r"```sql\n(.*?)```", (REPO / "docs" / "sql-cookbook.md").read_text(), re.DOTALL)
    assert len(queries) >= 10
    conn = db.connect(settings.duckdb_path)
    try:
        unanswered = []
        for query in queries:
            cursor = conn.execute(query)
            assert cursor.description, query
            if not cursor.fetchall():
                unanswered.append(query.strip().splitlines()[0])
    finally:
        conn.close()
    assert len(unanswered) <= 2, f"most cookbook questions have an answer after one night; empty: {unanswered}"


def test_the_demo_never_empties_a_folder_it_did_not_make(tmp_path, run_cli, capsys):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    run_cli("demo", "--dir", str(precious), expect_exit=2)
    assert (precious / "notes.txt").read_text() == "keep me"
    assert "not made by `faultline demo`" in capsys.readouterr().err
