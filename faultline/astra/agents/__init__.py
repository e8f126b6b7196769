"""ASTRA's agents behind one `run(task) -> AgentOutput` interface, and the registry that builds them.

    deps = AgentDeps(settings, conn)                 # model=None: the deterministic analyst
    output = make_agent("log", deps).run(task)

Built-ins: ``similarity`` (TicketSimilarityAgent), ``log`` (LogAgent), ``domain``
(DomainKnowledgeAgent, an MCP client of ``faultline mcp docs``). Each has a deterministic
implementation and an LLM one (``deps.model`` = a litellm model string; prompts under
``prompts/astra/``).
"""

from faultline.astra.agents.base import Agent, AgentDeps
from faultline.astra.agents.domain import DomainKnowledgeAgent
from faultline.astra.agents.log import LogAgent
from faultline.astra.agents.registry import agent_names, make_agent, register_agent
from faultline.astra.agents.similarity import TicketSimilarityAgent

__all__ = ["Agent", "AgentDeps", "DomainKnowledgeAgent", "LogAgent", "TicketSimilarityAgent", "agent_names",
           "make_agent", "register_agent"]
