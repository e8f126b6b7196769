"""ASTRA's agent schedule: a shared pre-fetch, then similarity ∥ log (threads), then domain with their outputs.

`run_agents` is one round's first pass; a pre-fetch without a ticket index, or an agent whose model failed
(`agents.run_agent`), leaves that agent's output saying so (`AgentOutput.missing`); the orchestrator sends
follow-up tasks to single agents through `run_agent(make_agent(...), task)`.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from faultline.astra.agents import AgentDeps, make_agent, run_agent
from faultline.astra.prefetch import Prefetch, prefetch
from faultline.astra.records import AgentOutput, AgentTask, Incident
from faultline.astra.rerank import make_reranker


@dataclass
class ScheduleResult:
    """The pre-fetch and the three agents' outputs, with wall times per step."""

    prefetch: Prefetch
    outputs: dict[str, AgentOutput]
    timings: dict[str, float] = field(default_factory=dict)


def run_agents(deps: AgentDeps, incident: Incident, *, round: int = 1, reranker=None) -> ScheduleResult:
    """Pre-fetch once, run the similarity and log agents concurrently, then the domain agent on their outputs."""
    timings: dict[str, float] = {}
    began = time.perf_counter()
    if reranker is None:
        reranker = make_reranker(deps.settings, deps.conn, deps.model, embedder=deps.embedder,
                                 incident_id=incident.incident_id, run_id=deps.run_id)
    shared = prefetch(deps.settings, deps.conn, incident, reranker=reranker, embedder=deps.embedder)
    timings["prefetch"] = time.perf_counter() - began
    query = incident.title
    base = AgentTask(incident=incident, query=query, round=round, prefetched=shared.similar)
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="astra-agent") as pool:
        similarity = pool.submit(run_agent, make_agent("similarity", deps), base)
        log = pool.submit(run_agent, make_agent("log", deps), base)
        outputs = {"similarity": similarity.result(), "log": log.result()}
    if shared.missing:
        outputs["similarity"] = outputs["similarity"].model_copy(update={
            "missing": shared.missing,
            "text": f"No ticket history was searched, so the history says nothing: {shared.missing}"})
    fell_back = getattr(reranker, "fallbacks", [])
    if fell_back:  # the LLM reranker's failed batches: said where the report lists what was missing
        said = "; ".join(x for x in (outputs["similarity"].missing, *fell_back) if x)
        outputs["similarity"] = outputs["similarity"].model_copy(update={"missing": said})
    timings["similarity_log"] = time.perf_counter() - began
    began = time.perf_counter()
    domain_task = base.model_copy(update={"context": {"similarity": outputs["similarity"].text,
                                                      "log": outputs["log"].text}})
    outputs["domain"] = run_agent(make_agent("domain", deps), domain_task)
    timings["domain"] = time.perf_counter() - began
    return ScheduleResult(prefetch=shared, outputs=outputs, timings=timings)
