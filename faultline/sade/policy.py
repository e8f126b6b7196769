"""SADE's deterministic policy (the paper's Algorithm 1) and the flat baseline it is measured against.

Deterministic: Step 1 initial scan → lead symptoms (`index.classify`; when the network shows nothing, the
ticket's words, `ticket.ticket_leads`). With none, Step 2: the deep
scan, bottom-up — phase A on every device, then B, C, D — matching fingerprints after each phase;
nothing matched after D = healthy. With symptoms, for each unresolved lead symptom (Step 3) the index
gives the skill families to try; each skill runs its own probes on the devices they name (Step 4),
the matcher runs after every new observation, and the answer is submitted as soon as the matches
explain every lead symptom (stop-and-submit). A flag another family owns the evidence for redirects
to that family first (the index's rules). Leads that match nothing fall back to the deep scan.
After a submit on reachability symptoms, a second look (the isolated devices explained only through their
peers, then the service canary from a user the answer leaves untouched) looks for a fault the first one hides.
Flat: the initial scan, every check on every device, one match at the end.
"""

from __future__ import annotations

from collections.abc import Iterator

from faultline.network.snapshot import client_positions
from faultline.sade.index import LeadSymptom, classify, families_for, redirects, targets
from faultline.sade.index_file import load_index
from faultline.sade.initial import Symptoms, initial_scan, resolve_dependence, service_canary
from faultline.sade.matcher import Match, match
from faultline.sade.scans import CHECKS_BY_NAME, PHASE_SCANS
from faultline.sade.scans.common import behind, same_subnet
from faultline.sade.session import Session
from faultline.sade.skills import skill
from faultline.sade.ticket import ticket_leads

PHASES = ("A", "B", "C", "D")


def _roles(session: Session) -> dict[str, str]:
    return {d.name: d.role for d in session.devices()}


def explains(matches: list[Match], leads: list[LeadSymptom], session: Session, tried: set[str]) -> bool:
    """Do the (non-residual) matches account for every lead symptom, with the server-side checks done?"""
    real = [m for m in matches if not m.fallback]
    if not real:
        return False
    index = load_index()
    roles = _roles(session)
    named = {d for m in real for d in m.devices}
    upstream = any(roles.get(m.device) in index.roles.infrastructure for m in real)
    service = any((roles.get(m.device) in index.roles.service or m.family in index.service_families)
                  and _fingerprint(m).fails_pages for m in real)
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
    if "dhcp" not in tried and any(f.attrs.get("dhcp_client") for f in session.flags if f.device in named):
        return False
    return True


def _applies(session: Session, family: str, check: str = "") -> bool:
    """SADE's phase-B rule: a routing protocol's skill (the index's `protocol_skills`) only on networks that run
    the protocol (once a router's configuration has been seen; before that, every one applies). A check that
    reads no protocol's state (`protocol_free_checks`: the kernel's routes) applies on every network."""
    index = load_index()
    keyword = index.protocol_skills.get(family)
    if keyword is None or check in index.protocol_free_checks:
        return True
    configs = [st for st in session.steps
               if st.tool == "vtysh_show" and st.args.get("command") == "show running-config"]
    if not configs:
        return True
    return any(keyword in (out.raw if (out := session.seen("vtysh_show", **st.args)) else "") for st in configs)


def _run(session: Session, check: str, device: str, note: str) -> bool:
    """Run one named check on one device; whether it asked the network anything new."""
    phase, func = CHECKS_BY_NAME[check]
    session.phase = phase
    before = session.probe_calls
    func(session, session.device(device))
    if session.probe_calls > before:
        for step in session.steps[before - session.probe_calls:]:
            step.note = f"{note}: {check}" if not step.note else f"{note}: {step.note}"
    return session.probe_calls > before


# probe targets beyond the lead's neighbourhood (every router, every client, the senders): the second pass
FAR_TARGETS = frozenset({"routers", "clients", "senders"})


