"""The second look, after stop-and-submit on reachability symptoms: a fault the answer hides.

One fault can hide another's symptom. The isolated devices the answer explains only through their peers get a
look of their own; then the service canary (which the initial scan skips when pairs fail) runs from a position
the answer leaves untouched, and a service failure whose owner the answer does not name is a lead of its own.
A fault found this way in another place is submitted too.
"""

from __future__ import annotations

from faultline.network.snapshot import client_positions
from faultline.sade.index import classify
from faultline.sade.index_file import load_index
from faultline.sade.initial import Symptoms, resolve_dependence, service_canary
from faultline.sade.matcher import Match
from faultline.sade.scans.common import behind
from faultline.sade.search import Search
from faultline.sade.skill_search import skill_search, triage_look

MAX_SUSPECTS = 2  # isolated devices the second look examines itself
SECOND_LOOK_URLS = 1  # the canary of the second look: one request (a name lookup and a page), not a sweep


def second_look(search: Search, sym: Symptoms, found: list[Match]) -> list[Match]:
    """The answer `found`, plus what the second look finds elsewhere (see the module docstring); `found` alone
    when the initial scan saw no failing pair or the answer is only residual."""
    if not sym.failing or not any(not m.fallback for m in found):
        return found
    session, index = search.session, load_index()
    named = {d for m in found for d in m.devices}
    isolated = {f.device for f in session.flags if f.kind == "isolated" and f.device}
    # behind a router the answer names
    cut_off = behind(session, {d for d in named if search.roles.get(d) in index.roles.infrastructure})
    hidden = isolated_look(search, found, isolated - named - cut_off)
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
    return found + extra


def isolated_look(search: Search, found: list[Match], suspects: set[str]) -> list[Match]:
    """Each isolated device the answer explains only through its peers (at most MAX_SUSPECTS) gets the index's
    `isolated_look` checks: a second fault on it shows there. The new matches on the first that shows one."""
    labels = {m.label for m in found}
    named = {d for m in found for d in m.devices}
    for name in sorted(suspects)[:MAX_SUSPECTS]:
        for check in load_index().isolated_look:
            search.run(check, name, f"second look: isolated {name}")
            new = [m for m in search.findings() if m.label not in labels
                   and name in m.devices and not set(m.devices) & named]
            if new:
                return new
    return []
