"""Phase A — L2 and infrastructure: interfaces, addresses, MACs, neighbour tables, packet filters.

The equivalents of SADE's infra_sweep and l2_snapshot for one device: `ip addr` (interfaces present,
admin/carrier state, IPv4 addresses against the directory, MACs against the baseline and the other
devices), `ip neigh` (static/foreign ARP entries), the packet filter as the kernel runs it (nft, with the
rules iptables-nft wrote decoded by `iptables -S` when nft hides their options, and legacy iptables): each rule
that blocks judged by what it matches and whether it takes all the packets or a share, new ones against the
baseline.
"""

from __future__ import annotations

from faultline.network.devices import Device
from faultline.network.filters import merged_rules, through_jumps
from faultline.network.records import FilterRule
from faultline.network.validate import IPTABLES_TABLES
from faultline.sade.scans.common import (
    flag,
    foreign_on_lo,
    gateway_router,
    ipv4,
    is_end,
    owner_of,
    same_subnet,
    unreached,
)
from faultline.sade.session import Session

SCAN = "l2_snapshot"
SKIP_IFACES = ("lo",)


def _read_interfaces(session: Session, dev: Device) -> dict | None:
    """The device's interfaces by name (one `ip addr`), None when it cannot be read."""
    out = session.probe("ip_addr", dev=dev.name, note="interfaces, state, addresses")
    if out is None or unreached(session, SCAN, dev, out):
        return None
    # the management interface is how Faultline reaches the device, not part of the network diagnosed
    return {i.ifname: i for i in out.record.interfaces if i.ifname not in dev.management}


def _interfaces(session: Session, dev: Device) -> None:
    now = _read_interfaces(session, dev)
    if now is None:
        return
    base = session.baseline("ip_addr", dev=dev.name)
    before = {i.ifname: i for i in base.record.interfaces if i.ifname not in dev.management} if base else {}
    for name, _iface in before.items():
        if name not in now and not name.startswith("ifb"):
            flag(session, SCAN, dev, "iface_missing", f"{name} present in the baseline, absent now", family="link",
                 vs_baseline=True, ifname=name)
    if not before and is_end(dev) and "eth0" not in now:
        flag(session, SCAN, dev, "iface_missing", "no eth0 on an end device", family="link", ifname="eth0")
    for name, iface in now.items():
        if name in SKIP_IFACES:
            continue
        if name.startswith("ifb"):
            flag(session, SCAN, dev, "ifb_present", f"{name}: an ifb device (ingress redirection)", family="tc",
                 ifname=name)
            continue
        state = f"{name}: operstate={iface.operstate} flags={','.join(iface.flags)}"
        if "UP" not in iface.flags and not (before.get(name) and "UP" not in before[name].flags):
            # a switch port is nobody's fault by itself: the device behind it went down (host_crash)
            kind = "switch_port_down" if dev.role == "switch" else "iface_admin_down"
            flag(session, SCAN, dev, kind, state, family="link", ifname=name)
        elif "UP" in iface.flags and "LOWER_UP" not in iface.flags:
            flag(session, SCAN, dev, "iface_no_carrier", state, family="link", ifname=name)
        b = before.get(name)
        if b is not None and b.mac and iface.mac and b.mac != iface.mac:
            other = _mac_owner(session, iface.mac, dev)
            flag(session, SCAN, dev, "mac_changed", f"{name}: link/ether {iface.mac} (baseline {b.mac})",
                 family="mac", vs_baseline=True, ifname=name, mac=iface.mac, other=other)
        elif iface.mac and (other := _mac_owner(session, iface.mac, dev, baseline=b is None)):
            # an interface the baseline did not have: its MAC against every device's in the baseline (free) too
            flag(session, SCAN, dev, "mac_changed", f"{name}: link/ether {iface.mac} also on {other}", family="mac",
                 ifname=name, mac=iface.mac, other=other)
    if is_end(dev) and dev.addresses:
        _addresses(session, dev, now)
    _carrier_changes(session, dev, now)
    if dev.role in ("router", "switch") and "lo" in now:
        for addr in now["lo"].addresses:
            if foreign_on_lo(session, dev, addr):
                flag(session, SCAN, dev, "lo_foreign_prefix", f"lo: inet {addr} (not in the device's addressing)",
                     family="bgp", prefix=addr)


# carrier changes above the baseline's that make a link flapping: down, up and down again, or one bounce (down and
# up) on a link that is up now (a plain link down adds one); without a baseline, twice as many in all
FLAPS_DOWN, FLAPS_UP = 3, 2


