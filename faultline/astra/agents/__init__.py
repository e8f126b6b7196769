"""ASTRA's agents behind one `run(task) -> AgentOutput` interface, and the registry that builds them.

Built-ins ``similarity``, ``log`` and ``domain``, each deterministic (``deps.model`` None) or through a litellm
model (prompts under ``prompts/astra/``): ``make_agent("log", AgentDeps(settings, conn)).run(task)``.
The agents: docs/astra.md#the-agents.
"""

from faultline.astra.agents.base import Agent, AgentDeps, model_failure, run_agent
from faultline.astra.agents.domain import DomainKnowledgeAgent
from faultline.astra.agents.log import LogAgent
from faultline.astra.agents.registry import agent_names, make_agent, register_agent
from faultline.astra.agents.similarity import TicketSimilarityAgent

__all__ = ["Agent", "AgentDeps", "DomainKnowledgeAgent", "LogAgent", "TicketSimilarityAgent", "agent_names",
           "make_agent", "model_failure", "register_agent", "run_agent"]
