"""Flows against a real local Prefect server: runs are recorded and readable through its API."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

pytestmark = pytest.mark.prefect_server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory):
    home = tmp_path_factory.mktemp("prefect-home")
    port = _free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    log = open(home / "server.log", "w")  # noqa: SIM115 - the server writes to it until teardown closes it
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"prefect server exited early: {(home / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("prefect server did not become healthy within 180 s")
    yield {"url": url, "home": home}
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    log.close()


def _cli(prefect_api, tmp_path, *args):
    env = {**os.environ, "PREFECT_API_URL": prefect_api["url"], "PREFECT_HOME": str(prefect_api["home"]),
           "FAULTLINE_DUCKDB_PATH": str(tmp_path / "fl.duckdb"), "FAULTLINE_LANCEDB_DIR": str(tmp_path / "lance"),
           "FAULTLINE_PROGRESS": "false"}
    done = subprocess.run([sys.executable, "-m", "faultline.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _flow_run(prefect_api, flow_run_id):
    return httpx.get(f"{prefect_api['url']}/flow_runs/{flow_run_id}", timeout=10).json()


def _task_runs(prefect_api, flow_run_id):
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
    return httpx.post(f"{prefect_api['url']}/task_runs/filter", json=body, timeout=10).json()


def test_ingest_flow_run_is_recorded_on_the_server(prefect_api, tmp_path):
    tickets = tmp_path / "t.jsonl"
    tickets.write_text('{"key": "A-1", "summary": "one"}\n{"key": "A-2", "summary": "two"}\n')
    logs = tmp_path / "r1.log"
    logs.write_text("2024/05/01 10:00:00 BGP: [ZWCSR-M7FG9] %ADJCHANGE: neighbor 10.0.0.2 Down\n")
    report = _cli(prefect_api, tmp_path, "ingest", "tickets", str(tickets), "--flow", "--json")
    assert report["totals"]["accepted"] == 2
    _cli(prefect_api, tmp_path, "ingest", "logs", str(logs), "--flow", "--json")

    import duckdb

    conn = duckdb.connect(str(tmp_path / "fl.duckdb"), read_only=True)
    runs = conn.execute("SELECT kind, status, prefect_flow_run_id FROM runs ORDER BY started_at").fetchall()
    assert [r[:2] for r in runs] == [("ingest_tickets", "completed"), ("ingest_logs", "completed")]
    for _kind, _status, flow_run_id in runs:
        flow_run = _flow_run(prefect_api, flow_run_id)
        assert flow_run["state_type"] == "COMPLETED"
        task_runs = _task_runs(prefect_api, flow_run_id)
        assert [t["state_type"] for t in task_runs] == ["COMPLETED"]
        assert task_runs[0]["name"].startswith("ingest ")


def test_the_adhoc_deployment_runs_through_a_worker_and_is_read_back_through_the_api(prefect_api, tmp_path):
    """prefect.yaml deploys; a process worker runs the ad-hoc deployment with parameters; the API shows it done."""
    from tests.conftest import REPO
    from tests.test_nightly import HISTORY, _corpus

    corpus = _corpus(tmp_path / "corpus", ["sample-backlog-042", "sample-backlog-047"], history=HISTORY[:2])
    env = {**os.environ, "PREFECT_API_URL": prefect_api["url"], "PREFECT_HOME": str(prefect_api["home"]),
           "FAULTLINE_DUCKDB_PATH": str(tmp_path / "fl.duckdb"), "FAULTLINE_LANCEDB_DIR": str(tmp_path / "lance"),
           "FAULTLINE_LOG_DEFAULT_YEAR": "2026", "FAULTLINE_PROGRESS": "false", "PWD": str(REPO)}
    prefect = [sys.executable, "-m", "prefect", "--no-prompt"]

    def run(*args, cwd=REPO, timeout=300):
        done = subprocess.run([*prefect, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              check=False)
        assert done.returncode == 0, f"prefect {' '.join(args)}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
        return done.stdout

    run("work-pool", "create", "faultline", "--type", "process")
    run("deploy", "--all")
    deployments = httpx.post(f"{prefect_api['url']}/deployments/filter", json={}, timeout=10).json()
    by_name = {d["name"]: d for d in deployments}
    assert set(by_name) >= {"nightly", "adhoc"}
    (schedule,) = by_name["nightly"]["schedules"]
    assert schedule["schedule"]["cron"] == "30 2 * * *" and schedule["schedule"]["timezone"] == "UTC"
    out = run("deployment", "run", "faultline-nightly/adhoc", "--param", f"corpus={corpus}", "--param", "limit=1",
              "--param", "max_rounds=1")
    flow_run_id = next(w for w in out.split() if len(w) == 36 and w.count("-") == 4)
    run("worker", "start", "--pool", "faultline", "--run-once", "--install-policy", "never", cwd=tmp_path,
        timeout=600)  # the worker exits 0 even when the flow fails: the state is read below
    flow_run = _flow_run(prefect_api, flow_run_id)
    assert flow_run["state_type"] == "COMPLETED", flow_run["state"]
    assert flow_run["parameters"]["limit"] == 1
    names = {t["name"] for t in _task_runs(prefect_api, flow_run_id)}
    assert "select-backlog" in {n.rsplit("-", 1)[0] for n in names}
    # the corpus ingest: a task run per folder of generated incidents, one per doc file
    assert {"ingest incidents: history", "ingest incidents: backlog", "ingest docs: noc-runbook.md"} <= names

    import duckdb

    conn = duckdb.connect(str(tmp_path / "fl.duckdb"), read_only=True)
    (status, prefect_id), = conn.execute("SELECT status, prefect_flow_run_id FROM runs WHERE kind = 'nightly'"
                                         ).fetchall()
    assert status == "completed" and prefect_id == flow_run_id
    done = conn.execute("SELECT count(*) FROM analysis_ledger WHERE status = 'done'").fetchone()[0]
    assert done == 3  # astra, sade and the verdict of the one incident