def _link_counters(session: Session, dev: Device) -> None:
    """The link counters whatever the interfaces show (the own-device look: a link that flaps behind a filter
    that already cuts the device off shows no loss of its own)."""
    now = _read_interfaces(session, dev)
    if now is not None:
        _carrier_changes(session, dev, now, always=True)


def _carrier_changes(session: Session, dev: Device, now: dict, *, always: bool = False) -> None:
    """A link that goes down and up: its carrier-change counter far above the baseline's. Read (one `ip -s link`)
    only when this look saw a link down or without carrier, or the device loses part of its traffic (or `always`):
    a flapping link caught in its down phase reads as down, and in its up phase as loss now and then."""
    odd = any(session.has(kind, dev.name) for kind in ("iface_admin_down", "iface_no_carrier", "switch_port_down",
                                                       "partial_loss"))
    if not odd and not always:
        return
    out = session.probe("link_counters", dev=dev.name, note="link counters (carrier changes)")
    if out is None:
        return
    base = session.baseline("link_counters", dev=dev.name)
    before = {i.ifname: i.carrier_changes or 0 for i in base.record.interfaces} if base else {}
    # some of this device's pairs answered in part during the sweep: a link down now was up moments ago
    answered_in_part = session.has("partial_loss", dev.name)
    for iface in out.record.interfaces:
        if iface.ifname in SKIP_IFACES or iface.ifname in dev.management or iface.carrier_changes is None:
            continue
        if base is not None and iface.ifname not in before:
            continue  # an interface the baseline did not have (renamed, new): its counter started elsewhere
        extra = iface.carrier_changes - before.get(iface.ifname, 0)
        up = "LOWER_UP" in iface.flags
        least = FLAPS_UP if up else (1 if answered_in_part else FLAPS_DOWN)
        if extra >= least and (base is not None or iface.carrier_changes >= 2 * max(least, FLAPS_UP)):
            end = _far_end_user(session, dev, now.get(iface.ifname))
            flag(session, SCAN, dev, "iface_flapping", f"{iface.ifname}: carrier changed {iface.carrier_changes} "
                 f"times (baseline {before.get(iface.ifname, 'unknown')})", family="link", ifname=iface.ifname,
                 end=end or dev.name)


def _far_end_user(session: Session, dev: Device, iface) -> str | None:
    """The one end device on the subnet of a router's interface (the user whose link this is), else None."""
    if iface is None or is_end(dev):
        return None
    nets = [a for a in iface.addresses if ipv4(a)]
    ends = {d.name for d in session.devices() if is_end(d) and d.addresses
            for a in nets if same_subnet(a, d.addresses[0])}
    return ends.pop() if len(ends) == 1 else None


def _addresses(session: Session, dev: Device, now: dict) -> None:
    expected = ipv4(dev.addresses[0])
    eth = now.get("eth0")
    if eth is None or expected is None:
        return
    # the address moved onto another interface of the host (a macvlan, vlan or bond on top of eth0) is not missing
    holder = next((i for i in now.values() if i.ifname not in SKIP_IFACES
                   and any(ipv4(a) == expected for a in i.addresses)), None)
    if holder is not None and holder.ifname != "eth0":
        return
    seen = [p for a in eth.addresses if (p := ipv4(a))]
    if not seen:
        flag(session, SCAN, dev, "no_ipv4", f"eth0 has no IPv4 address (expected {dev.addresses[0]})", family="host_ip",
             ifname="eth0", dhcp_client=dev.role == "host" and bool(session.devices("dhcp")))
        return
    if any(p == expected for p in seen):
        return
    ip, plen = seen[0]
    text = f"eth0: inet {ip}/{plen} (expected {expected[0]}/{expected[1]})"
    if ip == expected[0]:
        flag(session, SCAN, dev, "netmask_wrong", text, family="host_ip", ifname="eth0", prefixlen=plen)
        return
    other = owner_of(session, ip)
    if other is not None and other.name != dev.name:
        flag(session, SCAN, dev, "ip_duplicate", text + f"; {ip} belongs to {other.name}", family="host_ip",
             ifname="eth0", other=other.name)
    else:
        flag(session, SCAN, dev, "ip_wrong", text, family="host_ip", ifname="eth0")


def _mac_owner(session: Session, mac: str, dev: Device, *, baseline: bool = True) -> str | None:
    """Another device carrying this MAC: in the baseline (free) first, else in what this diagnosis has seen."""
    for source in ((session.baseline, session.seen) if baseline else (session.seen,)):
        for d in session.devices():
            out = source("ip_addr", dev=d.name) if d.name != dev.name else None
            if out and any(i.mac == mac for i in out.record.interfaces if i.ifname != "lo"):
                return d.name
    return None


