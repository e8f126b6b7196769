"""Steps 3 and 4 of the deterministic policy: the triage look at every lead, then each lead's skill search.

Triage is SADE's infra_sweep: the index's one cheap look per lead kind, on every lead first. The skill search
tries the families the index gives a lead, in order, with the redirections its flags trigger in front; each
family's probes run on the devices they name, in two passes (near targets, then far ones), and the search stops
as soon as the matches explain every lead of the `Search`.
"""

from __future__ import annotations

from collections.abc import Iterator

from faultline.sade.index import LeadSymptom, families_for, redirects, targets
from faultline.sade.index_file import load_index
from faultline.sade.matcher import Match
from faultline.sade.scans.common import same_subnet
from faultline.sade.search import Search
from faultline.sade.session import Session
from faultline.sade.skills import skill

# probe targets beyond the lead's neighbourhood (every router, every client, the senders): the second pass
FAR_TARGETS = frozenset({"routers", "clients", "senders"})


def triage(search: Search) -> list[Match]:
    """The index's one cheap look per symptom kind (`triage:`, an interface and address look at an isolated or
    unstable device) on every lead (several leads often share one cause; the device that shows it saves a family
    search on the others); the matches once they explain the leads, else []."""
    for lead in search.leads:
        if triage_look(search, lead, "triage"):
            found = search.matches()
            if search.explains(found):
                return found
    return []


def triage_look(search: Search, lead: LeadSymptom, note: str) -> bool:
    """The index's one cheap look for the lead's kind on the lead, if it has one; whether it asked anything new."""
    check = load_index().triage.get(lead.kind)
    return bool(check) and search.run(check, lead.lead, f"{note} {lead.kind} {lead.lead}")


def interleaved(search: Search, far: bool) -> list[Match]:
    """One pass (near or far probes) of every lead's family search side by side, one family per lead in turn:
    each suspect's likeliest family before any suspect's long tail (two isolated hosts: the second one's address
    check before the first one's ACL, routing and queueing looks). An unstable device (partial loss, often a side
    effect of an isolated device's cause) searches on its own, after them. The matches once they explain the
    leads, else the residual matches over the leads."""
    leads = search.leads
    turns = [[x for x in leads if x.kind != "unstable"]] + [[x] for x in leads if x.kind == "unstable"]
    for turn in (t for t in turns if t):
        searches = [family_steps(search, lead, far) for lead in turn]
        while searches:
            for steps in list(searches):
                found = next(steps, None)
                if found is None:
                    searches.remove(steps)
                elif found:
                    return found
    return search.matches(complete={lead.lead for lead in leads})


def skill_search(search: Search, lead: LeadSymptom) -> list[Match]:
    """One lead's families in index order (with redirections), near probes then far ones, from the lead alone;
    the matches once they explain the search's leads, else the residual matches over the lead."""
    search.touched[lead.lead] = {lead.lead}  # a fresh start: devices another lead's search touched do not count
    for far in (False, True):
        for found in family_steps(search, lead, far):
            if found:
                return found
    return search.matches(complete={lead.lead})


def family_steps(search: Search, lead: LeadSymptom, far: bool) -> Iterator[list[Match]]:
    """One pass (near or far probes) of a lead's family search, one family per step: yields the matches once
    they explain the leads (and stops), else [] after each family. The devices it looks at join the lead's
    `touched` set, whose flags redirect the search."""
    session = search.session
    touched = search.touched.setdefault(lead.lead, {lead.lead})
    # what the lead's own triage look raised points first (a DHCP client's settings: the server that gave them)
    queue, started = redirects(session, touched) + families_for(lead.kind), set()
    # a lead of failing pings skips the checks that read nothing a ping depends on (a resolver)
    index = load_index()
    blind, service_kinds = index.ping_blind_checks, index.service_symptoms
    while queue:
        family = queue.pop(0)
        if family in started:
            continue
        started.add(family)
        probes = [p for p in skill(family).probes if applies(session, family, p.check)]
        if not probes:
            continue
        for probe in probes:
            if (probe.on in FAR_TARGETS) != far or (probe.check in blind and lead.kind not in service_kinds):
                continue
            for device in targets(session, probe.on, lead):
                touched.add(device)
                if search.run(probe.check, device, f"{lead.kind} {lead.lead} -> skill {family}"):
                    touched |= far_ends(search, device)
                    found = search.candidates()
                    if search.explains(found):
                        yield found
                        return
        if far or not any(p.on in FAR_TARGETS for p in skill(family).probes):
            search.record_tried(family)
        found = search.candidates()
        if search.explains(found):
            yield found
            return
        queue = [f for f in redirects(session, touched) if f not in started] + queue
        yield []


def applies(session: Session, family: str, check: str = "") -> bool:
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


def far_ends(search: Search, device: str) -> set[str]:
    """A router or switch port without carrier: its link's other end is where the cause is (a port set down
    there, a crashed host); its interfaces are looked at next. Only links with one other device on them. The
    devices looked at."""
    session = search.session
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
                search.run("interfaces", others[0], f"far end of {device} {iface.ifname}")
                looked.add(others[0])
    return looked
