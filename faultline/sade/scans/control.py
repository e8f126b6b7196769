"""Phase B — control plane and traffic control: FRR state and configuration, kernel routes, qdiscs.

The equivalents of SADE's ospf_snapshot / bgp_snapshot (from `show running-config`: daemons
reachable, BGP AS and `network` statements, OSPF networks and areas, Null0 statics; each compared
with the baseline's running configuration when there is one), a kernel-route check for blackholes
the routing daemons did not put there, and tc_snapshot (non-default qdiscs against the baseline, and every
shaper's load: a queue that holds packets, drops).
"""

from __future__ import annotations

import re

from faultline.network.devices import Device
from faultline.network.probes import ProbeOutput
from faultline.network.records import QdiscStats
from faultline.sade.scans import routing_config
from faultline.sade.scans.changes import Change
from faultline.sade.scans.common import flag, foreign_on_lo, ipv4, same_subnet
from faultline.sade.session import Session

SCAN_FRR, SCAN_TC = "frr_snapshot", "tc_snapshot"
SHAPERS = {"tbf", "htb", "hfsc", "cake", "cbq", "netem"}
MIN_DROPS, DROP_SHARE = 50, 0.1  # a shaper dropping at least 50 packets and a tenth of what it sent
DEFAULT_QDISCS = {"noqueue", "fq_codel", "mq", "pfifo_fast", "pfifo", "bfifo", "ingress", "clsact"}
_NETWORK = re.compile(r"^\s*network (\S+)(?: area (\S+))?", re.MULTILINE)
_NULL0 = re.compile(r"^ip route (\S+) (?:Null0|blackhole)", re.MULTILINE)


def parse_config(text: str) -> dict:
    """The parts of an FRR running configuration the fingerprints use."""
    info: dict = {"bgp_as": None, "bgp_networks": [], "ospf": False, "ospf_networks": [], "null0": [],
                  "interface_areas": [], "bgp_redistribute": []}
    block = None
    for line in text.splitlines():
        if line.startswith("router bgp"):
            block, info["bgp_as"] = "bgp", line.split()[2] if len(line.split()) > 2 else None
        elif line.startswith("router ospf"):
            block, info["ospf"] = "ospf", True
        elif line.startswith("router ") or line.startswith("interface "):
            block = line.split()[0]
        elif line.strip() == "exit" and not line.startswith(" "):
            block = None
        m = _NETWORK.match(line)
        if m and block == "bgp":
            info["bgp_networks"].append(m.group(1))
        elif m and block == "ospf":
            info["ospf_networks"].append((m.group(1), m.group(2)))
        if block == "bgp" and line.strip().startswith("redistribute "):
            info["bgp_redistribute"].append(line.split()[1])
        if block == "interface" and "ip ospf area" in line:
            info["interface_areas"].append(line.split()[-1])
    info["null0"] = _NULL0.findall(text)
    return info


