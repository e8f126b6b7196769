"""Talking to a model server as it is: its address and key from settings, an output limit and the JSON shape on
every call, prompts cut to its context window, a refusal for a prompt still too long with its own fix, one call
at a time for a single-slot server, timeouts that grow with the prompt, and a server killed mid-run.

Through litellm's real OpenAI client and the stub server on 127.0.0.1 (faultline/llm/stub_server.py).
"""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import BaseModel, ConfigDict, SecretStr

from faultline.llm import LLMError, complete_json, fit
from faultline.llm.stub_server import StubServer


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool
    reason: str = ""


TITLE = "BGP session down on router2"


def variables(lines: int = 3) -> dict[str, str]:
    log = "\n".join(f"Dec 5 00:{i % 60:02d}:00 router2 bgpd[812]: neighbor 10.0.{i % 250}.1 Down Hold Timer Expired"
                    for i in range(lines))
    return {"title": TITLE, "description": log, "candidates": "[]"}


@pytest.fixture(scope="module")
def stub():
    with StubServer(answer='{"ok": true, "reason": "peer down"}', delay_s=1.0) as server:
        yield server


@pytest.fixture
def server(settings, stub, monkeypatch):
    # no OPENAI_* in the environment: the address and key come from settings alone
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fit.forget_speeds()
    return settings.model_copy(update={"llm_api_base": stub.base_url, "llm_api_key": SecretStr("sk-test-41"),
                                       "llm_retries": 0, "llm_backoff_s": 0.0})


def ask(settings, conn, model: str, lines: int = 3):
    return complete_json(settings, conn, model=f"openai/{model}", prompt="astra/rerank", variables=variables(lines),
                         schema=Verdict, stage="test.server", incident_id="INC-1")


def rows(conn, model: str):
    return conn.execute("SELECT prompt_tokens, context_tokens, max_output_tokens, timeout_s, cut, attempt, error "
                        "FROM llm_calls WHERE model = ? ORDER BY created_at", [f"openai/{model}"]).fetchall()


def test_the_server_and_key_come_from_settings_and_every_call_has_an_output_limit(server, conn, stub):
    limited = server.model_copy(update={"llm_max_output_tokens": 300})
    assert ask(limited, conn, "ok") == {"ok": True, "reason": "peer down"}
    sent = [r for r in stub.requests if r.model == "ok"][-1]
    assert sent.auth == "Bearer sk-test-41"
    assert sent.body["max_tokens"] == 300
    prompt_tokens, _, max_out, _, cut, attempt, error = rows(conn, "ok")[-1]
    assert max_out == 300 and prompt_tokens > 50 and cut == "" and attempt == 1 and error is None


def test_schema_mode_sends_a_bounded_json_schema_and_keeps_it_out_of_the_prompt(server, conn, stub):
    ask(server.model_copy(update={"llm_structured_output": "schema"}), conn, "ok")
    sent = [r for r in stub.requests if r.model == "ok"][-1]
    shape = sent.body["response_format"]["json_schema"]["schema"]
    assert shape["properties"]["reason"]["maxLength"] > 0  # a grammar built from it cannot loop forever
    assert '"properties"' not in sent.messages[-1]["content"]
    ask(server.model_copy(update={"llm_structured_output": "prompt"}), conn, "ok")
    sent = [r for r in stub.requests if r.model == "ok"][-1]
    assert "response_format" not in sent.body and '"properties"' in sent.messages[-1]["content"]


def test_a_prompt_over_the_window_is_cut_to_fit_and_says_so(server, conn, stub):
    # the server's window is 1500 tokens; 400 log lines are ~6000
    fitted = server.model_copy(update={"llm_context_tokens": 1500, "llm_max_output_tokens": 200})
    assert ask(fitted, conn, "context-1500", lines=400)["ok"] is True
    prompt_tokens, window, _, _, cut, _, error = rows(conn, "context-1500")[-1]
    assert window == 1500 and prompt_tokens <= 1500 - 200 and cut == "description" and error is None
    sent = [r for r in stub.requests if r.model == "context-1500"][-1]
    text = sent.messages[-1]["content"]
    assert "lines cut to fit the model's context window" in text and "10.0.0.1 Down" in text  # the head is kept