def _neighbours(session: Session, dev: Device) -> None:
    if not is_end(dev):
        return
    out = session.probe("ip_neigh", dev=dev.name, note="ARP cache")
    if out is None:
        return
    for n in out.record.neighbors:
        if n.dev in dev.management:
            continue  # how Faultline reaches the device, not a path of the network diagnosed
        if "PERMANENT" in n.state or "NOARP" in n.state:
            flag(session, SCAN, dev, "arp_static", f"{n.dst} lladdr {n.lladdr} {' '.join(n.state)} dev {n.dev}",
                 family="host_ip", ip=n.dst, lladdr=n.lladdr)
    _neighbour_macs(session, dev, out.record.neighbors)
    states = [n for n in out.record.neighbors if n.dst and ":" not in n.dst and n.dev not in dev.management]
    if states and all({"INCOMPLETE", "FAILED"} & set(n.state) for n in states):
        flag(session, SCAN, dev, "arp_unresolved", "every IPv4 neighbour INCOMPLETE/FAILED", strength="weak")


def _neighbour_macs(session: Session, dev: Device, neighbours: list) -> None:
    """An ARP entry, of any state, that maps an address to another MAC than the one its owner carries: against the
    baseline's entry for the same address (free), else, for the first hop only, the MACs the owner's own interface
    list shows (read when not yet seen). A forged entry is refreshed as often as the real one expires."""
    base = session.baseline("ip_neigh", dev=dev.name)
    before = {n.dst: n.lladdr for n in base.record.neighbors if n.lladdr} if base is not None else {}
    gateway = gateway_router(session, dev)
    for n in neighbours:
        if not n.lladdr or not n.dst or ":" in n.dst or n.dev in dev.management:
            continue
        if n.dst in before:
            if before[n.dst] != n.lladdr:
                flag(session, SCAN, dev, "arp_static", f"{n.dst} lladdr {n.lladdr} {' '.join(n.state)} dev {n.dev} "
                     f"(baseline {before[n.dst]})", family="host_ip", ip=n.dst, lladdr=n.lladdr, vs_baseline=True)
            continue
        owner = owner_of(session, n.dst)
        if base is not None or owner is None or gateway is None or owner.name != gateway.name:
            continue
        macs = _macs_of(session, owner)
        if macs and n.lladdr not in macs:
            flag(session, SCAN, dev, "arp_static", f"{n.dst} lladdr {n.lladdr} {' '.join(n.state)} dev {n.dev} "
                 f"({owner.name} carries {', '.join(sorted(macs))})", family="host_ip", ip=n.dst, lladdr=n.lladdr)


def _macs_of(session: Session, dev: Device) -> set[str]:
    out = session.seen("ip_addr", dev=dev.name) or session.probe("ip_addr", dev=dev.name, note="its MACs (an ARP "
                                                                 "entry for it)")
    return {i.mac for i in out.record.interfaces if i.mac} if out is not None else set()


_SERVICES = (("acl_bgp", {179}, ("tcp", None)), ("acl_dns", {53}, ("udp", "tcp", None)),
             ("acl_http", {80, 443}, ("tcp", None)))


def _ports(values: list[str]) -> list[tuple[int, int]]:
    """Port ranges a match selects (negated ones select everything else: left out)."""
    out = []
    for v in values:
        lo, _, hi = v.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.append((int(lo), int(hi or lo)))
    return out


def classify_rule(rule: FilterRule) -> str:
    """What a rule that drops or rejects everything it matches blocks (SADE's acl fingerprints)."""
    if rule.family == "arp" or rule.protocol == "arp":  # an arp table, or ARP frames matched by their ether type
        return "acl_arp"
    if rule.length or "length" in rule.unknown:
        return "acl_length"
    if rule.protocol == "ospf":
        return "acl_ospf"
    ranges = _ports(rule.dports + rule.sports)
    for kind, ports, protocols in _SERVICES:
        if rule.protocol in protocols and any(lo <= p <= hi for p in ports for lo, hi in ranges):
            return kind
    if rule.protocol in ("icmp", "ipv6-icmp", "icmpv6") or rule.icmp_types:
        return "acl_icmp"
    return "acl_other"


def judge_rule(rule: FilterRule, earlier: list[FilterRule]) -> str | None:
    """The flag a rule raises by what it does to the packets it matches: a share of them dropped (random_drop),
    dropped beyond a rate (rate_limited), handed to a user-space queue (traffic_diverted), or all of a kind blocked
    (acl_*); None for rules that let packets through or only keep the connection table clean."""
    if rule.verdict == "queue":
        return "traffic_diverted"
    if rule.verdict not in ("drop", "reject"):
        return None
    if rule.partial:
        return "random_drop"
    if rule.rate or any(_rate_pass(e, rule) for e in earlier):
        return "rate_limited"
    if rule.ct_state and set(rule.ct_state) <= {"invalid"}:
        return None  # dropping what conntrack cannot place is housekeeping, not a fault
    return classify_rule(rule)


