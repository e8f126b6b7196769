"""Models that misbehave: a model endpoint on 127.0.0.1 speaking the OpenAI chat API, reached through litellm.

Trials 1-7, one per behaviour (timeout, 429, 500, 503, non-JSON, JSON of the wrong shape, a 1 MB answer), ask
the LLM gateway in this process against a real DuckDB file: the gateway must make 1 + llm_retries attempts
(litellm's own client adds none), wait the doubling back-off between transport failures, raise `LLMError`, and
leave one `llm_calls` row per attempt with the error (a 1 MB reply stored cut short).

Trial 8 runs `nightly` twice as processes on two sample incidents: first with the deterministic analyst, then
with `--llm openai/status-503` (the model always fails): the second run completes, exits 1 naming the methods
whose every incident failed, records every incident as failed, and leaves the first run's results (SADE's
deterministic steps, flags, submissions and ledger rows, log templates and excerpts) as they were. (The ledger's
ASTRA row is each incident's latest outcome, so it says failed after the second run, by design.)
"""

from __future__ import annotations

import os
import shutil
from itertools import pairwise
from pathlib import Path

from rel_cases.common import Trial, cli
from rel_cases.small_corpus import INCIDENTS, QUICK_ENV, make_corpus, rows, tail

NAME = "models"
CHECKS = ("timeout, 429, 500, 503, non-JSON, wrong schema, 1 MB: retried with back-off then LLMError, a row per "
          "attempt; nightly with a model that always fails: exit 1, every incident failed, deterministic rows kept")
DEFAULT_TRIALS = 8
NEEDS_ROOT = False
BEHAVIOURS = (("slow", "Timeout"), ("status-429", "RateLimitError"), ("status-500", "InternalServerError"),
              ("status-503", "ServiceUnavailableError"), ("nonjson", "not valid JSON"),
              ("badschema", "does not match the schema"), ("huge", "over the limit"))
BACKOFF_S, RETRIES = 0.2, 2
KEPT_SQL = {  # what the deterministic run wrote, which a failing model run must leave alone
    "sade_steps": "SELECT count(*), count(DISTINCT incident_id) FROM sade_steps",
    "sade_flags": "SELECT count(*) FROM sade_flags",
    "log_templates": "SELECT count(*) FROM log_templates",
    "log_excerpts": "SELECT count(*) FROM log_excerpts",
    # the ledger keeps each incident x method's latest outcome: tonight's failed ASTRA replaces its row by design
    "sade ledger": "SELECT incident_id, method, status, input_digest FROM analysis_ledger WHERE method = 'sade' "
                   "ORDER BY ALL",
    "submissions": "SELECT incident_id, policy, status FROM submissions ORDER BY ALL",
}


def run(trials: int, work: Path) -> list[Trial]:
    from faultline.llm.stub_server import StubServer

    results: list[Trial] = []
    with StubServer(answer='{"ok": true}', delay_s=3.0) as stub:
        for number in range(trials):
            if number % (len(BEHAVIOURS) + 1) < len(BEHAVIOURS):
                results.append(_gateway_trial(stub, work, *BEHAVIOURS[number % (len(BEHAVIOURS) + 1)]))
            else:
                results.append(_nightly_trial(stub, work))
    return results