def test_the_re_ask_of_a_prompt_cut_to_the_window_still_fits_it(server, conn):
    replies = iter([json.dumps({f"field_{n}": n for n in range(30)}),  # thirty errors: a long rejection
                    '{"ok": true, "reason": "peer down"}'])
    with StubServer(answer=lambda messages: next(replies), delay_s=0.0) as own:
        fitted = server.model_copy(update={"llm_api_base": own.base_url, "llm_context_tokens": 1500,
                                           "llm_max_output_tokens": 200, "llm_retries": 1})
        assert ask(fitted, conn, "context-1500", lines=400)["ok"] is True
        reask = own.requests[-1].messages[-1]["content"]
    assert reask.startswith("Your previous answer was rejected: ") and len(reask) < 600
    assert [r[6] is None for r in rows(conn, "context-1500")[-2:]] == [False, True]  # the second attempt answered


def test_a_prompt_the_server_refuses_as_too_long_gets_its_own_fix(server, conn):
    with pytest.raises(LLMError, match="too long for its context window") as raised:
        ask(server, conn, "context-500", lines=400)  # the window is unknown to Faultline: nothing was cut
    assert "llm_context_tokens" in raised.value.fix
    assert "context" in rows(conn, "context-500")[-1][6].lower()


def test_a_single_slot_server_gets_one_call_at_a_time_and_waiting_is_not_a_timeout(server, conn, stub):
    # each call takes 1 s at the server; the timeout is 1.5 s; three at once would time out two of them
    single = server.model_copy(update={"llm_max_concurrent": 1, "llm_timeout_s": 1.5,
                                       "llm_assumed_tokens_per_s": 1e9})
    stub.max_in_flight = 0
    answers, failures = [], []

    def one():
        cursor = conn.cursor()
        try:
            answers.append(ask(single, cursor, "slow"))
        except LLMError as exc:
            failures.append(exc)
        finally:
            cursor.close()

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and len(answers) == 3
    assert stub.max_in_flight == 1


def test_the_timeout_grows_with_the_prompt(server, conn):
    ask(server, conn, "ok", lines=2)
    ask(server, conn, "ok", lines=300)
    short, long = rows(conn, "ok")[-2:]
    assert long[0] > short[0] * 10 and long[3] > short[3] > server.llm_timeout_s


def test_a_stage_asks_for_no_more_than_its_declared_budget(server, conn, stub):
    from faultline.llm.prompts import output_budget

    declared = output_budget("astra/rerank")  # prompts/budgets.yml
    assert declared is not None and declared < server.llm_max_output_tokens
    ask(server, conn, "ok")
    assert [r for r in stub.requests if r.model == "ok"][-1].body["max_tokens"] == declared


def test_a_missing_api_key_is_refused_at_once_with_the_key_fix(settings, conn, stub, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    keyless = settings.model_copy(update={"llm_api_base": stub.base_url, "llm_retries": 3, "llm_backoff_s": 5.0})
    with pytest.raises(LLMError, match="refused the call") as raised:
        ask(keyless, conn, "ok")
    assert "FAULTLINE_LLM_API_KEY" in raised.value.fix
    assert len(rows(conn, "ok")) == 1  # not retried four times with back-off


def test_a_server_killed_mid_diagnosis_leaves_a_diagnosis_that_says_what_failed(server, conn):
    from pathlib import Path

    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.engine import diagnose
    from faultline.sade.llm_policy import STAGE, llm_policy_runner

    snapshot = Path(__file__).resolve().parents[1] / "data/sample/history/sample-history-001/snapshot.json.gz"
    dying = StubServer(answer="", delay_s=0.0)

    def first_then_die(messages):  # answers one turn, then the server is gone (a killed llama.cpp, say)
        threading.Thread(target=dying.stop, daemon=True).start()
        return json.dumps({"action": "scan", "device": "pc1", "check": "interfaces"})

    dying.answer = first_then_die
    with dying:
        settings = server.model_copy(update={"llm_api_base": dying.base_url, "sade_max_turns": 4})
        policy, name = llm_policy_runner(settings, model="openai/ok", incident_id="sample-history-001", conn=conn)
        diag = diagnose(snapshot_backend(snapshot), incident_id="sample-history-001", policy=name, run_policy=policy)
    assert len(dying.requests) == 1 and diag.status == "submitted"
    fallbacks = [st for st in diag.steps if st.tool == "llm_fallback"]
    assert fallbacks and all(st.note.startswith("model failed: ") for st in fallbacks)
    assert all("Connection error" in st.note for st in fallbacks)  # the reason a user can act on
    errors = [e for (e,) in conn.execute("SELECT error FROM llm_calls WHERE stage = ? AND model = 'openai/ok' "
                                         "ORDER BY created_at", [STAGE]).fetchall()]
    assert errors[0] is None and errors[1:] and all(errors[1:])
