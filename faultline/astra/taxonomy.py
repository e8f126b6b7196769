"""The fixed root-cause taxonomy (`prompts/astra/taxonomy.yml`) and matching log lines against its signals.

It holds two kinds of entry: NIKA's fault labels (``kind="fault"``, scored by the rubric) and operator or
physical events (``kind="event"``: a BGP clear, an interface shut, a pulled optic), each mapped to a NIKA
category and to the event-type names benchmarks use (`event_for_type`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import yaml

from faultline.llm.prompts import prompts_dir

TAXONOMY_FILE = "astra/taxonomy.yml"
MIN_LABEL_SCORE = 0.5  # below this the log evidence names no label (a single weak signal is not enough)


@dataclass(frozen=True)
class Signal:
    """A regex over raw log lines and how specific it is (0-1).

    ``context``: when set, a line only counts if the same device's logs also have a line matching it
    (the same ``dnsmasq ... exiting`` means a DNS outage on a resolver, a DHCP outage on a DHCP server).
    ``final``: only the last line of its file counts (a daemon that exited and never came back, as
    opposed to one restarted with a new configuration).
    """

    pattern: re.Pattern[str]
    weight: float
    context: re.Pattern[str] | None = None
    final: bool = False


@dataclass(frozen=True)
class Volume:
    """A volume rule: one device's ``file`` (name without .gz) holds >= ``min_lines`` and >= ``ratio`` x its peers' median."""

    file: str
    ratio: float
    min_lines: int
    weight: float


@dataclass(frozen=True)
class Flap:
    """A count rule: >= ``min_changes`` lines matching ``pattern`` for one interface (its ``iface`` group) of
    one device within ``window_s`` seconds (an interface going down and up again and again)."""

    pattern: re.Pattern[str]
    min_changes: int
    window_s: float
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


@lru_cache(maxsize=1)
def taxonomy() -> dict[str, Label]:
    """Every entry of the taxonomy file by name: NIKA's fault labels, then the operator/physical events."""
    data = yaml.safe_load((prompts_dir() / TAXONOMY_FILE).read_text(encoding="utf-8"))
    labels: dict[str, Label] = {}
    for category, body in data["categories"].items():
        for name, spec in body["labels"].items():
            labels[name] = _entry(name, category, spec, "fault")
    for name, spec in (data.get("events") or {}).items():
        if name in labels:
            raise ValueError(f"{TAXONOMY_FILE}: event {name!r} has the name of a fault label")
        labels[name] = _entry(name, spec["category"], spec, "event")
    return labels


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


@dataclass(frozen=True)
class Match:
    """A log line that matched a label's signal."""

    label: str
    line: str
    weight: float


def match_lines(lines: Iterable[str]) -> tuple[dict[str, float], list[Match]]:
    """Score labels by the distinct signals their lines match (each signal counts once); plus the matches.

    Regex signals only: volume and flap rules need each line's device (`faultline.astra.log_signals`).
    """
    scores: dict[str, float] = {}
    matches: list[Match] = []
    seen: set[tuple[str, str]] = set()
    texts = list(lines)
    for label in taxonomy().values():
        for signal in label.signals:
            hits = [t for t in texts if signal.pattern.search(t)]
            if not hits:
                continue
            key = (label.label, signal.pattern.pattern)
            if key not in seen:
                seen.add(key)
                scores[label.label] = scores.get(label.label, 0.0) + signal.weight
            matches.extend(Match(label.label, t, signal.weight) for t in hits[:3])
    return scores, matches


def best_label(scores: dict[str, float]) -> str | None:
    """The highest-scoring label at or above ``MIN_LABEL_SCORE`` (ties: name order), else None.

    An event marked `consequence` (what another cause looks like from here) is never named.
    An operator/physical event is named only when it scores strictly more than every NIKA fault label:
    the logs of a lab fault often show an event's lines as a consequence (a filter makes hold timers
    expire), and then the fault is the answer.
    """
    def top(kind: Kind) -> tuple[str, float] | None:
        ranked = sorted(((n, s) for n, s in scores.items() if _kind_of(n) == kind and not _consequence(n)),
                        key=lambda kv: (-kv[1], kv[0]))
        return ranked[0] if ranked and ranked[0][1] >= MIN_LABEL_SCORE else None

    fault, event = top("fault"), top("event")
    if event is not None and (fault is None or event[1] > fault[1]):
        return event[0]
    return fault[0] if fault else None


def _consequence(name: str) -> bool:
    info = taxonomy().get(name)
    return bool(info and info.consequence)


def _kind_of(name: str) -> Kind:
    info = taxonomy().get(name)
    return info.kind if info else "fault"


# --- Naming a label from prose (a resolution note): TF-IDF cosine against the labels' descriptions ---

OUT_OF_LAB = "(not in this lab)"
_SUFFIXES = ("ations", "ation", "ing", "ers", "ed", "es", "er", "ly", "s")


def _stem(word: str) -> str:
    """A crude suffix stripper (twice, so ``filtered`` and ``filter`` meet): enough for short operator prose."""
    for _ in range(2):
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
    return word


def _terms(text: str) -> Counter[str]:
    from faultline.astra.lexical import content_words

    return Counter(_stem(w) for w in content_words(text.replace("_", " ")))


@dataclass(frozen=True)
class _LabelIndex:
    idf: dict[str, float]
    vectors: dict[str, dict[str, float]]  # label -> unit TF-IDF vector of its name + summary


def _unit(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    weighted = {t: (1 + math.log(n)) * idf[t] for t, n in counts.items() if t in idf}
    norm = math.sqrt(sum(v * v for v in weighted.values())) or 1.0
    return {t: v / norm for t, v in weighted.items()}


@lru_cache(maxsize=1)
def _label_index() -> _LabelIndex:
    docs = {name: _terms(f"{name} {info.summary}") for name, info in faults().items()
            if OUT_OF_LAB not in info.summary}
    df = Counter(t for counts in docs.values() for t in counts)
    idf = {t: math.log((len(docs) + 1) / (n + 0.5)) for t, n in df.items()}
    return _LabelIndex(idf, {name: _unit(counts, idf) for name, counts in docs.items()})


def classify_text(text: str) -> list[tuple[str, float]]:
    """Labels ranked by how closely ``text`` describes them (cosine in [0, 1]), best first; labels at 0 left out."""
    index = _label_index()
    query = _unit(_terms(text), index.idf)
    scores = [(name, sum(query.get(t, 0.0) * w for t, w in vector.items())) for name, vector in index.vectors.items()]
    return sorted(((n, s) for n, s in scores if s > 0), key=lambda kv: (-kv[1], kv[0]))
