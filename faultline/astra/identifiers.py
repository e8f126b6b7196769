"""Technical identifiers in free text, and whether a text's identifiers are traceable to its sources.

`find_identifiers` finds IP addresses, MACs, interfaces, lab devices, host names, taxonomy labels, FRR codes, AS
numbers and ticket ids, with their kind; `untraceable` lists those in none of the sources (the judge's grounding,
the evaluation's fabricated identifiers). Matching rules: docs/astra.md#identifiers.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

IdentifierKind = Literal["ip", "mac", "interface", "device", "hostname", "label", "frr_code", "asn", "ticket"]

# First word of the lab's device names (router1, core_router_2, web_server_1_3, super_spine_0,
# host_1_1_2_1, dns_pod0, load_balancer, ...). A token counts as a device only if it starts with one
# of these and carries a digit or an underscore, so the plain words "host" or "dns" are not devices.
DEVICE_WORDS: tuple[str, ...] = (
    "router", "pc", "host", "spine", "super", "leaf", "core", "dist", "access", "web", "webserver", "backend",
    "dns", "dhcp", "load", "lb", "gateway", "ext", "switch", "server", "client", "attacker", "node", "firewall",
)

_PATTERNS: tuple[tuple[IdentifierKind, str], ...] = (
    ("mac", r"(?<![\w:])(?:[0-9a-f]{2}:){5}[0-9a-f]{2}(?![\w:])"),
    ("ip", r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?![\w]|\.\d)"),
    ("frr_code", r"\bEC_[A-Z0-9_]+\b|\bEC \d{6,}\b|(?<=\[)[A-Z0-9]{5}-[A-Z0-9]{5}(?=\])"),
    ("ticket", r"(?<![\w-])[A-Z][A-Z0-9]+-\d+(?![\w-])"),
    ("asn", r"\bAS ?\d{2,10}\b"),
    ("interface", (r"\b(?:eth|ens|enp|veth|bond|vlan|wlan|ifb|GigabitEthernet|TenGigE|HundredGigE|FastEthernet"
                   r"|Ethernet|Bundle-Ether|MgmtEth|Loopback|Gi|Te|Hu)\d[\w/.:]*(?<![.:/])")),
    ("hostname", r"\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:local|pod\d+)\b"),
)


@dataclass(frozen=True)
class Identifier:
    """One identifier found in a text: its kind and its text as written."""

    kind: IdentifierKind
    value: str


_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _label_set() -> frozenset[str]:
    from faultline.truth.taxonomy import nika_labels

    return frozenset(label.lower() for label in nika_labels())


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[IdentifierKind, re.Pattern[str]], ...]:
    flags = {"frr_code": 0, "ticket": 0, "asn": 0}
    compiled = [(kind, re.compile(p, flags.get(kind, re.IGNORECASE))) for kind, p in _PATTERNS]
    # every label is one word, so a label is a whole word found in the label set (one alternation of all
    # the labels was half the time of this function on a log excerpt)
    compiled.append(("label", _WORD))
    words = "|".join(DEVICE_WORDS)
    # one character per repetition: nested `+` inside `*` tries every split of a long digit run
    compiled.append(("device", re.compile(rf"\b(?:{words})(?:[_-]?[a-z0-9])*\b", re.IGNORECASE)))
    return tuple(compiled)


def find_identifiers(text: str) -> list[Identifier]:
    """Every distinct identifier in ``text``, in order of first appearance (each span claimed once)."""
    starts: list[int] = []  # the spans claimed so far: disjoint, kept sorted
    ends: list[int] = []
    found: list[tuple[int, Identifier]] = []
    seen: set[tuple[str, str]] = set()
    labels = _label_set()
    for kind, pattern in _compiled():
        for match in pattern.finditer(text):
            start, end = match.span()
            value = match.group(0)
            if kind == "label" and value.lower() not in labels:
                continue
            before = bisect.bisect_left(starts, end) - 1  # the claimed span starting last before `end`
            if before >= 0 and ends[before] > start:
                continue  # already part of a more specific identifier (an IP inside a hostname, a label)
            if kind == "device" and not re.search(r"[\d_]", value):
                continue  # "host", "server": ordinary words
            starts.insert(before + 1, start)
            ends.insert(before + 1, end)
            key = (kind, value.lower())
            if key not in seen:
                seen.add(key)
                found.append((start, Identifier(kind, value)))
    return [ident for _, ident in sorted(found, key=lambda pair: pair[0])]


def _presence_pattern(value: str) -> re.Pattern[str]:
    """Where ``value`` counts as present: not glued to more word characters (or more IP octets)."""
    return re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", re.IGNORECASE)


def untraceable(identifiers: Iterable[Identifier], sources: Iterable[str]) -> list[Identifier]:
    """The identifiers that appear in none of ``sources``.

    An IP written with a prefix (``10.1.1.0/24``) is also traceable through its bare address, and a
    bare address through any prefix written after it in a source.
    """
    corpus = "\n".join(s for s in sources if s)
    missing: list[Identifier] = []
    for ident in identifiers:
        candidates = [ident.value]
        if ident.kind == "ip" and "/" in ident.value:
            candidates.append(ident.value.split("/", 1)[0])
        if not any(_presence_pattern(c).search(corpus) for c in candidates):
            missing.append(ident)
    return missing
