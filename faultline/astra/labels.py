"""Naming a label: log lines matched against the taxonomy's signals (`match_lines`, `best_label`), and a resolution
note's prose against its summaries (`classify_text`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from faultline.truth.taxonomy import Kind, faults, taxonomy

MIN_LABEL_SCORE = 0.5  # below this the log evidence names no label (a single weak signal is not enough)


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
