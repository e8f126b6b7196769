"""DomainKnowledgeAgent: documentation on the fault, fetched through Faultline's docs MCP server.

It builds a query from the ticket and the other agents' outputs, fetches the best sections and quotes what they
say about identifying and resolving the fault (deterministic), or asks a model (prompt ``astra/domain_agent``).
An unreachable or empty docs index is a missing source, not a failure. docs/astra.md#the-domain-knowledge-agent.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.agents.base import AgentDeps, cap
from faultline.astra.identifiers import find_identifiers
from faultline.astra.lexical import content_words, sentences
from faultline.astra.records import AgentOutput, AgentTask, Finding
from faultline.errors import FaultlineError

SIMILARITY_CHARS = 1500
LOG_CHARS = 2000
MAX_IDENTIFIERS = 20
SEARCH_K = 5
FETCH_TOP = 3
PER_ASPECT = 4
_RESOLUTION = re.compile(r"\b(?:check|verify|confirm|run|use|set|configure|restart|reload|remove|delete|add|"
                         r"enable|disable|clear|fix|correct|restore|raise|lower|increase|decrease|compare|"
                         r"look at|make sure|ensure)\b", re.I)


def context_text(task: AgentTask, agent: str) -> str:
    """The text of another agent's output handed over in ``task.context`` (an AgentOutput, a dict or a string)."""
    value: Any = task.context.get(agent)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return str(value.get("text", "") if isinstance(value, dict) else getattr(value, "text", ""))


def build_query(task: AgentTask) -> tuple[str, list[str]]:
    """The docs query of the paper's recipe, and the identifiers it carries."""
    similarity, log = context_text(task, "similarity"), context_text(task, "log")
    source = "\n".join((task.incident.title, task.incident.description, task.query, similarity, log))
    idents = list(dict.fromkeys(i.value for i in find_identifiers(source)))[:MAX_IDENTIFIERS]
    parts = [task.incident.title]
    if task.query and task.query != task.incident.title:
        parts.append(task.query)
    if idents:
        parts.append("Identifiers: " + ", ".join(idents))
    parts += [cap(similarity, SIMILARITY_CHARS), cap(log, LOG_CHARS)]
    return "\n".join(p for p in parts if p), idents


class _LLMFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    aspect: Literal["identification", "resolution"]
    chunk_id: str
    quotes: list[str] = Field(default_factory=list)


class DomainAnalysis(BaseModel):
    """What the LLM domain analyst must return."""

    model_config = ConfigDict(extra="forbid")
    findings: list[_LLMFinding]


class DomainKnowledgeAgent:
    """See the module docstring. Uses ``deps.docs_client`` when given, else opens a session per task."""

    name = "domain"

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps

    def _sections(self, query: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from faultline.astra.docs_client import DocsClient

        client = self.deps.docs_client
        own = client is None
        if own:
            client = DocsClient(self.deps.settings)
        try:
            hits = client.search(query, SEARCH_K)
            return hits, [client.fetch(h["chunk_id"]) for h in hits[:FETCH_TOP]]
        finally:
            if own:
                client.close()

    def run(self, task: AgentTask) -> AgentOutput:
        started = time.perf_counter()
        query, idents = build_query(task)
        try:
            hits, sections = self._sections(query)
        except FaultlineError as exc:  # an optional source: the analysis goes on without it and says so
            why = exc.message + (f" (fix: {exc.fix})" if exc.fix else "")
            return AgentOutput(agent="domain", round=task.round, query=task.query,
                               text=f"No documentation was consulted, so the documentation says nothing: {why}",
                               data={"doc_query": query, "identifiers": idents, "hits": []},
                               missing=f"documentation: {why}", elapsed_s=time.perf_counter() - started)
        data = {"doc_query": query, "identifiers": idents,
                "hits": [{"chunk_id": h["chunk_id"], "title": h["title"], "score": h["score"]} for h in hits]}
        if not sections:
            return AgentOutput(agent="domain", round=task.round, query=task.query, data=data,
                               text="The documentation has no section matching this incident.",
                               elapsed_s=time.perf_counter() - started)
        output = self._llm(task, sections) if self.deps.model else self._deterministic(query, idents, sections)
        output.round, output.query = task.round, task.query
        output.sources = [part for s in sections for part in (s["title"], s["text"])]  # the sections, verbatim
        output.data.update(data)
        output.elapsed_s = time.perf_counter() - started
        return output

    def _deterministic(self, query: str, idents: list[str], sections: list[dict[str, Any]]) -> AgentOutput:
        wanted = set(content_words(query)) | {i.lower() for i in idents}
        ranked: dict[str, list[tuple[float, str, str]]] = {"identification": [], "resolution": []}
        for rank, section in enumerate(sections):
            body = section["text"]
            if body.startswith(section["title"] + ":"):
                body = body[len(section["title"]) + 1:]  # the index prefixes the section path
            for sentence in sentences(body):
                words = set(content_words(sentence))
                if len(words) < 3:
                    continue
                overlap = len(words & wanted) / len(words) ** 0.5 - 0.1 * rank
                aspect = "resolution" if _RESOLUTION.search(sentence) else "identification"
                ranked[aspect].append((overlap, sentence, section["title"]))
        findings: list[Finding] = []
        parts = [f"Documentation consulted: {', '.join(s['title'] for s in sections)}."]
        for aspect, heading in (("identification", "What the docs say about identifying this fault"),
                                ("resolution", "What the docs say about resolving it")):
            best = sorted(ranked[aspect], key=lambda item: -item[0])[:PER_ASPECT]
            if best:
                parts.append(f"{heading}:")
            for _score, sentence, title in best:
                parts.append(f"- {title}: {sentence}")
                findings.append(Finding(text=f"{title}: {sentence}", aspect=aspect, quotes=[sentence]))
        return AgentOutput(agent="domain", round=0, query="", text="\n".join(parts), findings=findings)

    def _llm(self, task: AgentTask, sections: list[dict[str, Any]]) -> AgentOutput:
        import json

        from faultline.llm import complete_json

        answer = DomainAnalysis.model_validate(complete_json(
            self.deps.settings, self.deps.conn, model=self.deps.model, prompt="astra/domain_agent",
            variables={"title": task.incident.title, "description": task.incident.description, "query": task.query,
                       "sections": json.dumps([{k: s[k] for k in ("chunk_id", "title", "text")} for s in sections],
                                              ensure_ascii=False, indent=1)},
            schema=DomainAnalysis, stage="astra.agent.domain", incident_id=task.incident.incident_id,
            run_id=self.deps.run_id))
        texts = {s["chunk_id"]: " ".join(s["text"].split()) for s in sections}
        findings = [Finding(text=f.text, aspect=f.aspect,
                            quotes=[q for q in f.quotes if " ".join(q.split()) in texts.get(f.chunk_id, "")])
                    for f in answer.findings]
        parts = [f"- [{f.aspect}] {f.text}" + "".join(f"\n  > {q}" for q in f.quotes) for f in findings]
        return AgentOutput(agent="domain", round=task.round, query=task.query, text="\n".join(parts),
                           findings=findings)
