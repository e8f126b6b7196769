"""TicketSimilarityAgent: what the pre-fetched similar tickets say caused and fixed their faults.

It quotes each ticket's cause and fix sentences (deterministic) or asks a model (prompt
``astra/similarity_agent``), then lets the tickets vote on a taxonomy label weighted by rerank score
(`vote_label`), naming one only on a clear majority. The split and the vote: docs/astra.md#the-similarity-agent.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.agents.base import AgentDeps, cap
from faultline.astra.labels import classify_text
from faultline.astra.lexical import identifiers, sentences
from faultline.astra.records import AgentOutput, AgentTask, Finding, SimilarTicket
from faultline.truth.taxonomy import taxonomy

TICKETS_SQL = """
SELECT ticket_id, coalesce(description, ''), coalesce(resolution_note, '')
FROM tickets WHERE ticket_id IN (SELECT unnest(?::VARCHAR[]))
"""
_FIX = re.compile(r"^(?:fix(?:ed)?|resolution|resolved|workaround)\s*:|\b(?:fix(?:ed|es)?|restor\w+|restart\w*|"
                  r"re-?enabl\w+|remov\w+|delet\w+|revert\w*|rolled back|replac\w+|re-?applied|added|patch\w*|"
                  r"upgrad\w+|committed|corrected|changed)\b", re.IGNORECASE)
_CAUSE = re.compile(r"^(?:found|cause|root cause)\s*:", re.IGNORECASE)
DESCRIPTION_CHARS = 300
NO_FAULT = "no_fault"
_NO_FAULT = re.compile(r"^(?:found:\s*)?(?:no fault|nothing was wrong|no problem was found)", re.IGNORECASE)
MIN_NOTE_SCORE = 0.15  # cosine below this: the note describes no label well enough to vote
CLEAR_SHARE = 0.6  # a label (or category) needs this share of the voting weight to be named
_NOT_DEVICES = re.compile(r"^(?:\d|[0-9a-f]{2}[:-])|_(?:acl|block|down|missing|misconfig)")


class LabelVote(BaseModel):
    """The similar tickets' weighted vote on a taxonomy label, and the sentence behind the winner."""

    model_config = ConfigDict(extra="forbid")
    label: str | None = None
    category: str | None = None
    share: float = 0.0  # winner's share of the voting weight
    weights: dict[str, float] = Field(default_factory=dict)  # label (or "no_fault") -> summed rerank score
    ticket_id: str | None = None  # the strongest ticket behind the winner
    sentence: str | None = None  # its cause sentence, verbatim


def vote_label(tickets: list[SimilarTicket], notes: dict[str, str]) -> LabelVote:
    """Classify each ticket's cause sentences and weigh the votes by rerank score
    (docs/astra.md#the-similarity-agent)."""
    weights: Counter[str] = Counter()
    support: dict[str, tuple[float, str, str]] = {}
    for t in tickets:
        causes, _ = split_resolution(notes.get(t.ticket_id, ""))
        if not causes:
            continue
        if _NO_FAULT.match(causes[0]):
            label, fit, sentence = NO_FAULT, 1.0, causes[0]
        else:
            ranked = classify_text(" ".join(causes))
            if not ranked or ranked[0][1] < MIN_NOTE_SCORE:
                continue
            label, fit = ranked[0]
            sentence = max(causes, key=lambda c: dict(classify_text(c)).get(label, 0.0))
        weight = max(t.score, 0.0) * fit if label != NO_FAULT else max(t.score, 0.0)
        weights[label] += weight
        if weight > support.get(label, (-1.0, "", ""))[0]:
            support[label] = (weight, t.ticket_id, sentence)
    total = sum(weights.values())
    if not total:
        return LabelVote()
    vote = LabelVote(weights={k: round(v, 4) for k, v in weights.most_common()})
    best, weight = weights.most_common(1)[0]
    if weight / total >= CLEAR_SHARE:
        _, ticket_id, sentence = support[best]
        category = None if best == NO_FAULT else taxonomy()[best].category
        return vote.model_copy(update={"label": None if best == NO_FAULT else best, "category": category,
                                       "share": weight / total, "ticket_id": ticket_id, "sentence": sentence})
    by_category: Counter[str] = Counter()
    for label, w in weights.items():
        if label != NO_FAULT:
            by_category[taxonomy()[label].category] += w
    if by_category:
        category, weight = by_category.most_common(1)[0]
        if weight / total >= CLEAR_SHARE:
            top = max((lb for lb in weights if lb != NO_FAULT and taxonomy()[lb].category == category),
                      key=lambda lb: weights[lb])
            _, ticket_id, sentence = support[top]
            return vote.model_copy(update={"category": category, "share": weight / total, "ticket_id": ticket_id,
                                           "sentence": sentence})
    return vote


def vote_text(vote: LabelVote) -> str:
    """How the vote reads in the agent's output (empty when nobody voted)."""
    if not vote.weights:
        return ""
    if vote.sentence is None:
        spread = ", ".join(f"{k} {v:.2f}" for k, v in vote.weights.items())
        return f"The similar tickets' resolutions do not agree on a fault label (weighted votes: {spread})."
    named = f"label {vote.label} (category {vote.category})" if vote.label else \
        f"category {vote.category}" if vote.category else "no fault"
    return (f"The similar tickets' resolutions point to {named} ({100 * vote.share:.0f}% of the weighted vote). "
            f"In {vote.ticket_id}: {vote.sentence}")


def ticket_sources(tickets: list[SimilarTicket], texts: dict[str, tuple[str, str]]) -> list[str]:
    """What the similar tickets say, verbatim: id, title, description, resolution note and trail of each."""
    passages: list[str] = []
    for t in tickets:
        description, note = texts.get(t.ticket_id, ("", ""))
        passages += [p for p in (t.ticket_id, t.title, description, note, t.resolution_trail or "") if p.strip()]
    return passages


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
        output.sources = ticket_sources(tickets, texts)
        vote = vote_label(tickets, {tid: note for tid, (_, note) in texts.items()})
        if vote.sentence is not None:
            output.text = vote_text(vote) + "\n" + output.text
            output.findings.insert(0, Finding(text=vote_text(vote), aspect="cause", quotes=[vote.sentence]))
            output.label, output.category = vote.label, vote.category
            if vote.label:
                output.devices = sorted(i for i in identifiers(vote.sentence) if not _NOT_DEVICES.search(i))
        elif vote.weights:
            output.text += "\n" + vote_text(vote)
        data["label_vote"] = vote.model_dump()
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
