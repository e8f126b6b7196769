"""SADE's search state: what the deterministic policy knows between its steps, and its stop-and-submit test.

A `Search` holds the diagnosis session, the devices' roles, the lead symptoms it resolves, the skill families
whose every probe has looked (`tried`: from then on their absence of evidence counts) and the devices each
lead's search has touched. The policy's steps (`faultline.sade.policy`, `skill_search`, `second_look`) take it
as their first argument. `explains` says whether matches account for every lead symptom.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faultline.sade.index import LeadSymptom
from faultline.sade.index_file import load_index
from faultline.sade.matcher import Match, match
from faultline.sade.scans import run_check
from faultline.sade.scans.common import behind
from faultline.sade.session import Session
from faultline.sade.skills import Fingerprint, skill


@dataclass
class Search:
    """One deterministic diagnosis's search state (see the module docstring)."""

    session: Session
    roles: dict[str, str]  # device -> role
    leads: list[LeadSymptom] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)  # families whose every probe has looked
    touched: dict[str, set[str]] = field(default_factory=dict)  # lead device -> devices its search looked at
    ignore: frozenset[str] = frozenset()  # devices an earlier answer names: matches on them explain nothing

    @classmethod
    def start(cls, session: Session) -> Search:
        """A search with no lead yet over the session's devices."""
        return cls(session, roles={d.name: d.role for d in session.devices()})

    def follow_up(self, leads: list[LeadSymptom], *, ignore: set[str]) -> Search:
        """A search for new leads after an answer (the second look): the same session, roles and tried families
        (one set: a family tried for the answer need not be tried again), no touched devices yet, and matches on
        `ignore` (the answer's devices) explain nothing."""
        return Search(self.session, self.roles, leads, tried=self.tried, ignore=frozenset(ignore))

    def record_tried(self, family: str) -> None:
        """Every probe of `family`'s skill has looked: from now on its absence of evidence counts (`explains`)."""
        self.tried.add(family)

    def run(self, check: str, device: str, note: str) -> bool:
        """Run one named check on one device; whether it asked the network anything new."""
        return run_check(self.session, check, device, note)

    def matches(self, complete: set[str] = frozenset()) -> list[Match]:  # type: ignore[assignment]
        """The matcher over the flags so far; `complete` = devices examined in every phase."""
        return match(self.session.flags, roles=self.roles, complete=complete)

    def findings(self) -> list[Match]:
        """The non-residual matches of the flags so far."""
        return [m for m in self.matches() if not m.fallback]

    def candidates(self) -> list[Match]:
        """The matches of the flags so far but those on devices an earlier answer names (`ignore`)."""
        return [m for m in self.matches() if not set(m.devices) & self.ignore]

    def explains(self, found: list[Match]) -> bool:
        """Do `found` account for every lead of this search (see `explains`)?"""
        return explains(found, self.leads, self.session, self.tried)


def explains(matches: list[Match], leads: list[LeadSymptom], session: Session, tried: set[str]) -> bool:
    """Do the (non-residual) matches account for every lead symptom, with the server-side checks done?"""
    real = [m for m in matches if not m.fallback]
    if not real:
        return False
    index = load_index()
    roles = {d.name: d.role for d in session.devices()}
    named = {d for m in real for d in m.devices}
    upstream = any(roles.get(m.device) in index.roles.infrastructure for m in real)
    service = any((roles.get(m.device) in index.roles.service or m.family in index.service_families)
                  and fingerprint_of(m).fails_pages for m in real)
    routers = {m.device for m in real if roles.get(m.device) in index.roles.infrastructure}
    for lead in leads:
        if lead.kind == "service_no_lease":
            # only the DHCP server's side (or the path to it) explains a request no server answered
            if not (upstream or lead.lead in named or any(m.family == "dhcp" for m in real)):
                return False
        elif lead.kind in index.service_symptoms:
            # a fault on any device the failing request passed through (the user's own position included)
            if not (service or upstream or lead.lead in named or set(lead.peers) & named):
                return False
        elif lead.lead in named:
            continue
        elif lead.kind == "host_isolated" and lead.peers and set(lead.peers) <= named:
            continue  # it fails only with devices the answer names
        elif lead.kind != "host_isolated" and set(lead.peers) & named:
            continue
        elif lead.kind == "host_isolated":
            # an upstream fault explains an isolated host when the host, or every peer it fails with, is
            # behind the faulty router
            hosts = behind(session, routers)
            if lead.lead not in hosts and not (lead.peers and set(lead.peers) <= hosts):
                return False
        elif not upstream:
            return False
    # a DHCP client's wrong or missing settings may come from the server: the dhcp skill must have looked
    return not ("dhcp" not in tried and any(f.attrs.get("dhcp_client") for f in session.flags if f.device in named))


def fingerprint_of(m: Match) -> Fingerprint:
    """The skill fingerprint that made the match."""
    return next(f for f in skill(m.family).fingerprints if f.id == m.fingerprint)
