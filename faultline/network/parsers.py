"""Parsers from raw command output to records: pure functions, never raise on bad input.

Each takes the captured text (and the identity fields the record needs) and returns a record; output
it cannot understand becomes the record's `error`, so recorded outputs can be replayed in tests.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from faultline.network import records as r

_PING_COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) received")
_PING_LOSS = re.compile(r"([\d.]+)% packet loss")
_PING_RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_MS = re.compile(r"^\d+(\.\d+)?$")


def _first_line(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else None


def parse_ping(src: str, dst_ip: str, stdout: str, stderr: str = "", timed_out: bool = False) -> r.PingResult:
    """Summary lines of `ping -q`; status from the counts (see `PingResult`)."""
    counts, loss, rtt = _PING_COUNTS.search(stdout), _PING_LOSS.search(stdout), _PING_RTT.search(stdout)
    if timed_out:
        return r.PingResult(src=src, dst_ip=dst_ip, status="timeout", error="probe timed out")
    if not counts:
        err = _first_line(stderr) or _first_line(stdout) or "no ping summary"
        status = "unreachable" if "unreachable" in err.lower() else "error"
        return r.PingResult(src=src, dst_ip=dst_ip, status=status, error=err)
    tx, rx = int(counts.group(1)), int(counts.group(2))
    status = "ok" if tx and rx >= tx else ("unreachable" if rx == 0 else "loss")
    fields: dict[str, Any] = {}
    if rtt:
        fields = dict(zip(("rtt_min_ms", "rtt_avg_ms", "rtt_max_ms", "rtt_mdev_ms"), map(float, rtt.groups())))
    return r.PingResult(src=src, dst_ip=dst_ip, tx=tx, rx=rx, status=status,
                        loss_pct=float(loss.group(1)) if loss else (100.0 * (tx - rx) / tx if tx else 100.0),
                        **fields)


def _is_ip(token: str) -> bool:
    try:
        ipaddress.ip_address(token)
    except ValueError:
        return False
    return True


def parse_traceroute(src: str, dst_ip: str, stdout: str, stderr: str = "") -> r.TracerouteResult:
    """`traceroute -n` hop lines: responders and RTTs per TTL; `*` is a lost probe."""
    hops: list[r.TracerouteHop] = []
    for line in stdout.splitlines():
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            continue
        addresses: list[str] = []
        rtts: list[float] = []
        for i, token in enumerate(tokens[1:], start=1):
            if _is_ip(token) and token not in addresses:
                addresses.append(token)
            elif _MS.match(token) and i + 1 < len(tokens) and tokens[i + 1] == "ms":
                rtts.append(float(token))
        hops.append(r.TracerouteHop(ttl=int(tokens[0]), addresses=addresses, rtts_ms=rtts))
    reached = bool(hops) and dst_ip in hops[-1].addresses
    error = None if hops else (_first_line(stderr) or "no traceroute hops")
    return r.TracerouteResult(src=src, dst_ip=dst_ip, hops=hops, reached=reached, error=error)


def _load_json(text: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except (json.JSONDecodeError, ValueError) as exc:
        return None, f"unparseable JSON: {exc}"


def parse_interfaces(device: str, stdout: str) -> r.InterfaceList:
    """`ip -j [-s] addr|link show`."""
    data, error = _load_json(stdout)
    if error or not isinstance(data, list):
        return r.InterfaceList(device=device, interfaces=[], error=error or "expected a JSON list")
    out = []
    for item in data:
        stats = item.get("stats64") or item.get("stats") or {}
        rx, tx = stats.get("rx", {}), stats.get("tx", {})
        out.append(r.Interface(
            ifname=item.get("ifname", "?"), ifindex=int(item.get("ifindex", 0)),
            operstate=item.get("operstate", "UNKNOWN"), flags=list(item.get("flags", [])),
            mtu=item.get("mtu"), mac=item.get("address"), master=item.get("master"),
            peer=str(item["link"]) if "link" in item else (str(item["link_index"]) if "link_index" in item else None),
            addresses=[f"{a['local']}/{a['prefixlen']}" for a in item.get("addr_info", []) if "local" in a],
            rx_packets=rx.get("packets"), rx_errors=rx.get("errors"), rx_dropped=rx.get("dropped"),
            tx_packets=tx.get("packets"), tx_errors=tx.get("errors"), tx_dropped=tx.get("dropped"),
            # `ip -s -s` puts it among the transmit counters; some versions beside the flags
            carrier_changes=tx.get("carrier_changes", item.get("carrier_changes")),
        ))
    return r.InterfaceList(device=device, interfaces=out)


def parse_routes(device: str, stdout: str) -> r.RouteTable:
    """`ip -j route show`."""
    data, error = _load_json(stdout)
    if error or not isinstance(data, list):
        return r.RouteTable(device=device, routes=[], error=error or "expected a JSON list")
    routes = [r.Route(
        dst=item.get("dst", "?"), gateway=item.get("gateway"), dev=item.get("dev"),
        protocol=item.get("protocol"), scope=item.get("scope"), prefsrc=item.get("prefsrc"),
        metric=item.get("metric"), type=item.get("type"),
        nexthops=[hop["gateway"] for hop in item.get("nexthops", []) if "gateway" in hop],
    ) for item in data]
    return r.RouteTable(device=device, routes=routes)


def parse_neighbors(device: str, stdout: str) -> r.NeighborTable:
    """`ip -j neigh show`."""
    data, error = _load_json(stdout)
    if error or not isinstance(data, list):
        return r.NeighborTable(device=device, neighbors=[], error=error or "expected a JSON list")
    return r.NeighborTable(device=device, neighbors=[
        r.Neighbor(dst=item.get("dst", "?"), dev=item.get("dev"), lladdr=item.get("lladdr"),
                   state=list(item.get("state", []))) for item in data])


def parse_qdiscs(device: str, stdout: str) -> r.QdiscTable:
    """`tc -s -j qdisc show`."""
    data, error = _load_json(stdout)
    if error or not isinstance(data, list):
        return r.QdiscTable(device=device, qdiscs=[], error=error or "expected a JSON list")
    qdiscs = [r.QdiscStats(
        dev=item.get("dev", "?"), kind=item.get("kind", "?"), handle=item.get("handle"),
        parent=item.get("parent"), root=bool(item.get("root", False)),
        options=item.get("options") or {},
        **{k: int(item.get(k, 0)) for k in ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")},
    ) for item in data]
    return r.QdiscTable(device=device, qdiscs=qdiscs)
