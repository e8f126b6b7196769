"""The one way Faultline talks to a language model: litellm, prompt files, validated JSON, logged calls.

Every attempt is a row in `llm_calls`; transport errors are retried with exponential backoff, and an invalid
answer is re-asked with the validation error appended. When the attempts run out, `LLMError` (a
`FaultlineError`) is raised and the caller records a failure row for that incident. docs/llm.md#calling-a-model.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from faultline.errors import FaultlineError
from faultline.llm.prompts import Prompt, load_prompt

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

Schema = type[BaseModel] | dict[str, Any]

INSERT_CALL_SQL = """
INSERT INTO llm_calls (call_id, run_id, incident_id, stage, model, prompt_name, prompt_hash, request,
                       response, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_TRANSIENT = frozenset({"APIConnectionError", "Timeout", "RateLimitError", "ServiceUnavailableError",
                        "InternalServerError"})
_KEPT_CHARS = 2000  # of a reply over the size limit: what is stored and shown back to the model
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_write_lock = threading.Lock()  # agents call the gateway from threads sharing one DuckDB connection


class LLMError(FaultlineError):
    """The model gave no valid answer within the allowed attempts (details are in `llm_calls`)."""


class InvalidOutput(ValueError):
    """The reply was not JSON, or not JSON of the expected shape."""


def record_call(conn: duckdb.DuckDBPyConnection, *, stage: str, model: str, prompt: Prompt | None = None,
                request: Any = None, response: str | None = None, input_tokens: int | None = None,
                output_tokens: int | None = None, cost_usd: float | None = None, duration_ms: float = 0.0,
                error: str | None = None, incident_id: str | None = None, run_id: str | None = None) -> str:
    """Write one `llm_calls` row (also for deterministic steps, model ``deterministic/<name>``); returns its id."""
    call_id = str(uuid.uuid4())
    row = [call_id, run_id, incident_id, stage, model, prompt.name if prompt else None,
           prompt.sha256 if prompt else None, json.dumps(request, default=str), response, input_tokens,
           output_tokens, cost_usd, duration_ms, error, datetime.now(timezone.utc)]
    with _write_lock:
        cursor = conn.cursor()
        try:
            cursor.execute(INSERT_CALL_SQL, row)
        finally:
            cursor.close()
    return call_id


COUNT_CALLS_SQL = "SELECT count(*) FROM llm_calls WHERE incident_id = ? AND run_id = ?"


def count_calls(conn: duckdb.DuckDBPyConnection, incident_id: str, run_id: str | None) -> int:
    """The `llm_calls` rows one run wrote for one incident (0 without a run id: nothing to tell them apart)."""
    if not run_id:
        return 0
    return int(conn.execute(COUNT_CALLS_SQL, [incident_id, run_id]).fetchone()[0])


def parse_json(text: str, schema: Schema) -> dict[str, Any]:
    """Parse a reply (bare or in a ```json fence) and validate it; raises `InvalidOutput` with the reason."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidOutput(f"not valid JSON: {exc}") from exc
    if isinstance(schema, dict):
        import jsonschema

        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            raise InvalidOutput(f"JSON does not match the schema at {where}: {exc.message}") from exc
        if not isinstance(value, dict):
            raise InvalidOutput("expected a JSON object")
        return value
    try:
        return schema.model_validate(value).model_dump(mode="json")
    except ValidationError as exc:
        raise InvalidOutput(f"JSON does not match the schema: {exc}") from exc


def _json_schema(schema: Schema) -> dict[str, Any]:
    return schema if isinstance(schema, dict) else schema.model_json_schema()


def _is_transient(exc: Exception) -> bool:
    if type(exc).__name__ in _TRANSIENT:
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in (408, 429) or status >= 500)


def _usage(response: Any) -> tuple[int | None, int | None]:
    usage = getattr(response, "usage", None)
    return (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))


def _cost(litellm: Any, response: Any) -> float | None:
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:  # noqa: BLE001 - unknown models have no price; a missing cost is not an error
        return None


def _call(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: Prompt,
          messages: list[dict[str, str]], stage: str, incident_id: str | None, run_id: str | None,
          retries: int | None, check: Any) -> Any:
    """The retry loop shared by `complete_json` and `complete_text`; `check(text)` validates a reply."""
    import litellm

    litellm.suppress_debug_info = True
    attempts = 1 + (settings.llm_retries if retries is None else retries)
    messages = list(messages)
    last_error = ""
    for attempt in range(1, attempts + 1):
        request = {"messages": messages, "attempt": attempt, "temperature": settings.llm_temperature}
        started = time.perf_counter()
        try:
            response = litellm.completion(model=model, messages=messages, temperature=settings.llm_temperature,
                                          timeout=settings.llm_timeout_s, num_retries=0)
        except Exception as exc:  # noqa: BLE001 - every provider failure is logged, then classified
            last_error = f"{type(exc).__name__}: {exc}"
            record_call(conn, stage=stage, model=model, prompt=prompt, request=request,
                        duration_ms=(time.perf_counter() - started) * 1000, error=last_error,
                        incident_id=incident_id, run_id=run_id)
            if not _is_transient(exc):
                raise LLMError(f"model {model} refused the call: {last_error}",
                               fix="check the model string and its API key environment variable") from exc
            if attempt < attempts:
                time.sleep(settings.llm_backoff_s * 2 ** (attempt - 1))
            continue
        text = response.choices[0].message.content or ""
        tokens_in, tokens_out = _usage(response)
        duration = (time.perf_counter() - started) * 1000
        cap = settings.llm_max_response_chars
        try:
            if len(text) > cap:
                raise InvalidOutput(f"the reply is {len(text)} characters, over the limit of {cap} "
                                    "(llm_max_response_chars)")
            value = check(text)
        except InvalidOutput as exc:
            last_error = f"invalid output: {exc}"
            kept = text if len(text) <= cap else f"{text[:_KEPT_CHARS]}... [{len(text) - _KEPT_CHARS} characters cut]"
            record_call(conn, stage=stage, model=model, prompt=prompt, request=request, response=kept,
                        input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=_cost(litellm, response),
                        duration_ms=duration, error=last_error, incident_id=incident_id, run_id=run_id)
            messages = messages + [
                {"role": "assistant", "content": kept},
                {"role": "user", "content": f"That reply was rejected ({exc}). Answer again with only the "
                                            "corrected JSON object, no other text."},
            ]
            continue
        record_call(conn, stage=stage, model=model, prompt=prompt, request=request, response=text,
                    input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=_cost(litellm, response),
                    duration_ms=duration, incident_id=incident_id, run_id=run_id)
        return value
    raise LLMError(f"{stage}: no valid answer from {model} after {attempts} attempts (last: {last_error})",
                   fix="see the rows of llm_calls for this stage; try another model or raise llm_retries")


def complete_json(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: str,
                  variables: dict[str, Any], schema: Schema, stage: str, incident_id: str | None = None,
                  run_id: str | None = None, retries: int | None = None) -> dict[str, Any]:
    """Ask ``model`` with prompt file ``prompt`` and return its JSON answer, validated against ``schema``.

    ``schema`` is a pydantic model class (the answer is returned as its ``model_dump``) or a JSON
    schema dict. The schema is added to the variables as ``schema`` and, when the prompt has no
    ``{{ schema }}`` placeholder, appended to the last message. ``retries`` (default
    ``settings.llm_retries``) counts extra attempts after the first. Raises `LLMError`.
    """
    loaded = load_prompt(prompt)
    shape = json.dumps(_json_schema(schema), indent=1)
    messages = loaded.render({**variables, "schema": shape})
    if "schema" not in loaded.variables:
        messages[-1] = {**messages[-1], "content": messages[-1]["content"]
                        + "\n\nReply with only a JSON object that matches this JSON schema:\n" + shape}
    return _call(settings, conn, model=model, prompt=loaded, messages=messages, stage=stage,
                 incident_id=incident_id, run_id=run_id, retries=retries, check=lambda t: parse_json(t, schema))


def complete_text(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: str,
                  variables: dict[str, Any], stage: str, incident_id: str | None = None,
                  run_id: str | None = None, retries: int | None = None) -> str:
    """Like `complete_json` for free text: any non-empty reply is accepted."""
    loaded = load_prompt(prompt)

    def non_empty(text: str) -> str:
        if not text.strip():
            raise InvalidOutput("the reply was empty")
        return text

    return _call(settings, conn, model=model, prompt=loaded, messages=loaded.render(variables), stage=stage,
                 incident_id=incident_id, run_id=run_id, retries=retries, check=non_empty)
