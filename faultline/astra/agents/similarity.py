"""TicketSimilarityAgent: what the pre-fetched similar tickets say caused and fixed their faults.

Deterministic (default): for each similar ticket, the sentences of its resolution note (and, for
the top two, its resolution trail) are split into cause and fix statements — ``Found:`` /
``Fix:`` prefixes when the note has them, fix verbs otherwise — and quoted verbatim. LLM: the
tickets go to the model (prompt ``astra/similarity_agent``); quotes not found in the tickets are dropped.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.agents.base import AgentDeps, cap
from faultline.astra.lexical import sentences
from faultline.astra.records import AgentOutput, AgentTask, Finding, SimilarTicket

TICKETS_SQL = """
SELECT ticket_id, coalesce(description, ''), coalesce(resolution_note, '')
FROM tickets WHERE ticket_id IN (SELECT unnest(?::VARCHAR[]))
"""
_FIX = re.compile(r"^(?:fix(?:ed)?|resolution|resolved|workaround)\s*:|\b(?:fix(?:ed|es)?|restor\w+|restart\w*|"
                  r"re-?enabl\w+|remov\w+|delet\w+|revert\w*|rolled back|replac\w+|re-?applied|added|patch\w*|"
                  r"upgrad\w+|committed|corrected|changed)\b", re.I)
_CAUSE = re.compile(r"^(?:found|cause|root cause)\s*:", re.I)
DESCRIPTION_CHARS = 300


def split_resolution(text: str) -> tuple[list[str], list[str]]:
    """(cause sentences, fix sentences) of a resolution text, verbatim."""
    causes, fixes = [], []
    for sentence in sentences(text):
        if _CAUSE.match(sentence):
            causes.append(sentence)
        elif _FIX.search(sentence):
            fixes.append(sentence)
        else:
            causes.append(sentence)
    return causes, fixes


class _LLMFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    aspect: Literal["cause", "resolution", "context"]
    ticket_id: str
    quotes: list[str] = Field(default_factory=list)


class SimilarityAnalysis(BaseModel):
    """What the LLM similarity analyst must return."""

    model_config = ConfigDict(extra="forbid")
    findings: list[_LLMFinding]
    summary: str = ""


class TicketSimilarityAgent:
    """See the module docstring. ``deps.model`` None = deterministic."""

    name = "similarity"

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps

    def _texts(self, tickets: list[SimilarTicket]) -> dict[str, tuple[str, str]]:
        cursor = self.deps.conn.cursor()
        try:
            rows = cursor.execute(TICKETS_SQL, [[t.ticket_id for t in tickets]]).fetchall()
        finally:
            cursor.close()
        return {tid: (desc, note) for tid, desc, note in rows}

    def run(self, task: AgentTask) -> AgentOutput:
        started = time.perf_counter()
        tickets = task.prefetched
        weights: Counter[str] = Counter()
        for t in tickets:
            for comp in t.components:
                weights[comp] += t.score
        data = {"tickets": [{"ticket_id": t.ticket_id, "score": t.score, "components": t.components} for t in tickets],
                "component_scores": dict(weights.most_common())}
        if not tickets:
            return AgentOutput(agent="similarity", round=task.round, query=task.query, data=data,
                               text="No resolved ticket similar enough to this incident was found in the history.",
                               elapsed_s=time.perf_counter() - started)
        texts = self._texts(tickets)
        output = self._llm(task, tickets, texts) if self.deps.model else self._deterministic(task, tickets, texts)
        output.data.update(data)
        output.elapsed_s = time.perf_counter() - started
        return output

    def _deterministic(self, task: AgentTask, tickets: list[SimilarTicket],
                       texts: dict[str, tuple[str, str]]) -> AgentOutput:
        parts = [f"{len(tickets)} similar resolved ticket(s), most similar first:"]
        findings: list[Finding] = []
        for n, t in enumerate(tickets, start=1):
            description, note = texts.get(t.ticket_id, ("", ""))
            parts.append(f"{n}. {t.ticket_id} (similarity {t.score:.2f}): {t.title}")
            if description:
                parts.append(f"   Reported: {cap(' '.join(description.split()), DESCRIPTION_CHARS)}")
            causes, fixes = split_resolution(note)
            if t.resolution_trail:
                trail_causes, trail_fixes = split_resolution(t.resolution_trail.replace("Resolution: ", "", 1))
                causes += [s for s in trail_causes if s not in causes]
                fixes += [s for s in trail_fixes if s not in fixes]
            for label, found, aspect in (("Cause", causes[:3], "cause"), ("Fix", fixes[:3], "resolution")):
                for sentence in found:
                    parts.append(f"   {label}: {sentence}")
                if found:
                    findings.append(Finding(text=f"In similar ticket {t.ticket_id} ({t.title}), the "
                                                 f"{'cause' if aspect == 'cause' else 'fix'} was: {found[0]}",
                                            aspect=aspect, quotes=list(found)))
            if not causes and not fixes:
                parts.append("   (no resolution recorded)")
        return AgentOutput(agent="similarity", round=task.round, query=task.query, text="\n".join(parts),
                           findings=findings)

    def _llm(self, task: AgentTask, tickets: list[SimilarTicket], texts: dict[str, tuple[str, str]]) -> AgentOutput:
        import json

        from faultline.llm import complete_json

        listing = [{"ticket_id": t.ticket_id, "title": t.title, "similarity": t.score,
                    "description": cap(texts.get(t.ticket_id, ("", ""))[0], 800),
                    "resolution": texts.get(t.ticket_id, ("", ""))[1], "trail": t.resolution_trail or ""}
                   for t in tickets]
        answer = SimilarityAnalysis.model_validate(complete_json(
            self.deps.settings, self.deps.conn, model=self.deps.model, prompt="astra/similarity_agent",
            variables={"title": task.incident.title, "description": task.incident.description, "query": task.query,
                       "tickets": json.dumps(listing, ensure_ascii=False, indent=1)},
            schema=SimilarityAnalysis, stage="astra.agent.similarity", incident_id=task.incident.incident_id,
            run_id=self.deps.run_id))
        corpus = {t["ticket_id"]: " ".join(" ".join(str(v) for v in t.values()).split()) for t in listing}
        findings = []
        for f in answer.findings:
            quotes = [q for q in f.quotes if " ".join(q.split()) in corpus.get(f.ticket_id, "")]
            aspect = "resolution" if f.aspect == "resolution" else "cause" if f.aspect == "cause" else "context"
            findings.append(Finding(text=f"{f.ticket_id}: {f.text}", aspect=aspect, quotes=quotes))
        parts = [answer.summary] if answer.summary else []
        parts += [f"- {f.text}" + "".join(f"\n  > {q}" for q in f.quotes) for f in findings]
        return AgentOutput(agent="similarity", round=task.round, query=task.query, text="\n".join(parts),
                           findings=findings)
