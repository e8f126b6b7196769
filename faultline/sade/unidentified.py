"""Symptoms are never "healthy": the answer when the users' checks fail and no fingerprint explains them.

A network whose host pairs fail, whose pages or names do not answer, or whose DHCP server hands out no lease is
broken, whatever the skills know. With no match, SADE answers "fault not identified": anomalous, the devices the
failing checks point at (the first lead symptom's device), the family the symptom indicates (the index's first
family for its kind), and no label — a label only ever comes from a fingerprint. docs/sade.md#fault-not-identified.
"""

from __future__ import annotations

from faultline.sade.index import LeadSymptom, classify, families_for
from faultline.sade.initial import Symptoms
from faultline.sade.matcher import Match
from faultline.sade.session import Session

FINGERPRINT = "unidentified"  # the fingerprint id of a "fault not identified" answer (it names no label)


def shows_symptoms(session: Session, sym: Symptoms) -> bool:
    """Whether the users' view is broken: failing pairs, pages, names or leases, or a check that found a service
    not answering (a flag whose attrs say `symptom`)."""
    return sym.any or any(f.attrs.get("symptom") for f in session.flags)


def unidentified(session: Session, sym: Symptoms, leads: list[LeadSymptom] | None = None) -> list[Match]:
    """The "fault not identified" answer for a broken network no fingerprint explains; [] when it shows nothing."""
    if not shows_symptoms(session, sym):
        return []
    leads = leads or classify(session, sym)
    failing = [f for f in session.flags if f.attrs.get("symptom") and f.device]
    if leads:
        kind, device = leads[0].kind, _pointed_at(sym, leads[0])
        family = next(iter(families_for(kind)), None) or "unknown"
        evidence = _evidence(sym, leads[0])
    elif failing:
        kind, device, family = failing[0].kind, failing[0].device, failing[0].family or "unknown"
        evidence = failing[0].evidence
    else:  # symptoms whose devices no rule could tell: the users' own position is all we know
        device = sym.source or next((d for d, _, _ in sym.failing), None) or (sym.no_lease or [None])[0]
        if device is None:
            return []
        kind, family, evidence = "unattributed", "unknown", _evidence(sym, None)
    return [Match(family=family, fingerprint=FINGERPRINT, label="", device=device, devices=[device],
                  resources=[f"node/{device}"], priority=0, fallback=True,
                  evidence=[f"fault not identified ({kind}): {evidence}"])]


def _pointed_at(sym: Symptoms, lead: LeadSymptom) -> str:
    """The device a lead's failing check depends on: for a page or name that failed, the one server the record
    says it needed (its name server when the name never resolved), else the lead's own device."""
    needed = sorted({d for url, _ in sym.services for d in sym.depends_on.get(url, ())})
    if lead.kind.startswith("service_") and len(needed) == 1:
        return needed[0]
    return lead.lead


def _evidence(sym: Symptoms, lead: LeadSymptom | None) -> str:
    pairs = [(s, d, st) for s, d, st in sym.failing if lead is None or lead.lead in (s, d)] or sym.failing
    parts = [f"{len(pairs)} failing pair(s), e.g. {pairs[0][0]} -> {pairs[0][1]} {pairs[0][2]}"] if pairs else []
    slow = [(s, d) for s, d in sym.slow if lead is None or lead.lead in (s, d)] or sym.slow
    parts += [f"{len(slow)} pair(s) far slower than their baseline, e.g. {slow[0][0]} -> {slow[0][1]}"] if slow else []
    parts += [f"{url}: {problem}" for url, problem in sym.services[:2]]
    parts += [f"no DHCP lease for {name}" for name in sym.no_lease[:1]]
    return "; ".join(parts) or "a check failed"
