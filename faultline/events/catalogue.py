"""The vendor event catalogue: event classes (`classes.yml`) and each platform's messages that mean them
(`vendors/<platform>.yml`), every message citing its source with real samples from it.

    event = match("RP/0/RSP0/CPU0:Jan  1 00:00:00 : ... changed state to Administratively Down")
    event.cls, event.fields.get("iface"), catalogue().classes[event.cls].next_check
The file format: docs/events.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml

CLASSES_FILE = Path(__file__).with_name("classes.yml")
VENDORS_DIR = Path(__file__).with_name("vendors")
Role = Literal["root", "symptom", "echo", "recovery", "context"]
ROLES: tuple[Role, ...] = ("root", "symptom", "echo", "recovery", "context")
GENERIC = "generic"  # vendors/generic.yml: vendor-neutral wording, tried after every platform's own messages
FIELDS = ("iface", "peer", "user", "reason", "process", "neighbor_iface")  # named groups a pattern may capture


@dataclass(frozen=True)
class Check:
    """What an engineer checks next, and where that practice is described."""

    text: str
    source: str


@dataclass(frozen=True)
class Flap:
    """A count rule: >= ``min_changes`` changes of one interface's state on one device within ``window_s`` seconds.

    The changes are lines matching ``pattern`` (its ``iface`` group names the interface: a taxonomy rule), or,
    without one, lines of the classes in ``states`` (class -> "down" or "up"), read by the catalogue, where a
    repeated state counts once (a kernel and a daemon both logging one change).
    """

    pattern: re.Pattern[str] | None
    min_changes: int
    window_s: float
    weight: float
    states: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class EventClass:
    """One class of event, vendor-neutral (see classes.yml's header for the fields)."""

    name: str
    category: str
    family: str
    role: Role
    summary: str
    next_check: Check
    weight: float = 0.5
    explains: tuple[str, ...] = ()
    event_types: tuple[str, ...] = ()
    flaps: tuple[Flap, ...] = ()


@dataclass(frozen=True)
class Source:
    """Where a message's meaning comes from."""

    key: str
    title: str
    url: str


@dataclass(frozen=True)
class Message:
    """A platform's log message that means one event class."""

    platform: str
    cls: str
    pattern: re.Pattern[str]
    source: Source
    meaning: str
    samples: tuple[str, ...]
    id: str = ""  # the vendor's own name for the message (a mnemonic such as LINK-3-UPDOWN), when it has one
    weight: float | None = None  # overrides the class's weight for this message


@dataclass(frozen=True)
class PlatformCheck:
    """The commands that make a class's next check on one platform."""

    commands: tuple[str, ...]
    source: Source


@dataclass(frozen=True)
class Platform:
    """One vendor platform's file: its sources, messages and per-class check commands."""

    key: str
    name: str
    sources: dict[str, Source]
    messages: tuple[Message, ...]
    checks: dict[str, PlatformCheck] = field(default_factory=dict)


@dataclass(frozen=True)
class EventMatch:
    """A log line read as an event: its class, the platform whose message it is, and what the line names."""

    cls: str
    platform: str
    message_id: str
    fields: dict[str, str]
    pattern: str = ""  # the message's regex, as written (the taxonomy's signal for it)

    @property
    def role(self) -> Role:
        return catalogue().classes[self.cls].role


@dataclass(frozen=True)
class Catalogue:
    """Every class and every platform's messages (platforms in file-name order)."""

    classes: dict[str, EventClass]
    platforms: dict[str, Platform]
    messages: tuple[Message, ...]  # every platform's, in the order `match` tries them

    def messages_of(self, cls: str) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.cls == cls)


def _text(value: object) -> str:
    return " ".join(str(value or "").split())