def _frr(session: Session, dev: Device) -> None:
    if dev.role != "router":
        return
    out = session.probe("vtysh_show", dev=dev.name, command="show running-config", note="FRR running configuration")
    if out is None:
        return
    rec = out.record
    if rec.error or rec.daemon_down or "Current configuration" not in out.raw:
        flag(session, SCAN_FRR, dev, "frr_unreachable", (rec.error or out.raw.strip())[:200], family="frr")
        return
    now = parse_config(out.raw)
    base_out = session.baseline("vtysh_show", dev=dev.name, command="show running-config")
    base = parse_config(base_out.raw) if base_out and "Current configuration" in base_out.raw else None
    if base and base["bgp_as"] and now["bgp_as"] and base["bgp_as"] != now["bgp_as"]:
        flag(session, SCAN_FRR, dev, "bgp_as_changed",
             f"router bgp {now['bgp_as']} (baseline router bgp {base['bgp_as']})", family="bgp", vs_baseline=True)
    if base and base["bgp_as"] == now["bgp_as"]:
        gone = [n for n in base["bgp_networks"] if n not in now["bgp_networks"]]
        if gone:
            flag(session, SCAN_FRR, dev, "bgp_network_removed", "network statements gone: " + ", ".join(gone),
                 family="bgp", vs_baseline=True, prefixes=gone)
    if now["bgp_as"] and base is None:
        routing_config.peer_as_check(session, dev, now["bgp_as"])
    if now["ospf"] and base is None:
        routing_config.passive_links(session, dev, out.raw)
        routing_config.area_mismatch(session, dev)
    routing_config.config_changes(session, dev)
    if now["bgp_as"] and not now["bgp_networks"] and not base:
        flag(session, SCAN_FRR, dev, "bgp_network_removed", f"router bgp {now['bgp_as']} announces no network",
             family="bgp", prefixes=[])
    for prefix in now["null0"]:
        # announced by a network statement, or by redistributing the static routes it is one of
        how = (f"network {prefix}" if prefix in now["bgp_networks"] else
               "redistribute static" if "static" in now["bgp_redistribute"] else None)
        if how:
            flag(session, SCAN_FRR, dev, "bgp_null0_announced", f"ip route {prefix} Null0 + {how}",
                 family="bgp", prefix=prefix)
    for prefix in now["bgp_networks"]:
        if _lo_foreign(session, dev, prefix):
            flag(session, SCAN_FRR, dev, "bgp_foreign_announced", f"network {prefix} (a prefix bound to lo, not this "
                 "router's own subnet)", family="bgp", prefix=prefix)
    if now["bgp_as"] and "connected" in now["bgp_redistribute"]:
        # every connected prefix is announced, the loopback's too: a foreign one there is announced as well
        for prefix in _lo_prefixes(session, dev):
            if foreign_on_lo(session, dev, prefix):
                flag(session, SCAN_FRR, dev, "bgp_foreign_announced", f"redistribute connected announces {prefix} "
                     "(bound to lo, not this router's own subnet)", family="bgp", prefix=prefix)
    if now["ospf"] and not now["ospf_networks"] and not now["interface_areas"]:
        flag(session, SCAN_FRR, dev, "ospf_no_network", "router ospf without any network statement", family="ospf")
    if base and now["ospf"] and base["ospf_networks"]:
        areas_now = {a for _, a in now["ospf_networks"]}
        areas_before = {a for _, a in base["ospf_networks"]}
        if now["ospf_networks"] and areas_now != areas_before:
            flag(session, SCAN_FRR, dev, "ospf_area_changed", f"OSPF areas {sorted(areas_now)} (baseline "
                 f"{sorted(areas_before)})", family="ospf", vs_baseline=True, areas=sorted(areas_now - areas_before))




def _lo_prefixes(session: Session, dev: Device) -> list[str]:
    """The addresses on the router's loopback, as the diagnosis has read them ([] before any look at them)."""
    out = session.seen("ip_addr", dev=dev.name)
    lo = next((i for i in out.record.interfaces if i.ifname == "lo"), None) if out is not None else None
    return list(lo.addresses) if lo else []


def _lo_foreign(session: Session, dev: Device, prefix: str) -> bool:
    return prefix in _lo_prefixes(session, dev) and foreign_on_lo(session, dev, prefix)


DROP_TYPES = ("blackhole", "unreachable", "prohibit")


def _kernel_blackholes(session: Session, dev: Device) -> None:
    if dev.role != "router":
        return
    out = session.probe("ip_route", dev=dev.name, note="kernel routes")
    if out is None:
        return
    cfg = session.seen("vtysh_show", dev=dev.name, command="show running-config")
    if cfg is None and any(r.type in DROP_TYPES for r in out.record.routes):
        # whose drop route is it: a Null0 static FRR holds (and may announce) or one set beside it? ask FRR first
        _frr(session, dev)
        cfg = session.seen("vtysh_show", dev=dev.name, command="show running-config")
    null0 = set(parse_config(cfg.raw)["null0"]) if cfg and "Current configuration" in cfg.raw else set()
    for r in out.record.routes:
        if r.type in DROP_TYPES and r.dst not in null0:
            connected = any(same_subnet(a, r.dst.split("/")[0] + "/32") and ipv4(a) and ipv4(a)[1] < 31  # type: ignore[index]
                            for a in dev.addresses)
            flag(session, SCAN_FRR, dev, "kernel_blackhole", f"{r.type} {r.dst} (proto {r.protocol or 'static'}), not "
                 "from FRR", family="bgp", prefix=r.dst, connected=connected)



