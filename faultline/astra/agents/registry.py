"""The registry that builds ASTRA's agents by name; the built-ins register here like any other agent."""

from __future__ import annotations

from collections.abc import Callable

from faultline.astra.agents.base import Agent, AgentDeps
from faultline.astra.agents.domain import DomainKnowledgeAgent
from faultline.astra.agents.log import LogAgent
from faultline.astra.agents.similarity import TicketSimilarityAgent
from faultline.errors import FaultlineError

AgentFactory = Callable[[AgentDeps], Agent]
_REGISTRY: dict[str, AgentFactory] = {}


def register_agent(name: str, factory: AgentFactory) -> None:
    """Register the factory of agent ``name``; FaultlineError when the name is taken."""
    if name in _REGISTRY:
        raise FaultlineError(f"an ASTRA agent named {name!r} is already registered",
                             fix="register it under another name")
    _REGISTRY[name] = factory


def make_agent(name: str, deps: AgentDeps) -> Agent:
    """Build the agent ``name`` (similarity, log, domain, or any registered one)."""
    if name not in _REGISTRY:
        raise FaultlineError(f"unknown ASTRA agent {name!r}", fix=f"use one of {sorted(_REGISTRY)}")
    return _REGISTRY[name](deps)


def agent_names() -> list[str]:
    """Names of the registered agents."""
    return sorted(_REGISTRY)


register_agent("similarity", TicketSimilarityAgent)
register_agent("log", LogAgent)
register_agent("domain", DomainKnowledgeAgent)
