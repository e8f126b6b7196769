"""NIKA scoring of network diagnoses: detection, localization and RCA (v1), joint root causes (v2).

Exact set matching as NIKA scores it (docs/nika.md#scoring-v1, #scoring-v2), rounded to 4 decimals: a missing
submission scores -1 (0 in means), a healthy control answered healthy scores 1, and a multi-fault incident is
scored over the union of its labels. Edge cases: docs/nika.md#edge-cases; the scales: docs/scoring.md#nikas-metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from faultline.nika.answers import SubmissionV1, SubmissionV2
from faultline.truth.records import Truth

MISSING = -1.0
HEALTHY = "healthy"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetScore(_Closed):
    """Set comparison of a submitted set S with the true set G."""

    tp: float
    precision: float
    recall: float
    f1: float


class IncidentScore(_Closed):
    """Every NIKA metric for one incident and one method, plus the keys it is grouped by."""

    incident_id: str
    method: str  # sade | flat | mcp | astra ...
    submitted: bool
    detection: float
    localization: SetScore
    rca: SetScore
    v2_joint: SetScore | None  # None when the method gave no v2 answer at all
    v2_localization: SetScore | None
    v2_fault_type: SetScore | None
    labels: list[str]  # the truth's labels; [] for a healthy control
    family: str | None = None  # skill family of the truth, when known
    scenario: str | None = None
    size: str | None = None

    def metrics(self) -> dict[str, float]:
        """Flat metric name -> value (the rows of `evaluations`)."""
        out: dict[str, float] = {"submitted": 1.0 if self.submitted else 0.0, "detection": self.detection}
        parts: list[tuple[str, SetScore | None]] = [
            ("loc", self.localization), ("rca", self.rca), ("v2", self.v2_joint),
            ("v2_loc", self.v2_localization), ("v2_type", self.v2_fault_type)]
        for prefix, score in parts:
            if score is None:
                continue
            out.update({f"{prefix}_tp": score.tp, f"{prefix}_precision": score.precision,
                        f"{prefix}_recall": score.recall, f"{prefix}_f1": score.f1})
            if prefix in ("loc", "rca"):
                out[f"{prefix}_accuracy"] = score.recall  # NIKA's "accuracy" is recall
        return out


class ScoreSummary(_Closed):
    """Means over a group of incident scores (-1 counted as 0) and the no-submission rate."""

    group_by: str | None  # None for the overall summary
    group: str | None
    method: str
    n: int
    detection: float
    loc_precision: float
    loc_recall: float
    loc_f1: float
    rca_precision: float
    rca_recall: float
    rca_f1: float
    v2_f1: float | None
    v2_loc_f1: float | None
    v2_type_f1: float | None
    no_submission_rate: float


def _r(x: float) -> float:
    return round(x, 4)


def set_score(submitted: Iterable[Any], truth: Iterable[Any]) -> SetScore:
    """tp, precision, recall and F1 of two sets (duplicates ignored); both empty scores 1 everywhere."""
    s, g = set(submitted), set(truth)
    if not s and not g:
        return SetScore(tp=0, precision=1.0, recall=1.0, f1=1.0)
    tp = len(s & g)
    p = tp / len(s) if s else 0.0
    r = tp / len(g) if g else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return SetScore(tp=tp, precision=_r(p), recall=_r(r), f1=_r(f1))


_ZERO = SetScore(tp=0, precision=0.0, recall=0.0, f1=0.0)
_MISSING_SET = SetScore(tp=MISSING, precision=MISSING, recall=MISSING, f1=MISSING)


def _scored(sub_anomaly: bool, truth_anomaly: bool, s: Iterable[Any], g: Iterable[Any]) -> SetScore:
    if not truth_anomaly and sub_anomaly:
        return _ZERO  # a false alarm on a healthy control scores 0 even when it names nothing
    return set_score(s, g)


def score_incident(truth: Truth, v1: SubmissionV1 | None, v2: SubmissionV2 | None = None, *, method: str,
                   family: str | None = None) -> IncidentScore:
    """Score one incident's submission (v1, and v2 when given) against its truth."""
    keys = {"incident_id": truth.incident_id, "method": method, "labels": sorted(set(truth.labels)),
            "family": family, "scenario": truth.scenario, "size": truth.size}
    if v1 is None:
        return IncidentScore(submitted=False, detection=MISSING, localization=_MISSING_SET, rca=_MISSING_SET,
                             v2_joint=_MISSING_SET, v2_localization=_MISSING_SET, v2_fault_type=_MISSING_SET, **keys)
    joint = v2_loc = v2_type = None
    if v2 is not None:
        sub_pairs = [(rc.resource_id, rc.fault_type) for rc in v2.root_causes]
        true_pairs = [(rc.resource_id, rc.fault_type) for rc in truth.root_causes]
        a, t = v2.is_anomaly, truth.is_faulty
        joint = _scored(a, t, sub_pairs, true_pairs)
        v2_loc = _scored(a, t, [p[0] for p in sub_pairs], [p[0] for p in true_pairs])
        v2_type = _scored(a, t, [p[1] for p in sub_pairs], [p[1] for p in true_pairs])
    return IncidentScore(
        submitted=True, detection=1.0 if v1.is_anomaly == truth.is_faulty else 0.0,
        localization=_scored(v1.is_anomaly, truth.is_faulty, v1.faulty_devices, truth.devices),
        rca=_scored(v1.is_anomaly, truth.is_faulty, v1.root_cause_name, truth.labels),
        v2_joint=joint, v2_localization=v2_loc, v2_fault_type=v2_type, **keys)


