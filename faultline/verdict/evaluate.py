"""Scoring a verdict the ways ASTRA and SADE are scored, and summarising a batch beside both.

`score_verdict`: ASTRA's rubric on the verdict's best label, NIKA's metrics on it read as a v1 and a v2
submission, and fabricated identifiers against all its sources; `summarise` sets a batch beside ASTRA alone and
SADE alone. Details: docs/scoring.md#the-verdict-scored-both-ways.
"""

from __future__ import annotations

from statistics import mean

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from faultline.truth.records import Truth
from faultline.truth.rubric import score_accuracy
from faultline.verdict.records import Verdict
from faultline.verdict.sources import Inputs

EVALUATION_METHOD = "verdict"


class VerdictScore(BaseModel):
    """One verdict, scored."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    is_faulty: bool
    status: str
    labels: list[str]
    truth_labels: list[str] = Field(default_factory=list)
    rule: str
    confidence: float
    accuracy: int = Field(ge=0, le=5)
    accuracy_rule: str
    nika: dict[str, float]
    identifiers: int
    fabricated: list[str]
    family: str | None = None  # the truth's skill family (healthy for a control), as SADE's scores carry it
    scenario: str | None = None
    size: str | None = None
    claims: int
    verified_claims: int
    reference_claims: int
    fix_known: bool
    disagreed: bool
    checks: int = 0  # follow-ups asked of the network (`faultline.verdict.refine`)
    checks_confirmed: int = 0
    first_labels: list[str] | None = None  # round 1 (before the follow-ups), when there were follow-ups
    first_accuracy: int | None = None
    first_rca_f1: float | None = None


def _sources(verdict: Verdict, inputs: Inputs) -> list[str]:
    from faultline.astra.evaluate import analysis_sources
    from faultline.truth.taxonomy import taxonomy

    texts = analysis_sources(inputs.incident, list(inputs.outputs.values()))
    net = inputs.network
    if net is not None:
        texts += [net.summary, *(f"{f.device} {f.kind} {f.evidence} {f.attrs}" for f in net.flags),
                  *(f"{s.tool} {s.args}" for s in net.steps)]
        if net.v1 is not None:
            texts.append(" ".join(net.v1.faulty_devices + net.v1.root_cause_name))
    texts += [f"{c.quote} {c.citation.ref} {c.citation.device or ''} {c.citation.detail}" for c in verdict.claims]
    texts += [probe for k in verdict.checks for probe in k.probes]  # the follow-ups' own probe steps
    texts += [o.note for o in verdict.opinions] + [taxonomy()[lb].summary for lb in verdict.labels if lb in taxonomy()]
    return texts


def _submission(verdict: Verdict, inputs: Inputs):
    from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2
    from faultline.nika.labels import label_info

    if verdict.status == "undetermined":
        return None, None
    anomaly = verdict.status == "fault"
    v1 = SubmissionV1(is_anomaly=anomaly, faulty_devices=verdict.devices, root_cause_name=verdict.labels)
    net = inputs.network
    if verdict.rule.startswith("network") and net is not None and net.v2 is not None:
        return v1, net.v2
    pairs = [RootCause(resource_id=f"node/{d}", fault_type=(label_info(lb).v2 if label_info(lb) else None) or lb)
             for lb in verdict.labels for d in verdict.devices]
    return v1, SubmissionV2(is_anomaly=anomaly, root_causes=pairs)


def score_verdict(verdict: Verdict, inputs: Inputs, truth: Truth) -> VerdictScore:
    """Score one verdict against the truth (rubric, NIKA) and against its own sources (fabrication)."""
    from faultline.astra.identifiers import find_identifiers, untraceable
    from faultline.nika.labels import skill_of
    from faultline.sade.scoring import score_incident

    # the rubric would read a label out of a healthy verdict's words ("the logs named ..."): give it none
    root = {"fault": "", "healthy": "no fault"}.get(verdict.status, verdict.root_cause)
    best = max((score_accuracy(label=lb, category=verdict.category, devices=verdict.devices, root_cause=root,
                               truth=truth) for lb in (verdict.labels or [None])), key=lambda a: a.score)
    v1, v2 = _submission(verdict, inputs)
    family = skill_of(truth.labels[0]) if truth.labels else "healthy"
    nika = score_incident(truth, v1, v2, method=EVALUATION_METHOD, family=family).metrics()
    scenario, size = truth.scenario, truth.size
    found = find_identifiers(verdict.text)
    fabricated = untraceable(found, _sources(verdict, inputs))
    return VerdictScore(
        incident_id=verdict.incident_id, is_faulty=truth.is_faulty, status=verdict.status, labels=verdict.labels,
        truth_labels=list(truth.labels),
        rule=verdict.rule, confidence=verdict.confidence, accuracy=best.score, accuracy_rule=best.rule, nika=nika,
        identifiers=len(found), fabricated=[f"{i.kind}:{i.value}" for i in fabricated], family=family,
        scenario=scenario, size=size,
        claims=len(verdict.claims), verified_claims=sum(c.status == "VERIFIED" for c in verdict.claims),
        reference_claims=sum(c.status == "REFERENCE" for c in verdict.claims), fix_known=verdict.fix_known,
        disagreed=bool(verdict.disagreeing), checks=len(verdict.checks),
        checks_confirmed=sum(k.outcome == "confirmed" for k in verdict.checks))


def score_metrics(score: VerdictScore) -> dict[str, float]:
    """Metric name -> value: the `evaluations` rows of one scored verdict (method ``verdict``)."""
    return {"accuracy": float(score.accuracy), "accuracy_ge3": float(score.accuracy >= 3),
            "accuracy_ge4": float(score.accuracy >= 4), "confidence": score.confidence,
            "identifiers": float(score.identifiers), "fabricated_identifiers": float(len(score.fabricated)),
            "claims": float(score.claims), "verified_claims": float(score.verified_claims),
            "reference_claims": float(score.reference_claims), "fix_known": float(score.fix_known),
            "network_checks": float(score.checks), "network_checks_confirmed": float(score.checks_confirmed),
            **score.nika}


def save_scores(conn: duckdb.DuckDBPyConnection, scores: list[VerdictScore], *, run_id: str | None) -> int:
    """Replace the `evaluations` rows (method ``verdict``) of each scored incident; rows written."""
    import json
    from datetime import datetime, timezone

    now, written = datetime.now(timezone.utc), 0
    for score in scores:
        conn.execute("DELETE FROM evaluations WHERE incident_id = ? AND method = ?",
                     [score.incident_id, EVALUATION_METHOD])
        attributes = json.dumps({"rule": score.rule, "labels": score.truth_labels, "verdict_labels": score.labels,
                                 "accuracy_rule": score.accuracy_rule, "fabricated": score.fabricated,
                                 "family": score.family, "scenario": score.scenario, "size": score.size},
                                sort_keys=True)
        for metric, value in score_metrics(score).items():
            conn.execute("INSERT INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [score.incident_id, EVALUATION_METHOD, metric, float(value), run_id, attributes, now])
            written += 1
    return written


class Summary(BaseModel):
    """A batch of verdicts, with ASTRA alone and SADE alone on the same incidents."""

    model_config = ConfigDict(extra="forbid")

    incidents: int
    faulty: int
    healthy: int
    verdict: dict[str, float | None]
    astra: dict[str, float | None]
    sade: dict[str, float | None]
    rules: dict[str, int]
    disagreements: int
    disagreements_right: int  # of those, verdicts with accuracy >= 3 (faulty) or healthy answered healthy
    refinement: dict[str, float | int | None] = Field(default_factory=dict)  # round 2 against round 1 (paired)


def _share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _mean(values: list[float]) -> float | None:
    return round(mean(values), 4) if values else None


def method_figures(conn: duckdb.DuckDBPyConnection, method: str, ids: list[str],
                   faulty: dict[str, bool]) -> dict[str, float | None]:
    """Headline figures of one method on `ids` from `evaluations`: rubric share/mean, RCA F1, detection."""
    rows = conn.execute("SELECT incident_id, metric, value FROM evaluations WHERE method = ? AND incident_id IN "
                        "(SELECT unnest(?))", [method, ids]).fetchall()
    by: dict[str, dict[str, float]] = {}
    for inc, metric, value in rows:
        by.setdefault(inc, {})[metric] = value
    acc = [m["accuracy"] for i, m in by.items() if "accuracy" in m and faulty.get(i)]
    rca = [max(m.get("rca_f1", 0.0), 0.0) for i, m in by.items() if faulty.get(i) and "detection" in m]
    det = [max(m["detection"], 0.0) for m in by.values() if "detection" in m]
    healthy_ok = [m.get("accuracy", 0) >= 5 if "accuracy" in m else m.get("detection", 0) >= 1
                  for i, m in by.items() if faulty.get(i) is False]
    return {"share_accuracy_ge3": _share([a >= 3 for a in acc]), "mean_accuracy": _mean(acc),
            "rca_f1": _mean(rca), "detection": _mean(det), "healthy_answered_healthy": _share(healthy_ok),
            "fabricated_identifiers": sum(m.get("fabricated_identifiers", 0.0) for m in by.values()) if by else None}


def refinement_figures(scores: list[VerdictScore]) -> dict[str, float | int | None]:
    """The network follow-ups, paired: on the verdicts that asked the network again, round 2 minus round 1 in
    rubric accuracy and RCA F1, and how many got better, worse or stayed."""
    asked = [s for s in scores if s.checks and s.first_accuracy is not None]
    acc = [s.accuracy - s.first_accuracy for s in asked]
    rca = [s.nika["rca_f1"] - s.first_rca_f1 for s in asked if "rca_f1" in s.nika and s.first_rca_f1 is not None]
    changed = [s for s in asked if s.first_labels != s.labels]
    return {"verdicts_checked": len(asked), "checks": sum(s.checks for s in scores),
            "checks_confirmed": sum(s.checks_confirmed for s in scores), "answers_changed": len(changed),
            "mean_accuracy_delta": _mean(acc), "mean_rca_f1_delta": _mean(rca),
            "rca_f1_better": sum(d > 0 for d in rca), "rca_f1_worse": sum(d < 0 for d in rca),
            "rca_f1_same": sum(d == 0 for d in rca)}


def summarise(conn: duckdb.DuckDBPyConnection, scores: list[VerdictScore]) -> Summary:
    """The batch's figures for the verdict, ASTRA alone (method astra) and SADE alone (method sade)."""
    ids = [s.incident_id for s in scores]
    faulty = {s.incident_id: s.is_faulty for s in scores}
    rules: dict[str, int] = {}
    for s in scores:
        rules[s.rule] = rules.get(s.rule, 0) + 1
    verdict = method_figures(conn, EVALUATION_METHOD, ids, faulty)
    verdict["fix_known"] = _share([s.fix_known for s in scores if s.is_faulty])
    verdict["mean_confidence"] = _mean([s.confidence for s in scores])
    verdict["verified_claims_per_verdict"] = _mean([float(s.verified_claims) for s in scores])
    right = [s for s in scores if s.disagreed and (s.accuracy >= 3 if s.is_faulty else s.accuracy >= 5)]
    return Summary(incidents=len(scores), faulty=sum(faulty.values()), healthy=len(scores) - sum(faulty.values()),
                   verdict=verdict, astra=method_figures(conn, "astra", ids, faulty),
                   sade=method_figures(conn, "sade", ids, faulty), rules=rules,
                   disagreements=sum(s.disagreed for s in scores), disagreements_right=len(right),
                   refinement=refinement_figures(scores))
