"""The one way Faultline talks to a language model: litellm, prompt files, validated JSON, logged calls.

Every attempt is a row in `llm_calls` with what it asked for (prompt size, window, output limit, timeout, what
was cut to fit); transport errors are retried with exponential backoff, and an invalid answer is re-asked with
the reason (not the bad reply). Calls to one model wait for a free slot (`llm_max_concurrent`); ``local`` is the
in-process model (`faultline.llm.local`). When the attempts run out, `LLMError` (a `FaultlineError`) is raised
and the caller degrades or records a failure row. docs/llm.md#calling-a-model.
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
from faultline.llm import fit, guided, local
from faultline.llm.fit import CallSizes
from faultline.llm.prompts import Prompt, load_prompt, output_budget

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

Schema = type[BaseModel] | dict[str, Any]

INSERT_CALL_SQL = """
INSERT INTO llm_calls (call_id, run_id, incident_id, stage, model, prompt_name, prompt_hash, request,
                       response, input_tokens, output_tokens, cost_usd, duration_ms, error, created_at,
                       prompt_tokens, context_tokens, max_output_tokens, timeout_s, cut, attempt)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_TRANSIENT = frozenset({"APIConnectionError", "Timeout", "RateLimitError", "ServiceUnavailableError",
                        "InternalServerError"})
_KEPT_CHARS = 2000  # of a reply over the size limit: what is stored and shown back to the model
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_write_lock = threading.Lock()  # agents call the gateway from threads sharing one DuckDB connection
_slots: dict[tuple[str, int], threading.Semaphore] = {}  # per model: calls in flight (llm_max_concurrent)


class LLMError(FaultlineError):
    """The model gave no valid answer within the allowed attempts (details are in `llm_calls`)."""


class InvalidOutput(ValueError):
    """The reply was not JSON, or not JSON of the expected shape."""


def record_call(conn: duckdb.DuckDBPyConnection, *, stage: str, model: str, prompt: Prompt | None = None,
                request: Any = None, response: str | None = None, input_tokens: int | None = None,
                output_tokens: int | None = None, cost_usd: float | None = None, duration_ms: float = 0.0,
                error: str | None = None, incident_id: str | None = None, run_id: str | None = None,
                sizes: CallSizes | None = None, attempt: int | None = None) -> str:
    """Write one `llm_calls` row (also for deterministic steps, model ``deterministic/<name>``); returns its id."""
    call_id = str(uuid.uuid4())
    row = [call_id, run_id, incident_id, stage, model, prompt.name if prompt else None,
           prompt.sha256 if prompt else None, json.dumps(request, default=str), response, input_tokens,
           output_tokens, cost_usd, duration_ms, error, datetime.now(timezone.utc),
           sizes.prompt_tokens if sizes else None, sizes.context_tokens if sizes else None,
           sizes.max_output_tokens if sizes else None, sizes.timeout_s if sizes else None,
           ",".join(sizes.cut) if sizes else None, attempt]
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


FAILURE_CHARS = 300  # of a model's failure as a report or a diagnosis says it (the whole of it is in llm_calls)


def model_failure(exc: Exception) -> str:
    """``model failed: <reason>`` for a model call that gave no valid answer (an `LLMError`): on one line, cut at a
    word end to FAILURE_CHARS. How ASTRA's reports and SADE's fallback steps name the failure."""
    reason = " ".join(str(getattr(exc, "message", "") or exc).split())
    if len(reason) > FAILURE_CHARS:
        cut = reason[:FAILURE_CHARS]
        at = cut.rfind(" ")
        reason = cut[:at].rstrip() if at > FAILURE_CHARS // 2 else cut
    return f"model failed: {reason}"


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
    text = str(exc).lower()
    if any(word in text for word in ("api key", "api_key", "credentials")):
        return False  # litellm reports a missing key as a server error: asking again cannot help
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


def _structured(settings: Settings, model: str, litellm: Any) -> bool:
    """Whether to ask for the JSON shape through the server's schema support (response_format)."""
    if settings.llm_structured_output != "auto":
        return settings.llm_structured_output == "schema"
    if local.is_local(model):
        return True
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:  # noqa: BLE001 - a model litellm does not know: ask in the prompt
        return False


def _semaphore(settings: Settings, model: str) -> threading.Semaphore:
    size = 1 if local.is_local(model) else settings.llm_max_concurrent
    with _write_lock:  # one set of slots per model and limit: a run with other settings gets its own
        return _slots.setdefault((model, size), threading.Semaphore(size))


