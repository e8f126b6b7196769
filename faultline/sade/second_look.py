"""The second look, after stop-and-submit on reachability symptoms: a fault the answer hides.

One fault can hide another's symptom. The isolated devices the answer explains only through their peers get a
look of their own; every failing pair the answer cannot explain (neither end named nor cut off by it, nor behind
a router it names) is a lead of its own; then the service canary (which the initial scan skips when pairs fail)
runs from the user positions the answer leaves untouched (`Breadth`: how many, how many pages each), and a
service failure whose owner the answer does not name is a lead of its own; when none of that finds anything, the
routing tables' leads (`route_look`). A fault found this way in another place is submitted too.
docs/sade.md#the-deterministic-policy (step 7).
"""

from __future__ import annotations

from collections import Counter

from faultline.network.snapshot import client_positions
from faultline.sade.index import LeadSymptom, classify
from faultline.sade.index_file import load_index
from faultline.sade.initial import Symptoms, resolve_dependence, service_canary_from
from faultline.sade.matcher import Match
from faultline.sade.route_look import routes_look
from faultline.sade.scans.common import END_ROLES, behind, gateway_router, ipv4, is_end, same_subnet
from faultline.sade.search import Search
from faultline.sade.session import Session
from faultline.sade.skill_search import family_steps, skill_search, triage_look

MAX_SUSPECTS = 2  # isolated devices the second look examines itself
MAX_PAIR_LEADS = 2  # leads drawn from the failing pairs the answer does not explain


def second_look(search: Search, sym: Symptoms, found: list[Match]) -> list[Match]:
    """The answer `found`, plus what the second look finds elsewhere (see the module docstring); `found` alone
    when the answer is only residual."""
    if not any(not m.fallback for m in found):
        return found
    if search.session.breadth.own_device != "off":
        found = found + own_device_look(search, found)
    if search.session.breadth.sweep:
        return found + sweep_look(search, found)
    # after failing pairs, or after an answer whose fault sits on the canary's own user: what the other users see
    more = _users_look(search, sym, found) if sym.failing or sym.source in {m.device for m in found} else []
    if not more and search.session.breadth.routes != "off":
        more = routes_look(search, found)
    return found + more


def _users_look(search: Search, sym: Symptoms, found: list[Match]) -> list[Match]:
    """What the users' failing pairs and pages show that `found` does not explain: the new matches."""
    session, index = search.session, load_index()
    named = {d for m in found for d in m.devices}
    isolated = {f.device for f in session.flags if f.kind == "isolated" and f.device}
    cut_off = cut_off_by(search, found)
    hidden = isolated_look(search, found, isolated - named - cut_off)
    if hidden:
        return hidden
    hidden = unexplained_pairs_look(search, sym, found, cut_off)
    if hidden:
        return hidden
    gone = named | isolated | cut_off
    users = client_positions(session.devices())
    # every user behind the router the answer names: ask from one that still reaches its peers; a page
    # that fails for want of the named devices is told apart below
    avoid = gone if any(u not in gone for u in users) else named | isolated
    seen = _canaries(session, avoid, named)
    if seen is None:
        return []
    resolve_dependence(session, seen, note="second look: which server the page needs")
    if seen.services and all(seen.depends_on.get(url) and seen.depends_on[url] <= gone
                             for url, _ in seen.services) and not seen.no_lease:
        return []  # the pages fail for want of a server (or name server) the answer already cuts off
    leads = [x for x in classify(session, seen) if x.kind in index.service_symptoms and x.lead not in named]
    # the answer's devices would "explain" the new leads at once: matches there count for nothing
    follow = search.follow_up(leads, ignore=named)
    extra: list[Match] = []
    for lead in leads:
        triage_look(follow, lead, "second look: triage")
        more = skill_search(follow, lead)
        extra += [m for m in more if not m.fallback and m.label not in {f.label for f in found}
                  and not set(m.devices) & named and m not in extra]
        if extra:
            break
    return extra


def _dhcp_named(session: Session, named: set[str]) -> bool:
    return any(d.name in named for d in session.devices("dhcp"))


def cut_off_by(search: Search, found: list[Match]) -> set[str]:
    """The end devices the answer's router faults cut off: those behind the router, or - for a fault whose evidence
    names a prefix (a hijack, a leak, a drop route) - those inside the prefix, wherever they sit (the router's own
    LAN is not behind a hijack it makes)."""
    session, infra = search.session, load_index().roles.infrastructure
    out: set[str] = set()
    for m in found:
        if search.roles.get(m.device) not in infra:
            continue
        prefixes = {str(f.attrs["prefix"]) for f in session.flags
                    if f.device == m.device and f.kind in m.kinds and ipv4(str(f.attrs.get("prefix") or ""))}
        if not prefixes:
            out |= behind(session, {d for d in m.devices if search.roles.get(d) in infra})
            continue
        out |= {d.name for d in session.devices() if is_end(d) and d.addresses
                and any(same_subnet(p, d.addresses[0]) for p in prefixes)}
    return out


def _canaries(session: Session, avoid: set[str], named: set[str]) -> Symptoms | None:
    """The second look's service canary from each user position not in `avoid`, up to the session's breadth
    (users, pages each), until one shows a failing page whose leads the answer does not name; None when none does."""
    breadth = session.breadth
    users = [u for u in client_positions(session.devices()) if u not in avoid]
    for i, user in enumerate(users[:breadth.users or None]):
        # one lease request is enough: a DHCP server answers every user or none
        seen = service_canary_from(session, user, limit=breadth.pages, note="second look: service canary",
                                   lease=i == 0)
        if seen.services and not set(seen.leads) & named or seen.no_lease and not _dhcp_named(session, named):
            return seen
    return None


