"""Models that misbehave, through litellm's real OpenAI client and a real HTTP endpoint on 127.0.0.1.

Timeouts, 429 and 5xx are retried with doubling back-off; non-JSON, JSON of the wrong shape and an oversized
reply are re-asked; when the attempts run out the gateway raises `LLMError` and every attempt is a row of
`llm_calls`. A model that recovers within the attempts gives its answer.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from faultline.llm import LLMError, complete_json, fit
from faultline.llm.stub_server import StubServer


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool


VARS = {"title": "BGP session down on router2", "description": "peers flap", "candidates": "[]"}
BACKOFF_S = 0.2


@pytest.fixture(scope="module")
def stub():
    with StubServer(answer='{"ok": true}', delay_s=2.0) as server:
        yield server


@pytest.fixture
def gateway(settings, stub, monkeypatch):
    fit.forget_speeds()
    monkeypatch.setenv("OPENAI_API_BASE", stub.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "stub-key")
    # a model this fast adds nothing to the base timeout: the slow stub's 2 s are past it
    return settings.model_copy(update={"llm_backoff_s": BACKOFF_S, "llm_retries": 2, "llm_timeout_s": 0.5,
                                       "llm_assumed_tokens_per_s": 1e9})


def ask(settings, conn, behaviour: str):
    return complete_json(settings, conn, model=f"openai/{behaviour}", prompt="astra/rerank", variables=VARS,
                         schema=Verdict, stage="test.misbehaving", incident_id="INC-1")


def errors(conn, behaviour: str) -> list[str | None]:
    return [e for (e,) in conn.execute("SELECT error FROM llm_calls WHERE model = ? ORDER BY created_at",
                                       [f"openai/{behaviour}"]).fetchall()]


@pytest.mark.parametrize(("behaviour", "error"), [("status-429", "RateLimitError"), ("status-500", "InternalServer"),
                                                  ("status-503", "ServiceUnavailable"), ("slow", "Timeout")])
def test_transport_failures_are_retried_with_doubling_back_off_then_fail(gateway, conn, stub, behaviour, error):
    with pytest.raises(LLMError, match=f"after 3 attempts.*{error}"):
        ask(gateway, conn, behaviour)
    arrivals = [r.at for r in stub.requests if r.model == behaviour][-3:]
    assert len(arrivals) == 3  # litellm's own client did not retry behind the gateway's back
    first_wait, second_wait = arrivals[1] - arrivals[0], arrivals[2] - arrivals[1]
    assert first_wait >= BACKOFF_S and second_wait >= 2 * BACKOFF_S
    logged = errors(conn, behaviour)
    assert len(logged) == 3 and all(error in (e or "") for e in logged)


@pytest.mark.parametrize(("behaviour", "reason"), [("nonjson", "not valid JSON"),
                                                   ("badschema", "does not match the schema"),
                                                   ("huge", "over the limit of 200000")])
def test_invalid_answers_are_re_asked_then_fail(gateway, conn, stub, behaviour, reason):
    with pytest.raises(LLMError, match="after 3 attempts"):
        ask(gateway, conn, behaviour)
    logged = errors(conn, behaviour)
    assert len(logged) == 3 and all(reason in (e or "") for e in logged)
    stored = conn.execute("SELECT max(length(response)) FROM llm_calls WHERE model = ?",
                          [f"openai/{behaviour}"]).fetchone()[0]
    assert stored < 5000  # a megabyte reply is stored cut short
    re_asked = [r for r in stub.requests if r.model == behaviour][-1].messages
    assert "rejected" in re_asked[-1]["content"] and sum(len(m["content"]) for m in re_asked) < 50_000


def test_a_model_that_recovers_within_the_attempts_answers(gateway, conn):
    assert ask(gateway, conn, "flaky-2") == {"ok": True}
    assert errors(conn, "flaky-2") == [errors(conn, "flaky-2")[0]] * 2 + [None]
