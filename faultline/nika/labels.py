"""NIKA's fault-label catalogue, read from `labels.yml` (see that file's header for every field).

``label_info("bgp_acl_block")`` gives a label's category, v2 id, owning SADE skill and the lab's verdict;
``v2_fault_type("link_high_packet_corruption")`` is ``"link_packet_corruption"``. A small reader over data: it
imports nothing of the lab, so ASTRA, SADE and the marts can name and classify faults without loading an injector.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml

LABELS_FILE = Path(__file__).with_name("labels.yml")

Category = Literal["link_failure", "end_host_failure", "network_node_error", "resource_contention",
                   "misconfiguration", "network_under_attack"]
CATEGORIES: tuple[Category, ...] = ("link_failure", "end_host_failure", "network_node_error", "resource_contention",
                                    "misconfiguration", "network_under_attack")
Feasible = Literal["R", "P", "X"]  # reproducible | partial | needs P4/SDN (docs/nika.md#lab-verdicts)
LabStatus = Literal["implemented", "planned", "unsupported"]


@dataclass(frozen=True)
class LabelInfo:
    """One NIKA v1 label: its category, its v2 id, the SADE skill that owns it, and this lab's verdict."""

    label: str
    category: Category
    v2: str | None  # NIKA v2 fault_type; None when v2 has no id for it
    skill: str | None  # prompts/skills/<skill>/ names the label in its fingerprints; None: no skill does
    feasible: Feasible
    status: LabStatus
    how: str  # how the lab reproduces it, or why it cannot

    @property
    def fault_type(self) -> str:
        """The v2 fault_type written for this label (the v1 label where v2 has none)."""
        return self.v2 or self.label


@lru_cache(maxsize=1)
def _load() -> tuple[LabelInfo, ...]:
    entries = yaml.safe_load(LABELS_FILE.read_text())["labels"]
    infos = []
    for entry in entries:
        info = LabelInfo(label=entry["label"], category=entry["category"], v2=entry["v2"], skill=entry["skill"],
                         feasible=entry["lab"]["feasible"], status=entry["lab"]["status"], how=entry["lab"]["how"])
        if info.category not in CATEGORIES:
            raise ValueError(f"{LABELS_FILE}: {info.label} has unknown category {info.category!r}")
        infos.append(info)
    return tuple(infos)


def catalogue() -> list[LabelInfo]:
    """Every NIKA v1 label (55), in NIKA v1's order."""
    return list(_load())


def label_info(label: str) -> LabelInfo | None:
    """The catalogue entry of `label`, or None for a name NIKA does not have."""
    return _by_label().get(label)


def v2_fault_type(label: str) -> str:
    """NIKA v2's fault_type for a v1 label (the label itself where v2 has none or the name is unknown)."""
    info = label_info(label)
    return info.fault_type if info else label


def category_of(label: str) -> Category | None:
    """The v1 root-cause category of `label`, or None for an unknown name."""
    info = label_info(label)
    return info.category if info else None


def skill_of(label: str) -> str | None:
    """The SADE skill family that owns `label`, or None."""
    info = label_info(label)
    return info.skill if info else None


@lru_cache(maxsize=1)
def _by_label() -> dict[str, LabelInfo]:
    return {info.label: info for info in _load()}
