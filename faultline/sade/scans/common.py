"""Small helpers the scans share: address arithmetic over the device directory, flag construction."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from faultline.network.devices import Device
from faultline.network.registry import ProbeOutput
from faultline.sade.records import Flag
from faultline.sade.session import Session

END_ROLES = frozenset({"host", "client", "server", "web", "dns", "dhcp", "lb", "backend"})
IPV4_TEXT = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})\b")  # a dotted IPv4 address inside free text


def ipv4(addr: str) -> tuple[str, int] | None:
    """("10.1.0.10", 24) from "10.1.0.10/24"; None for IPv6 or junk."""
    ip, _, plen = addr.partition("/")
    if ":" in ip or not ip:
        return None
    try:
        ipaddress.IPv4Address(ip)
    except ValueError:
        return None
    return ip, int(plen) if plen.isdigit() else 32


def owner_of(session: Session, ip: str) -> Device | None:
    """The device whose configured (directory) addresses include `ip`."""
    for d in session.devices():
        for a in d.addresses:
            parsed = ipv4(a)
            if parsed and parsed[0] == ip:
                return d
    return None


def foreign_on_lo(session: Session, dev: Device, addr: str) -> bool:
    """Whether an address on a router's loopback is not the router's own: a whole subnet, or a single address
    another device of the network owns (its users' traffic for that address then ends here)."""
    p = ipv4(addr)
    if p is None or p[0].startswith("127."):
        return False
    if p[1] < 32:
        return p[0] not in {q[0] for a in dev.addresses if (q := ipv4(a))}
    owner = owner_of(session, p[0])
    return owner is not None and owner.name != dev.name


def same_subnet(a: str, b: str) -> bool:
    """Whether two "ip/len" addresses sit in the same network (by the first one's prefix length)."""
    pa, pb = ipv4(a), ipv4(b)
    if not pa or not pb:
        return False
    net = ipaddress.IPv4Network(f"{pa[0]}/{pa[1]}", strict=False)
    return ipaddress.IPv4Address(pb[0]) in net


def gateway_router(session: Session, dev: Device) -> Device | None:
    """The router (or switch with routing) that shares the device's main subnet: its first hop."""
    if not dev.addresses:
        return None
    for d in session.devices("router", "switch"):
        if any(same_subnet(dev.addresses[0], a) for a in d.addresses):
            return d
    return None


def behind(session: Session, routers: set[str]) -> set[str]:
    """End devices whose first hop is one of `routers`."""
    return {d.name for d in session.devices() if is_end(d) and (g := gateway_router(session, d)) and g.name in routers}


def is_end(dev: Device) -> bool:
    return dev.role in END_ROLES


def flag(session: Session, scan: str, dev: Device | None, kind: str, evidence: str, *, family: str | None = None,
         strength: str = "strong", vs_baseline: bool = False, **attrs: Any) -> None:
    """Raise one flag on the session."""
    phase = session.phase if session.phase in ("A", "B", "C", "D") else "initial"
    session.flag(Flag(scan=scan, phase=phase, device=dev.name if dev else None, kind=kind,  # type: ignore[arg-type]
                      evidence=evidence[:400], family=family,
                      strength=strength, vs_baseline=vs_baseline, attrs=attrs))  # type: ignore[arg-type]


def unreached(session: Session, scan: str, dev: Device, out: ProbeOutput) -> bool:
    """Whether `out` never reached `dev` (its management connection failed); flags `mgmt_unreachable` then.
    The output says nothing about the device's state, so the check stops there."""
    problem = out.result.transport_error if out.result is not None else None
    if problem is None:
        return False
    flag(session, scan, dev, "mgmt_unreachable", f"{dev.name} does not answer on its management address: {problem}",
         family="host_crash")
    return True
