"""Does a report hold together? Its root cause, fix and evidence against each other, the ticket and the agents.

`check` computes the findings the judge's consistency checks read (`Consistency`; its properties are checks R, S,
A, F and E); nothing here sees ground truth. What each finding means: docs/astra.md#consistency-checks; the caps
the judge derives from them: docs/astra.md#the-judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from faultline.astra import lexical
from faultline.astra.identifiers import find_identifiers
from faultline.astra.records import AgentOutput, Claim, Evidence, Incident, Report

REFERENCE_AGENTS = ("domain", "similarity")  # documentation and other incidents, never this incident's facts
TICKET_TOP = 5
TICKET_SHARE = 0.5
FIX_MIN_SCORE = 0.2
_REFERENCE_TEXT = re.compile(r"(?i)^\W*(?:possibly \(unconfirmed\):\s*)?(?:[^:>\n]{2,80} > [^:\n]{2,200}:|"
                             r"the (?:runbook|documentation|docs)\b|in (?:a )?(?:similar )?(?:resolved )?ticket\b|"
                             r"(?:the )?similar (?:resolved )?tickets?\b)")


@dataclass(frozen=True)
class Consistency:
    """The consistency findings of one report (docs/astra.md#consistency-checks)."""

    named: bool
    family: str | None
    reference_root: bool
    ticket_families: frozenset[str]
    log_families: frozenset[str]
    sources_for: tuple[str, ...]
    sources_against: tuple[str, ...]
    fix_family: str | None
    fix_devices_outside: tuple[str, ...]
    evidence_with_devices: int
    evidence_off_target: int
    label: str | None = None
    log_family: str | None = None  # family of the label the log agent names

    @property
    def unlabelled_reference(self) -> bool:
        """Check R: the root cause is reference material and no label is named."""
        return self.reference_root and self.label is None

    @property
    def symptom_unexplained(self) -> bool:
        """Check S: the family is in neither the ticket's nor the logs' families."""
        return self.family is not None and self.family not in self.ticket_families | self.log_families

    @property
    def sources_disagree(self) -> bool:
        """Check A: an agent names another family, or the logs neither name nor scored this one."""
        return self.family is not None and (bool(self.sources_against) or (
            self.log_family != self.family and self.family not in self.log_families))

    @property
    def fix_other_family(self) -> bool:
        """Check F (family part): the fix classifies to another family than the root cause."""
        return self.family is not None and self.fix_family is not None and self.fix_family != self.family

    @property
    def evidence_off(self) -> bool:
        """Check E: more than half of the (>= 2) device-naming evidence statements miss the report's devices."""
        return self.evidence_with_devices >= 2 and self.evidence_off_target * 2 > self.evidence_with_devices


def family_of(name: str | None) -> str | None:
    """The rubric family of a label (or a family name itself); None for anything else."""
    from faultline.truth.taxonomy import taxonomy

    if not name:
        return None
    tax = taxonomy()
    return tax.families.get(name) or (name if name in tax.domains else None)


def text_families(text: str, top: int, share: float) -> frozenset[str]:
    """Families of the labels `classify_text` ranks best for `text` (top `top`, >= `share` of the best score)."""
    from faultline.astra.labels import classify_text

    ranked = classify_text(text)[:top]
    if not ranked:
        return frozenset()
    best = ranked[0][1]
    return frozenset(f for label, score in ranked if score >= share * best and (f := family_of(label)))


def _log_families(log: AgentOutput | None) -> frozenset[str]:
    from faultline.astra.labels import MIN_LABEL_SCORE

    if log is None:
        return frozenset()
    if "label_scores" not in log.data:  # an analyst that does not score labels: what it names is what it saw
        return frozenset({f} if (f := family_of(log.label)) else set())
    from faultline.truth.taxonomy import taxonomy

    sums: dict[str, float] = {}
    for label, score in (log.data.get("label_scores") or {}).items():
        entry = taxonomy().get(label)
        if entry is not None and entry.consequence:  # a protocol's echo of some cause: never the logs' answer
            continue
        family = family_of(label)
        if family and isinstance(score, (int, float)):
            sums[family] = sums.get(family, 0.0) + float(score)
    return frozenset(f for f, s in sums.items() if s >= MIN_LABEL_SCORE)


def _named_families(outputs: dict[str, AgentOutput]) -> dict[str, str]:
    """Agent -> family it names (the similarity agent by its vote's winner, when it has one)."""
    named: dict[str, str] = {}
    for name, out in outputs.items():
        label = out.label
        if name == "similarity":
            vote = out.data.get("label_vote") or {}
            label = vote.get("label") or label
        family = family_of(label) or family_of(out.category)
        if family:
            named[name] = family
    return named


def source_claim(statement: str, claims: list[Claim]) -> Claim | None:
    """The claim a report statement was written from: the longest claim whose words it contains."""
    said = f" {lexical.normalise(statement)} "
    best = None
    for claim in claims:
        key = lexical.normalise(claim.text)
        if key and f" {key} " in said and (best is None or len(key) > len(lexical.normalise(best.text))):
            best = claim
    return best


def is_reference(statement: str, claims: list[Claim], evidence: list[Evidence]) -> bool:
    """True when a statement is reference material (documentation, other incidents), not this incident's."""
    if _REFERENCE_TEXT.match(statement):
        return True
    claim = source_claim(statement, claims)
    if claim is None:
        return False
    statuses = {str(e.status) for e in evidence if e.claim_id == claim.claim_id}
    return claim.agent in REFERENCE_AGENTS or "REFERENCE" in statuses


def _devices(text: str) -> set[str]:
    return {i.value.lower() for i in find_identifiers(text) if i.kind == "device"}


def check(report: Report, incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
          evidence: list[Evidence]) -> Consistency:
    """The consistency findings of `report` (docs/astra.md#consistency-checks)."""
    from faultline.astra.labels import classify_text

    family = family_of(report.label) or family_of(report.category)
    ticket = f"{incident.title}\n{incident.description}"
    named = _named_families(outputs)
    own = {d.lower() for d in report.devices} or _devices(ticket) | set(lexical.identifiers(ticket))
    fix_ranked = classify_text(report.fix)
    fix_family = family_of(fix_ranked[0][0]) if fix_ranked and fix_ranked[0][1] >= FIX_MIN_SCORE else None
    with_devices = [d for d in (_devices(s) for s in report.evidence) if d]
    return Consistency(
        named=bool(report.label or report.category),
        family=family,
        reference_root=is_reference(report.root_cause, claims, evidence),
        ticket_families=text_families(ticket, TICKET_TOP, TICKET_SHARE),
        log_families=_log_families(outputs.get("log")),
        sources_for=tuple(sorted(a for a, f in named.items() if family and f == family)),
        sources_against=tuple(sorted(a for a, f in named.items() if family and f != family)),
        fix_family=fix_family,
        fix_devices_outside=tuple(sorted(_devices(report.fix) - own)),
        evidence_with_devices=len(with_devices),
        evidence_off_target=sum(1 for d in with_devices if not d & own),
        label=report.label,
        log_family=family_of(outputs["log"].label) if "log" in outputs else None,
    )
