"""The one root-cause taxonomy: every NIKA fault label with its category, summary and log signals (`taxonomy.yml`),
every event class of the vendor event catalogue (`faultline/events`), and the rubric's families and domains.

    tax = taxonomy()
    tax["bgp_acl_block"].summary, "link_down" in tax, tax.family_of("bgp_acl_block"), tax.domain_of("link_down")
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml

from faultline.events.catalogue import Flap  # one count rule for the taxonomy's labels and the catalogue's classes

TAXONOMY_FILE = Path(__file__).with_name("taxonomy.yml")
RUBRIC_FILE = Path(__file__).with_name("rubric.yml")


@dataclass(frozen=True)
class Signal:
    """A regex over raw log lines and how specific it is (0-1).

    ``context``: the line only counts if the same device's logs also have a line matching it; ``final``: only the
    last line of its file counts (a daemon that exited and never came back).
    """

    pattern: re.Pattern[str]
    weight: float
    context: re.Pattern[str] | None = None
    final: bool = False


@dataclass(frozen=True)
class Volume:
    """A volume rule: one device's ``file`` (name without .gz) holds >= ``min_lines`` and >= ``ratio`` x its
    peers' median."""

    file: str
    ratio: float
    min_lines: int
    weight: float


Kind = Literal["fault", "event"]


@dataclass(frozen=True)
class Label:
    """One taxonomy entry: a NIKA fault label or an operator/physical event, with its category and log rules.

    ``event_types``: for an event, the names benchmarks' ground truth uses for it (``bgp_clear``, ...).
    """

    label: str
    category: str
    summary: str
    signals: tuple[Signal, ...]
    volumes: tuple[Volume, ...] = ()
    kind: Kind = "fault"
    event_types: tuple[str, ...] = ()
    flaps: tuple[Flap, ...] = ()
    explains: tuple[str, ...] = ()  # entries whose lines echo this one elsewhere (see the taxonomy file)
    consequence: bool = False  # an event that only shows some other cause's effect: evidence, never the label
    role: str = "fault"  # an event's catalogue role: root, symptom, echo, recovery or context


@dataclass(frozen=True)
class Taxonomy(Mapping[str, Label]):
    """Every entry by name (a read-only mapping), plus the rubric's vocabulary: NIKA label -> family, family ->
    domain, NIKA label -> NIKA category (from the catalogue) and the words that mean "no fault"."""

    entries: dict[str, Label]
    families: dict[str, str]
    domains: dict[str, str]
    categories: dict[str, str]
    no_fault: frozenset[str]

    def __getitem__(self, name: str) -> Label:
        return self.entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __hash__(self) -> int:
        return id(self)

    def family_of(self, label: str | None) -> str | None:
        """The rubric family of a NIKA label or an event class (None for an unknown name)."""
        return self.families.get(label) if label else None  # events: their catalogue class's family

    def domain_of(self, label: str) -> str | None:
        """The rubric domain of a NIKA label or an event class (None for an unknown name)."""
        family = self.families.get(label)
        return self.domains.get(family) if family else None


def _entry(name: str, category: str, spec: dict, kind: Kind) -> Label:
    signals = tuple(Signal(re.compile(s["re"], re.IGNORECASE), float(s["weight"]),
                           re.compile(s["context"], re.IGNORECASE) if s.get("context") else None,
                           bool(s.get("final")))
                    for s in spec.get("signals") or [])
    volumes = tuple(Volume(v["file"], float(v["ratio"]), int(v["min_lines"]), float(v["weight"]))
                    for v in spec.get("volume") or [])
    flaps = tuple(Flap(re.compile(f["re"], re.IGNORECASE), int(f["min_changes"]), float(f["window_s"]),
                       float(f["weight"]))
                  for f in spec.get("flap") or [])
    return Label(name, category, spec.get("summary", ""), signals, volumes, kind,
                 tuple(spec.get("event_types") or ()), flaps, tuple(spec.get("explains") or ()),
                 bool(spec.get("consequence")))


def _event_entries() -> dict[str, Label]:
    """The vendor event catalogue's classes as entries: every platform's messages for a class are its signals
    (recovery and context classes have none: an interface coming up or a login is never a cause)."""
    from faultline.events.catalogue import catalogue

    cat = catalogue()
    out: dict[str, Label] = {}
    for cls in cat.classes.values():
        scoring = cls.role in ("root", "symptom", "echo")
        signals = tuple(Signal(m.pattern, m.weight if m.weight is not None else cls.weight)
                        for m in cat.messages_of(cls.name)) if scoring else ()
        out[cls.name] = Label(cls.name, cls.category, cls.summary, signals, (), "event", cls.event_types, cls.flaps,
                              cls.explains, cls.role == "echo", cls.role)
    return out


def _entries() -> dict[str, Label]:
    data = yaml.safe_load(TAXONOMY_FILE.read_text(encoding="utf-8"))
    labels: dict[str, Label] = {}
    for category, body in data["categories"].items():
        for name, spec in body["labels"].items():
            labels[name] = _entry(name, category, spec, "fault")
    for name, entry in _event_entries().items():
        if name in labels:
            raise ValueError(f"faultline/events/classes.yml: event class {name!r} has the name of a fault label")
        labels[name] = entry
    return labels


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    """The taxonomy: NIKA's fault labels, then the operator/physical events, with the rubric's vocabulary."""
    from faultline.nika.labels import catalogue

    rubric = yaml.safe_load(RUBRIC_FILE.read_text(encoding="utf-8"))
    entries = _entries()
    families = dict(rubric["labels"]) | _event_families(rubric)
    return Taxonomy(entries=entries, families=families, domains=dict(rubric["families"]),
                    categories={info.label: info.category for info in catalogue()},
                    no_fault=frozenset(rubric["no_fault_categories"]))


def _event_families(rubric: dict) -> dict[str, str]:
    from faultline.events.catalogue import catalogue

    found = {c.name: c.family for c in catalogue().classes.values()}
    unknown = sorted({f for f in found.values() if f not in rubric["families"]})
    if unknown:
        raise ValueError(f"faultline/events/classes.yml names families {unknown} that {RUBRIC_FILE.name} lacks")
    return found


@lru_cache(maxsize=1)
def nika_labels() -> tuple[str, ...]:
    """Every NIKA v1 label of the catalogue, longest first (so a longer label wins over a prefix)."""
    from faultline.nika.labels import catalogue

    return tuple(sorted((info.label for info in catalogue()), key=len, reverse=True))


def faults() -> dict[str, Label]:
    """The NIKA fault labels only (what the rubric scores)."""
    return {name: info for name, info in taxonomy().items() if info.kind == "fault"}


def events() -> dict[str, Label]:
    """The operator/physical events only."""
    return {name: info for name, info in taxonomy().items() if info.kind == "event"}


def is_event(label: str) -> bool:
    """True when ``label`` names an operator/physical event of the taxonomy (not a NIKA fault label)."""
    info = taxonomy().get(label)
    return info is not None and info.kind == "event"


def event_for_type(event_type: str) -> Label | None:
    """The event a benchmark's ``event_type`` (e.g. ``bgp_clear``, ``pull_fiber_remote``) names, else None."""
    wanted = event_type.strip().lower()
    return next((info for info in events().values() if wanted in info.event_types), None)


def categories() -> list[str]:
    """The taxonomy's categories in file order."""
    return list(dict.fromkeys(label.category for label in taxonomy().values()))
