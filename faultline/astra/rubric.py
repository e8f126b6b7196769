"""ASTRA's 0-5 accuracy rubric, computed from the fault taxonomy instead of asked of a judge.

The paper's evaluation judge scores a report's accuracy against the engineers' ground truth
(5 same mechanism ... 3 same fault area ... 1 different domain ... 0 unrelated). On lab incidents the
truth is a NIKA label set with devices, so the same ladder is computed from data
(`rubric.yml`: every label's family and domain; the NIKA category comes from the catalogue).

The exact rule, for a faulty incident (best over the truth's labels when several faults were injected):

* 5 - the report's label is a true label and its devices are right: it names at least one truth
  device and no device outside the truth.
* 4 - a true label, devices wrong or missing.
* 3 - same family as a true label (e.g. ``bgp_asn_misconfig`` for ``bgp_acl_block``), or same domain
  *and* same NIKA category (e.g. ``ospf_neighbor_missing`` for ``bgp_missing_route_advertisement``).
* 2 - same domain only (e.g. ``frr_service_down`` for ``ospf_area_misconfiguration``).
* 1 - a different domain, or a root cause that names nothing in the taxonomy.
* 0 - no root cause: no label, no category and an empty or "undetermined" root-cause text.

The report's label is its ``label`` field, else the first taxonomy label written in its root cause.
A report with a category but no label scores by the category: a NIKA category equal to a true one
scores 3, a family 3 (same family) or 2 (same domain), a domain name 2; anything else 1.

A healthy control scores 5 when the report names no fault (no label, and no category or a no-fault
category such as ``no_fault``) and 1 when it names one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

RUBRIC_FILE = Path(__file__).with_name("rubric.yml")
_UNDETERMINED = re.compile(r"^\W*(?:$|undetermined|not determin|unknown|no root cause|none\W*$)", re.IGNORECASE)


class Truth(BaseModel):
    """The evaluation's view of an incident's ground truth (never shown to the analysis)."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    is_faulty: bool
    labels: list[str] = Field(default_factory=list)
    devices: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Taxonomy:
    """Label -> family, family -> domain, label -> NIKA category, and the no-fault words."""

    families: dict[str, str]
    domains: dict[str, str]
    categories: dict[str, str]
    no_fault: frozenset[str]

    def family_of(self, label: str | None) -> str | None:
        """The rubric family of a taxonomy label (None for an unknown name or an operator event)."""
        return self.families.get(label) if label else None

    def domain_of(self, label: str) -> str | None:
        family = self.families.get(label)
        return self.domains.get(family) if family else None


@lru_cache(maxsize=1)
def taxonomy() -> Taxonomy:
    """The rubric data joined with the NIKA catalogue's categories."""
    from faultline.nika.labels import catalogue

    data = yaml.safe_load(RUBRIC_FILE.read_text())
    return Taxonomy(families=dict(data["labels"]), domains=dict(data["families"]),
                    categories={info.label: info.category for info in catalogue()},
                    no_fault=frozenset(data["no_fault_categories"]))


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
    from faultline.astra.identifiers import taxonomy_labels

    lowered = root_cause.lower()
    hits = [(lowered.find(name), name) for name in taxonomy_labels() if re.search(rf"(?<!\w){name}(?!\w)", lowered)]
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
    """Score one report's identification against the truth with the rule in this module's docstring."""
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
