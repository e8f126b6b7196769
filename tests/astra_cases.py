"""Agent outputs built by hand from a real sample incident, for the claim/evidence/report/judge/loop tests.

`sample-backlog-003` (simple_bgp: a firewall on router1 drops TCP 179) is described as the three
agents would: the log agent quotes the incident's real bgpd lines, the similarity agent quotes the
real resolved ticket NET-9801771, the domain agent quotes the real runbook. `SourceAgents` answers
follow-up queries from the same real sources (log lines, runbook paragraphs, resolution notes) by
word overlap with the query, so the loop can be driven without the LanceDB/MCP stack.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from faultline.astra import lexical
from faultline.astra.engine import Agents
from faultline.astra.records import (
    AgentOutput,
    AgentTask,
    Finding,
    Incident,
    SimilarTicket,
)

REPO = Path(__file__).resolve().parents[1]
INCIDENT_DIR = REPO / "data" / "sample" / "backlog" / "sample-backlog-003"
HISTORY_DIR = REPO / "data" / "sample" / "history" / "sample-history-003"
RUNBOOK = REPO / "data" / "sample" / "docs" / "noc-runbook.md"


def incident() -> Incident:
    ticket = json.loads((INCIDENT_DIR / "ticket.json").read_text())
    return Incident(incident_id=ticket["incident_id"], ticket_id=ticket["ticket_id"], title=ticket["title"],
                    description=ticket["description"], opened_at=ticket["created_at"])


def log_lines(device: str, daemon: str = "bgpd") -> list[str]:
    """The device's `daemon` lines of the incident: its slot of the backlog's syslog archive, verbatim."""
    meta = json.loads((INCIDENT_DIR / "incident.json").read_text())
    first, last = meta["lab_up_at"][:19], meta["lab_down_at"][:19]
    lines = []
    for path in sorted((INCIDENT_DIR.parent / "archive" / device).glob("*.log.gz")):
        with gzip.open(path, "rt") as handle:
            for line in handle:
                stamp = line.split(">", 1)[-1][:19]
                if first <= stamp <= last and f" {daemon}[" in line:
                    lines.append(line.rstrip("\n"))
    return lines


def _fault_lines(device: str) -> list[str]:
    return [line for line in log_lines(device) if "NOTIFICATION" in line or "ADJCHANGE" in line]


def hold_timer_line(device: str) -> str:
    """The device's real `%NOTIFICATION ... (Hold Timer Expired)` line."""
    return next(line for line in _fault_lines(device) if "Hold Timer Expired" in line)


def _clock(line: str) -> str:
    return line.split(">", 1)[-1][11:19]


def log_output() -> AgentOutput:
    r1, r2 = _fault_lines("router1"), _fault_lines("router2")
    up, expired = next(line for line in r1 if "Up" in line), hold_timer_line("router1")
    text = "\n".join([
        "Log analysis of router1 and router2 (bgpd, zebra).",
        "Findings:",
        *[f"router1 bgpd: {line}" for line in r1],
        *[f"router2 bgpd: {line}" for line in r2],
        (f"Causal chain: the BGP session between router1 and router2 came up at {_clock(up)}, then both sides "
         f"sent a Hold Timer Expired notification at {_clock(expired)} and the session went down."),
        ("The session was dropped because keepalives between router1 (10.0.0.0) and router2 (10.0.0.1) stopped "
         "arriving on TCP port 179."),
        "Root-cause category: misconfiguration (likely bgp_acl_block on router1).",
    ])
    findings = [Finding(text="The BGP session between router1 and router2 went down after Hold Timer Expired "
                             f"notifications at {_clock(expired)}.", aspect="symptom",
                        quotes=[expired, hold_timer_line("router2")])]
    return AgentOutput(agent="log", round=1, query="initial", text=text, findings=findings,
                       sources=[*log_lines("router1"), *log_lines("router2")],  # the lines the agent read
                       category="misconfiguration", label="bgp_acl_block", devices=["router1", "router2"])


def similarity_output() -> AgentOutput:
    ticket = json.loads((HISTORY_DIR / "ticket.json").read_text())
    note = ticket["resolution_note"]
    text = "\n".join([
        f"Most similar resolved ticket: {ticket['ticket_id']} (score 0.71): {ticket['title']}.",
        f"Resolution trail of {ticket['ticket_id']}:",
        note,
        f"{ticket['ticket_id']} was resolved as a misconfiguration with label bgp_acl_block.",
    ])
    return AgentOutput(agent="similarity", round=1, query="initial", text=text, category="misconfiguration",
                       label="bgp_acl_block", devices=["super_spine_0"],
                       sources=[ticket["ticket_id"], ticket["title"], ticket["description"], note],
                       data={"tickets": [{"ticket_id": ticket["ticket_id"], "score": 0.71,
                                          "components": ticket["components"]}]})


def runbook_section(title: str) -> str:
    text = RUNBOOK.read_text()
    start = text.index(f"### {title}")
    end = text.find("\n###", start + 4)
    return text[start:end if end > 0 else None].strip()


def domain_output() -> AgentOutput:
    section = runbook_section("Session stuck in Active or Connect")
    flapping = runbook_section("Session flapping")
    text = f"From noc-runbook.md:\n{section}\n\n{flapping}"
    return AgentOutput(agent="domain", round=1, query="initial", text=text, sources=[section, flapping],
                       findings=[Finding(text="Any firewall that drops TCP port 179 keeps the BGP session "
                                              "from coming up.",
                                         aspect="cause")])


def outputs() -> dict[str, AgentOutput]:
    return {"log": log_output(), "similarity": similarity_output(), "domain": domain_output()}


class SourceAgents:
    """Answers follow-ups from the real sources: lines/paragraphs sharing the most query words; records every task."""

    def __init__(self, initial: dict[str, AgentOutput] | None = None) -> None:
        self.initial = initial or outputs()
        self.tasks: list[tuple[str, AgentTask]] = []

    def sources(self, agent: str) -> list[str]:
        if agent == "log":
            return [f"{d} {daemon}: {line}" for d in ("router1", "router2") for daemon in ("bgpd", "zebra")
                    for line in log_lines(d, daemon)]
        if agent == "domain":
            return [p.strip() for p in RUNBOOK.read_text().split("\n\n") if p.strip()]
        notes = []
        for folder in sorted(p.parent for p in (REPO / "data" / "sample" / "history").glob("*/ticket.json")):
            ticket = json.loads((folder / "ticket.json").read_text())
            notes.append(f"{ticket['ticket_id']}: {ticket['resolution_note']}")
        return notes

    def ask(self, agent: str, task: AgentTask) -> AgentOutput:
        self.tasks.append((agent, task))
        wanted = set(lexical.content_words(task.query))
        scored = sorted(self.sources(agent), key=lambda s: -len(wanted & set(lexical.words(s))))
        best = [s for s in scored[:3] if wanted & set(lexical.words(s))]
        return AgentOutput(agent=agent, round=task.round, query=task.query, text="\n".join(best), sources=best)

    def gather(self, inc: Incident) -> tuple[list[SimilarTicket], dict[str, AgentOutput]]:
        return [], dict(self.initial)

    def agents(self) -> Agents:
        return Agents(gather=self.gather, ask=self.ask)
