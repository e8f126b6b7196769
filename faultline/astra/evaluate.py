"""Scoring a finished ASTRA analysis against what is known: ground truth and the analysis's own sources.

`score_result` gives an `AstraScore` per incident (rubric accuracy, completeness, fabricated identifiers, verified
and reference shares, one `RoundScore` per round); `summarise` aggregates a batch into the benchmark's figures,
and `faultline.astra.eval_store` writes them to ``evaluations``. The metrics: docs/scoring.md#astras-metrics.
"""

from __future__ import annotations

import json
import re
from statistics import mean

from pydantic import BaseModel, ConfigDict, Field

from faultline.astra.identifiers import find_identifiers, untraceable
from faultline.astra.records import AgentOutput, AstraResult, Incident, Report
from faultline.truth.records import Truth
from faultline.truth.rubric import score_accuracy

DIMENSIONS: tuple[str, ...] = ("symptom", "root_cause", "fix", "verification")
_PLACEHOLDER = re.compile(r"^\W*(?:$|n/?a\W*$|none\W*$|tbd|todo|undetermined|unknown\W*$|not determin)", re.IGNORECASE)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoundScore(_Closed):
    """One round's report, scored."""

    round: int
    accuracy: int
    completeness: float
    judge_mean: float | None  # mean of the judge's criteria for this round; None without scores
    identifiers: int
    fabricated: list[str]  # "kind:value" of each untraceable identifier


class AstraScore(_Closed):
    """One incident's ASTRA analysis, scored (the final round is the answer)."""

    incident_id: str
    analyst: str
    is_faulty: bool
    accuracy: int = Field(ge=0, le=5)
    accuracy_rule: str
    label: str | None
    completeness: float
    missing_dimensions: list[str]
    identifiers: int
    fabricated: list[str]
    fabricated_rate: float  # fabricated / identifiers (0 when the report names none)
    claims: int
    verified_claims: int
    verified_share: float | None  # verified / incident claims; None when no claim is about this incident
    reference_claims: int = 0  # documentation and similar-ticket claims
    incident_claims: int = 0  # claims about this incident: VERIFIED + UNVERIFIED
    reference_share: float | None = None  # reference / all claims; None when there are no claims
    rounds: list[RoundScore]
    accuracy_delta: int  # last round minus first
    judge_delta: float | None
    elapsed_s: float


def missing_dimensions(report: Report) -> list[str]:
    """The report dimensions that are blank or a placeholder."""
    return [name for name in DIMENSIONS if _PLACEHOLDER.match(getattr(report, name) or "")]


def analysis_sources(incident: Incident, outputs: list[AgentOutput], *, up_to_round: int | None = None) -> list[str]:
    """Every text the analysis saw: the ticket and the agent outputs (of rounds <= `up_to_round`)."""
    texts = [incident.incident_id, incident.ticket_id or "", incident.title, incident.description,
             incident.environment, " ".join(incident.components)]
    for out in outputs:
        if up_to_round is not None and out.round > up_to_round:
            continue
        texts += [out.query, out.text, out.label or "", out.category or "", " ".join(out.devices),
                  json.dumps(out.data, default=str, ensure_ascii=False)]
        for finding in out.findings:
            texts += [finding.text, *finding.quotes]
    return texts


def fabricated_identifiers(report_text: str, sources: list[str]) -> tuple[int, list[str]]:
    """(identifiers in the report, the untraceable ones as "kind:value")."""
    found = find_identifiers(report_text)
    return len(found), [f"{i.kind}:{i.value}" for i in untraceable(found, sources)]


def _round_score(result: AstraResult, incident: Incident, truth: Truth, index: int) -> RoundScore:
    rnd = result.rounds[index]
    report = rnd.report
    acc = score_accuracy(label=report.label, category=report.category, devices=report.devices,
                         root_cause=report.root_cause, truth=truth)
    n_ids, fabricated = fabricated_identifiers(report.text, analysis_sources(incident, result.outputs,
                                                                             up_to_round=rnd.round))
    judge = mean(s.score for s in rnd.scores) if rnd.scores else None
    return RoundScore(round=rnd.round, accuracy=acc.score,
                      completeness=1 - len(missing_dimensions(report)) / len(DIMENSIONS),
                      judge_mean=judge, identifiers=n_ids, fabricated=fabricated)


def claim_statuses(result: AstraResult) -> dict[str, str]:
    """Claim id -> its status: VERIFIED if any evidence row is, else REFERENCE if any is, else UNVERIFIED."""
    rows: dict[str, set[str]] = {}
    for e in result.evidence:
        rows.setdefault(e.claim_id, set()).add(e.status)
    best = {}
    for claim in result.claims:
        found = rows.get(claim.claim_id, set())
        best[claim.claim_id] = next((s for s in ("VERIFIED", "REFERENCE") if s in found), "UNVERIFIED")
    return best


