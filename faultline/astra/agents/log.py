"""LogAgent: the device-log evidence for an incident, as findings that quote log lines verbatim.

It reads the lines of the incident's scope (stored in ``log_scopes``), runs the log pipeline (``log_excerpts``),
then scores labels by the taxonomy's signals over the whole scope (deterministic) or asks a model (prompt
``astra/log_agent``), keeping only quotes that are lines of the excerpt. The log lines it read (the excerpt's, and
the scope lines its signals and event chain quote) are its output's `sources`, what evidence is checked against.
How: docs/astra.md#the-log-agent.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.agents.base import AgentDeps, cap
from faultline.astra.labels import best_label
from faultline.astra.records import AgentOutput, AgentTask, Finding
from faultline.truth.taxonomy import taxonomy

KEY_LINES = 8
LLM_EXCERPT_CHARS = 12_000


class _LLMFinding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    aspect: Literal["symptom", "cause", "context"] = "symptom"
    quotes: list[str] = Field(default_factory=list)


class LogAnalysis(BaseModel):
    """What the LLM log analyst must return."""

    model_config = ConfigDict(extra="forbid")
    findings: list[_LLMFinding]
    causal_chain: list[str] = Field(default_factory=list)
    category: str | None = None
    label: str | None = None
    devices: list[str] = Field(default_factory=list)


def _log_lines(excerpt) -> list[str]:
    """The excerpt's log lines, verbatim (its annotations - "N similar lines suppressed" - are not log lines)."""
    return list(dict.fromkeys(line.text for line in excerpt.lines if line.annotation is None))


def _chain_quotes(chain) -> list[str]:
    """The log lines an event chain quotes (root, echoes, context, later), as the chain quotes them."""
    if chain is None:
        return []
    return [event.quote for event in (chain.root, *chain.echoes, *chain.context, *chain.later)]


def _shared_terms(text: str, terms: tuple[str, ...]) -> int:
    low = text.lower()
    return sum(term.lower() in low for term in terms)


