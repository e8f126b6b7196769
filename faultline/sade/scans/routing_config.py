"""Phase B's reading of an FRR running configuration beyond its own lines: what changed since the baseline, and,
without a baseline, what the rest of the network says of it (a BGP peer's view of the AS numbers, the other end
of an OSPF link).

With a baseline, every changed statement is a finding (`faultline.sade.scans.changes`); the ones a skill explains
get their own kind: a neighbour's remote AS (`bgp_neighbor_as_changed`), OSPF made passive on an interface that
faces another router (`ospf_passive_link`), an OSPF network gone (`ospf_network_removed`) or moved to another
area (`ospf_area_changed`), OSPF timers changed on such a link (`ospf_timers_changed`); the rest stay general
`config_changed` findings. Without one, the same faults show as a disagreement between both ends.
"""

from __future__ import annotations

import re

from faultline.network.devices import Device
from faultline.sade.scans.changes import Change, changes, flag_changes
from faultline.sade.scans.common import flag, ipv4, owner_of, same_subnet
from faultline.sade.session import Session

SCAN = "frr_snapshot"
RUNNING = "show running-config"
_NEIGHBOR_AS = re.compile(r"^\s*neighbor (\S+) remote-as (\S+)", re.MULTILINE)
_ROUTER_BGP = re.compile(r"^router bgp (\S+)", re.MULTILINE)
_PASSIVE_IFACE = re.compile(r"^interface (\S+)\n((?: .*\n)*?) ip ospf passive\b", re.MULTILINE)
_OSPF_NET = re.compile(r"^\s+network (\S+) area (\S+)", re.MULTILINE)
_PASSIVE_STMT = re.compile(r"^\s+passive-interface (\S+)", re.MULTILINE)
# topics whose changes the interpreters below handle (or the running-config check itself: the router's AS, a
# BGP network gone)
_OWN = {"bgp_as", "bgp_network"}


def config_changes(session: Session, dev: Device) -> None:
    """Every statement of the router's running configuration that changed since the baseline, as findings."""
    rest: list[Change] = []
    down = _daemons_down(session, dev)
    found = [c for c in changes(session, "vtysh_show", dev=dev.name, command=RUNNING) if _protocol(c) not in down]
    moved = _areas_moved(session, dev, found)
    for c in found:
        topic, section, stmt = c.attrs["topic"], c.attrs["section"], c.attrs["statement"]
        ifname = section.split()[1] if section.startswith("interface ") else stmt.split()[-1]
        if topic in _OWN:
            continue
        if topic == "bgp_neighbor_as" and c.after is not None:
            flag(session, SCAN, dev, "bgp_neighbor_as_changed", c.evidence(), family="bgp", vs_baseline=True,
                 peer_ip=stmt.split()[1], before=c.before, after=c.after)
        elif topic == "ospf_passive" and c.change == "added" and (peer := link_peer(session, dev, ifname)):
            flag(session, SCAN, dev, "ospf_passive_link", f"{c.evidence()} (faces {peer.name})", family="ospf",
                 vs_baseline=True, ifname=ifname, peer=peer.name)
        elif topic == "bgp_export_policy" and c.after is not None:
            # an outbound filter on a session: what it lets out is decided by a list the baseline did not apply
            flag(session, SCAN, dev, "bgp_export_filtered", c.evidence(), family="bgp", vs_baseline=True,
                 peer_ip=stmt.split()[1])
        elif topic == "ospf_network" and c.change == "removed" and stmt in moved:
            if moved[stmt] is not None:
                flag(session, SCAN, dev, "ospf_area_changed", moved[stmt], family="ospf", vs_baseline=True,
                     areas=[moved[stmt].split()[-1]])
        elif topic == "ospf_area" and c.change == "added" and any(a is not None for a in moved.values()):
            continue  # read with the network statement it replaced
        elif topic == "ospf_network" and c.change == "removed":
            flag(session, SCAN, dev, "ospf_network_removed", c.evidence(), family="ospf", vs_baseline=True,
                 prefix=stmt.split()[1])
        elif topic in ("ospf_network", "ospf_area") and c.change == "changed":
            flag(session, SCAN, dev, "ospf_area_changed", c.evidence(), family="ospf", vs_baseline=True,
                 areas=[c.after.split()[-1]] if c.after else [])
        elif topic == "ospf_timers" and (peer := link_peer(session, dev, ifname)):
            flag(session, SCAN, dev, "ospf_timers_changed", f"{c.evidence()} (faces {peer.name})", family="ospf",
                 vs_baseline=True, ifname=ifname, peer=peer.name)
        else:
            rest.append(c)
    flag_changes(session, dev, rest)


