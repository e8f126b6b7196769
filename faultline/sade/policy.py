"""SADE's deterministic policy (the paper's Algorithm 1) and the flat baseline it is measured against.

`deterministic`: initial scan, lead symptoms, triage, each lead's skill search until the matches explain every
lead, the pressure sweep and the bottom-up deep scan when needed, then the second look; `flat`: every check on
every device, one match at the end. docs/sade.md#the-deterministic-policy, docs/sade.md#the-flat-baseline.
"""

from __future__ import annotations

from faultline.network.snapshot import client_positions
from faultline.sade.index import classify
from faultline.sade.index_file import load_index
from faultline.sade.initial import initial_scan
from faultline.sade.matcher import Match
from faultline.sade.scans import PHASES, scan_phase
from faultline.sade.search import Search, fingerprint_of
from faultline.sade.second_look import second_look
from faultline.sade.session import Session
from faultline.sade.skill_search import interleaved, triage
from faultline.sade.ticket import ticket_leads
from faultline.sade.unidentified import unidentified

__all__ = ["deterministic", "flat"]


def deterministic(session: Session) -> list[Match]:
    """Algorithm 1 with stop-and-submit, then a second look for a fault the first one hides; the matches to
    submit (empty = healthy, only when the users' checks show nothing)."""
    search = Search.start(session)
    sym = initial_scan(session)
    # no lead symptom from the network: what the user reported (the ticket) leads
    search.leads = classify(session, sym) or ticket_leads(session)
    found = triage(search)
    # near evidence first for every lead (the other suspect's own look before this one's far fan-out)
    for far in (False, True):
        if search.leads and not (found and search.explains(found)):
            found = interleaved(search, far)
    if any(not m.fallback for m in found):
        return second_look(search, sym, settle(search, found))
    if not sym.any and not search.leads:
        # the network shows nothing from the users' positions: the faults that show nothing there are on the
        # servers (a dead daemon, a flood, a rate limit, a starved CPU); their own look first (its probes are
        # the deep scan's phase D on them, so a healthy network costs nothing more)
        pressed = pressure_sweep(search)
        if pressed:
            return settle(search, pressed)
    swept = deep_scan(search)  # nothing but a residual explanation: look everywhere before settling for it
    if any(not m.fallback for m in swept):
        return second_look(search, sym, swept)  # the deep scan stops at the first phase that matched
    # symptoms in hand are never "healthy": no match is "fault not identified" where they point
    return found or swept or unidentified(session, sym, search.leads)


def flat(session: Session) -> list[Match]:
    """No gating: the initial scan, every phase's scan on every device, then one match."""
    search = Search.start(session)
    sym = initial_scan(session)
    for phase in PHASES:
        scan_phase(session, phase)
    return search.matches(complete=set(search.roles)) or unidentified(session, sym)


def settle(search: Search, found: list[Match]) -> list[Match]:
    """An answer once its fingerprints' own checks ran: `confirm` on its devices, `affected` on the users."""
    return affected_look(search, confirm(search, found))


def confirm(search: Search, found: list[Match]) -> list[Match]:
    """Run each match's `confirm` checks on its device (evidence that would make it another label), then
    match again when they saw anything new."""
    ran = False
    for m in found:
        for check in fingerprint_of(m).confirm:
            ran |= search.run(check, m.device, f"confirm {m.label} on {m.device}")
    if not ran:
        return found
    return search.findings() or found


def affected_look(search: Search, found: list[Match]) -> list[Match]:
    """A server-side answer that names the users it reached by a flag (`flagged:<kind>`) but was found without
    any of them (from a ticket, say) runs its fingerprint's `affected` check on the user positions, one per
    subnet; the matches again with what they show."""
    session = search.session
    todo = []
    for m in found:
        fp = fingerprint_of(m)
        kinds = [spec[8:] for spec in fp.devices if spec.startswith("flagged:")]
        if fp.affected and kinds and not any(f.kind in kinds for f in session.flags):
            todo.append(fp.affected)
    if not todo:
        return found
    for check in dict.fromkeys(todo):
        for name in client_positions(session.devices()):
            search.run(check, name, "users the answer reaches")
    again = search.findings()
    return again if {m.label for m in again} >= {m.label for m in found} else found


def pressure_sweep(search: Search) -> list[Match]:
    """SADE's pressure sweep over the service devices: the index's `pressure_sweep` checks on each, matching
    after each check that raised a flag; the non-residual matches, or [] to go on with the deep scan."""
    session, sweep = search.session, load_index().pressure_sweep
    for dev in session.devices(*sweep.roles):
        for check in sweep.checks:
            flags = len(session.flags)
            search.run(check, dev.name, "pressure sweep (no symptom seen)")
            found = search.findings() if len(session.flags) > flags else []
            if found:
                return found
    return []


def deep_scan(search: Search) -> list[Match]:
    """Step 2, the deep scan: each phase on every device, bottom-up, matching after each phase; the first
    phase's non-residual matches, else the residual matches over every device."""
    session = search.session
    for phase in PHASES:
        scan_phase(session, phase)
        found = search.findings()
        named = {d for m in found for d in m.devices}
        # a DHCP client's wrong settings may come from the server: wait for phase D to look at it
        waits_for_server = phase != "D" and any(f.attrs.get("dhcp_client") for f in session.flags if f.device in named)
        if found and not waits_for_server:
            return found
    return search.matches(complete=set(search.roles))
