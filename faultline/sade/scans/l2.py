"""Phase A — L2 and infrastructure: interfaces, addresses, MACs, neighbour tables, packet filters.

The equivalents of SADE's infra_sweep and l2_snapshot for one device: `ip addr` (interfaces present,
admin/carrier state, IPv4 addresses against the directory, MACs against the baseline and the other
devices), `ip neigh` (static/foreign ARP entries), `nft list ruleset` (drop rules classified by what
they match, packets diverted to a queue).
"""

from __future__ import annotations

from faultline.network.devices import Device
from faultline.sade.scans.common import flag, ipv4, is_end, owner_of, same_subnet, unreached
from faultline.sade.session import Session

SCAN = "l2_snapshot"
SKIP_IFACES = ("lo",)


def l2_scan(session: Session, dev: Device) -> None:
    """Interfaces and addresses, neighbours (end devices), then the packet filter."""
    for check in CHECKS:
        check(session, dev)


def _interfaces(session: Session, dev: Device) -> None:
    out = session.probe("ip_addr", dev=dev.name, note="interfaces, state, addresses")
    if out is None or unreached(session, SCAN, dev, out):
        return
    # the management interface is how Faultline reaches the device, not part of the network diagnosed
    now = {i.ifname: i for i in out.record.interfaces if i.ifname not in dev.management}
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
        elif iface.mac and (other := _mac_owner(session, iface.mac, dev, baseline=False)):
            flag(session, SCAN, dev, "mac_changed", f"{name}: link/ether {iface.mac} also on {other}", family="mac",
                 ifname=name, mac=iface.mac, other=other)
    if is_end(dev) and dev.addresses:
        _addresses(session, dev, now)
    _carrier_changes(session, dev, now)
    if dev.role in ("router", "switch") and "lo" in now:
        expected = {ipv4(a)[0] for a in dev.addresses if ipv4(a)}  # type: ignore[index]
        for addr in now["lo"].addresses:
            p = ipv4(addr)
            if p and p[0] not in expected and p[1] < 32 and not p[0].startswith("127."):
                flag(session, SCAN, dev, "lo_foreign_prefix", f"lo: inet {addr} (not in the device's addressing)",
                     family="bgp", prefix=addr)


FLAPS = 4  # carrier changes above the baseline's (or, without one, in all) that make a link flapping


def _carrier_changes(session: Session, dev: Device, now: dict) -> None:
    """A link that goes down and up: its carrier-change counter far above the baseline's. Read (one `ip -s link`)
    only when this look saw a link down or without carrier, or the device loses part of its traffic: a flapping
    link caught in its down phase reads as down, and in its up phase as loss now and then."""
    odd = any(session.has(kind, dev.name) for kind in ("iface_admin_down", "iface_no_carrier", "switch_port_down",
                                                       "partial_loss"))
    if not odd:
        return
    out = session.probe("link_counters", dev=dev.name, note="link counters (carrier changes)")
    if out is None:
        return
    base = session.baseline("link_counters", dev=dev.name)
    before = {i.ifname: i.carrier_changes or 0 for i in base.record.interfaces} if base else {}
    for iface in out.record.interfaces:
        if iface.ifname in SKIP_IFACES or iface.ifname in dev.management or iface.carrier_changes is None:
            continue
        extra = iface.carrier_changes - before.get(iface.ifname, 0)
        if extra >= FLAPS and (base is not None or iface.carrier_changes >= 2 * FLAPS):
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
    states = [n for n in out.record.neighbors if n.dst and ":" not in n.dst and n.dev not in dev.management]
    if states and all({"INCOMPLETE", "FAILED"} & set(n.state) for n in states):
        flag(session, SCAN, dev, "arp_unresolved", "every IPv4 neighbour INCOMPLETE/FAILED", strength="weak")


def classify_rule(family: str, matches: list[str]) -> str:
    """What a drop rule blocks, by its matches (SADE's acl fingerprints)."""
    text = " ".join(matches)
    if family == "arp":
        return "acl_arp"
    if "numgen" in text:
        return "random_drop"
    if "length" in text:
        return "acl_length"
    if "179" in text and ("dport" in text or "sport" in text):
        return "acl_bgp"
    if "ospf" in text or "protocol == 89" in text:
        return "acl_ospf"
    if "dport == 53" in text or "sport == 53" in text:
        return "acl_dns"
    if "dport == 80" in text or "dport == 443" in text:
        return "acl_http"
    if "icmp" in text:
        return "acl_icmp"
    return "acl_other"


def _filters(session: Session, dev: Device) -> None:
    out = session.probe("nft_ruleset", dev=dev.name, note="packet filter")
    if out is None:
        return
    for rule in out.record.rules:
        where = f"{rule.family} {rule.table} {rule.chain}: {' '.join(rule.matches)} {rule.verdict or ''}".strip()
        verdict = (rule.verdict or "").split(" ")[0]
        if verdict in ("drop", "reject"):
            kind = classify_rule(rule.family, rule.matches)
            oif = next((m.split("==")[1].strip() for m in rule.matches if m.startswith("meta oifname ==")), None)
            flag(session, SCAN, dev, kind, where, family="tc" if kind == "random_drop" else "acl", chain=rule.chain,
                 **({"ifname": oif} if oif else {}))
        elif verdict in ("", "queue") and rule.matches:
            flag(session, SCAN, dev, "traffic_diverted", where + " (packets handed to a user-space queue)",
                 family="resource", matches=rule.matches)


CHECKS = [_interfaces, _filters, _neighbours]  # cheapest-to-most-specific: one probe each
