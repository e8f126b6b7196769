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
_PASSIVE_STMT = re.compile(r"^\s+passive-interface (\S+)", re.MULTILINE)
# topics whose changes the interpreters below handle (or the running-config check itself: the router's AS, a
# BGP network gone)
_OWN = {"bgp_as", "bgp_network"}


def config_changes(session: Session, dev: Device) -> None:
    """Every statement of the router's running configuration that changed since the baseline, as findings."""
    rest: list[Change] = []
    for c in changes(session, "vtysh_show", dev=dev.name, command=RUNNING):
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


def link_peer(session: Session, dev: Device, ifname: str) -> Device | None:
    """The other router on the link of one interface (the interface's addresses from the baseline, which is
    free, else from what the diagnosis read or one `ip_addr`); None on a LAN of end devices or a loopback."""
    if ifname == "lo":
        return None
    out = session.baseline("ip_addr", dev=dev.name) or session.seen("ip_addr", dev=dev.name) \
        or session.probe("ip_addr", dev=dev.name, note="which interface faces which router")
    iface = next((i for i in out.record.interfaces if i.ifname == ifname), None) if out else None
    for addr in iface.addresses if iface else []:
        if not ipv4(addr):
            continue
        for other in session.devices("router"):
            if other.name != dev.name and any(same_subnet(addr, a) for a in other.addresses):
                return other
    return None


def passive_links(session: Session, dev: Device, text: str) -> None:
    """Without a baseline: an OSPF-passive interface that faces another router (no hello, so no adjacency, on a
    link whose only purpose is one); a passive interface on a LAN of end devices is the usual setting."""
    names = [m.group(1) for m in _PASSIVE_IFACE.finditer(text)] + _PASSIVE_STMT.findall(text)
    for ifname in names:
        peer = link_peer(session, dev, ifname)
        if peer is not None:
            flag(session, SCAN, dev, "ospf_passive_link", f"interface {ifname}: ip ospf passive, but it faces "
                 f"{peer.name}", family="ospf", ifname=ifname, peer=peer.name)


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
    agree = disagree = 0
    for ip, _ in _NEIGHBOR_AS.findall(cfg.raw) if cfg else []:
        peer = owner_of(session, ip)
        if peer is None or peer.name == skip.name or (expected := _expects(session, peer, subject)) is None:
            continue
        agree, disagree = agree + (expected == actual), disagree + (expected != actual)
    return agree, disagree


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
