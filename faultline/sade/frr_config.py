"""An FRR running configuration as statements in sections, and the difference between two of them.

`show running-config` is a list of top-level statements (`ip route ...`, `hostname ...`) and blocks (`router bgp
2`, `interface eth0`, `router ospf`) whose indented statements belong to them, with nested blocks (`address-family
ipv4 unicast` inside `router bgp`). `statements` reads it into (section, statement) pairs; `diff` pairs what was
removed with what was added (a statement whose words differ in one place changed, as `neighbor 10.0.0.0 remote-as
1` -> `remote-as 9`; a block renamed the same way, as `router bgp 2` -> `router bgp 602`, changed its header, and
its statements are compared under the new name). `topic` names what a statement configures, for the checks that
interpret a change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SKIP = re.compile(r"^(Building configuration|Current configuration|frr version|frr defaults|end$|!)")
_CLOSE = {"exit", "exit-address-family", "exit-vrf", "exit-vni", "!"}

# what a statement configures, by its section and its words: (section pattern, statement pattern, topic)
TOPICS: tuple[tuple[str, str, str], ...] = (
    (r"^router bgp", r"^router bgp\b", "bgp_as"),
    (r"^router bgp", r"^neighbor \S+ remote-as\b", "bgp_neighbor_as"),
    (r"^router bgp", r"^neighbor \S+ shutdown\b", "bgp_neighbor_shutdown"),
    (r"^router bgp", r"^neighbor \S+ (prefix-list|route-map|filter-list|distribute-list) \S+ out\b",
     "bgp_export_policy"),
    (r"^router bgp", r"^redistribute \S+", "bgp_redistribute"),
    (r"^router bgp", r"^neighbor \S+", "bgp_neighbor"),
    (r"^router bgp", r"^network \S+", "bgp_network"),
    (r"^router ospf", r"^router ospf\b", "ospf_instance"),
    (r"^router ospf", r"^network \S+ area \S+", "ospf_network"),
    (r"^router ospf", r"^passive-interface\b", "ospf_passive"),
    (r"^interface", r"^ip ospf passive\b", "ospf_passive"),
    (r"^interface", r"^ip ospf area\b", "ospf_area"),
    (r"^interface", r"^ip ospf (hello|dead)-interval\b", "ospf_timers"),
    (r"^interface", r"^ip ospf cost\b", "ospf_cost"),
    (r"^interface", r"^ip ospf network\b", "ospf_network_type"),
    (r"^router rip", r"^network \S+", "rip_network"),
    (r"^router rip", r"^passive-interface\b", "rip_passive"),
    (r"^$", r"^(ip prefix-list|route-map|bgp as-path access-list|access-list)\b", "routing_policy"),
    (r"^route-map", r".", "routing_policy"),
    (r"^$", r"^ip route \S+ (Null0|blackhole|reject)\b", "static_blackhole"),
    (r"^$", r"^ip route \S+", "static_route"),
)


@dataclass(frozen=True)
class Statement:
    """One configuration line and the block it sits in ("" at top level; nested blocks joined by " / ")."""

    section: str
    text: str


@dataclass(frozen=True)
class StatementChange:
    """One difference: `before` None = added, `after` None = removed, both = changed in place."""

    section: str
    before: str | None
    after: str | None

    @property
    def change(self) -> str:
        return "added" if self.before is None else "removed" if self.after is None else "changed"

    @property
    def statement(self) -> str:
        return self.after if self.after is not None else self.before  # type: ignore[return-value]

    @property
    def topic(self) -> str:
        return topic(self.section, self.statement)


def topic(section: str, statement: str) -> str:
    """What a statement configures (TOPICS), "config" when it is none of those."""
    for sec, stmt, name in TOPICS:
        if re.search(sec, section) and re.search(stmt, statement):
            return name
    return "config"


def statements(text: str) -> list[Statement]:
    """Every statement of a running configuration with its section (block headers are statements of their own
    block, so a block that appears or goes shows as its header)."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not _SKIP.match(line.strip())]
    out: list[Statement] = []
    stack: list[tuple[int, str]] = []  # (indent, header) of the open blocks
    for i, line in enumerate(lines):
        indent, body = len(line) - len(line.lstrip()), line.strip()
        while stack and indent <= stack[-1][0] and body not in _CLOSE:
            stack.pop()
        if body in _CLOSE:
            if stack:
                stack.pop()
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        opens = bool(nxt) and len(nxt) - len(nxt.lstrip()) > indent and nxt.strip() not in _CLOSE
        if opens:
            stack.append((indent, body))
            out.append(Statement(" / ".join(h for _, h in stack), body))
        else:
            out.append(Statement(" / ".join(h for _, h in stack), body))
    return out


def _one_word_apart(a: str, b: str) -> bool:
    wa, wb = a.split(), b.split()
    return len(wa) == len(wb) and len(wa) > 1 and sum(x != y for x, y in zip(wa, wb)) == 1 and wa[0] == wb[0]


def pair(removed: list[str], added: list[str]) -> list[tuple[str | None, str | None]]:
    """Removed and added lines as (before, after): a removed line and an added one that differ in one word (not
    the first) are one change; the rest stay removals and additions."""
    out: list[tuple[str | None, str | None]] = []
    left = list(added)
    for old in removed:
        new = next((a for a in left if _one_word_apart(old, a)), None)
        if new is not None:
            left.remove(new)
        out.append((old, new))
    return out + [(None, a) for a in left]


def diff(before_text: str, after_text: str) -> list[StatementChange]:
    """The statements changed, added and removed between two running configurations, section by section."""
    before, after = statements(before_text), statements(after_text)
    headers_b = {s.section.split(" / ")[0] for s in before if s.section}
    headers_a = {s.section.split(" / ")[0] for s in after if s.section}
    renamed = {old: new for old, new in pair(sorted(headers_b - headers_a), sorted(headers_a - headers_b))
               if old is not None and new is not None}
    out = [StatementChange(new, old, new) for old, new in renamed.items()]

    def rename(s: Statement) -> Statement:
        top, _, rest = s.section.partition(" / ")
        text = renamed.get(s.text, s.text) if s.text == top else s.text
        return Statement(" / ".join(p for p in (renamed.get(top, top), rest) if p), text)

    before = [rename(s) for s in before]
    sections = list(dict.fromkeys([s.section for s in before] + [s.section for s in after]))
    for section in sections:
        was = [s.text for s in before if s.section == section]
        now = [s.text for s in after if s.section == section]
        gone = [t for t in was if t not in now and t != section.split(" / ")[-1]]
        new = [t for t in now if t not in was and t != section.split(" / ")[-1]]
        headers_new = section not in {s.section for s in before}
        headers_gone = section not in {s.section for s in after}
        if headers_new:
            new = [section.split(" / ")[-1], *new]
        if headers_gone:
            gone = [section.split(" / ")[-1], *gone]
        out += [StatementChange(section, old, nw) for old, nw in pair(gone, new)]
    return out