def score_result(result: AstraResult, incident: Incident, truth: Truth) -> AstraScore:
    """Score one analysis (its last round is the answer) against the truth and its own sources."""
    if not result.rounds:
        raise ValueError(f"analysis of {result.incident_id} has no rounds to score")
    rounds = [_round_score(result, incident, truth, i) for i in range(len(result.rounds))]
    final = result.rounds[-1].report
    acc = score_accuracy(label=final.label, category=final.category, devices=final.devices,
                         root_cause=final.root_cause, truth=truth)
    statuses = claim_statuses(result)
    n_verified = sum(1 for s in statuses.values() if s == "VERIFIED")
    n_reference = sum(1 for s in statuses.values() if s == "REFERENCE")
    n_incident = len(statuses) - n_reference
    last = rounds[-1]
    judges = [r.judge_mean for r in rounds]
    return AstraScore(
        incident_id=result.incident_id, analyst=result.analyst, is_faulty=truth.is_faulty,
        accuracy=acc.score, accuracy_rule=acc.rule, label=acc.label,
        completeness=last.completeness, missing_dimensions=missing_dimensions(final),
        identifiers=last.identifiers, fabricated=last.fabricated,
        fabricated_rate=len(last.fabricated) / last.identifiers if last.identifiers else 0.0,
        claims=len(result.claims), verified_claims=n_verified,
        verified_share=n_verified / n_incident if n_incident else None,
        reference_claims=n_reference, incident_claims=n_incident,
        reference_share=n_reference / len(result.claims) if result.claims else None,
        rounds=rounds, accuracy_delta=last.accuracy - rounds[0].accuracy,
        judge_delta=(judges[-1] - judges[0]) if judges[0] is not None and judges[-1] is not None else None,
        elapsed_s=result.elapsed_s,
    )


class RoundMean(_Closed):
    """Means over the incidents whose analysis reached this round."""

    round: int
    incidents: int
    accuracy: float
    completeness: float
    judge: float | None


class AstraSummary(_Closed):
    """A batch of scores in the benchmark's figures (accuracy shares are over faulty incidents)."""

    incidents: int
    faulty: int
    healthy: int
    accuracy_distribution: dict[int, int]  # rubric score -> faulty incidents
    share_accuracy_ge3: float | None
    share_accuracy_ge4: float | None
    mean_accuracy: float | None
    healthy_correct: float | None  # share of healthy controls whose report names no fault
    mean_completeness: float | None
    reports_with_fabricated: float | None  # share of reports with at least one untraceable identifier
    fabricated_identifier_rate: float | None  # untraceable / all identifiers, pooled
    claims: int = 0  # pooled over the incidents
    verified_claims: int = 0
    reference_claims: int = 0
    verified_share: float | None  # verified claims / claims about this incident (VERIFIED + UNVERIFIED), pooled
    reference_share: float | None = None  # reference claims / all claims, pooled
    per_round: list[RoundMean]
    mean_accuracy_delta: float | None
    mean_judge_delta: float | None
    seconds_per_incident: float | None
    max_seconds: float | None


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def summarise(scores: list[AstraScore]) -> AstraSummary:
    """Aggregate per-incident scores (an empty list gives counts of 0 and None for every rate)."""
    faulty = [s for s in scores if s.is_faulty]
    healthy = [s for s in scores if not s.is_faulty]
    ids = sum(s.identifiers for s in scores)
    claims = sum(s.claims for s in scores)
    per_round: list[RoundMean] = []
    for number in sorted({r.round for s in scores for r in s.rounds}):
        rows = [r for s in scores for r in s.rounds if r.round == number]
        judges = [r.judge_mean for r in rows if r.judge_mean is not None]
        per_round.append(RoundMean(round=number, incidents=len(rows), accuracy=mean(r.accuracy for r in rows),
                                   completeness=mean(r.completeness for r in rows),
                                   judge=mean(judges) if judges else None))
    judge_deltas = [s.judge_delta for s in scores if s.judge_delta is not None]
    return AstraSummary(
        incidents=len(scores), faulty=len(faulty), healthy=len(healthy),
        accuracy_distribution={k: sum(1 for s in faulty if s.accuracy == k) for k in range(6)},
        share_accuracy_ge3=_share(sum(1 for s in faulty if s.accuracy >= 3), len(faulty)),
        share_accuracy_ge4=_share(sum(1 for s in faulty if s.accuracy >= 4), len(faulty)),
        mean_accuracy=mean(s.accuracy for s in faulty) if faulty else None,
        healthy_correct=_share(sum(1 for s in healthy if s.accuracy == 5), len(healthy)),
        mean_completeness=mean(s.completeness for s in scores) if scores else None,
        reports_with_fabricated=_share(sum(1 for s in scores if s.fabricated), len(scores)),
        fabricated_identifier_rate=_share(sum(len(s.fabricated) for s in scores), ids),
        claims=claims, verified_claims=sum(s.verified_claims for s in scores),
        reference_claims=sum(s.reference_claims for s in scores),
        verified_share=_share(sum(s.verified_claims for s in scores), sum(s.incident_claims for s in scores)),
        reference_share=_share(sum(s.reference_claims for s in scores), claims),
        per_round=per_round,
        mean_accuracy_delta=mean(s.accuracy_delta for s in scores) if scores else None,
        mean_judge_delta=mean(judge_deltas) if judge_deltas else None,
        seconds_per_incident=mean(s.elapsed_s for s in scores) if scores else None,
        max_seconds=max(s.elapsed_s for s in scores) if scores else None,
    )