def _skill_search(session: Session, lead: LeadSymptom, leads: list[LeadSymptom], roles: dict[str, str],
                  tried: set[str], passes: tuple[bool, ...] = (False, True), ignore: frozenset[str] = frozenset(),
                  ) -> list[Match]:
    """Try the lead's families in index order (with redirections); the matches once they explain the leads.

    Near evidence first: a first pass runs every family's probes on the lead and the devices next to it
    (its gateway, peers, LAN, the service servers); only then a second pass fans out to far targets
    (every router, every client). Matches on `ignore`d devices (an answer already given) explain nothing.
    """
    touched: set[str] = {lead.lead}
    for far in passes:
        for found in _family_steps(session, lead, leads, roles, tried, far, touched, ignore):
            if found:
                return found
    return match(session.flags, roles=roles, complete={lead.lead})


def _family_steps(session: Session, lead: LeadSymptom, leads: list[LeadSymptom], roles: dict[str, str], tried: set[str],
                  far: bool, touched: set[str], ignore: frozenset[str] = frozenset()) -> Iterator[list[Match]]:
    """One pass (near or far probes) of a lead's family search, one family per step: yields the matches once
    they explain the leads (and stops), else [] after each family."""
    # what the lead's own triage look raised points first (a DHCP client's settings: the server that gave them)
    queue, started = redirects(session, touched) + families_for(lead.kind), set()
    while queue:
        family = queue.pop(0)
        if family in started:
            continue
        started.add(family)
        probes = [p for p in skill(family).probes if _applies(session, family, p.check)]
        if not probes:
            continue
        for probe in probes:
            if (probe.on in FAR_TARGETS) != far:
                continue
            for device in targets(session, probe.on, lead):
                touched.add(device)
                if _run(session, probe.check, device, f"{lead.kind} {lead.lead} -> skill {family}"):
                    touched |= _far_ends(session, device)
                    found = _matches_beside(session, roles, ignore)
                    if explains(found, leads, session, tried):
                        yield found
                        return
        if far or not any(p.on in FAR_TARGETS for p in skill(family).probes):
            tried.add(family)  # every probe of the skill has looked: its absence of evidence now counts
        found = _matches_beside(session, roles, ignore)
        if explains(found, leads, session, tried):
            yield found
            return
        queue = [f for f in redirects(session, touched) if f not in started] + queue
        yield []


def _matches_beside(session: Session, roles: dict[str, str], ignore: frozenset[str]) -> list[Match]:
    """The matches of the flags so far, but those on devices an answer already names (`ignore`)."""
    return [m for m in match(session.flags, roles=roles) if not set(m.devices) & ignore]


def _interleaved(session: Session, leads: list[LeadSymptom], roles: dict[str, str], tried: set[str], far: bool,
                 touched: dict[str, set[str]]) -> list[Match]:
    """Every lead's family search side by side, one family per lead in turn: each suspect's likeliest family
    before any suspect's long tail (two isolated hosts: the second one's address check before the first
    one's ACL, routing and queueing looks). An unstable device (partial loss, often a side effect of an
    isolated device's cause) searches on its own, after them. The matches once they explain the leads, else
    the residual matches over the leads."""
    turns = [[x for x in leads if x.kind != "unstable"]] + [[x] for x in leads if x.kind == "unstable"]
    for turn in (t for t in turns if t):
        searches = [_family_steps(session, lead, leads, roles, tried, far, touched.setdefault(lead.lead, {lead.lead}))
                    for lead in turn]
        while searches:
            for search in list(searches):
                found = next(search, None)
                if found is None:
                    searches.remove(search)
                elif found:
                    return found
    return match(session.flags, roles=roles, complete={lead.lead for lead in leads})


def _far_ends(session: Session, device: str) -> set[str]:
    """A router or switch port without carrier: its link's other end is where the cause is (a port set down
    there, a crashed host); its interfaces are looked at next. Only links with one other device on them."""
    looked: set[str] = set()
    dev = session.device(device)
    if dev.role not in load_index().roles.infrastructure:
        return looked
    out = session.seen("ip_addr", dev=device)
    dark = {f.attrs.get("ifname") for f in session.flags if f.device == device and f.kind == "iface_no_carrier"}
    for iface in out.record.interfaces if out else []:
        if iface.ifname not in dark:
            continue
        for addr in iface.addresses:
            others = [d.name for d in session.devices() if d.name != device
                      and any(same_subnet(addr, a) for a in d.addresses)] if ":" not in addr else []
            if len(others) == 1:
                _run(session, "interfaces", others[0], f"far end of {device} {iface.ifname}")
                looked.add(others[0])
    return looked


