"""What every ASTRA agent shares: its dependencies and the `run(task) -> AgentOutput` contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from faultline.astra.records import AgentOutput, AgentTask

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
    """An ASTRA agent: one task in, one output out (the output's `text` is all its claims may cite)."""

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
