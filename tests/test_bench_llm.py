"""bench/llm.py's figures from `llm_calls`: only this run's rows of this model count, re-asks are told apart from
other failures, and the speed is taken over the calls that answered."""

from __future__ import annotations

from bench.llm import call_figures, read_calls
from faultline.llm.fit import CallSizes
from faultline.llm.gateway import record_call


def sizes(prompt_tokens: int) -> CallSizes:
    return CallSizes(prompt_tokens=prompt_tokens, context_tokens=8192, max_output_tokens=256, timeout_s=60.0)


def test_call_figures_of_one_run(conn):
    log = {"stage": "astra.claims", "model": "local", "run_id": "run-a"}
    record_call(conn, incident_id="i1", input_tokens=1000, output_tokens=100, duration_ms=10_000, sizes=sizes(990),
                **log)
    record_call(conn, incident_id="i1", input_tokens=1000, output_tokens=256, duration_ms=20_000, sizes=sizes(990),
                error="invalid output: not valid JSON", **log)
    record_call(conn, incident_id="i2", duration_ms=60_000, sizes=sizes(500), error="Timeout: too slow", **log)
    # another run, and a deterministic step of this run: neither is this model's cost in this run
    record_call(conn, incident_id="i1", input_tokens=7, output_tokens=7, duration_ms=1, **{**log, "run_id": "run-b"})
    record_call(conn, incident_id="i1", duration_ms=1, **{**log, "model": "deterministic/claims"})

    rows = read_calls(conn, "run-a", "local")
    figures = call_figures(rows, incidents=2)

    assert figures.calls == 3 and figures.reasks == 1 and figures.failed_calls == 1
    # a call the model never answered still sent its prompt: the fitted estimate counts
    assert figures.prompt_tokens == 2500 and figures.prompt_tokens_per_incident == 1250
    assert figures.output_tokens == 356 and figures.calls_per_incident == 1.5
    assert figures.model_seconds == 90.0
    # the timed-out minute is not model speed
    assert figures.tokens_per_s == round(2356 / 30, 1) and figures.output_tokens_per_s == round(356 / 30, 2)


def test_call_figures_without_calls():
    figures = call_figures([], incidents=3)
    assert figures.calls == 0 and figures.tokens_per_s is None and figures.prompt_tokens_per_incident == 0
