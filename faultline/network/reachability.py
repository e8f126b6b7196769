"""The reachability matrix as one probe: every end host × every target, in NIKA's row format.

Sources and targets default to all devices with an end-host role (host, client, server, web, dns,
dhcp, lb); the destination IP is the target's main address from the directory. Pings run in a small
bounded thread pool; rows come back sorted by (src, dst) whatever order they finished in.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from faultline.network import validate as v
from faultline.network.device_probes import ping
from faultline.network.devices import Device
from faultline.network.records import PingStatus, Record
from faultline.network.registry import ProbeContext, ProbeOutput, register

END_HOST_ROLES = frozenset({"host", "client", "server", "web", "dns", "dhcp", "lb"})
MAX_WORKERS = 4  # the lab machines have 2 cores; pings mostly wait, but keep the fan-out modest


class ReachabilityRow(Record):
    """One (src, dst) pair, as NIKA's get_reachability reports it; `loss` in percent, `rtt` = avg ms."""

    src: str
    dst: str
    dst_ip: str
    tx: int
    rx: int
    loss: float
    rtt: float | None
    status: PingStatus
    error: str | None = None


class ReachabilityMatrix(Record):
    hosts: dict[str, str]  # device -> the IP used as its destination
    rows: list[ReachabilityRow]
    summary: dict[str, int]  # status -> row count
    skipped: list[str] = []  # targets without an address in the directory


def main_ip(device: Device) -> str | None:
    """The first configured address without its prefix length."""
    return device.addresses[0].split("/", 1)[0] if device.addresses else None


def _select(ctx: ProbeContext, names: Any, what: str) -> list[Device]:
    if names is None:
        return [d for d in ctx.directory.devices() if d.role in END_HOST_ROLES]
    if not isinstance(names, (list, tuple)) or not names:
        raise v.ProbeError(f"{what} must be a non-empty list of device names")
    return [v.device(ctx.directory, name) for name in names]


@register("reachability")
def reachability(ctx: ProbeContext, sources: list[str] | None = None, targets: list[str] | None = None,
                 count: int = 2, workers: int = MAX_WORKERS, timeout_s: float | None = None) -> ProbeOutput:
    """Ping every source → every other target `count` times; record `ReachabilityMatrix`."""
    srcs, dsts = _select(ctx, sources, "sources"), _select(ctx, targets, "targets")
    n = v.number("count", count, 1, 10)
    pool_size = v.number("workers", workers, 1, 8)
    t = None if timeout_s is None else v.number("timeout_s", timeout_s, 0.1, 120, integer=False)
    hosts = {d.name: ip for d in dsts if (ip := main_ip(d)) is not None}
    skipped = sorted(d.name for d in dsts if d.name not in hosts)
    pairs = sorted((s.name, d, hosts[d]) for s in srcs for d in hosts if d != s.name)

    def one(pair: tuple[str, str, str]) -> ReachabilityRow:
        src, dst, ip = pair
        out = ping(ctx, src=src, dst_ip=ip, count=n, timeout_s=t)
        rec = out.record
        return ReachabilityRow(src=src, dst=dst, dst_ip=ip, tx=rec.tx, rx=rec.rx, loss=rec.loss_pct,
                               rtt=rec.rtt_avg_ms, status=rec.status, error=rec.error)

    with ThreadPoolExecutor(max_workers=pool_size) as executor:
        rows = list(executor.map(one, pairs))  # map keeps input order: deterministic rows
    summary: dict[str, int] = {}
    for row in rows:
        summary[row.status] = summary.get(row.status, 0) + 1
    record = ReachabilityMatrix(hosts=dict(sorted(hosts.items())), rows=rows, summary=dict(sorted(summary.items())),
                                skipped=skipped)
    raw = "\n".join(f"{r.src} -> {r.dst} ({r.dst_ip}): tx={r.tx} rx={r.rx} loss={r.loss:g}% "
                    f"rtt={r.rtt if r.rtt is not None else '-'} {r.status}" for r in rows)
    args = {"sources": [s.name for s in srcs], "targets": [d.name for d in dsts], "count": n}
    return ProbeOutput(probe="reachability", device=None, args=args, record=record, raw=raw, result=None)
