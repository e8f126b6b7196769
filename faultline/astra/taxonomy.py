"""The fixed root-cause taxonomy (`prompts/astra/taxonomy.yml`) and matching log lines against its signals."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

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
class Label:
    """One taxonomy label: its category, summary, log signals and volume rules."""

    label: str
    category: str
    summary: str
    signals: tuple[Signal, ...]
    volumes: tuple[Volume, ...] = ()


@lru_cache(maxsize=1)
def taxonomy() -> dict[str, Label]:
    """Every label of the taxonomy file by name."""
    data = yaml.safe_load((prompts_dir() / TAXONOMY_FILE).read_text(encoding="utf-8"))
    labels: dict[str, Label] = {}
    for category, body in data["categories"].items():
        for name, spec in body["labels"].items():
            signals = tuple(Signal(re.compile(s["re"], re.IGNORECASE), float(s["weight"]),
                                   re.compile(s["context"], re.IGNORECASE) if s.get("context") else None,
                                   bool(s.get("final")))
                            for s in spec.get("signals") or [])
            volumes = tuple(Volume(v["file"], float(v["ratio"]), int(v["min_lines"]), float(v["weight"]))
                            for v in spec.get("volume") or [])
            labels[name] = Label(name, category, spec.get("summary", ""), signals, volumes)
    return labels


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
    """Score labels by the distinct signals their lines match (each signal counts once); plus the matches."""
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
    """The highest-scoring label at or above ``MIN_LABEL_SCORE`` (ties: name order), else None."""
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[0][0] if ranked and ranked[0][1] >= MIN_LABEL_SCORE else None


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
    docs = {name: _terms(f"{name} {info.summary}") for name, info in taxonomy().items()
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
