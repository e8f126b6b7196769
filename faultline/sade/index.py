"""Step 3 — the fault index: the initial scan's symptoms classified, and each mapped to skill families.

`classify` turns the reachability matrix and the service canary into lead symptoms (kind + the device
they implicate, most specific first). `families_for` reads `prompts/skills/index.yml` (`index_file`): the
families to try for a symptom kind; `redirects`: the redirection rules a flag triggers. `targets` resolves a
skill probe's `on:` (lead, gateway, peers, routers, lan, senders, clients, dhcp, dns, lb) to devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faultline.sade.index_file import load_index
from faultline.sade.initial import Symptoms
from faultline.sade.scans.common import behind, gateway_router, is_end, same_subnet
from faultline.sade.session import Session


@dataclass
class LeadSymptom:
    """One symptom to resolve: its kind, the device it implicates and the devices failing with it."""

    kind: str
    lead: str
    peers: list[str] = field(default_factory=list)


def families_for(kind: str) -> list[str]:
    return list(load_index().symptoms.get(kind, []))


def redirects(session: Session, devices: set[str]) -> list[str]:
    """Families the flags on `devices` point at (the index's disambiguation rules)."""
    kinds = {f.kind for f in session.flags if f.device in devices} | {
        k for f in session.flags if f.device in devices for k, v in f.attrs.items() if v is True}
    return [r.family for r in load_index().rules if r.flag in kinds]


def classify(session: Session, sym: Symptoms) -> list[LeadSymptom]:
    """Lead symptoms, most specific first: isolated groups, isolated devices, unstable devices, scattered
    failures, failing services."""
    out: list[LeadSymptom] = []
    isolated = [f.device for f in session.flags if f.kind == "isolated" and f.device]
    unstable = [f.device for f in session.flags if f.kind == "partial_loss" and f.device]
    by_gw: dict[str, list[str]] = {}
    for name in isolated:
        gw = gateway_router(session, session.device(name))
        if gw is not None:
            by_gw.setdefault(gw.name, []).append(name)
    grouped: set[str] = set()
    for gw, members in by_gw.items():
        if len(members) >= 2 and behind(session, {gw}) <= set(members):
            out.append(LeadSymptom("group_isolated", gw, members))
            grouped.update(members)
    for name in isolated:
        if name not in grouped:
            out.append(LeadSymptom("host_isolated", name, _failing_with(sym, name)))
    for name in unstable:
        if name not in isolated:
            out.append(LeadSymptom("unstable", name, _failing_with(sym, name)))
    if sym.failing and not out:
        counts: dict[str, int] = {}
        for src, dst, _ in sym.failing:
            counts[src] = counts.get(src, 0) + 1
            counts[dst] = counts.get(dst, 0) + 1
        lead = max(sorted(counts), key=lambda d: counts[d])
        out.append(LeadSymptom("scattered", lead, _failing_with(sym, lead)))
    for url, problem in sym.services:
        owner = next((lead for lead in sym.leads if session.device(lead).role in ("web", "lb")), None)
        kind = ("service_unresolved" if url in sym.unresolved else
                "service_timeout_after_lookup" if url in sym.timed_out_resolved else "service_failure")
        if problem.startswith("slow"):
            kind = "service_slow_after_lookup" if url in sym.resolved_in_time else "service_slow"
        lead = owner or sym.leads[0] if sym.leads else ""
        # the other devices the failing request passed through (the user's own position, DNS) are its peers
        out.append(LeadSymptom(kind, lead, [d for d in sym.leads if d != lead]))
    if sym.no_lease and (server := next(iter(session.devices("dhcp")), None)):
        # no peers: the user's own faults do not stop a server from answering a DHCP request
        out.append(LeadSymptom("service_no_lease", server.name, []))
    return [x for x in out if x.lead]


def _failing_with(sym: Symptoms, name: str) -> list[str]:
    peers: list[str] = []
    for src, dst, _ in sym.failing:
        other = dst if src == name else src if dst == name else None
        if other and other not in peers:
            peers.append(other)
    return peers


def targets(session: Session, on: str, lead: LeadSymptom) -> list[str]:
    """Devices a skill probe runs on, for this lead symptom."""
    dev = session.device(lead.lead)
    if on == "lead":
        return [dev.name]
    if on == "gateway":
        if dev.role in ("router", "switch"):
            return [dev.name]
        gw = gateway_router(session, dev)
        return [gw.name] if gw else []
    if on == "peers":
        # a device cut off from every peer: a fault on one peer would explain one pair, not the isolation
        if lead.kind == "host_isolated" and len(lead.peers) > 1:
            return []
        return lead.peers[:2]
    if on == "senders":
        return lead.peers[:3]
    if on == "routers":
        gw = targets(session, "gateway", lead)
        return gw + [d.name for d in session.devices("router") if d.name not in gw]
    if on == "lan":
        return [d.name for d in session.devices() if is_end(d) and d.name != dev.name and dev.addresses and d.addresses
                and same_subnet(dev.addresses[0], d.addresses[0])]
    if on == "clients":
        return [d.name for d in session.devices("host", "client")]
    return [d.name for d in session.devices(on)]  # a role: dhcp, dns, lb, web
