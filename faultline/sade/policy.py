"""SADE's deterministic policy (paper, Appendix B) and the flat baseline it is measured against.

Deterministic: Step 1 initial scan → if there is a symptom, follow the leads one device at a time
through phases A → B → C → D, matching fingerprints after every phase and stopping as soon as the
matches explain every lead (stop-and-submit); with no symptom, or leads exhausted without a match, a
bottom-up broad sweep (A on every device, then B, C, D), matching after each phase. Healthy only
after the whole sweep is clean. Flat: every scan on every device, then one match.
"""

from __future__ import annotations

from faultline.sade.initial import Symptoms, initial_scan
from faultline.sade.matcher import Match, match
from faultline.sade.scans import PHASE_CHECKS, PHASE_SCANS
from faultline.sade.session import Session

PHASES = ("A", "B", "C", "D")
MAX_LEADS = 4
INFRA_ROLES = {"router", "switch"}
SERVICE_ROLES = {"dns", "dhcp", "lb", "web"}


def _roles(s: Session) -> dict[str, str]:
    return {d.name: d.role for d in s.devices()}


def explains(matches: list[Match], sym: Symptoms, s: Session, complete: set[str]) -> bool:
    """Do the matches account for every lead device the initial scan isolated and every failing service?"""
    if not matches or all(m.fallback for m in matches):
        return False  # a residual explanation waits until every lead and the sweep found nothing stronger
    roles = _roles(s)
    named = {d for m in matches for d in m.devices}
    upstream = any(roles.get(m.device) in INFRA_ROLES for m in matches)
    service = any(roles.get(m.device) in SERVICE_ROLES or m.family in ("dns", "dhcp") for m in matches)
    isolated = {f.device for f in s.flags if f.kind == "isolated"}
    if not upstream and any(d not in named for d in isolated):
        return False
    if sym.services and not (service or upstream or named & set(sym.leads)):
        return False
    # a DHCP client's wrong or missing settings may come from the server: check it before answering
    if any(f.attrs.get("dhcp_client") for f in s.flags if f.device in named):
        if any(d.name not in complete for d in s.devices("dhcp")):
            return False
    return True


def deterministic(s: Session) -> list[Match]:
    """Phase-gated escalation with stop-and-submit; the matches to submit (empty = healthy)."""
    roles = _roles(s)
    sym = initial_scan(s)
    complete: set[str] = set()
    if sym.any:
        leads, done = list(sym.leads), 0
        while leads and done < MAX_LEADS:
            lead = leads.pop(0)
            if lead in complete:
                continue
            done += 1
            dev = s.device(lead)
            for phase in PHASES:
                s.phase = phase
                for check in PHASE_CHECKS[phase]:
                    before = s.probe_calls
                    check(s, dev)
                    if s.probe_calls == before:
                        continue  # nothing new was seen
                    found = match(s.flags, roles=roles, complete=complete)
                    if explains(found, sym, s, complete):
                        return found
            complete.add(lead)
            _follow(s, lead, leads, complete)
            found = match(s.flags, roles=roles, complete=complete)
            if explains(found, sym, s, complete):
                return found
        found = match(s.flags, roles=roles, complete=complete)
        if found and not all(m.fallback for m in found):
            return found
    return _sweep(s, roles, complete)


def _follow(s: Session, lead: str, leads: list[str], complete: set[str]) -> None:
    """Flags on a finished lead that point elsewhere put that device next (DHCP server, first-hop router)."""
    mine = [f for f in s.flags if f.device == lead]
    nxt: list[str] = []
    if any(f.attrs.get("dhcp_client") for f in mine):
        nxt += [d.name for d in s.devices("dhcp")]
    if any(f.kind in ("iface_no_carrier", "arp_unresolved", "gateway_wrong") for f in mine):
        from faultline.sade.scans.common import gateway_router

        gw = gateway_router(s, s.device(lead))
        if gw:
            nxt.append(gw.name)
    for name in reversed(nxt):
        if name not in complete:
            if name in leads:
                leads.remove(name)
            leads.insert(0, name)


def _sweep(s: Session, roles: dict[str, str], complete: set[str]) -> list[Match]:
    for phase in PHASES:
        s.phase = phase
        for dev in s.devices():
            PHASE_SCANS[phase](s, dev)
        found = [m for m in match(s.flags, roles=roles, complete=complete) if not m.fallback]
        named = {d for m in found for d in m.devices}
        waits_for_server = phase != "D" and any(f.attrs.get("dhcp_client") for f in s.flags if f.device in named)
        if found and not waits_for_server:
            return found
    complete.update(roles)
    return match(s.flags, roles=roles, complete=complete)


def flat(s: Session) -> list[Match]:
    """No gating: the initial scan, every phase's scan on every device, then one match."""
    roles = _roles(s)
    initial_scan(s)
    for phase in PHASES:
        s.phase = phase
        for dev in s.devices():
            PHASE_SCANS[phase](s, dev)
    return match(s.flags, roles=roles, complete=set(roles))