class LogAgent:
    """See the module docstring. ``deps.model`` None = deterministic."""

    name = "log"

    def __init__(self, deps: AgentDeps) -> None:
        self.deps = deps

    def scope(self, task: AgentTask):  # -> Scope
        """The lines this round reads (`log_signals.analysis_scope`), stored in `log_scopes`."""
        from faultline.astra.log_signals import analysis_scope
        from faultline.scope.store import write_scope

        cursor = self.deps.conn.cursor()
        try:
            scope = analysis_scope(cursor, self.deps.settings, task.incident, round=task.round,
                                   built=self.deps.scopes)
            stored = (task.incident.incident_id, task.round)
            if self.deps.stored_scopes.get(stored) != scope:  # else a follow-up of the round: stored already
                write_scope(cursor, scope)
                self.deps.stored_scopes[stored] = scope
            return scope
        finally:
            cursor.close()

    def _excerpt(self, task: AgentTask, scope):  # -> LogExcerpt | None
        from faultline.logs.pipeline import build_excerpt
        from faultline.logs.store import write_excerpt
        from faultline.scope.resolve import scope_frame

        cursor = self.deps.conn.cursor()
        try:
            lines = scope_frame(cursor, scope)
            if lines.height == 0:
                return None
            ticket = "\n".join(p for p in (task.incident.title, task.incident.description,
                                           task.query if task.query != task.incident.title else "") if p)
            similar = [f"{s.title}\n{s.resolution_trail or ''}" for s in task.prefetched]
            excerpt = build_excerpt(lines, settings=self.deps.settings, ticket_text=ticket, similar_texts=similar,
                                    incident_id=task.incident.incident_id, round=task.round)
            write_excerpt(cursor, excerpt)
            return excerpt
        finally:
            cursor.close()

    def run(self, task: AgentTask) -> AgentOutput:
        started = time.perf_counter()
        scope = self.scope(task)
        excerpt = self._excerpt(task, scope)
        described = scope.describe()
        if excerpt is None:
            where = "; ".join(described[:3])
            return AgentOutput(agent="log", round=task.round, query=task.query,
                               text=f"No log lines in this incident's scope ({where}), so the logs say nothing.",
                               data={"input_lines": 0, "scope": described},
                               missing=f"device logs: no log lines in this incident's scope ({where})",
                               elapsed_s=time.perf_counter() - started)
        output = (self._llm(task, excerpt) if self.deps.model
                  else self._deterministic(task, excerpt, scope))
        output.data["scope"] = described
        output.text = output.text + "\nLogs read (scope):\n" + "\n".join(f"- {line}" for line in described)
        output.elapsed_s = time.perf_counter() - started
        return output

    def _deterministic(self, task: AgentTask, excerpt, scope) -> AgentOutput:
        from faultline.astra.log_signals import label_scores

        cursor = self.deps.conn.cursor()
        try:
            scores, hits = label_scores(cursor, self.deps.settings, task.incident, scope)
        finally:
            cursor.close()
        label = best_label(scores)
        info = taxonomy().get(label) if label else None
        lines = [line for line in excerpt.lines if line.annotation is None]
        findings: list[Finding] = []
        key_texts: list[str] = []
        cause_devices: list[str] = []
        scores_top = max((h.weight for h in hits if h.label == label), default=0.0)
        for hit in sorted(hits, key=lambda h: (h.label != label, -h.weight)):
            if len(findings) >= KEY_LINES or hit.weight <= 0:
                break
            quoted = [line.text for line in hit.lines if line.text.strip() not in key_texts]
            if not quoted:
                continue
            device = hit.lines[0].device or "a device"
            is_cause = hit.label == label
            if is_cause and hit.weight >= 0.5 * scores_top:  # weak supporting signals do not name devices
                cause_devices += [line.device for line in hit.lines if line.device and line.device not in cause_devices]
            text = f"{device}: {hit.note}" if ":volume:" in hit.key else f"{device} logged: {quoted[0].strip()}"
            findings.append(Finding(text=text, aspect="cause" if is_cause else "symptom", quotes=quoted[:2]))
            key_texts += [q.strip() for q in quoted[:2]]
        faults = [line for line in lines
                  if {"L1", "L2", "L3", "L4"} & set(line.levels) and line.text.strip() not in key_texts]
        faults.sort(key=lambda line: -_shared_terms(line.text, excerpt.ticket_terms))
        shown = faults[: max(0, KEY_LINES - len(findings))]
        for line in shown:
            findings.append(Finding(text=f"{line.host or 'a device'} logged ({line.severity or 'no severity'}"
                                         f"{', ' + line.component if line.component else ''}): {line.text.strip()}",
                                    aspect="symptom", quotes=[line.text]))
            key_texts.append(line.text.strip())
        ordered = sorted(shown, key=lambda line: (line.ts is None, line.ts or 0, line.source_file, line.line_no))
        causal = [f"{h.lines[0].device or '?'}: {cap(h.lines[0].text.strip(), 160)}" for h in hits[:3] if h.weight > 0]
        causal += [f"{line.host or '?'}: {cap(line.text.strip(), 160)}" for line in ordered]
        devices = cause_devices  # without a label the logs blame no device (fault lines alone are symptoms)
        chain = self._chain(task, scope, label, hits) if info is not None and info.kind == "event" else None
        if chain is not None and chain.root.device:
            devices = [chain.root.device] + [d for d in devices if d != chain.root.device]
        hosts = sorted({line.host for line in lines if line.host})
        parts = [(f"Log analysis: {excerpt.input_lines} log lines from {len(hosts)} source(s) "
                  f"({', '.join(hosts[:12])}); the filter kept {len(excerpt.lines)} lines.")]
        if info:
            support = [h for h in hits if h.label == label]
            parts.append(f"Root-cause category: {info.category}; label: {info.label} ({info.summary}), "
                         f"named by {len(support)} log signal(s) on {', '.join(devices)}: "
                         + "; ".join(h.note for h in support) + ".")
        else:
            parts.append("The log lines match no fault label of the taxonomy strongly enough to name one.")
        if chain is not None:
            parts.append("Event chain (the cause before its echoes):")
            parts += [f"- {line}" for line in chain.lines()]
            if chain.affected_peers:
                parts.append(f"Affected peers (the far end): {', '.join(chain.affected_peers)}.")
        later = [h for h in hits if h.later]
        if later and chain is None:
            parts.append("Logged after the ticket was opened (later, not its cause): "
                         + "; ".join(f"{h.lines[0].device or '?'}: {h.lines[0].text.strip()}" for h in later[:3]))
        if findings:
            parts.append("Key log lines (verbatim):")
            for f in findings:
                parts.append(f"- {f.text}")
                parts.extend(f"  {q.strip()}" for q in f.quotes if q.strip() not in f.text)
            parts.append("Causal chain (time order): " + " -> ".join(causal))
        else:
            parts.append("No error, fault, state-change or anomaly lines were found in the logs.")
        read = [*_log_lines(excerpt), *(line.text for h in hits for line in h.lines), *_chain_quotes(chain)]
        return AgentOutput(agent="log", round=task.round, query=task.query, text="\n".join(parts), findings=findings,
                           sources=list(dict.fromkeys(read)),
                           category=info.category if info else None, label=label, devices=devices,
                           data={"input_lines": excerpt.input_lines, "excerpt_lines": len(excerpt.lines),
                                 "level_counts": excerpt.level_counts, "label_scores": scores,
                                 "signals": [{"label": h.label, "signal": h.key, "weight": h.weight,
                                              "history_df": h.df, "note": h.note} for h in hits[:20]],
                                 "causal_chain": causal, "ticket_terms": list(excerpt.ticket_terms),
                                 **({"event_chain": chain.as_data()} if chain is not None else {})})

    def _chain(self, task: AgentTask, scope, label: str, hits):  # -> EventChain | None
        from faultline.astra.log_signals import event_chain

        cursor = self.deps.conn.cursor()
        try:
            return event_chain(cursor, task.incident, scope, label, hits)
        finally:
            cursor.close()

    def _llm(self, task: AgentTask, excerpt) -> AgentOutput:
        from faultline.llm import complete_json

        lines = [line for line in excerpt.lines if line.annotation is None]
        real = {line.text.strip() for line in lines}
        labels = "\n".join(f"- {i.label} ({i.category}): {i.summary}" for i in taxonomy().values())
        text_block = cap("\n".join(line.text for line in excerpt.lines), LLM_EXCERPT_CHARS)
        answer = LogAnalysis.model_validate(complete_json(
            self.deps.settings, self.deps.conn, model=self.deps.model, prompt="astra/log_agent",
            variables={"title": task.incident.title, "description": task.incident.description, "query": task.query,
                       "excerpt": text_block, "labels": labels},
            schema=LogAnalysis, stage="astra.agent.log", incident_id=task.incident.incident_id,
            run_id=self.deps.run_id))
        findings = []
        for f in answer.findings:
            quotes = [q.strip() for q in f.quotes if q.strip() in real]  # only lines the logs really contain
            findings.append(Finding(text=f.text, aspect=f.aspect, quotes=quotes))
        label = answer.label if answer.label in taxonomy() else None
        category = taxonomy()[label].category if label else None
        parts = ["Log analysis (LLM):"] + [f"- {f.text}" + "".join(f"\n  > {q}" for q in f.quotes) for f in findings]
        if answer.causal_chain:
            parts.append("Causal chain: " + " -> ".join(answer.causal_chain))
        if label:
            parts.append(f"Root-cause category: {category}; label: {label}.")
        return AgentOutput(agent="log", round=task.round, query=task.query, text="\n".join(parts), findings=findings,
                           sources=_log_lines(excerpt), category=category, label=label, devices=answer.devices,
                           data={"input_lines": excerpt.input_lines, "excerpt_lines": len(excerpt.lines),
                                 "causal_chain": answer.causal_chain,
                                 "dropped_quotes": sum(len(f.quotes) for f in answer.findings)
                                 - sum(len(f.quotes) for f in findings)})