def _triage(session: Session, leads: list[LeadSymptom], roles: dict[str, str], tried: set[str]) -> list[Match]:
    """SADE's infra_sweep over the suspects first: the index's one cheap look per symptom kind (`triage:`, an
    interface and address look at an isolated or unstable device) on every lead (several leads often share one
    cause; the device that shows it saves a family search on the others)."""
    for lead in leads:
        if _triage_look(session, lead, "triage"):
            found = match(session.flags, roles=roles)
            if explains(found, leads, session, tried):
                return found
    return []


def _triage_look(session: Session, lead: LeadSymptom, note: str) -> bool:
    """The index's one cheap look for the lead's kind on the lead, if it has one; whether it asked anything new."""
    check = load_index().triage.get(lead.kind)
    return bool(check) and _run(session, check, lead.lead, f"{note} {lead.kind} {lead.lead}")


MAX_SUSPECTS = 2  # isolated devices the second look examines itself
SECOND_LOOK_URLS = 1  # the canary of the second look: one request (a name lookup and a page), not a sweep


def _second_look(session: Session, sym: Symptoms, found: list[Match], roles: dict[str, str],
                 tried: set[str]) -> list[Match]:
    """After stop-and-submit on reachability symptoms: does the answer predict what was observed? Isolated
    devices it explains only through their peers get a look of their own (`_isolated_look`); then the canary
    (skipped by the initial scan when pairs failed) runs from a position the answer leaves untouched, and a
    service failure whose owner the answer does not name is a lead of its own. A fault found this way in
    another place is submitted too (one fault can hide another's symptom)."""
    if not sym.failing or not any(not m.fallback for m in found):
        return found
    index = load_index()
    named = {d for m in found for d in m.devices}
    isolated = {f.device for f in session.flags if f.kind == "isolated" and f.device}
    # behind a router the answer names
    cut_off = behind(session, {d for d in named if roles.get(d) in index.roles.infrastructure})
    hidden = _isolated_look(session, found, isolated - named - cut_off, roles)
    if hidden:
        return found + hidden
    gone = named | isolated | cut_off
    users = client_positions(session.devices())
    # every user behind the router the answer names: ask from one that still reaches its peers; a page
    # that fails for want of the named devices is told apart below
    avoid = gone if any(u not in gone for u in users) else named | isolated
    seen = service_canary(session, avoid, limit=SECOND_LOOK_URLS, note="second look: service canary")
    if not seen.services or set(seen.leads) & named:
        return found
    resolve_dependence(session, seen, note="second look: which server the page needs")
    if all(seen.depends_on.get(url) and seen.depends_on[url] <= gone for url, _ in seen.services):
        return found  # the pages fail for want of a server (or name server) the answer already cuts off
    leads = [x for x in classify(session, seen) if x.kind in index.service_symptoms and x.lead not in named]
    extra: list[Match] = []
    for lead in leads:
        _triage_look(session, lead, "second look: triage")
        more = _skill_search(session, lead, leads, roles, tried, ignore=frozenset(named))
        extra += [m for m in more if not m.fallback and m.label not in {f.label for f in found}
                  and not set(m.devices) & named and m not in extra]
        if extra:
            break
    return found + extra


def _fingerprint(m: Match):
    return next(f for f in skill(m.family).fingerprints if f.id == m.fingerprint)


def _confirmed(session: Session, found: list[Match], roles: dict[str, str]) -> list[Match]:
    """Run each match's `confirm` checks on its device (evidence that would make it another label), then
    match again when they saw anything new."""
    ran = False
    for m in found:
        for check in _fingerprint(m).confirm:
            ran |= _run(session, check, m.device, f"confirm {m.label} on {m.device}")
    if not ran:
        return found
    return [m for m in match(session.flags, roles=roles) if not m.fallback] or found


def _settled(session: Session, found: list[Match], roles: dict[str, str]) -> list[Match]:
    """An answer once its fingerprints' own checks ran: `confirm` on its devices, `affected` on the users."""
    return _affected_look(session, _confirmed(session, found, roles), roles)