def blackhole_routes(session: Session, scan: str, dev: Device, out: ProbeOutput, found: list[Change]) -> None:
    """An end device's routes that drop a prefix (blackhole, unreachable, prohibit): with a baseline, those it did
    not have then (`found`, the route changes); without one, those covering an address of this network (an end
    device has no reason to discard traffic to its own network)."""
    added = {c.attrs["prefix"] for c in found if c.after is not None}
    base = session.baseline("ip_route", dev=dev.name)
    for r in out.record.routes:
        if r.type not in DROP_TYPES or r.dst == "default" or (base is not None and r.dst not in added):
            continue
        net = ipv4(r.dst)
        if base is None and not (net and any((p := ipv4(a)) and same_subnet(f"{net[0]}/{net[1]}", p[0] + "/32")
                                             for d in session.devices() for a in d.addresses)):
            continue
        flag(session, scan, dev, "kernel_blackhole", f"{r.type} {r.dst} (proto {r.protocol or 'static'}) on "
             f"{dev.name}", family="bgp", vs_baseline=base is not None, prefix=r.dst, connected=False)


def _qdiscs(session: Session, dev: Device) -> None:
    """Every shaper judged by what it does against the baseline: new (or re-rated) shapers, queues that hold
    packets, drops beyond what the baseline had; any other non-default qdisc by its kind."""
    out = session.probe("tc_qdisc", dev=dev.name, note="queueing disciplines")
    if out is None or out.record.error:
        return
    base = session.baseline("tc_qdisc", dev=dev.name)
    before = {(q.dev, q.handle, q.kind): q for q in base.record.qdiscs} if base and not base.record.error else {}
    for q in out.record.qdiscs:
        if q.dev == "lo":
            continue
        was = before.get((q.dev, q.handle, q.kind))
        if q.kind in SHAPERS:
            _shaper_load(session, dev, q, was)
        if q.kind in DEFAULT_QDISCS or q.dev.startswith("ifb"):
            continue
        rate, rate_was = _rate(q), _rate(was) if was else None
        if was is not None and rate == rate_was:
            continue  # the baseline ran the same qdisc: part of the healthy network
        kind = "tc_netem" if q.kind == "netem" else "tc_shaper" if q.kind in SHAPERS else "tc_other"
        change = f" (baseline rate {rate_was})" if was is not None else ""
        flag(session, SCAN_TC, dev, kind, f"{q.dev}: qdisc {q.kind} {'root' if q.root else 'parent ' + str(q.parent)}"
             f"{' rate ' + rate if rate else ''}{change} (drops {q.drops}, backlog {q.backlog} bytes)", family="tc",
             ifname=q.dev, root=q.root, qdisc=q.kind, vs_baseline=bool(before), **({"rate": rate} if rate else {}))


def _rate(q: QdiscStats) -> str | None:
    """A shaper's configured rate from its options (tc's JSON gives bytes per second), readable."""
    value = q.options.get("rate") if isinstance(q.options, dict) else None
    if isinstance(value, (int, float)) and value > 0:
        bits = value * 8
        return f"{bits / 1e6:g}Mbit" if bits >= 1e6 else f"{bits / 1e3:g}kbit"
    return str(value) if value else None


def _shaper_load(session: Session, dev: Device, q: QdiscStats, was: QdiscStats | None) -> None:
    """What a shaper does with its traffic since the baseline: drops (more arrives than it lets through and its
    queue overflows) or a queue that holds packets (they wait their turn: the link is slower than its load)."""
    since = was if was is not None and was.packets <= q.packets else None
    drops = q.drops - (since.drops if since else 0)
    sent = q.packets - (since.packets if since else 0)
    waited = q.overlimits - (since.overlimits if since else 0)
    if drops >= MIN_DROPS and drops >= DROP_SHARE * sent:
        flag(session, SCAN_TC, dev, "shaper_dropping", f"{q.dev}: qdisc {q.kind} dropped {drops} packets, sent "
             f"{sent} (overlimits {waited}, backlog {q.backlog} bytes){' since the baseline' if since else ''}",
             family="tc", ifname=q.dev, drops=drops, vs_baseline=since is not None)
    elif q.kind != "netem" and (q.backlog > since.backlog and waited >= MIN_DROPS if since else
                                q.backlog > 0 or q.qlen > 0 or waited >= MIN_DROPS):
        # a shaper the baseline ran already queued now and then: only a deeper queue and new waits count
        flag(session, SCAN_TC, dev, "shaper_queueing", f"{q.dev}: qdisc {q.kind} holds {q.qlen} packets "
             f"({q.backlog} bytes) waiting, {waited} overlimits, {drops} drops{' since the baseline' if since else ''}",
             family="tc", ifname=q.dev, backlog=q.backlog, overlimits=waited, vs_baseline=since is not None)


CHECKS = [_frr, _qdiscs, _kernel_blackholes]
