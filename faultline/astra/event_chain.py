"""Causes before their echoes: the root event the logs show, where it happened, and what it caused on both ends.

A root event (an optic pulled, a port shut, a commit, a crash) explains the link, protocol and BGP/BFD lines it
causes (its class's `explains` in the vendor event catalogue); those on its own device are its echoes there, those
on other devices make them affected peers (the far end). When only the echoes were logged, the chain says which
end's logs are missing and what the lines present do and do not show. The rules: docs/astra.md#the-event-chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from faultline.events.catalogue import catalogue, match, next_check

if TYPE_CHECKING:
    from faultline.astra.log_signals import LogLine
    from faultline.astra.ticket_time import TicketTime
    from faultline.scope.resolve import Scope

ECHO_BEFORE_S = 10  # an echo may be stamped a little before its cause (clocks, buffering)
ECHO_AFTER_S = 300  # a hold timer (up to 180 s) and a cascade settle within this
CONTEXT_BEFORE_S = 1800  # logins and commits this long before a root event are who was on the device
MAX_ECHOES = 8
MAX_LATER = 3


@dataclass(frozen=True)
class ChainEvent:
    """One line of the chain: its class, device, what it names, when, and the line itself."""

    cls: str
    role: str
    device: str | None
    at: str | None  # the line's time on the common clock, ISO seconds
    quote: str
    source_file: str
    line_no: int
    platform: str
    iface: str | None = None
    peer: str | None = None
    reason: str | None = None
    user: str | None = None
    end: str = "same"  # same (the root's device) | far (another device: an affected peer)

    def describe(self) -> str:
        """"leaf3 (far end) Hu0/0/0/1 carrier_down at 2019-09-19 16:52:13" in words."""
        what = self.cls.replace("_", " ")
        on = " ".join(p for p in (self.iface, f"peer {self.peer}" if self.peer else None,
                                  f"({self.reason})" if self.reason else None,
                                  f"by {self.user}" if self.user else None) if p)
        return f"{self.device or '?'}: {what}{' ' + on if on else ''}{' at ' + self.at if self.at else ''}"


@dataclass
class EventChain:
    """The root event (or, when no root was logged, the symptom that stands for it), its echoes and what is missing."""

    label: str
    root: ChainEvent
    echoes: list[ChainEvent] = field(default_factory=list)
    later: list[ChainEvent] = field(default_factory=list)
    context: list[ChainEvent] = field(default_factory=list)
    affected_peers: list[str] = field(default_factory=list)
    missing: str | None = None
    next_check: dict[str, Any] = field(default_factory=dict)

    def as_data(self) -> dict[str, Any]:
        """A JSON-ready dict (stored with the log agent's output, read by the verdict and the pages)."""
        return asdict(self)

    def lines(self) -> list[str]:
        """The chain in words, root first, one line each."""
        role = "Root event" if self.root.role == "root" else "Observed (no root event logged)"
        out = [f"{role}: {self.root.describe()}: \"{self.root.quote}\""]
        for echo in self.echoes:
            where = "far end, affected peer" if echo.end == "far" else "same device"
            out.append(f"-> echo ({where}): {echo.describe()}: \"{echo.quote}\"")
        out += [f"Context: {c.describe()}: \"{c.quote}\"" for c in self.context]
        out += [f"Later (after the ticket was opened, not its cause): {c.describe()}: \"{c.quote}\""
                for c in self.later]
        if self.missing:
            out.append(f"Missing: {self.missing}")
        return out


def _event(line: LogLine, clock: TicketTime, end: str = "same") -> ChainEvent | None:
    found = match(line.text)
    if found is None:
        return None
    at = clock.at(line)
    return ChainEvent(found.cls, found.role, line.device, at.isoformat(sep=" ", timespec="seconds") if at else None,
                      " ".join(line.text.split()), line.source_file, line.line_no, found.platform,
                      found.fields.get("iface"), found.fields.get("peer"), found.fields.get("reason"),
                      found.fields.get("user"), end)


def _explained(label: str) -> set[str]:
    """Every class `label` explains, and what those explain in turn (a shut port -> light lost -> BGP down)."""
    classes = catalogue().classes
    seen: set[str] = set()
    todo = [label]
    while todo:
        for name in classes[todo.pop()].explains:
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _far_ends(scope: Scope, device: str | None) -> list[tuple[str, int | None]]:
    """Devices the scope learned as `device`'s neighbours, with their lines in scope."""
    return [(e.device, e.lines_in_scope) for e in scope.entries
            if e.device and e.device != device and e.kind == "neighbour" and e.matched == device]


def build_chain(label: str, root_lines: Sequence[LogLine], later_lines: Sequence[LogLine],
                lines: Sequence[LogLine], scope: Scope, clock: TicketTime) -> EventChain | None:
    """The chain for the event `label` the analysis named, from its hit's lines (nearest the ticket first)."""
    cls = catalogue().classes.get(label)
    root_line = next(iter(root_lines), None)
    if cls is None or root_line is None:
        return None
    root = _event(root_line, clock)
    if root is None:  # a rate rule (a flap): the line is a state change, the event is the rule's
        root = ChainEvent(label, cls.role, root_line.device, None, " ".join(root_line.text.split()),
                          root_line.source_file, root_line.line_no, "")
    root_at = clock.at(root_line)
    explained = _explained(label)
    echoes: list[ChainEvent] = []
    context: list[ChainEvent] = []
    lo, hi = timedelta(seconds=CONTEXT_BEFORE_S), timedelta(seconds=ECHO_AFTER_S)
    for line in lines:
        if (line.source_file, line.line_no) == (root_line.source_file, root_line.line_no):
            continue
        at = clock.at(line)
        if root_at is not None and at is not None and not root_at - lo <= at <= root_at + hi:
            continue
        event = _event(line, clock)
        if event is None:
            continue
        near = root_at is None or at is None or at >= root_at - timedelta(seconds=ECHO_BEFORE_S)
        if event.cls in explained and near and len(echoes) < MAX_ECHOES:
            end = "same" if line.device == root_line.device else "far"
            if not any(e.device == event.device and e.cls == event.cls and e.iface == event.iface for e in echoes):
                echoes.append(ChainEvent(**{**asdict(event), "end": end}))
        elif event.role == "context" or event.cls == "config_change":
            if line.device == root_line.device and (at is None or root_at is None or at <= root_at):
                context.append(event)
    later = [e for e in (_event(x, clock) for x in later_lines[:MAX_LATER]) if e is not None]
    peers = list(dict.fromkeys(e.device for e in echoes if e.end == "far" and e.device))
    chain = EventChain(label, root, echoes, later, context[-2:], peers)
    chain.missing = _missing(chain, scope, root_line.device)
    check, commands = next_check(label, list(dict.fromkeys(e.platform for e in [root, *echoes] if e.platform)))
    chain.next_check = {"text": check.text, "source": check.source,
                        "commands": [{"platform": p, "commands": list(c.commands), "source": c.source.url}
                                     for p, c in commands]}
    return chain


def _missing(chain: EventChain, scope: Scope, device: str | None) -> str | None:
    """Which end's logs are missing, and what the present end's lines do and do not show."""
    silent = [d for d, n in _far_ends(scope, device) if not n and d not in chain.affected_peers]
    shown = ", ".join(dict.fromkeys(e.cls.replace("_", " ") for e in [chain.root, *chain.echoes]))
    if chain.root.role != "root":
        far = (f"the far end ({', '.join(silent)}) logged nothing in the window" if silent else
               "the far end of the link is not in the logs read (no neighbour of it logged at that time)")
        return (f"no root event was logged: {far}. {device}'s lines show {shown}; they show the link or session "
                "was lost, not why (an optic or fibre pulled, a port shut, or the far end going down)")
    if not chain.affected_peers and silent:
        return (f"the far end ({', '.join(silent)}) logged nothing in the window: what it saw (expect link and "
                f"session loss there) is not shown; {device}'s lines show {shown}")
    return None


__all__ = ["ChainEvent", "EventChain", "build_chain"]