def _daemons_down(session: Session, dev: Device) -> set[str]:
    """The protocols whose whole `router` block left the running configuration since the baseline and whose daemon
    says it is not running: `show running-config` is assembled from the daemons that answer, so a stopped daemon's
    statements vanish with it - that is the daemon down, not its configuration removed."""
    from faultline.sade.scans import daemons

    now = session.seen("vtysh_show", dev=dev.name, command=RUNNING)
    base = session.baseline("vtysh_show", dev=dev.name, command=RUNNING)
    if now is None or base is None or "Current configuration" not in base.raw:
        return set()
    if not daemons.protocols(base.raw) - daemons.protocols(now.raw):
        return set()
    daemons._routing_daemons(session, dev)
    return {str(f.attrs.get("protocol")) for f in session.flags if f.device == dev.name
            and f.kind == "routing_daemon_down"}


def _protocol(c: Change) -> str | None:
    """The routing protocol a configuration change belongs to (its router block, or an interface's `ip ospf`)."""
    section, stmt = c.attrs.get("section") or "", c.attrs.get("statement") or ""
    for proto in ("bgp", "ospf", "rip"):
        if section.startswith(f"router {proto}") or stmt.startswith(f"ip {proto}") or \
                str(c.attrs.get("topic") or "").startswith(f"{proto}_"):
            return proto
    return None


def _areas_moved(session: Session, dev: Device, found: list[Change]) -> dict[str, str | None]:
    """Network statements removed whose subnet an interface now puts in OSPF itself (`ip ospf area` added): the
    same subnet in the same area is a rewrite (None: nothing to say), in another area a moved area (the
    evidence). Keyed by the removed statement."""
    added = {c.attrs["section"].split()[1]: c.attrs["statement"].split()[-1] for c in found
             if c.attrs["topic"] == "ospf_area" and c.change == "added" and c.attrs["section"].startswith("interface ")}
    out: dict[str, str | None] = {}
    for c in found:
        if c.attrs["topic"] != "ospf_network" or c.change != "removed":
            continue
        words = c.attrs["statement"].split()  # network PREFIX area AREA
        prefix, area = words[1], words[-1]
        for ifname, new_area in added.items():
            iface = _interface(session, dev, ifname)
            if iface and any(same_subnet(prefix, a) or same_subnet(a, prefix) for a in iface.addresses):
                out[c.attrs["statement"]] = None if new_area == area else (
                    f"network {prefix} area {area} -> interface {ifname}: ip ospf area {new_area}")
    return out


def _interface(session: Session, dev: Device, ifname: str):
    """One interface as the baseline (free) or what the diagnosis already read shows it; None when neither does."""
    out = session.baseline("ip_addr", dev=dev.name) or session.seen("ip_addr", dev=dev.name)
    return next((i for i in out.record.interfaces if i.ifname == ifname), None) if out else None


def _router_on(session: Session, dev: Device, addr: str) -> Device | None:
    """Another router with an address in the subnet of `addr` (one of `dev`'s)."""
    if not ipv4(addr) or ipv4(addr)[1] >= 32:  # type: ignore[index]
        return None
    return next((o for o in session.devices("router")
                 if o.name != dev.name and any(same_subnet(addr, a) for a in o.addresses)), None)


def link_peer(session: Session, dev: Device, ifname: str) -> Device | None:
    """The other router on the link of one interface; None on a LAN of end devices, a loopback, or when the
    interface's addresses are not known without asking."""
    iface = _interface(session, dev, ifname) if ifname != "lo" else None
    return next((p for a in (iface.addresses if iface else []) if (p := _router_on(session, dev, a))), None)


def passive_links(session: Session, dev: Device, text: str) -> None:
    """Without a baseline: an OSPF-passive interface that faces another router (no hello, so no adjacency, on a
    link whose only purpose is one); a passive interface on a LAN of end devices is the usual setting. Where the
    interfaces' addresses are not known, more passive interfaces than LANs (subnets no other router is on) says
    one of them faces a router."""
    names = [n for n in [m.group(1) for m in _PASSIVE_IFACE.finditer(text)] + _PASSIVE_STMT.findall(text)
             if n != "lo"]
    known = [n for n in names if _interface(session, dev, n) is not None]
    for ifname in known:
        if (peer := link_peer(session, dev, ifname)) is not None:
            flag(session, SCAN, dev, "ospf_passive_link", f"interface {ifname}: ip ospf passive, but it faces "
                 f"{peer.name}", family="ospf", ifname=ifname, peer=peer.name)
    if known:
        return
    lans = [a for a in dev.addresses if ipv4(a) and ipv4(a)[1] < 32 and _router_on(session, dev, a) is None]  # type: ignore[index]
    if len(names) > len(lans):
        flag(session, SCAN, dev, "ospf_passive_link", f"ip ospf passive on {len(names)} interfaces "
             f"({', '.join(names)}), but {dev.name} has {len(lans)} LAN(s): the others face routers", family="ospf",
             ifname=names[-1] if len(lans) == 0 else None, peer=None)