def _rate_pass(before: FilterRule, rule: FilterRule) -> bool:
    """`before` lets the same traffic through up to a rate and `rule` drops the rest: a rate limit in two rules."""
    same = ("protocol", "dports", "sports", "saddr", "daddr", "iif", "oif")
    return (before.verdict == "accept" and bool(before.rate) and not before.rate_over and before.chain == rule.chain
            and before.table == rule.table and all(getattr(before, k) == getattr(rule, k) for k in same))


def _signature(rule: FilterRule) -> tuple:
    """A rule's identity across two listings (counters and the listing it came from aside)."""
    return (rule.family, rule.table, rule.chain, rule.verdict, rule.protocol, tuple(rule.dports), tuple(rule.sports),
            tuple(rule.saddr), tuple(rule.daddr), rule.iif, rule.oif, rule.length, rule.partial, rule.rate)


def device_rules(session: Session, dev: Device) -> list[FilterRule] | None:
    """The device's filter rules as the kernel runs them (nft, iptables-nft decoded, legacy iptables); None when
    the ruleset was not read. `iptables -S` is asked for only when it adds something (see `_iptables_tables`)."""
    out = session.probe("nft_ruleset", dev=dev.name, note="packet filter")
    if out is None or out.record.error:
        return None
    decoded: list[FilterRule] = []
    for table in _iptables_tables(session, dev, out.record.filters):
        ipt = session.probe("iptables_rules", dev=dev.name, table=table, note="iptables rules, decoded")
        if ipt is not None and not ipt.record.error:
            decoded += ipt.record.filters
    return through_jumps(merged_rules(out.record.filters, decoded))


def baseline_rules(session: Session, dev: Device) -> list[FilterRule] | None:
    """The same from the healthy baseline (free), or None without one."""
    out = session.baseline("nft_ruleset", dev=dev.name)
    if out is None or out.record.error:
        return None
    decoded = [f for table in sorted(IPTABLES_TABLES)
               if (ipt := session.baseline("iptables_rules", dev=dev.name, table=table)) and not ipt.record.error
               for f in ipt.record.filters]
    return through_jumps(merged_rules(out.record.filters, decoded))


def _iptables_tables(session: Session, dev: Device, rules: list[FilterRule]) -> list[str]:
    """The iptables tables worth reading: those where nft shows a blocking rule's iptables matches without their
    options, and those the baseline shows the device keeps in legacy iptables (rules no nft table lists)."""
    hidden = {r.table for r in rules if r.family == "ip" and r.table in IPTABLES_TABLES
              and r.verdict in ("drop", "reject", "queue") and any(not u.startswith("target ") for u in r.unknown)}
    legacy = {r.table for r in baseline_rules(session, dev) or [] if r.source == "iptables"}
    return sorted(hidden | legacy)


def _filters(session: Session, dev: Device) -> None:
    rules = device_rules(session, dev)
    if rules is None:
        return
    before = baseline_rules(session, dev)
    known = {_signature(r) for r in before} if before is not None else set()
    for i, rule in enumerate(rules):
        kind = judge_rule(rule, rules[:i])
        if kind is None or _signature(rule) in known:
            continue
        where = f"{rule.family} {rule.table} {rule.chain}: {rule.text}"
        attrs = {"chain": rule.chain, "verdict": rule.verdict, "source": rule.source}
        if rule.oif or rule.iif:
            attrs["ifname"] = (rule.oif or rule.iif or "").lstrip("!")
        if kind == "traffic_diverted":
            flag(session, SCAN, dev, kind, where + " (packets handed to a user-space queue)", family="resource",
                 vs_baseline=before is not None, matches=rule.matches)
            continue
        if rule.share is not None:
            attrs["share"] = round(rule.share, 3)
            where += f" ({rule.share:.0%} of the matching packets)"
        elif rule.partial:
            where += " (a share of the matching packets)"
        if kind == "rate_limited":
            attrs["rate"] = rule.rate
        family = "tc" if kind in ("random_drop", "rate_limited") else "acl"
        flag(session, SCAN, dev, kind, where, family=family, vs_baseline=before is not None, **attrs)


CHECKS = [_interfaces, _filters, _neighbours]  # cheapest-to-most-specific: one probe each
