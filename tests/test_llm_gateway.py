"""The LLM gateway: validated JSON through litellm with a scripted fake model, retries, and llm_calls rows."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from faultline.llm import LLMError, complete_json, complete_text, load_prompt
from faultline.llm.fake import TRANSPORT_ERROR, scripted_model


class Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scores: list[dict]


VARS = {"title": "BGP session down on router2", "description": "peers flap", "candidates": "[]"}


@pytest.fixture
def fast(settings):
    return settings.model_copy(update={"llm_backoff_s": 0.0, "llm_retries": 2})


def calls(conn):
    return conn.execute(
        "SELECT stage, model, prompt_name, prompt_hash, response, error, input_tokens, incident_id, request "
        "FROM llm_calls ORDER BY created_at").fetchall()


def test_valid_json_is_returned_validated_and_logged(fast, conn):
    reply = '```json\n{"scores": [{"ticket_id": "T-1", "score": 0.9}]}\n```'
    with scripted_model("ok", [reply]) as fake:
        answer = complete_json(fast, conn, model=fake.model, prompt="astra/rerank", variables=VARS,
                               schema=Scores, stage="astra.rerank", incident_id="INC-1", run_id="R1")
    assert answer == {"scores": [{"ticket_id": "T-1", "score": 0.9}]}
    # the prompt file was rendered: the model saw the ticket title and the schema
    sent = fake.requests[0]
    assert sent[0]["role"] == "system" and "BGP session down on router2" in sent[-1]["content"]
    assert '"scores"' in sent[-1]["content"]
    rows = calls(conn)
    assert len(rows) == 1
    stage, model, name, digest, response, error, tokens_in, incident, _ = rows[0]
    assert (stage, model, name, error, incident) == ("astra.rerank", "faultline-fake/ok", "astra/rerank", None, "INC-1")
    assert digest == load_prompt("astra/rerank").sha256 and len(digest) == 64
    assert response == reply and tokens_in > 0


def test_invalid_then_valid_is_reasked_with_the_error(fast, conn):
    steps = ["Sure! here are the scores", '{"scores": "high"}', '{"scores": []}']
    with scripted_model("fix", steps) as fake:
        answer = complete_json(fast, conn, model=fake.model, prompt="astra/rerank", variables=VARS,
                               schema=Scores, stage="astra.rerank")
    assert answer == {"scores": []}
    assert len(fake.requests) == 3
    first, second, third = fake.requests
    # a re-ask is the first prompt plus the reason, never the bad reply itself: prompts do not grow per re-ask
    assert second[:-1] == first and third[:-1] == first and len(third) == len(second)
    assert not any("Sure! here are the scores" in m["content"] for m in second + third)
    assert "not valid JSON" in second[-1]["content"]
    assert "does not match the schema" in third[-1]["content"] and "not valid JSON" not in third[-1]["content"]
    errors = [row[5] for row in calls(conn)]
    assert errors[0].startswith("invalid output: not valid JSON") and "schema" in errors[1] and errors[2] is None


def test_json_schema_dict_is_enforced(fast, conn):
    schema = {"type": "object", "required": ["label"], "additionalProperties": False,
              "properties": {"label": {"enum": ["link_down", "bgp_acl_block"]}}}
    with scripted_model("enum", ['{"label": "cable_cut"}', '{"label": "link_down"}']):
        answer = complete_json(fast, conn, model="faultline-fake/enum", prompt="astra/rerank", variables=VARS,
                               schema=schema, stage="t")
    assert answer == {"label": "link_down"}
    assert "label" in calls(conn)[0][5]


def test_transport_errors_are_retried_then_succeed(fast, conn):
    with scripted_model("flaky", [TRANSPORT_ERROR, '{"scores": []}']):
        assert complete_json(fast, conn, model="faultline-fake/flaky", prompt="astra/rerank", variables=VARS,
                             schema=Scores, stage="t") == {"scores": []}
    errors = [row[5] for row in calls(conn)]
    assert "ServiceUnavailable" in errors[0] and errors[1] is None


def test_exhausted_retries_raise_a_clear_error_and_leave_rows(fast, conn):
    with scripted_model("bad", ["nope"], repeat_last=True) as fake, pytest.raises(LLMError) as caught:
        complete_json(fast, conn, model=fake.model, prompt="astra/rerank", variables=VARS, schema=Scores,
                      stage="astra.rerank", incident_id="INC-9")
    assert "after 3 attempts" in caught.value.message and "llm_calls" in caught.value.fix
    rows = calls(conn)
    assert len(rows) == 3 and all(r[5].startswith("invalid output") for r in rows)
    assert [json.loads(r[8])["attempt"] for r in rows] == [1, 2, 3]


def test_unknown_model_fails_fast_without_retrying(fast, conn):
    with pytest.raises(LLMError, match="refused"):
        complete_json(fast, conn, model="faultline-fake/never-installed", prompt="astra/rerank", variables=VARS,
                      schema=Scores, stage="t")
    assert len(calls(conn)) == 1


def test_missing_prompt_variable_and_missing_prompt_are_user_errors(fast, conn):
    from faultline.errors import FaultlineError

    with pytest.raises(FaultlineError, match="needs variables"):
        complete_json(fast, conn, model="faultline-fake/x", prompt="astra/rerank", variables={"title": "t"},
                      schema=Scores, stage="t")
    with pytest.raises(FaultlineError, match="does not exist"):
        complete_text(fast, conn, model="faultline-fake/x", prompt="astra/no_such_prompt", variables={}, stage="t")
    assert calls(conn) == []


def test_complete_text(fast, conn):
    with scripted_model("txt", ["", "the hold timer expired"]):
        assert complete_text(fast, conn, model="faultline-fake/txt", prompt="astra/rerank", variables=VARS,
                             stage="t") == "the hold timer expired"
    assert len(calls(conn)) == 2