def _expects(session: Session, router: Device, of: Device) -> str | None:
    """The remote AS `router`'s configuration (if the diagnosis has read it) gives its neighbour `of`."""
    cfg = session.seen("vtysh_show", dev=router.name, command=RUNNING)
    if cfg is None:
        return None
    mine = {p[0] for a in of.addresses if (p := ipv4(a))}
    return next((asn for ip, asn in _NEIGHBOR_AS.findall(cfg.raw) if ip in mine), None)


def _votes(session: Session, subject: Device, actual: str, skip: Device) -> tuple[int, int]:
    """How many of `subject`'s other BGP peers (configurations already read) expect its AS (agree, disagree)."""
    cfg = session.seen("vtysh_show", dev=subject.name, command=RUNNING)
    others = [p for ip, _ in _NEIGHBOR_AS.findall(cfg.raw) if cfg
              if (p := owner_of(session, ip)) is not None and p.role == "router" and p.name != skip.name]
    expected = [e for p in others if (e := _expects(session, p, subject)) is not None]
    if not expected and others:
        # no other peer's configuration read yet: ask one (the vote otherwise stays a tie)
        session.probe("vtysh_show", dev=others[0].name, command=RUNNING, note="another peer's view of the AS")
        expected = [e for e in [_expects(session, others[0], subject)] if e is not None]
    return sum(e == actual for e in expected), sum(e != actual for e in expected)


def _dispute(session: Session, speaker: Device, subject: Device, expected: str, actual: str) -> None:
    """`speaker`'s neighbour statement gives `subject` AS `expected`; `subject` runs `actual`. Which end is wrong
    is decided by `subject`'s other peers: one that agrees with `actual` puts the fault in the statement, all of
    them disagreeing put it in the AS; with no other peer either could be, and both are named."""
    agree, disagree = _votes(session, subject, actual, speaker)
    said = f"{speaker.name} has neighbor remote-as {expected} for {subject.name}, which runs router bgp {actual}"
    if agree or not disagree:
        flag(session, SCAN, speaker, "bgp_neighbor_as_mismatch", said, family="bgp", peer=subject.name,
             expected=expected, actual=actual)
    if disagree or not agree:
        flag(session, SCAN, subject, "bgp_as_changed", said, family="bgp", peer=speaker.name)


def peer_as_check(session: Session, dev: Device, local_as: str) -> None:
    """Without a baseline: one BGP peer's configuration (one probe) against this router's, both ways: the AS the
    peer expects of this router, and the AS this router expects of the peer."""
    out = session.seen("vtysh_show", dev=dev.name, command=RUNNING)
    if out is None:
        return
    for peer_ip, expected in _NEIGHBOR_AS.findall(out.raw):
        peer = owner_of(session, peer_ip)
        if peer is None or peer.role != "router":
            continue
        cfg = session.probe("vtysh_show", dev=peer.name, command=RUNNING, note="peer's view of our AS")
        if cfg is None:
            return
        peer_as = m.group(1) if (m := _ROUTER_BGP.search(cfg.raw)) else None
        theirs = _expects(session, peer, dev)
        if theirs is not None and theirs not in (local_as, "internal", "external"):
            _dispute(session, peer, dev, theirs, local_as)
        if peer_as and expected not in (peer_as, "internal", "external"):
            _dispute(session, dev, peer, expected, peer_as)
        return


def _ospf_networks(session: Session, router: Device) -> list[tuple[str, str]]:
    cfg = session.seen("vtysh_show", dev=router.name, command=RUNNING)
    return _OSPF_NET.findall(cfg.raw) if cfg and "router ospf" in cfg.raw else []


def area_mismatch(session: Session, dev: Device) -> None:
    """Without a baseline: both ends of each OSPF link whose configurations the diagnosis has read (no probe). Two
    ends in different areas form no adjacency; the end whose area no other router uses is the one that moved
    (when both areas are in use elsewhere, either could be, and nothing is said)."""
    mine = _ospf_networks(session, dev)
    areas = {r.name: {a for _, a in _ospf_networks(session, r)} for r in session.devices("router")}
    for prefix, area in mine:
        if not ipv4(prefix) or ipv4(prefix)[1] >= 32 or (peer := _router_on(session, dev, prefix)) is None:  # type: ignore[index]
            continue
        theirs = next((a for p, a in _ospf_networks(session, peer) if same_subnet(p, prefix.split("/")[0] + "/32")),
                      None)
        if theirs is None or theirs == area:
            continue
        for end, other, wrong, right in ((dev, peer, area, theirs), (peer, dev, theirs, area)):
            used = [r for r, a in areas.items() if r != end.name and wrong in a]
            if not used and any(right in a for r, a in areas.items() if r not in (dev.name, peer.name)):
                flag(session, SCAN, end, "ospf_area_mismatch", f"network {prefix}: area {wrong} on {end.name}, area "
                     f"{right} on {other.name} (no other router uses area {wrong})", family="ospf",
                     areas=[wrong], peer=other.name)
