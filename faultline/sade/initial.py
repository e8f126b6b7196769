"""Step 1 — the initial scan: reachability matrix and a service canary, classified into symptoms and leads.

Failing pairs and failing or newly slow canary URLs are symptoms (a row with no result is not, nor is latency
without a baseline); leads are the devices the pattern points at, most likely owner first. The rules:
docs/sade.md#step-1-initial-scan, docs/sade.md#lead-symptoms.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from faultline.network.devices import Device
from faultline.sade.scans.common import (
    IPV4_TEXT,
    behind,
    flag,
    gateway_router,
    owner_of,
)
from faultline.sade.scans.host import dhcp_client
from faultline.sade.session import Session

SCAN = "reachability_scan"
MAX_CANARY_URLS = 6  # every service URL of the lab scenarios (4 web servers and a load balancer's VIP)
SLOW_FACTOR, SLOW_MIN_S = 3.0, 0.5
# a request "slow" against its baseline: over 3x and 100 ms more (the recorded healthy incidents vary by at
# most 26 ms; 0.5 s alone missed a load balancer answering in 0.24 s instead of 0.007 s)
SLOW_EXTRA_S = 0.1
SLOW_PAIR_S = 1.0  # without a baseline, a round trip this long between two hosts of the network is a symptom


@dataclass
class Symptoms:
    """What the initial scan saw: failing pairs, failing service checks, and the ordered leads."""

    failing: list[tuple[str, str, str]] = field(default_factory=list)  # (src, dst, status)
    slow: list[tuple[str, str]] = field(default_factory=list)  # pairs that answer, far slower than they should
    services: list[tuple[str, str]] = field(default_factory=list)  # (url, problem)
    resolved_in_time: set[str] = field(default_factory=set)  # slow URLs whose name lookup was not the slow part
    # failing URL -> the devices its failure depends on, when the record says: its server (by address), or
    # every name server when the name did not resolve
    depends_on: dict[str, set[str]] = field(default_factory=dict)
    unresolved: set[str] = field(default_factory=set)  # failing URLs whose name the user's resolver never answered
    timed_out_resolved: set[str] = field(default_factory=set)  # URLs whose name resolved, then the connection timed out
    source: str | None = None  # the user position the canary asked from
    leads: list[str] = field(default_factory=list)
    no_lease: list[str] = field(default_factory=list)  # users whose DHCP request no server answered

    @property
    def any(self) -> bool:
        return bool(self.failing or self.slow or self.services or self.no_lease)


def initial_scan(session: Session) -> Symptoms:
    """Reachability, then up to four URLs from the first user position; symptoms and leads."""
    out = session.probe("reachability", note="who reaches whom (every end host pair)")
    sym = Symptoms()
    if out is not None:
        rows = out.record.rows
        for r in rows:
            if r.status == "error" and r.rx == 0:
                continue  # no result at all: untested, not a symptom (SADE's `unknown` rule)
            if r.status != "ok":
                sym.failing.append((r.src, r.dst, r.status))
        sym.slow = _slow_pairs(session, rows)
        _pair_leads(session, rows, sym)
    if not sym.failing:
        _canary(session, sym)  # service checks matter when the network itself looks fine
        _lease_canary(session, sym)
    return sym


def _lease_canary(session: Session, sym: Symptoms, note: str = "service canary: a DHCP lease") -> None:
    """On a network whose hosts take their addresses from DHCP, one read-only lease request from the canary's
    user: a dead or unreachable DHCP server shows nowhere else while the leases handed out before still last."""
    src = session.device(sym.source) if sym.source else _user_position(session)
    if src is None or not dhcp_client(session, src):
        return
    out = session.probe("dhcp_check", src=src.name, note=note)
    if out is not None and out.record.status == "no_lease":
        sym.no_lease.append(src.name)


def _pair_leads(session: Session, rows: list, sym: Symptoms) -> None:
    total: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    partial: Counter[str] = Counter()
    for r in rows:
        total[r.src] += 1
        total[r.dst] += 1
        if r.status != "ok":
            bad[r.src] += 1
            bad[r.dst] += 1
            if r.status == "loss" and 0 < r.loss < 100:
                partial[r.src] += 1
                partial[r.dst] += 1
    if not bad:
        if sym.slow:  # every pair answers, some far too slowly: the device in most of them is the lead
            _slow_leads(session, sym)
        return
    isolated = [d for d in total if bad[d] >= 0.8 * total[d] and bad[d] >= 2]
    groups: dict[str, list[str]] = defaultdict(list)
    for name in isolated:
        gw = gateway_router(session, session.device(name))
        groups[gw.name if gw else ""].append(name)
    leads: list[str] = []
    # a whole group behind one gateway is an upstream cascade: the gateway first
    for gw, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if gw and len(members) >= 2 and len(members) >= len(behind(session, {gw})):
            leads.append(gw)
    leads += sorted(isolated, key=lambda d: (-bad[d] / max(total[d], 1), -bad[d], d))
    for gw, _members in groups.items():
        if gw and gw not in leads:
            leads.append(gw)
    leads += [d for d, _ in partial.most_common() if d not in leads]
    leads += [d for d, _ in bad.most_common() if d not in leads]
    sym.leads = leads
    for name in isolated:
        flag(session, SCAN, session.device(name), "isolated", f"{bad[name]}/{total[name]} pairs with {name} fail",
             strength="weak")
    unstable = _unstable(session, rows, partial)
    top = max(unstable.values(), default=0)
    for name, score in unstable.items():
        if score and score == top:
            flag(session, SCAN, session.device(name), "partial_loss", f"{name}: intermittent (partial loss, one-way "
                 "failures or latency far above the baseline)", family="link", strength="weak", ifname="eth0")


def _slow_pairs(session: Session, rows: list) -> list[tuple[str, str]]:
    """Pairs that answer far slower than they should: over 100x and 100 ms above their baseline round trip, or,
    without a baseline, above the network's own typical pair (the median round trip of every answering pair:
    what the rest of the network shows) - or over SLOW_PAIR_S whatever the others do."""
    base = session.baseline("reachability")
    before = {(r.src, r.dst): r for r in base.record.rows} if base else {}
    rtts = sorted(r.rtt for r in rows if r.status == "ok" and r.rtt)
    typical = rtts[len(rtts) // 2] if rtts else None
    out = []
    for r in rows:
        if r.status != "ok" or not r.rtt:
            continue
        b = before.get((r.src, r.dst))
        ref = b.rtt if b is not None and b.rtt else (typical if base is None else None)
        if (ref and r.rtt > max(100 * ref, 100)) or r.rtt > SLOW_PAIR_S * 1000:
            out.append((r.src, r.dst))
    # more than half the pairs slow is the network's normal (a long-haul network), not a symptom, without a baseline
    return out if base is not None or len(out) * 2 < len(rtts) else []


def _slow_leads(session: Session, sym: Symptoms) -> None:
    counts = Counter(d for pair in sym.slow for d in pair)
    top = max(counts.values())
    sym.leads = [d for d, n in counts.most_common() if n == top] + [d for d, n in counts.most_common() if n < top]
    for name, n in counts.items():
        if n == top:
            flag(session, SCAN, session.device(name), "partial_loss", f"{name}: {n} pairs answer far slower than "
                 "their baseline (latency, no loss)", family="link", strength="weak", ifname="eth0")


def _unstable(session: Session, rows: list, partial: Counter[str]) -> dict[str, int]:
    """Per device: pairs lossy in part, failing one way only, or far slower than the baseline."""
    score: Counter[str] = Counter(partial)
    status = {(r.src, r.dst): r for r in rows}
    base = session.baseline("reachability")
    before = {(r.src, r.dst): r for r in base.record.rows} if base else {}
    for (src, dst), r in status.items():
        back = status.get((dst, src))
        if back is not None and (r.status == "ok") != (back.status == "ok"):
            score[src] += 1
            score[dst] += 1
        b = before.get((src, dst))
        if r.status == "ok" and r.rtt and b is not None and b.rtt and r.rtt > max(100 * b.rtt, 100):
            score[src] += 1
            score[dst] += 1
    return dict(score)


def service_canary_from(session: Session, user: str, limit: int = MAX_CANARY_URLS,
                        note: str = "service canary", lease: bool = False) -> Symptoms:
    """The service canary from the user position `user`: what a user whose own network works sees of the
    services (at most `limit` pages), and with `lease` its DHCP lease request when it is a DHCP client."""
    sym = Symptoms()
    _canary(session, sym, session.device(user), limit, note)
    if lease:
        sym.source = user
        _lease_canary(session, sym, f"{note}: a DHCP lease")
    return sym


def _canary(session: Session, sym: Symptoms, src: Device | None = None, limit: int = MAX_CANARY_URLS,
            note: str = "service canary") -> None:
    urls = session.backend.urls[:limit]
    src = src or _user_position(session)
    if not urls or src is None:
        return
    sym.source = src.name
    for url in urls:
        out = session.probe("http_get", src=src.name, url=url, note=note)
        if out is None:
            continue
        rec = out.record
        base = session.baseline("http_get", src=src.name, url=url)
        slow = (rec.status == "ok" and base is not None and base.record.time_total_s and rec.time_total_s
                and rec.time_total_s > max(SLOW_FACTOR * base.record.time_total_s,
                                           base.record.time_total_s + SLOW_EXTRA_S))
        if rec.status != "ok" or slow:
            problem = rec.status if rec.status != "ok" else f"slow {rec.time_total_s:.2f}s"
            sym.services.append((url, problem))
            owner = _url_owner(session, rec) or _resolved_owner(session, src, rec)
            if owner and owner not in sym.leads:
                sym.leads.append(owner)
            silent = _resolver_silent(rec)
            if silent:
                sym.unresolved.add(url)
            elif rec.status == "timeout" and rec.time_namelookup_s:
                sym.timed_out_resolved.add(url)
            if rec.status == "dns_error" or silent:
                sym.depends_on[url] = {d.name for d in session.devices("dns")}
            elif owner and rec.status != "ok":
                sym.depends_on[url] = {owner}
            lookup = rec.time_namelookup_s or 0
            if slow and lookup <= max(SLOW_FACTOR * (base.record.time_namelookup_s or 0), SLOW_MIN_S):
                sym.resolved_in_time.add(url)
            if rec.status != "dns_error" and base is not None and _lookup_alone_slow(rec, base.record):
                for dns in session.devices("dns"):
                    flag(session, SCAN, dns, "dns_slow", f"{src.name}: name lookup for {url} took {lookup:.2f}s "
                         f"(baseline {base.record.time_namelookup_s or 0:.2f}s), the rest of the request "
                         f"{(rec.time_total_s or 0) - lookup:.2f}s", family="dns", lookup_s=lookup)
            if rec.status == "dns_error" or lookup > SLOW_MIN_S:
                for dns in session.devices("dns"):
                    if dns.name not in sym.leads:
                        sym.leads.append(dns.name)
            if src.name not in sym.leads:
                sym.leads.append(src.name)
            if silent:
                break  # every further name from this user goes to the same silent resolver: nothing new to see


def resolve_dependence(session: Session, sym: Symptoms, note: str) -> None:
    """For each failing page whose name resolved but whose server curl never reached (no address to tell it
    by), ask the user's resolver which address the name has: the device that owns it is what the page
    depends on."""
    for url, _ in sym.services:
        if url in sym.depends_on or url in sym.unresolved or sym.source is None or _url_address(url):
            continue
        owners = _name_owners(session, sym.source, url, note)
        if owners:
            sym.depends_on[url] = owners


def _resolved_owner(session: Session, src: Device, rec) -> str | None:
    """For a page that failed after its name resolved but whose server curl cannot say (a refused or reset
    connection leaves no address), the device the user's resolver names for it (one `dig`)."""
    if rec.status in ("ok", "dns_error") or _resolver_silent(rec) or _url_address(rec.url):
        return None
    owners = _name_owners(session, src.name, rec.url, "which server the failing page needs")
    return owners.pop() if len(owners) == 1 else None