def unexplained_pairs_look(search: Search, sym: Symptoms, found: list[Match], cut_off: set[str]) -> list[Match]:
    """Failing pairs the answer cannot explain become leads of their own (at most MAX_PAIR_LEADS): a pair is
    explained when either end is named or cut off by the answer, or sits behind a router it names - by an answer
    whose label can stop a ping at all (the index's `quiet_on_pings`: a DNS port filter explains no failing
    ping). Only pairs that fail both ways count (lossy or one-way pairs are the noise a loaded network shows: a
    flood's sender, a busy link); a core router in the answer may carry any pair between subnets, so then only
    pairs inside one subnet can be unexplained. Each lead's near look only (its own device and neighbourhood);
    the new matches elsewhere."""
    session, index = search.session, load_index()
    named = {d for m in found for d in m.devices}
    loud = {d for m in found if m.label not in index.quiet_on_pings for d in m.devices}
    routers = {d for d in loud if search.roles.get(d) in index.roles.infrastructure}
    if loud != named:
        cut_off = cut_off_by(search, [m for m in found if m.label not in index.quiet_on_pings])
    gateways = {g.name for d in session.devices() if (g := gateway_router(session, d))}
    core = routers - gateways
    hard = {(src, dst) for src, dst, status in sym.failing if status != "loss"}
    pairs = []
    for src, dst, _status in sym.failing:
        if (dst, src) not in hard or (src, dst) not in hard or src > dst or {src, dst} & (loud | cut_off):
            continue
        ends = [session.device(src), session.device(dst)]
        gws = [g.name if (g := gateway_router(session, d)) else None for d in ends]
        if set(gws) & routers or (core and gws[0] != gws[1]):
            continue
        pairs.append((src, dst))
    if not pairs:
        return []
    counts = Counter(d for pair in pairs for d in pair)
    isolated = {f.device for f in session.flags if f.kind == "isolated"}
    leads = [LeadSymptom("host_isolated" if d in isolated else "scattered", d,
                         [o for pair in pairs if d in pair for o in pair if o != d])
             for d, _ in counts.most_common(MAX_PAIR_LEADS)]
    follow = search.follow_up(leads, ignore=named)
    labels = {m.label for m in found}
    for lead in leads:
        triage_look(follow, lead, "second look: unexplained pairs")
        for _ in family_steps(follow, lead, far=False):
            more = [m for m in follow.findings() if m.label not in labels and not set(m.devices) & named]
            if more:
                return more
    return []


MAX_OWN = 2  # answered devices the own-device look examines


def own_device_look(search: Search, found: list[Match]) -> list[Match]:
    """A second fault on a device the answer already names (a flapping link behind a filter that cuts the host off,
    a shaper beside it, a flood on a shaped server): its end devices (at most MAX_OWN) get a look of their own, and
    another label whose evidence shares nothing with the first (the matcher's rule) is answered too. Breadth
    `own_device`: `silenced` (the default) looks only at a device the answer leaves failing with every peer - a
    fault that silences it hides whatever else is wrong there - with the index's `silenced_look` checks; `always`
    looks at every answered end device with the `own_look` checks (more probes on every answer)."""
    labels = {m.label for m in found}
    index, breadth = load_index(), search.session.breadth.own_device
    named = [d for m in found for d in m.devices if search.roles.get(d) in END_ROLES]
    if breadth == "silenced":
        named = [d for d in named if search.session.has("isolated", d)]
    checks = index.own_look if breadth == "always" else index.silenced_look
    new: list[Match] = []
    for name in list(dict.fromkeys(named))[:MAX_OWN]:
        for check in checks:
            search.run(check, name, f"second look: the answer's own {name}")
        new += [m for m in search.findings() if m.label not in labels | {x.label for x in new}
                and name in m.devices]
    return new


def sweep_look(search: Search, found: list[Match]) -> list[Match]:
    """The widest second look (setting `sade_second_look_sweep`): every phase's checks on every device, as the flat
    scan runs them, and every other label the matcher then finds (on other devices, or a second fault on one).
    It finds the faults no user position shows, for the flat scan's probe count."""
    from faultline.sade.scans import PHASES, scan_phase

    for phase in PHASES:
        scan_phase(search.session, phase)
    labels = {m.label for m in found}
    named = {d for m in found for d in m.devices}
    return [m for m in search.findings() if m.label not in labels
            and (not set(m.devices) & named or m.device in named and m.kinds)]


def isolated_look(search: Search, found: list[Match], suspects: set[str]) -> list[Match]:
    """Each isolated device the answer explains only through its peers (at most MAX_SUSPECTS) gets the index's
    `isolated_look` checks, then its first hop (a router the answer does not name) the `isolated_gateway_look`
    checks: a second fault on it or on the way out of its subnet shows there. The new matches on the first that
    shows one."""
    labels = {m.label for m in found}
    named = {d for m in found for d in m.devices}
    index = load_index()
    for name in sorted(suspects)[:MAX_SUSPECTS]:
        gateway = gateway_router(search.session, search.session.device(name))
        looks = [(check, name) for check in index.isolated_look]
        if gateway is not None and gateway.name not in named:
            looks += [(check, gateway.name) for check in index.isolated_gateway_look]
        for check, device in looks:
            search.run(check, device, f"second look: isolated {name}")
            new = [m for m in search.findings() if m.label not in labels
                   and set(m.devices) & {name, device} and not set(m.devices) & named]
            if new:
                return new
    return []
