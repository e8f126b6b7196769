"""The fixed root-cause taxonomy (`prompts/astra/taxonomy.yml`) and matching log lines against its signals."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import yaml

from faultline.llm.prompts import prompts_dir

TAXONOMY_FILE = "astra/taxonomy.yml"
MIN_LABEL_SCORE = 0.5  # below this the log evidence names no label (a single weak signal is not enough)


@dataclass(frozen=True)
class Signal:
    """A regex over raw log lines and how specific it is (0-1)."""

    pattern: re.Pattern[str]
    weight: float


@dataclass(frozen=True)
class Label:
    """One taxonomy label: its category, summary and log signals."""

    label: str
    category: str
    summary: str
    signals: tuple[Signal, ...]


@lru_cache(maxsize=1)
def taxonomy() -> dict[str, Label]:
    """Every label of the taxonomy file by name."""
    data = yaml.safe_load((prompts_dir() / TAXONOMY_FILE).read_text(encoding="utf-8"))
    labels: dict[str, Label] = {}
    for category, body in data["categories"].items():
        for name, spec in body["labels"].items():
            signals = tuple(Signal(re.compile(s["re"], re.IGNORECASE), float(s["weight"]))
                            for s in spec.get("signals") or [])
            labels[name] = Label(name, category, spec.get("summary", ""), signals)
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
