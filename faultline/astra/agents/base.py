"""What every ASTRA agent shares: its dependencies, the `run(task) -> AgentOutput` contract, a registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from faultline.astra.records import AgentOutput, AgentTask
from faultline.errors import FaultlineError

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


class Agent(Protocol):
    """An ASTRA agent: one task in, one output out (the output's `text` is all its claims may cite)."""

    name: str

    def run(self, task: AgentTask) -> AgentOutput: ...


AgentFactory = Callable[[AgentDeps], Agent]
_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Register (or replace) the factory of agent ``name``; built-ins register the same way."""
    _REGISTRY[name] = factory


def make_agent(name: str, deps: AgentDeps) -> Agent:
    """Build the agent ``name`` (similarity, log, domain, or any registered one)."""
    from faultline.astra import agents  # noqa: F401  (registers the built-ins)

    if name not in _REGISTRY:
        raise FaultlineError(f"unknown ASTRA agent {name!r}", fix=f"use one of {sorted(_REGISTRY)}")
    return _REGISTRY[name](deps)


def agent_names() -> list[str]:
    """Names of the registered agents."""
    from faultline.astra import agents  # noqa: F401

    return sorted(_REGISTRY)


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
