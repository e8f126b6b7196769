"""What every ASTRA agent shares: its dependencies and the `run(task) -> AgentOutput` contract."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from faultline.astra.records import AgentOutput, AgentTask
from faultline.llm.gateway import model_failure

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings


@dataclass
class AgentDeps:
    """What agents may use. ``model`` None means the deterministic analyst; else a litellm model string.

    Agents run in threads: they read through ``conn.cursor()`` (one DuckDB cursor per call), never
    the shared connection object itself.
    """

    settings: Settings
    conn: duckdb.DuckDBPyConnection
    model: str | None = None
    run_id: str | None = None
    embedder: Any = None
    docs_client: Any = None  # a shared DocsClient; None: the domain agent opens its own session per task
    # the log scopes this analysis built, by (incident, widen, fleet): its rounds and follow-ups ask for the same
    # few scopes again and again, and nothing an analysis writes changes one (`log_signals.analysis_scope`)
    scopes: dict[tuple[str, int, bool], Any] = field(default_factory=dict)
    stored_scopes: dict[tuple[str, int], Any] = field(default_factory=dict)  # the scopes `log_scopes` holds


class Agent(Protocol):
    """An ASTRA agent: one task in, one output out (claims come from its `text`; their quotes may cite only its
    `sources`, the verbatim passages it read)."""

    name: str

    def run(self, task: AgentTask) -> AgentOutput: ...


def cap(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a line or word end."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for sep in ("\n", " "):
        at = cut.rfind(sep)
        if at > limit // 2:
            return cut[:at].rstrip()
    return cut


def run_agent(agent: Agent, task: AgentTask) -> AgentOutput:
    """``agent.run(task)``; when the agent's model gives no valid answer (`LLMError`: timeout, invalid answers after
    the re-asks, refused), an output that says so and names the failure as a missing source, so the other agents'
    findings still make the report (docs/llm.md#when-a-model-fails)."""
    from faultline.llm import LLMError

    started = time.perf_counter()
    try:
        return agent.run(task)
    except LLMError as exc:
        failed = model_failure(exc)
        source = f"{agent.name} agent" if task.round <= 1 else f"{agent.name} agent (follow-up, round {task.round})"
        return AgentOutput(agent=agent.name, round=task.round, query=task.query,  # type: ignore[arg-type]
                           text=f"The {agent.name} agent's model failed, so this agent says nothing: {failed}",
                           data={"model_failed": failed}, missing=f"{source}: {failed}",
                           elapsed_s=time.perf_counter() - started)
