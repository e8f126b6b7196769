"""ASTRA's 0-5 accuracy rubric, computed from the taxonomy instead of asked of a judge: 5 the right label on the
right devices ... 3 the same family or fault area ... 1 another domain, 0 no root cause (the exact rule:
docs/scoring.md#the-accuracy-rubric). The verdict and the marts score with it too."""

from __future__ import annotations

import re
from dataclasses import dataclass

from faultline.truth.records import Truth
from faultline.truth.taxonomy import Taxonomy, nika_labels, taxonomy

_UNDETERMINED = re.compile(r"^\W*(?:$|undetermined|not determin|unknown|no root cause|none\W*$)", re.IGNORECASE)


@dataclass(frozen=True)
class Accuracy:
    """A rubric score with the rule that produced it (for the record and for debugging a score)."""

    score: int
    rule: str
    label: str | None  # the label the report was judged by (its field or the one found in its text)


def stated_label(label: str | None, root_cause: str) -> str | None:
    """The report's label: its field, else the first taxonomy label written in its root-cause text."""
    if label:
        return label
    lowered = root_cause.lower()
    hits = [(lowered.find(name), name) for name in nika_labels() if re.search(rf"(?<!\w){name}(?!\w)", lowered)]
    return min(hits)[1] if hits else None


def _devices_right(named: list[str], truth: list[str]) -> bool:
    said = {d.lower() for d in named}
    real = {d.lower() for d in truth}
    if not real:
        return True
    return bool(said & real) and said <= real


def _by_label(label: str, devices: list[str], truth: Truth, tax: Taxonomy) -> Accuracy:
    best = Accuracy(1, f"{label}: different domain from {', '.join(truth.labels)}", label)
    for true_label in truth.labels:
        if label == true_label:
            if _devices_right(devices, truth.devices):
                return Accuracy(5, f"right label {label} and right devices", label)
            found = Accuracy(4, f"right label {label}, devices {devices or 'missing'} vs {truth.devices}", label)
        elif tax.families.get(label) is not None and tax.families.get(label) == tax.families.get(true_label):
            found = Accuracy(3, f"{label}: same family ({tax.families[label]}) as {true_label}", label)
        elif tax.domain_of(label) is not None and tax.domain_of(label) == tax.domain_of(true_label):
            if tax.categories.get(label) == tax.categories.get(true_label):
                found = Accuracy(3, f"{label}: same domain and category as {true_label}", label)
            else:
                found = Accuracy(2, f"{label}: same domain ({tax.domain_of(label)}) as {true_label}", label)
        else:
            continue
        if found.score > best.score:
            best = found
    return best


def _by_category(category: str, truth: Truth, tax: Taxonomy) -> Accuracy:
    cat = category.lower()
    if cat in {tax.categories.get(t) for t in truth.labels}:
        return Accuracy(3, f"category {cat} matches the truth's NIKA category", None)
    if cat in tax.domains:  # a family name
        if cat in {tax.families.get(t) for t in truth.labels}:
            return Accuracy(3, f"family {cat} matches", None)
        if tax.domains[cat] in {tax.domain_of(t) for t in truth.labels}:
            return Accuracy(2, f"family {cat} is in the truth's domain", None)
    if cat in {tax.domain_of(t) for t in truth.labels}:
        return Accuracy(2, f"domain {cat} matches", None)
    return Accuracy(1, f"category {cat} does not match {', '.join(truth.labels)}", None)


def score_accuracy(*, label: str | None, category: str | None, devices: list[str], root_cause: str,
                   truth: Truth) -> Accuracy:
    """Score one report's identification against the truth by the rubric (docs/scoring.md#the-accuracy-rubric)."""
    tax = taxonomy()
    named = stated_label(label, root_cause)
    names_fault = named is not None or (category is not None and category.lower() not in tax.no_fault)
    if not truth.is_faulty:
        if names_fault:
            return Accuracy(1, f"healthy control, but the report names a fault ({named or category})", named)
        return Accuracy(5, "healthy control, and the report names no fault", None)
    if named is not None:
        return _by_label(named, devices, truth, tax)
    if category is not None and category.lower() not in tax.no_fault:
        return _by_category(category, truth, tax)
    if _UNDETERMINED.search(root_cause):
        return Accuracy(0, "no root cause stated", None)
    return Accuracy(1, "a root cause is stated but names nothing in the taxonomy", None)