def _gateway_trial(stub, work: Path, behaviour: str, error: str) -> Trial:
    from pydantic import BaseModel

    from faultline import db
    from faultline.config import Settings
    from faultline.llm import LLMError, complete_json

    class Answer(BaseModel):
        ok: bool

    os.environ.update({"OPENAI_API_BASE": stub.base_url, "OPENAI_API_KEY": "stub-key"})
    settings = Settings(duckdb_path=work / "gateway.duckdb", lancedb_dir=work / "lance", llm_backoff_s=BACKOFF_S,
                        llm_retries=RETRIES, llm_timeout_s=1.0)
    conn = db.connect(settings.duckdb_path)
    before = stub.count(behaviour)
    try:
        complete_json(settings, conn, model=f"openai/{behaviour}", prompt="astra/rerank", schema=Answer,
                      variables={"title": "t", "description": "d", "candidates": "[]"}, stage="bench.models")
        return Trial(False, f"{behaviour}: the gateway accepted the answer", "a misbehaving model must fail the call")
    except LLMError:
        pass
    finally:
        logged = conn.execute("SELECT error, length(response), created_at FROM llm_calls WHERE model = ? "
                              "ORDER BY created_at", [f"openai/{behaviour}"]).fetchall()[-(RETRIES + 1):]
        conn.close()
    attempts = stub.count(behaviour) - before
    arrivals = [r.at for r in stub.requests if r.model == behaviour][-attempts:]
    waits = [round(b - a, 2) for a, b in pairwise(arrivals)]
    problems = []
    if attempts != RETRIES + 1:
        problems.append(f"{attempts} requests reached the endpoint, expected {RETRIES + 1}")
    if len(logged) != RETRIES + 1 or not all(error in (e or "") for e, _, _ in logged):
        problems.append(f"llm_calls errors {[(e or '')[:60] for e, _, _ in logged]}")
    if any((n or 0) > 5000 for _, n, _ in logged):
        problems.append("a reply was stored whole")
    transport = behaviour == "slow" or behaviour.startswith("status-")
    if transport and waits and not all(w >= BACKOFF_S * 2 ** i for i, w in enumerate(waits)):
        problems.append(f"waits between attempts {waits}s, expected doubling from {BACKOFF_S}s")
    if problems:
        return Trial(False, f"{behaviour}: {'; '.join(problems)}", "retries with back-off, then LLMError")
    return Trial(True, f"{behaviour}: {attempts} attempts, waits {waits}s, LLMError, {len(logged)} llm_calls rows")


def _nightly_trial(stub, work: Path) -> Trial:
    corpus = make_corpus(work / "corpus")
    folder = work / "nightly"
    shutil.rmtree(folder, ignore_errors=True)
    db, lance = folder / "wh.duckdb", folder / "lance"
    first = cli(db, "nightly", "--corpus", str(corpus), lancedb=lance, env=QUICK_ENV, timeout=900)
    if first.returncode != 0:
        return Trial(False, f"the deterministic nightly exited {first.returncode}: {tail(first.stderr)[-300:]}",
                     "the deterministic nightly must pass first")
    kept = {name: rows(db, sql) for name, sql in KEPT_SQL.items()}
    env = {**QUICK_ENV, "OPENAI_API_BASE": stub.base_url, "OPENAI_API_KEY": "stub-key",
           "FAULTLINE_LLM_RETRIES": "1", "FAULTLINE_LLM_BACKOFF_S": "0", "FAULTLINE_NIGHTLY_LLM_RETRIES": "0",
           "FAULTLINE_NIGHTLY_PROBE_RETRIES": "0"}
    second = cli(db, "nightly", "--llm", "openai/status-503", lancedb=lance, env=env, timeout=900)
    failed = {(i, m) for i, m in rows(db, "SELECT incident_id, method FROM analysis_ledger WHERE status = 'failed'")}
    after = {name: rows(db, sql) for name, sql in KEPT_SQL.items()}
    changed = [name for name in KEPT_SQL if after[name] != kept[name]]
    out = second.stdout + second.stderr
    methods = sorted({m for _, m in failed})
    problems = []
    if second.returncode != 1 or "analyses failed tonight" not in out:
        problems.append(f"exit {second.returncode}: {tail(out)[-300:]}")
    if {i for i, _ in failed} != set(INCIDENTS) or not methods:
        problems.append(f"failed ledger rows {sorted(failed)}")
    if changed:
        problems.append(f"deterministic results changed: {changed}")
    if problems:
        return Trial(False, "; ".join(problems), "a run whose model always fails: every incident failed, "
                     "deterministic results untouched, exit 1")
    return Trial(True, f"exit 1; failed: {methods} on {len(INCIDENTS)} incidents; deterministic rows unchanged")