def _classes(path: Path) -> dict[str, EventClass]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    found: dict[str, EventClass] = {}
    for name, spec in data["classes"].items():
        if spec.get("role") not in ROLES:
            raise ValueError(f"{path.name}: class {name!r} has role {spec.get('role')!r}; use one of {ROLES}")
        check = spec.get("next_check") or {}
        if not check.get("text") or not check.get("source"):
            raise ValueError(f"{path.name}: class {name!r} needs next_check.text and next_check.source")
        flaps = tuple(Flap(None, int(f["min_changes"]), float(f["window_s"]), float(f.get("weight", 1.0)),
                           tuple((str(c), str(v)) for c, v in f["states"].items())) for f in spec.get("flap") or [])
        found[name] = EventClass(name, spec["category"], spec["family"], spec["role"], _text(spec["summary"]),
                                 Check(_text(check["text"]), _text(check["source"])),
                                 float(spec.get("weight", 0.5)), tuple(spec.get("explains") or ()),
                                 tuple(spec.get("event_types") or ()), flaps)
    for cls in found.values():
        unknown = [e for e in cls.explains if e not in found] + [c for f in cls.flaps for c, _s in f.states
                                                                 if c not in found]
        if unknown:
            raise ValueError(f"{path.name}: class {cls.name!r} names unknown classes {unknown}")
    return found


def _platform(path: Path, classes: dict[str, EventClass]) -> Platform:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    key = path.stem
    sources = {k: Source(k, _text(v["title"]), str(v["url"])) for k, v in (data.get("sources") or {}).items()}

    def source(ref: str, where: str) -> Source:
        if ref not in sources:
            raise ValueError(f"{path.name}: {where} cites source {ref!r}, not one of {sorted(sources)}")
        return sources[ref]

    messages = []
    for n, spec in enumerate(data.get("messages") or []):
        where = f"message {n + 1} ({spec.get('id') or spec.get('class')})"
        if spec.get("class") not in classes:
            raise ValueError(f"{path.name}: {where} names class {spec.get('class')!r}, not in {CLASSES_FILE.name}")
        try:
            pattern = re.compile(spec["re"], re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"{path.name}: {where}: bad regex: {exc}") from exc
        bad = set(pattern.groupindex) - set(FIELDS)
        if bad:
            raise ValueError(f"{path.name}: {where} captures {sorted(bad)}; named groups must be among {FIELDS}")
        samples = tuple(str(s) for s in spec.get("samples") or ())
        if not samples:
            raise ValueError(f"{path.name}: {where} has no samples; every message carries real ones from its source")
        messages.append(Message(key, spec["class"], pattern, source(spec["source"], where), _text(spec.get("meaning")),
                                samples, str(spec.get("id") or ""),
                                float(spec["weight"]) if spec.get("weight") is not None else None))
    checks = {}
    for cls, spec in (data.get("checks") or {}).items():
        if cls not in classes:
            raise ValueError(f"{path.name}: checks for unknown class {cls!r}")
        checks[cls] = PlatformCheck(tuple(spec["commands"]), source(spec["source"], f"checks.{cls}"))
    return Platform(key, _text(data.get("name") or key), sources, tuple(messages), checks)


@lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    """The catalogue as written in classes.yml and vendors/*.yml."""
    classes = _classes(CLASSES_FILE)
    files = sorted(VENDORS_DIR.glob("*.yml"), key=lambda p: (p.stem == GENERIC, p.stem))  # vendors' own first
    platforms = {p.stem: _platform(p, classes) for p in files}
    return Catalogue(classes, platforms, tuple(m for p in platforms.values() for m in p.messages))


@lru_cache(maxsize=65_536)  # a night reads the same archive lines for many tickets and rounds
def match(text: str) -> EventMatch | None:
    """The event a log line is, by the first message of the catalogue whose pattern it matches; else None."""
    for message in catalogue().messages:
        found = message.pattern.search(text)
        if found:
            fields = {k: v for k, v in found.groupdict().items() if v}
            return EventMatch(message.cls, message.platform, message.id, fields, message.pattern.pattern)
    return None


def next_check(cls: str, platforms: list[str] | tuple[str, ...] = ()) -> tuple[Check, list[tuple[str, PlatformCheck]]]:
    """A class's next check and, for the platforms given (those whose messages the incident's lines are), the
    commands that make it there."""
    cat = catalogue()
    commands = [(p, cat.platforms[p].checks[cls]) for p in dict.fromkeys(platforms)
                if p in cat.platforms and cls in cat.platforms[p].checks]
    return cat.classes[cls].next_check, commands


__all__ = ["Catalogue", "Check", "EventClass", "EventMatch", "Flap", "Message", "Platform", "ROLES", "Source",
           "catalogue", "match", "next_check"]
