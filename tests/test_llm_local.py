"""The real local model (SmolLM2-135M-Instruct, in process) on each LLM path: one log-agent step, one SADE turn and
one judge call complete, answer JSON of their schema and are logged like any model. What the model says is never
asserted: only that the path completes and stores its calls.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from faultline.llm import complete_json

pytestmark = pytest.mark.local_model

REPO = Path(__file__).resolve().parents[1]
ARP_ON_ROUTER2 = REPO / "data" / "sample" / "history" / "sample-history-001"
ARCHIVE = REPO / "data" / "sample" / "backlog" / "archive" / "core_router_2" / "2026-11-03.log.gz"


@pytest.fixture
def small(settings):
    # short replies keep the test within a minute on two cores
    return settings.model_copy(update={"llm_max_output_tokens": 128, "llm_retries": 0, "sade_max_turns": 1})


def logged(conn, stage: str):
    return conn.execute("SELECT model, error, input_tokens, prompt_tokens, context_tokens, max_output_tokens, "
                        "output_tokens FROM llm_calls WHERE stage = ?", [stage]).fetchall()


def assert_logged_once(conn, stage: str) -> None:
    rows = logged(conn, stage)
    assert len(rows) == 1, rows
    model, error, tokens_in, prompt_tokens, window, max_out, tokens_out = rows[0]
    assert model == "local" and error is None
    assert tokens_in == prompt_tokens > 0 and window == 8192 and max_out == 128 and 0 < tokens_out <= 128


def test_one_log_agent_step(small, conn):
    from faultline.astra.agents.log import LogAnalysis
    from faultline.truth.taxonomy import taxonomy

    with gzip.open(ARCHIVE, "rt") as recorded:
        excerpt = "".join(recorded.readlines()[:8])
    labels = list(taxonomy().values())[:8]  # a short prompt: the step, not the model's reading, is under test
    answer = complete_json(small, conn, model="local", prompt="astra/log_agent", schema=LogAnalysis,
                           stage="astra.agent.log", incident_id="INC-local",
                           variables={"title": "pc1 cannot reach pc2", "description": "since 01:00",
                                      "query": "arp router2", "excerpt": excerpt,
                                      "labels": "\n".join(f"- {i.label}: {i.summary}" for i in labels)})
    LogAnalysis.model_validate(answer)
    assert_logged_once(conn, "astra.agent.log")


def test_one_sade_turn(small, conn):
    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.engine import diagnose
    from faultline.sade.llm_policy import STAGE, llm_policy_runner

    policy, name = llm_policy_runner(small, model="local", incident_id="sample-history-001", conn=conn)
    diag = diagnose(snapshot_backend(ARP_ON_ROUTER2 / "snapshot.json.gz"), incident_id="sample-history-001",
                    policy=name, run_policy=policy)
    assert diag.policy == "llm:local" and diag.status in ("submitted", "failed")
    assert_logged_once(conn, STAGE)
    # the turn's schema lists the session's devices: whatever the model chose, it is a device that is there
    (reply,) = conn.execute("SELECT response FROM llm_calls WHERE stage = ?", [STAGE]).fetchone()
    devices = {d.name for d in snapshot_backend(ARP_ON_ROUTER2 / "snapshot.json.gz").devices()}
    assert json.loads(reply)["device"] in devices | {"all", None}


def test_one_judge_call(small, conn):
    from faultline.astra.judge import JUDGE_PROMPT, LLMJudgement

    answer = complete_json(small.model_copy(update={"llm_max_output_tokens": 256}), conn, model="local",
                           prompt=JUDGE_PROMPT, schema=LLMJudgement, stage="astra.judge", incident_id="INC-local",
                           variables={"ticket": "pc1 cannot reach pc2", "agent_outputs": "## log agent\nno lines",
                                      "claims": "(none)", "report": "Root cause: unknown."})
    from faultline.astra.records import CRITERIA

    # the grammar writes each criterion once, in order, whatever the model would rather say
    assert [s.criterion for s in LLMJudgement.model_validate(answer).scores] == list(CRITERIA)
    rows = logged(conn, "astra.judge")
    assert len(rows) == 1 and rows[0][0] == "local" and rows[0][1] is None and rows[0][5] == 256


def test_a_model_that_times_out_leaves_a_diagnosis_that_says_so(small, conn):
    from faultline.llm import fit
    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.engine import diagnose
    from faultline.sade.llm_policy import STAGE, llm_policy_runner

    # a timeout the model cannot meet (no speed measured by the tests before: it would stretch the timeout):
    # the call is abandoned, the turn falls back to the deterministic walk
    fit.forget_speeds()
    hurried = small.model_copy(update={"llm_timeout_s": 0.01, "llm_assumed_tokens_per_s": 1e9, "sade_max_turns": 2})
    policy, name = llm_policy_runner(hurried, model="local", incident_id="sample-history-001", conn=conn)
    diag = diagnose(snapshot_backend(ARP_ON_ROUTER2 / "snapshot.json.gz"), incident_id="sample-history-001",
                    policy=name, run_policy=policy)
    assert diag.status == "submitted"
    fallback = [st for st in diag.steps if st.tool == "llm_fallback"]
    assert fallback and all("Timeout" in st.note for st in fallback)
    errors = [e for (e,) in conn.execute("SELECT error FROM llm_calls WHERE stage = ?", [STAGE]).fetchall()]
    assert errors and all("Timeout" in e for e in errors)
