"""Phase C — host-local: the default route and its gateway, resolver configuration, DHCP.

The equivalents of SADE's host_path_snapshot and dhcp_link_history for one end device: `ip route`
(a default route whose gateway is no router of the host's subnet), `resolv.conf` (a nameserver that
is not one of the network's DNS servers), and a read-only DHCP request where the network uses DHCP.
"""

from __future__ import annotations

from faultline.network.devices import Device
from faultline.sade.scans.changes import changes, flag_changes
from faultline.sade.scans.common import flag, ipv4, is_end, owner_of
from faultline.sade.scans.control import DROP_TYPES, blackhole_routes
from faultline.sade.session import Session

SCAN = "host_path_snapshot"


def dhcp_client(session: Session, dev: Device) -> bool:
    """Hosts of a network with a DHCP server take their address, gateway and resolver from it."""
    return dev.role == "host" and bool(session.devices("dhcp"))


def _default_route(session: Session, dev: Device) -> None:
    if not is_end(dev):
        return
    out = session.probe("ip_route", dev=dev.name, note="default route")
    if out is None:
        return
    # the whole table, not only the default: a route that drops a prefix, and what changed since the baseline
    found = changes(session, "ip_route", dev=dev.name)
    blackhole_routes(session, SCAN, dev, out, found)
    flag_changes(session, dev, [c for c in found if c.attrs["type"] not in DROP_TYPES])
    default = next((r for r in out.record.routes if r.dst == "default"), None)
    if default is None:
        if session.has("no_ipv4", dev.name) or session.has("iface_missing", dev.name):
            return  # the missing address already explains it
        flag(session, SCAN, dev, "no_default_route", "no default route", family="host_ip",
             dhcp_client=dhcp_client(session, dev))
        return
    base = session.baseline("ip_route", dev=dev.name)
    before = {(r.dst, r.gateway) for r in base.record.routes} if base else set()
    old_default = next((g for d, g in before if d == "default"), None)
    # every route through a gateway, not only the default: two halves of the address space (0.0.0.0/1 and
    # 128.0.0.0/1) or any more specific route win over the default for what they cover
    for route in out.record.routes:
        gw = route.gateway
        if not gw or (route.dst, gw) in before:
            continue
        owner = owner_of(session, gw)
        if owner is None or owner.role not in ("router", "switch", "lb"):
            shown = "default" if route.dst == "default" else route.dst
            flag(session, SCAN, dev, "gateway_wrong", f"{shown} via {gw} (no router owns it"
                 f"{'; baseline default via ' + old_default if old_default else ''})", family="host_ip", gateway=gw,
                 dhcp_client=dhcp_client(session, dev))


def _resolver(session: Session, dev: Device) -> None:
    if not is_end(dev):
        return
    path = next((p for p in session.backend.files.get(dev.name, []) if p.endswith("/resolv.conf")), None)
    if path is None:
        return
    out = session.probe("read_file", dev=dev.name, path=path, note="resolver configuration")
    if out is None or out.record.error:
        return
    servers = [line.split()[1] for line in out.record.text.splitlines()
               if line.startswith("nameserver") and len(line.split()) > 1]
    dns_ips = {p[0] for d in session.devices("dns") for a in d.addresses if (p := ipv4(a))}
    if not dns_ips:
        return
    foreign = [ip for ip in servers if ip not in dns_ips]
    if foreign:
        flag(session, SCAN, dev, "resolver_foreign", f"{path}: nameserver {' '.join(foreign)} (the network's DNS: "
             f"{' '.join(sorted(dns_ips))})", family="host_ip", servers=foreign, dhcp_client=dhcp_client(session, dev))


def _dhcp(session: Session, dev: Device) -> None:
    if not dhcp_client(session, dev):
        return
    out = session.probe("dhcp_check", src=dev.name, note="read-only DHCP request")
    if out is None:
        return
    if out.record.status == "no_lease":
        flag(session, SCAN, dev, "dhcp_no_lease", f"DHCP on {dev.name}: {out.record.error or 'no lease offered'}",
             family="dhcp", dhcp_client=True)


CHECKS = [_default_route, _resolver, _dhcp]
