"""Weighing the sources: the rule table of `rules.yml` applied to the sources' opinions.

The first rule whose condition holds decides the verdict's labels and devices and its base confidence; every
other source then raises or lowers the confidence by the table's `adjust` amounts (agreeing: it names one of the
verdict's labels, or a label of the same family for a share of the amount; disagreeing: it names a fault of
another family). The conditions are the named functions in `CONDITIONS`; `rules.yml` says what each means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from faultline.verdict.records import Opinion, SourceName

RULES_FILE = Path(__file__).with_name("rules.yml")


@dataclass(frozen=True)
class Rule:
    """One row of the rule table."""

    id: str
    when: str
    decide: str  # network | logs | history | docs | healthy | none
    confidence: float
    why: str


@dataclass(frozen=True)
class Table:
    """The rule table and its confidence adjustments."""

    rules: tuple[Rule, ...]
    agree: dict[str, float]
    disagree: dict[str, float]
    family_agree: float
    low: float
    high: float


@dataclass(frozen=True)
class Decision:
    """What the rule table decided."""

    rule: Rule
    labels: list[str]
    devices: list[str]
    confidence: float
    agreeing: list[SourceName]
    disagreeing: list[SourceName]
    winner: Opinion | None


@lru_cache(maxsize=1)
def table() -> Table:
    """The rule table as written in `rules.yml`."""
    data = yaml.safe_load(RULES_FILE.read_text())
    rules = tuple(Rule(r["id"], r["when"], r["decide"], float(r["confidence"]), " ".join(r["why"].split()))
                  for r in data["rules"])
    unknown = {r.when for r in rules} - set(CONDITIONS)
    if unknown:
        raise ValueError(f"{RULES_FILE}: unknown conditions {sorted(unknown)}; known: {sorted(CONDITIONS)}")
    adjust = data["adjust"]
    return Table(rules, dict(adjust["agree"]), dict(adjust["disagree"]), float(adjust["family_agree"]),
                 float(adjust["min"]), float(adjust["max"]))


def _by(opinions: list[Opinion]) -> dict[str, Opinion]:
    return {o.source: o for o in opinions}


def _names_fault(o: Opinion | None) -> bool:
    return o is not None and bool(o.labels)


CONDITIONS: dict[str, Callable[[dict[str, Opinion]], bool]] = {
    "network_fault_strong": lambda s: _names_fault(s.get("network")) and s["network"].strength == "strong",
    "network_fault_weak": lambda s: _names_fault(s.get("network")),
    "network_healthy": lambda s: s.get("network") is not None and s["network"].healthy,
    "logs_fault": lambda s: _names_fault(s.get("logs")),
    "history_fault": lambda s: _names_fault(s.get("history")),
    "docs_fault": lambda s: _names_fault(s.get("docs")),
    "always": lambda s: True,
}


def relation(opinion: Opinion, labels: list[str], healthy: bool) -> str:
    """How one source's opinion stands to the verdict: agree, family, disagree or silent."""
    if healthy:
        return "agree" if opinion.healthy else ("disagree" if opinion.labels else "silent")
    if not opinion.labels:
        return "disagree" if opinion.healthy else "silent"
    if set(opinion.labels) & set(labels):
        return "agree"
    from faultline.truth.taxonomy import taxonomy

    families = {taxonomy().family_of(lb) for lb in labels} - {None}
    return "family" if {taxonomy().family_of(lb) for lb in opinion.labels} & families else "disagree"


def decide(opinions: list[Opinion]) -> Decision:
    """Apply the rule table to the opinions."""
    t = table()
    sources = _by(opinions)
    rule = next(r for r in t.rules if CONDITIONS[r.when](sources))
    winner = sources.get(rule.decide)
    labels = list(winner.labels) if winner else []
    devices = list(winner.devices) if winner else []
    healthy = rule.decide == "healthy"
    confidence, agreeing, disagreeing = rule.confidence, [], []
    if labels or healthy:
        for o in opinions:
            if o is winner or (healthy and o.source == "network"):
                continue
            how = relation(o, labels, healthy)
            if how in ("agree", "family"):
                agreeing.append(o.source)
                confidence += t.agree.get(o.source, 0.0) * (1.0 if how == "agree" else t.family_agree)
            elif how == "disagree":
                disagreeing.append(o.source)
                confidence += t.disagree.get(o.source, 0.0)
        confidence = min(max(confidence, t.low), t.high)
    if healthy:
        agreeing.insert(0, "network")
    elif winner is not None:
        agreeing.insert(0, winner.source)
    return Decision(rule, labels, devices, round(confidence, 3), agreeing, disagreeing, winner)