def _name_owners(session: Session, src: str, url: str, note: str) -> set[str]:
    """The devices owning the addresses `src`'s resolver gives the URL's name (one `dig`)."""
    from urllib.parse import urlsplit

    out = session.probe("dig", src=src, name=urlsplit(url).hostname or "", note=note)
    answers = out.record.answers if out is not None and out.record.status == "NOERROR" else []
    return {d.name for a in answers if a.rtype == "A" and (d := owner_of(session, a.data))}


def _resolver_silent(rec) -> bool:
    """The request timed out before the name lookup finished: the user's resolver never answered (curl
    reports no lookup time when it gave up while resolving)."""
    return rec.status == "timeout" and not rec.time_namelookup_s and not rec.time_connect_s


def _lookup_alone_slow(rec, base) -> bool:
    """The name lookup far slower than the baseline while the rest of the request is not: the DNS answer
    is late, not the client or the web server (a starved client is slow at every step)."""
    lookup, before = rec.time_namelookup_s or 0, base.time_namelookup_s or 0
    rest = (rec.time_total_s or 0) - lookup
    rest_before = (base.time_total_s or 0) - before
    return lookup > max(SLOW_FACTOR * before, SLOW_MIN_S) and rest <= max(SLOW_FACTOR * rest_before, SLOW_MIN_S)


def _user_position(session: Session) -> Device | None:
    from faultline.network.snapshot import client_positions

    names = client_positions(session.devices())
    return session.device(names[0]) if names else None


def _url_owner(session: Session, rec) -> str | None:
    """The device that serves the page: by the address curl connected to, else by an address in the URL."""
    ip = rec.remote_ip or _url_address(rec.url)
    d = owner_of(session, ip) if ip else None
    return d.name if d else None


def _url_address(url: str) -> str | None:
    """The IPv4 address a URL names as its host (http://10.1.2.10/), None for a name."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    return host if IPV4_TEXT.fullmatch(host) else None