def _connection(settings: Settings, model: str) -> tuple[str, dict[str, Any]]:
    """The litellm model string and the server settings to send with it."""
    if local.is_local(model):
        return local.litellm_name(model), {}
    extra: dict[str, Any] = {}
    if settings.llm_api_base:
        extra["api_base"] = settings.llm_api_base
    key = settings.llm_api_key.get_secret_value()
    if key:
        extra["api_key"] = key
    return model, extra


def _refused(model: str, exc: Exception, sizes: CallSizes, error: str) -> LLMError:
    if type(exc).__name__ == "ContextWindowExceededError":
        return LLMError(f"model {model} refused the prompt as too long for its context window ({sizes.prompt_tokens} "
                        f"prompt tokens + {sizes.max_output_tokens} for the reply): {error}",
                        fix="set llm_context_tokens to the model's window so prompts are cut to fit, lower "
                            "llm_max_output_tokens, or use a model with a larger context")
    return LLMError(f"model {model} refused the call: {error}",
                    fix="check the model string, llm_api_base and the API key (FAULTLINE_LLM_API_KEY or the "
                        "provider's environment variable); docs/llm.md")


def _call(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: Prompt,
          messages: list[dict[str, str]], sizes: CallSizes, stage: str, incident_id: str | None,
          run_id: str | None, retries: int | None, check: Any, response_format: dict[str, Any] | None) -> Any:
    """The retry loop shared by `complete_json` and `complete_text`; `check(text)` validates a reply."""
    import litellm

    litellm.suppress_debug_info = True
    target, extra = _connection(settings, model)
    if response_format is not None:
        extra["response_format"] = response_format
    attempts = 1 + (settings.llm_retries if retries is None else retries)
    asked = list(messages)
    last_error = ""
    for attempt in range(1, attempts + 1):
        request = {"messages": asked, "attempt": attempt, "temperature": settings.llm_temperature,
                   "max_tokens": sizes.max_output_tokens, "structured": response_format is not None}
        log = {"stage": stage, "model": model, "prompt": prompt, "request": request, "incident_id": incident_id,
               "run_id": run_id, "sizes": sizes, "attempt": attempt}
        with _semaphore(settings, model):  # waiting for a slot is not part of the call's timeout
            started = time.perf_counter()
            try:
                response = litellm.completion(model=target, messages=asked, temperature=settings.llm_temperature,
                                              max_tokens=sizes.max_output_tokens, timeout=sizes.timeout_s,
                                              num_retries=0, **extra)
            except Exception as exc:  # noqa: BLE001 - every provider failure is logged, then classified
                last_error = f"{type(exc).__name__}: {exc}"
                record_call(conn, duration_ms=(time.perf_counter() - started) * 1000, error=last_error, **log)
                if not _is_transient(exc):
                    raise _refused(model, exc, sizes, last_error) from exc
                if attempt < attempts:
                    time.sleep(settings.llm_backoff_s * 2 ** (attempt - 1))
                continue
        seconds = time.perf_counter() - started
        text = response.choices[0].message.content or ""
        finish = getattr(response.choices[0], "finish_reason", None)
        tokens_in, tokens_out = _usage(response)
        fit.observe_speed(model, (tokens_in or sizes.prompt_tokens) + (tokens_out or 0), seconds)
        cap = settings.llm_max_response_chars
        counts = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": _cost(litellm, response),
                  "duration_ms": seconds * 1000}
        try:
            if len(text) > cap:
                raise InvalidOutput(f"the reply is {len(text)} characters, over the limit of {cap} "
                                    "(llm_max_response_chars)")
            value = check(text)
        except InvalidOutput as exc:
            if finish == "length":
                exc = InvalidOutput(f"{exc}; the reply was cut at the output-token limit "
                                    f"({sizes.max_output_tokens}, llm_max_output_tokens)")
            last_error = f"invalid output: {exc}"
            kept = text if len(text) <= cap else f"{text[:_KEPT_CHARS]}... [{len(text) - _KEPT_CHARS} characters cut]"
            record_call(conn, response=kept, error=last_error, **counts, **log)
            # the re-ask carries the reason only: sending the bad reply back grows every prompt and teaches a
            # small model to repeat it
            # and the note is bounded, so a re-ask of a prompt fitted to the window still fits it (fit._MARGIN)
            reason = str(exc) if len(str(exc)) <= fit.REASK_NOTE_CHARS else str(exc)[:fit.REASK_NOTE_CHARS - 3] + "..."
            asked = messages + [{"role": "user", "content": f"Your previous answer was rejected: {reason}. "
                                                             "Answer again with only the corrected JSON object."}]
            continue
        record_call(conn, response=text, **counts, **log)
        return value
    raise LLMError(f"{stage}: no valid answer from {model} after {attempts} attempts (last: {last_error})",
                   fix="see the rows of llm_calls for this stage; try another model or raise llm_retries")