def _mean(values: Sequence[float]) -> float:
    return _r(sum(max(v, 0.0) for v in values) / len(values)) if values else 0.0


def summarise(scores: Sequence[IncidentScore], *, group_by: str | None = None) -> list[ScoreSummary]:
    """Summaries per method (and per group when `group_by` is label | family | scenario | size).

    By label, a multi-fault incident counts in each of its labels' groups; healthy controls form the
    group "healthy". Groups come back sorted by method, then group name.
    """
    key = _GROUPERS.get(group_by or "") if group_by else (lambda s: [None])
    if key is None:
        raise ValueError(f"unknown grouping {group_by!r}; one of {', '.join(sorted(_GROUPERS))}")
    buckets: dict[tuple[str, str | None], list[IncidentScore]] = {}
    for score in scores:
        for group in key(score):
            buckets.setdefault((score.method, group), []).append(score)
    out = []
    for (method, group), members in sorted(buckets.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        out.append(_summary(members, method=method, group_by=group_by, group=group))
    return out


def _summary(members: list[IncidentScore], *, method: str, group_by: str | None, group: str | None) -> ScoreSummary:
    def col(get: Callable[[IncidentScore], SetScore | None], field: str) -> float | None:
        values = [getattr(s, field) for m in members if (s := get(m)) is not None]
        return _mean(values) if values else None

    return ScoreSummary(
        group_by=group_by, group=group, method=method, n=len(members),
        detection=_mean([m.detection for m in members]),
        loc_precision=col(lambda m: m.localization, "precision") or 0.0,
        loc_recall=col(lambda m: m.localization, "recall") or 0.0,
        loc_f1=col(lambda m: m.localization, "f1") or 0.0,
        rca_precision=col(lambda m: m.rca, "precision") or 0.0,
        rca_recall=col(lambda m: m.rca, "recall") or 0.0,
        rca_f1=col(lambda m: m.rca, "f1") or 0.0,
        v2_f1=col(lambda m: m.v2_joint, "f1"), v2_loc_f1=col(lambda m: m.v2_localization, "f1"),
        v2_type_f1=col(lambda m: m.v2_fault_type, "f1"),
        no_submission_rate=_r(sum(1 for m in members if not m.submitted) / len(members)),
    )


_GROUPERS: dict[str, Callable[[IncidentScore], list[str | None]]] = {
    "label": lambda s: list(s.labels) or [HEALTHY],
    "family": lambda s: [s.family or (HEALTHY if not s.labels else None)],
    "scenario": lambda s: [s.scenario],
    "size": lambda s: [s.size],
}
