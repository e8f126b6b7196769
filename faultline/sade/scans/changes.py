"""What changed since the healthy baseline, for any probe a check has read.

One differ per probe compares the baseline's record with today's and returns each difference as a typed `Change`:
a configuration statement (FRR running configuration, service configuration files: dnsmasq, hosts, nginx), a
route of the whole routing table (gone, added, another type or next hop), an interface address, a DNS answer.
`changes(session, probe, **args)` asks the differ for a probe the diagnosis has already read (never the network:
the baseline's answer is free), and says nothing when either side is missing or not recorded. Checks interpret
the changes (which of them a fingerprint explains); `flag_changes` raises the rest as general findings.

Differs register by probe name (`register`), so filters, qdiscs, sockets or processes plug in the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faultline.network.devices import Device
from faultline.network.probes import ProbeOutput
from faultline.sade import frr_config
from faultline.sade.scans.common import flag
from faultline.sade.session import Session

SCAN = "baseline_diff"


@dataclass(frozen=True)
class Change:
    """One difference against the baseline. `kind` is the finding (config_changed, route_changed,
    address_changed, dns_answer_changed); `subject` what changed; `before` None = added, `after` None = removed."""

    kind: str
    subject: str
    before: str | None
    after: str | None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def change(self) -> str:
        return "added" if self.before is None else "removed" if self.after is None else "changed"

    def evidence(self) -> str:
        if self.before is None:
            return f"{self.subject}: + {self.after}"
        if self.after is None:
            return f"{self.subject}: - {self.before}"
        return f"{self.subject}: {self.before} -> {self.after}"


Differ = Callable[[ProbeOutput, ProbeOutput, dict[str, Any]], list[Change]]
DIFFERS: dict[str, Differ] = {}


def register(probe: str) -> Callable[[Differ], Differ]:
    """Register the differ of one probe; a second differ for the same probe is an error."""
    def deco(func: Differ) -> Differ:
        if probe in DIFFERS:
            raise ValueError(f"a differ for probe {probe!r} is already registered ({DIFFERS[probe].__name__})")
        DIFFERS[probe] = func
        return func
    return deco


def changes(session: Session, probe: str, /, **args: Any) -> list[Change]:
    """The differences between the baseline's answer to a probe the diagnosis has read and today's; [] without a
    baseline, without a differ, or when either answer is missing or an error."""
    differ = DIFFERS.get(probe)
    now = session.seen(probe, **args)
    if differ is None or now is None:
        return []
    base = session.baseline(probe, **args)
    if base is None or getattr(base.record, "error", None) or getattr(now.record, "error", None):
        return []
    return differ(base, now, args)


def flag_changes(session: Session, dev: Device, found: list[Change], *, family: str | None = None) -> None:
    """Raise each change as a weak general finding (its `kind`), with what changed in its attrs."""
    for c in found:
        flag(session, SCAN, dev, c.kind, c.evidence(), family=family, strength="weak", vs_baseline=True,
             subject=c.subject, before=c.before, after=c.after, change=c.change, **c.attrs)


def line_changes(kind: str, before: list[str], after: list[str], **attrs: Any) -> list[Change]:
    """Changes between two lists of configuration lines (order ignored; a line that differs in one word changed)."""
    gone = [x for x in before if x not in after]
    new = [x for x in after if x not in before]
    return [Change(kind, attrs.get("path") or attrs.get("section") or "", old, nw, dict(attrs))
            for old, nw in frr_config.pair(gone, new)]


@register("vtysh_show")
def _running_config(base: ProbeOutput, now: ProbeOutput, args: dict[str, Any]) -> list[Change]:
    if args.get("command") != "show running-config":
        return []
    if "Current configuration" not in base.raw or "Current configuration" not in now.raw:
        return []
    return [Change("config_changed", c.section or "(top level)", c.before, c.after,
                   {"daemon": "frr", "section": c.section, "statement": c.statement, "topic": c.topic})
            for c in frr_config.diff(base.raw, now.raw)]


def _route_key(r: Any) -> str:
    return r.dst


def _route_text(r: Any) -> str:
    via = r.gateway or ",".join(r.nexthops)
    return " ".join(x for x in ((r.type if r.type and r.type != "unicast" else ""), r.dst,
                                f"via {via}" if via else "", f"dev {r.dev}" if r.dev else "",
                                f"proto {r.protocol}" if r.protocol else "") if x)


@register("ip_route")
def _routes(base: ProbeOutput, now: ProbeOutput, args: dict[str, Any]) -> list[Change]:
    """Routes by destination: gone, added, or another type, next hop or interface."""
    before = {_route_key(r): r for r in base.record.routes}
    after = {_route_key(r): r for r in now.record.routes}
    out = []
    for dst in sorted(set(before) | set(after)):
        b, a = before.get(dst), after.get(dst)
        if b is not None and a is not None and (b.type, b.gateway, sorted(b.nexthops), b.dev) == \
                (a.type, a.gateway, sorted(a.nexthops), a.dev):
            continue
        out.append(Change("route_changed", f"route {dst}", _route_text(b) if b else None, _route_text(a) if a else None,
                          {"prefix": dst, "type": (a.type if a else None) or "unicast"}))
    return out


@register("ip_addr")
def _addresses(base: ProbeOutput, now: ProbeOutput, args: dict[str, Any]) -> list[Change]:
    """Addresses per interface (an interface gone or back is the interfaces check's finding, not this one)."""
    before = {i.ifname: i.addresses for i in base.record.interfaces}
    after = {i.ifname: i.addresses for i in now.record.interfaces}
    out = []
    for name in sorted(set(before) & set(after)):
        out += line_changes("address_changed", before[name], after[name], section=name, ifname=name)
    return out


_COMMENT = re.compile(r"^\s*(#|;|$)")


@register("read_file")
def _file(base: ProbeOutput, now: ProbeOutput, args: dict[str, Any]) -> list[Change]:
    """A configuration file's lines (comments and blank lines aside): dnsmasq, hosts, nginx. Logs are not
    configuration and are left out."""
    path = str(args.get("path", ""))
    if path.endswith(".log") or base.record.truncated or now.record.truncated:
        return []
    lines = [[x.strip() for x in rec.text.splitlines() if not _COMMENT.match(x)] for rec in (base.record, now.record)]
    return line_changes("config_changed", lines[0], lines[1], path=path, daemon=_daemon(path))


def _daemon(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return "dnsmasq" if "dnsmasq" in name or name == "hosts" else "nginx" if "nginx" in name else name


@register("dig")
def _dns_answers(base: ProbeOutput, now: ProbeOutput, args: dict[str, Any]) -> list[Change]:
    """A name's answer (rcode and records) from one user position."""
    def text(rec: Any) -> str:
        data = sorted(a.data for a in rec.answers if a.rtype in ("A", "AAAA", "CNAME"))
        return f"{rec.status} {' '.join(data)}".strip()
    b, a = text(base.record), text(now.record)
    if b == a:
        return []
    return [Change("dns_answer_changed", f"{args.get('name')} from {args.get('src')}", b, a,
                   {"name": args.get("name"), "src": args.get("src"), "status": now.record.status})]
