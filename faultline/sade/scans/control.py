"""Phase B — control plane and traffic control: FRR state and configuration, kernel routes, qdiscs.

The equivalents of SADE's ospf_snapshot / bgp_snapshot (from `show running-config`: daemons
reachable, BGP AS and `network` statements, OSPF networks and areas, Null0 statics; each compared
with the baseline's running configuration when there is one), a kernel-route check for blackholes
the routing daemons did not put there, and tc_snapshot (non-default root qdiscs).
"""

from __future__ import annotations

import re

from faultline.network.devices import Device
from faultline.network.probes import ProbeOutput
from faultline.sade.scans import routing_config
from faultline.sade.scans.changes import Change
from faultline.sade.scans.common import flag, ipv4, same_subnet
from faultline.sade.session import Session

SCAN_FRR, SCAN_TC = "frr_snapshot", "tc_snapshot"
SHAPERS = {"tbf", "htb", "hfsc", "cake", "cbq", "netem"}
MIN_DROPS, DROP_SHARE = 50, 0.1  # a shaper dropping at least 50 packets and a tenth of what it sent
DEFAULT_QDISCS = {"noqueue", "fq_codel", "mq", "pfifo_fast", "pfifo", "bfifo", "ingress", "clsact"}
_NETWORK = re.compile(r"^\s*network (\S+)(?: area (\S+))?", re.MULTILINE)
_NULL0 = re.compile(r"^ip route (\S+) (?:Null0|blackhole)", re.MULTILINE)


def control_scan(session: Session, dev: Device) -> None:
    """Routers: FRR running configuration and kernel routes; every device: its qdiscs."""
    for check in CHECKS:
        check(session, dev)


def parse_config(text: str) -> dict:
    """The parts of an FRR running configuration the fingerprints use."""
    info: dict = {"bgp_as": None, "bgp_networks": [], "ospf": False, "ospf_networks": [], "null0": [],
                  "interface_areas": []}
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
        if prefix in now["bgp_networks"]:
            flag(session, SCAN_FRR, dev, "bgp_null0_announced", f"ip route {prefix} Null0 + network {prefix}",
                 family="bgp", prefix=prefix)
    for prefix in now["bgp_networks"]:
        if _lo_foreign(session, dev, prefix):
            flag(session, SCAN_FRR, dev, "bgp_foreign_announced", f"network {prefix} (a prefix bound to lo, not this "
                 "router's own subnet)", family="bgp", prefix=prefix)
    if now["ospf"] and not now["ospf_networks"] and not now["interface_areas"]:
        flag(session, SCAN_FRR, dev, "ospf_no_network", "router ospf without any network statement", family="ospf")
    if base and now["ospf"] and base["ospf_networks"]:
        areas_now = {a for _, a in now["ospf_networks"]}
        areas_before = {a for _, a in base["ospf_networks"]}
        if now["ospf_networks"] and areas_now != areas_before:
            flag(session, SCAN_FRR, dev, "ospf_area_changed", f"OSPF areas {sorted(areas_now)} (baseline "
                 f"{sorted(areas_before)})", family="ospf", vs_baseline=True, areas=sorted(areas_now - areas_before))




def _lo_foreign(session: Session, dev: Device, prefix: str) -> bool:
    out = session.seen("ip_addr", dev=dev.name)
    if out is None:
        return False
    lo = next((i for i in out.record.interfaces if i.ifname == "lo"), None)
    return bool(lo and prefix in lo.addresses and not prefix.endswith("/32"))


def _kernel_blackholes(session: Session, dev: Device) -> None:
    if dev.role != "router":
        return
    out = session.probe("ip_route", dev=dev.name, note="kernel routes")
    if out is None:
        return
    cfg = session.seen("vtysh_show", dev=dev.name, command="show running-config")
    null0 = set(parse_config(cfg.raw)["null0"]) if cfg else set()
    for r in out.record.routes:
        if r.type in ("blackhole", "unreachable", "prohibit") and r.dst not in null0:
            connected = any(same_subnet(a, r.dst.split("/")[0] + "/32") and ipv4(a) and ipv4(a)[1] < 31  # type: ignore[index]
                            for a in dev.addresses)
            flag(session, SCAN_FRR, dev, "kernel_blackhole", f"{r.type} {r.dst} (proto {r.protocol or 'static'}), not "
                 "from FRR", family="bgp", prefix=r.dst, connected=connected)


DROP_TYPES = ("blackhole", "unreachable", "prohibit")


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
    out = session.probe("tc_qdisc", dev=dev.name, note="queueing disciplines")
    if out is None:
        return
    for q in out.record.qdiscs:
        if q.kind in SHAPERS and (q.drops or 0) >= MIN_DROPS and (q.drops or 0) >= DROP_SHARE * (q.packets or 0):
            # more arrives than the shaper lets through: it queues to its limit and drops the rest
            flag(session, SCAN_TC, dev, "shaper_dropping", f"{q.dev}: qdisc {q.kind} dropped {q.drops} packets, sent "
                 f"{q.packets} (overlimits {q.overlimits}, backlog {q.backlog} bytes)", family="tc", ifname=q.dev,
                 drops=q.drops)
        if q.kind in DEFAULT_QDISCS or q.dev == "lo" or q.dev.startswith("ifb"):
            continue
        kind = "tc_tbf" if q.kind == "tbf" else "tc_netem" if q.kind == "netem" else "tc_other"
        rate = q.options.get("rate") if isinstance(q.options, dict) else None
        flag(session, SCAN_TC, dev, kind, f"{q.dev}: qdisc {q.kind} {'root' if q.root else 'parent ' + str(q.parent)}"
             f"{' rate ' + str(rate) if rate else ''} (drops {q.drops})", family="tc", ifname=q.dev, root=q.root)


CHECKS = [_frr, _qdiscs, _kernel_blackholes]