def _prepare(settings: Settings, *, model: str, loaded: Prompt, variables: dict[str, Any],
             max_output_tokens: int | None, keep: frozenset[str] = frozenset(), suffix: str = ""
             ) -> tuple[list[dict[str, str]], CallSizes]:
    declared = output_budget(loaded.name)
    limit = max_output_tokens or min(settings.llm_max_output_tokens, declared or settings.llm_max_output_tokens)
    window = fit.context_window(settings, model)
    messages, tokens, cut = fit.fit(loaded, variables, model=model, window=window, max_output=limit, keep=keep,
                                    suffix=suffix)
    return messages, CallSizes(prompt_tokens=tokens, context_tokens=window, max_output_tokens=limit,
                               timeout_s=fit.timeout_for(settings, model, tokens, limit), cut=cut)


def complete_json(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: str,
                  variables: dict[str, Any], schema: Schema, stage: str, incident_id: str | None = None,
                  run_id: str | None = None, retries: int | None = None,
                  max_output_tokens: int | None = None, guide: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ask ``model`` with prompt file ``prompt`` and return its JSON answer, validated against ``schema``.

    ``schema`` is a pydantic model class (the answer is returned as its ``model_dump``) or a JSON schema dict.
    Where the model takes a schema (``llm_structured_output``) it goes as ``response_format``, with every
    array and string bounded, and the prompt names the fields only; elsewhere the schema is written into
    the prompt (as ``{{ schema }}`` where the prompt has that placeholder, else after the last message).
    The prompt is cut to the model's context window (`faultline.llm.fit`). ``retries`` (default
    ``settings.llm_retries``) counts extra attempts after the first; ``max_output_tokens`` overrides the
    setting for this stage. ``guide`` is a narrower schema sent as ``response_format`` instead of ``schema``
    (e.g. this turn's names as enums) while the answer is still judged by ``schema``, so a model without
    schema support keeps the caller's own, more telling refusals. Raises `LLMError`.
    """
    import litellm

    loaded = load_prompt(prompt)
    shape = _json_schema(schema)
    structured = _structured(settings, model, litellm)
    written = _fields(shape) if structured else json.dumps(shape, indent=1)
    note = ""
    if "schema" not in loaded.variables:
        note = ("\n\nReply with only a JSON object with the fields " + written if structured
                else "\n\nReply with only a JSON object that matches this JSON schema:\n" + written)
    messages, sizes = _prepare(settings, model=model, loaded=loaded, variables={**variables, "schema": written},
                               max_output_tokens=max_output_tokens, keep=frozenset({"schema"}), suffix=note)
    response_format = ({"type": "json_schema", "json_schema": {"name": _schema_name(stage),
                                                               "schema": guided.bounded(guide or shape)}}
                       if structured else None)
    return _call(settings, conn, model=model, prompt=loaded, messages=messages, sizes=sizes, stage=stage,
                 incident_id=incident_id, run_id=run_id, retries=retries, check=lambda t: parse_json(t, schema),
                 response_format=response_format)


def complete_text(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str, prompt: str,
                  variables: dict[str, Any], stage: str, incident_id: str | None = None,
                  run_id: str | None = None, retries: int | None = None,
                  max_output_tokens: int | None = None) -> str:
    """Like `complete_json` for free text: any non-empty reply is accepted."""
    loaded = load_prompt(prompt)

    def non_empty(text: str) -> str:
        if not text.strip():
            raise InvalidOutput("the reply was empty")
        return text

    messages, sizes = _prepare(settings, model=model, loaded=loaded, variables=variables,
                               max_output_tokens=max_output_tokens)
    return _call(settings, conn, model=model, prompt=loaded, messages=messages, sizes=sizes, stage=stage,
                 incident_id=incident_id, run_id=run_id, retries=retries, check=non_empty, response_format=None)


def _fields(schema: dict[str, Any]) -> str:
    """The top-level fields of a schema as one line: what a prompt says when the server enforces the shape."""
    props = schema.get("properties", {})
    return ", ".join(f"{k} ({v.get('description') or v.get('title') or 'value'})" for k, v in props.items()) + "."


def _schema_name(stage: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in stage)[:64] or "answer"