def _affected_look(session: Session, found: list[Match], roles: dict[str, str]) -> list[Match]:
    """A server-side answer that names the users it reached by a flag (`flagged:<kind>`) but was found without
    any of them (from a ticket, say) runs its fingerprint's `affected` check on the user positions, one per
    subnet; the matches again with what they show."""
    todo = []
    for m in found:
        fp = _fingerprint(m)
        kinds = [spec[8:] for spec in fp.devices if spec.startswith("flagged:")]
        if fp.affected and kinds and not any(f.kind in kinds for f in session.flags):
            todo.append(fp.affected)
    if not todo:
        return found
    for check in dict.fromkeys(todo):
        for name in client_positions(session.devices()):
            _run(session, check, name, "users the answer reaches")
    again = [m for m in match(session.flags, roles=roles) if not m.fallback]
    return again if {m.label for m in again} >= {m.label for m in found} else found


def _isolated_look(session: Session, found: list[Match], suspects: set[str], roles: dict[str, str]) -> list[Match]:
    """Each isolated device the answer explains only through its peers gets the index's `isolated_look` checks
    (the triage's cheap look: interfaces, then its packet filter): a second fault on it shows there."""
    labels = {m.label for m in found}
    named = {d for m in found for d in m.devices}
    for name in sorted(suspects)[:MAX_SUSPECTS]:
        for check in load_index().isolated_look:
            _run(session, check, name, f"second look: isolated {name}")
            new = [m for m in match(session.flags, roles=roles) if not m.fallback and m.label not in labels
                   and name in m.devices and not set(m.devices) & named]
            if new:
                return new
    return []


def deterministic(session: Session) -> list[Match]:
    """Algorithm 1 with stop-and-submit, then a second look for a fault the first one hides; the matches to
    submit (empty = healthy)."""
    roles = _roles(session)
    sym = initial_scan(session)
    leads = classify(session, sym) or ticket_leads(session)  # the network shows nothing: what the user saw leads
    tried: set[str] = set()
    found = _triage(session, leads, roles, tried)
    # near evidence first for every lead (the other suspect's own look before this one's far fan-out)
    touched: dict[str, set[str]] = {}
    for far in (False, True):
        if leads and not (found and explains(found, leads, session, tried)):
            found = _interleaved(session, leads, roles, tried, far, touched)
    if any(not m.fallback for m in found):
        return _second_look(session, sym, _settled(session, found, roles), roles, tried)
    if not sym.any and not leads:
        # the network shows nothing from the users' positions: the faults that show nothing there are on the
        # servers (a dead daemon, a flood, a rate limit, a starved CPU); their own look first (its probes are
        # the deep scan's phase D on them, so a healthy network costs nothing more)
        pressed = _pressure_sweep(session, roles)
        if pressed:
            return _settled(session, pressed, roles)
    swept = _sweep(session, roles)  # nothing but a residual explanation: look everywhere before settling for it
    if any(not m.fallback for m in swept):
        return _second_look(session, sym, swept, roles, tried)  # the deep scan stops at the first phase that matched
    return found or swept


def _pressure_sweep(session: Session, roles: dict[str, str]) -> list[Match]:
    """SADE's pressure sweep over the service devices: the index's `pressure_sweep` checks on each, matching
    after each check that raised a flag; the non-residual matches, or [] to go on with the deep scan."""
    sweep = load_index().pressure_sweep
    for dev in session.devices(*sweep.roles):
        for check in sweep.checks:
            flags = len(session.flags)
            _run(session, check, dev.name, "pressure sweep (no symptom seen)")
            raised = len(session.flags) > flags
            found = [m for m in match(session.flags, roles=roles) if not m.fallback] if raised else []
            if found:
                return found
    return []


def _sweep(session: Session, roles: dict[str, str]) -> list[Match]:
    """Step 2, the deep scan: each phase on every device, bottom-up, matching after each phase."""
    for phase in PHASES:
        session.phase = phase
        for dev in session.devices():
            PHASE_SCANS[phase](session, dev)
        found = [m for m in match(session.flags, roles=roles) if not m.fallback]
        named = {d for m in found for d in m.devices}
        waits_for_server = phase != "D" and any(f.attrs.get("dhcp_client") for f in session.flags if f.device in named)
        if found and not waits_for_server:
            return found
    return match(session.flags, roles=roles, complete=set(roles))


def flat(session: Session) -> list[Match]:
    """No gating: the initial scan, every phase's scan on every device, then one match."""
    roles = _roles(session)
    initial_scan(session)
    for phase in PHASES:
        session.phase = phase
        for dev in session.devices():
            PHASE_SCANS[phase](session, dev)
    return match(session.flags, roles=roles, complete=set(roles))
