"""The routes look, the last part of the second look: what the routing tables say about the rest of the network.

Some faults show no user a failing check: a prefix hijacked by a router that answers the pings itself, a redundant
router that lost its sessions or its configuration, a link down on a path with a detour. The routing tables still
show them, because a routing protocol carries every router's state to the others. The look takes the kernel routes
the diagnosis has read on its way to the answer (free; breadth `routes`: `seen`, the default) - or, with
`first_hop`, one user's first hop when it has read none (one probe), or nothing (`off`) - and each difference
is a lead to one router:

- with a baseline: a neighbour the vantage routes nothing through any more (that router, and the vantage itself at
  the session's other end: first when it lost every neighbour); a route that is gone, unless it is the subnet of a
  device the answer names (the router that originated it, found in the baseline's tables); a route that is new (the
  router that originates it);
- without one: a router across a point-to-point link that no route goes through (a routing neighbour carries at
  least its own loopback; the vantage itself first when it is every neighbour), and a prefix more specific than a
  subnet one of the network's end devices sits in (the router that originates it draws that share of the subnet's
  traffic).

A new prefix is followed hop by hop (each router's own kernel routes) to the router where it leaves no next hop.
Each suspect the answer does not name gets the index's `route_suspect_look` checks; a match of another label there
is submitted too. docs/sade.md#the-deterministic-policy (step 7).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from faultline.network.snapshot import client_positions
from faultline.sade.index_file import load_index
from faultline.sade.matcher import Match
from faultline.sade.scans.changes import changes
from faultline.sade.scans.common import gateway_router, ipv4, is_end, owner_of, same_subnet
from faultline.sade.search import Search
from faultline.sade.session import Session

MAX_SUSPECTS = 2  # routers the look examines
MAX_HOPS = 4  # routers a new prefix is followed through to its origin


def routes_look(search: Search, found: list[Match]) -> list[Match]:
    """New matches on the routers the routing tables point at (see the module docstring); [] when the tables show
    nothing the answer does not name."""
    session = search.session
    named = {d for m in found for d in m.devices}
    labels = {m.label for m in found}
    suspects: list[str] = []
    for vantage in _vantages(session, named):
        for name in _suspects(session, vantage, named):
            if name not in named and name not in suspects:
                suspects.append(name)
    for name in suspects[:MAX_SUSPECTS]:
        for check in load_index().route_suspect_look:
            search.run(check, name, f"second look: the routes point at {name}")
            new = [m for m in search.findings() if m.label not in labels and name in m.devices
                   and not set(m.devices) & named]
            if new:
                return new
    return []


def _vantages(session: Session, named: set[str]) -> list[str]:
    """Routers whose kernel routes the diagnosis has read (free); when it has read none and the breadth says
    `first_hop`, the first hop of the first user position the answer does not name (one probe)."""
    read = [d.name for d in session.devices("router") if session.seen("ip_route", dev=d.name) is not None]
    if read or session.breadth.routes != "first_hop":
        return read
    for user in client_positions(session.devices()):
        gateway = gateway_router(session, session.device(user))
        if user not in named and gateway is not None and gateway.role == "router" and gateway.name not in named:
            if session.probe("ip_route", dev=gateway.name, note="second look: the routes of a user's first hop"):
                return [gateway.name]
            return []
    return []


def _hops(route: Any) -> set[str]:
    return {route.gateway} if route.gateway else set(route.nexthops)


def _suspects(session: Session, vantage: str, named: set[str]) -> list[str]:
    """The routers the vantage's routes point at: a neighbour it routes nothing through any more, the origin of a
    route that is gone (found in the baseline's tables, free) unless the route is a named device's subnet, the
    origin of a new prefix, or without a baseline of one narrower than a user subnet; the vantage itself at the
    other end of a lost session."""
    now = session.seen("ip_route", dev=vantage)
    if now is None or now.record.error:
        return []
    out: list[str] = []
    base = session.baseline("ip_route", dev=vantage)
    if base is not None and not base.record.error:
        used_now = {ip for r in now.record.routes for ip in _hops(r)}
        used_then = {ip for r in base.record.routes for ip in _hops(r)}
        lost = [d.name for ip in sorted(used_then - used_now) if (d := owner_of(session, ip)) is not None]
        kept = used_now & {ip for ip in used_then if owner_of(session, ip) is not None}
        out += _session_ends(vantage, lost, every=not kept, named=named)
        for c in changes(session, "ip_route", dev=vantage):
            prefix = c.attrs["prefix"]
            if c.after is None and not _covers(session, prefix, named):
                out += _origin(session, vantage, prefix, baseline=True)
            elif c.before is None:
                out += _origin(session, vantage, prefix)
    else:
        silent = _silent_neighbours(session, vantage, now.record.routes)
        out += _session_ends(vantage, silent, every=len(silent) == len(_link_neighbours(session, now.record.routes)),
                             named=named)
        out += [o for r in now.record.routes if _narrows_a_user_subnet(session, r.dst)
                for o in _origin(session, vantage, r.dst)]
    return [d for d in dict.fromkeys(out) if not is_end(session.device(d))]


def _session_ends(vantage: str, lost: list[str], *, every: bool, named: set[str]) -> list[str]:
    """Suspects for the sessions the vantage lost: a session has two ends, so the vantage itself as well as the
    neighbours - first when it lost every one (one fault of its own explains them all). A loss the answer explains
    (its neighbour named) points nowhere."""
    lost = [n for n in lost if n not in named]
    if not lost:
        return []
    return [vantage, *lost] if every else [*lost, vantage]


def _link_neighbours(session: Session, routes: list[Any]) -> dict[str, list[str]]:
    """The routers at the far end of the vantage's connected point-to-point links (/30, /31): name -> addresses."""
    out: dict[str, list[str]] = {}
    for r in routes:
        p = ipv4(r.dst)
        if r.gateway or r.nexthops or p is None or p[1] < 30 or r.type not in (None, "unicast"):
            continue
        for dev in session.devices("router"):
            ips = [a[0] for x in dev.addresses if (a := ipv4(x)) and same_subnet(r.dst, x)]
            if ips and r.prefsrc not in ips:
                out.setdefault(dev.name, []).extend(ips)
    return out


def _silent_neighbours(session: Session, vantage: str, routes: list[Any]) -> list[str]:
    """Without a baseline: the routers across the vantage's point-to-point links that no route goes through (a
    routing neighbour that carries nothing, not even its own loopback, has lost its session)."""
    used = {ip for r in routes for ip in _hops(r)}
    return sorted(name for name, ips in _link_neighbours(session, routes).items()
                  if name != vantage and not used & set(ips))


def _covers(session: Session, prefix: str, names: set[str]) -> bool:
    """Whether `prefix` holds an address of one of the devices `names`."""
    return any(same_subnet(prefix, addr) for name in names for addr in session.device(name).addresses)


def _narrows_a_user_subnet(session: Session, prefix: str) -> bool:
    """A prefix strictly inside the subnet of an end device's address (a /25 of a /24 host LAN): a share of that
    LAN's traffic drawn elsewhere."""
    p = ipv4(prefix)
    if p is None or prefix == "default":
        return False
    net = ipaddress.IPv4Network(f"{p[0]}/{p[1]}", strict=False)
    for dev in session.devices():
        if not is_end(dev) or not dev.addresses or (a := ipv4(dev.addresses[0])) is None:
            continue
        lan = ipaddress.IPv4Network(f"{a[0]}/{a[1]}", strict=False)
        if net != lan and net.subnet_of(lan) and p[1] < 32:
            return True
    return False


def _origin(session: Session, start: str, prefix: str, *, baseline: bool = False) -> list[str]:
    """The router a prefix leads to from `start`: its next hops followed through each router's kernel routes (one
    probe a router; the baseline's tables, free, for a route that is gone) to the one where the route has no next
    hop (connected, on lo, a static drop) or is missing."""
    at = start
    for _ in range(MAX_HOPS):
        out = (session.baseline("ip_route", dev=at) if baseline
               else session.probe("ip_route", dev=at, note=f"second look: where {prefix} leads"))
        if out is None or out.record.error:
            return [at] if at != start else []
        route = next((r for r in out.record.routes if r.dst == prefix), None)
        if route is None:  # the prefix ends here without a route of its own: on a local address (lo), say
            return [at] if at != start else []
        owners = [d for ip in sorted(_hops(route)) if (d := owner_of(session, ip)) is not None]
        if not owners:
            return [at]
        at = owners[0].name
    return [at]
