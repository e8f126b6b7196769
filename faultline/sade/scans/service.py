"""Phase D — services and resources: daemons, CPU use and throttling, request load, service configuration.

SADE's pressure_sweep and service_snapshot for one device. Every finding rests on what the device shows (CPU
shares, throttled periods, access-log request rates, configuration files), never on which program runs.
The checks and their flags: docs/sade.md#step-2-deep-scan.
"""

from __future__ import annotations

import re
from collections import Counter

from faultline.network.devices import Device
from faultline.sade.scans.common import IPV4_TEXT, flag, ipv4, is_end, owner_of, same_subnet, unreached
from faultline.sade.session import Session

SCAN_P, SCAN_S = "pressure_sweep", "service_snapshot"
BUSY_PCT = 50.0  # a process that averaged half a CPU or more since it started
THROTTLED_SHARE, MIN_PERIODS = 0.5, 10  # a CPU group stopped in most of its (at least 10) periods
SURGE_PER_S = 50  # requests logged within one second: far above a user's (the lab's probes make 1-3)
DAEMON = {"dns": "dnsmasq", "dhcp": "dnsmasq", "web": "nginx", "lb": "nginx", "backend": "nginx"}
_ACCESS = re.compile(r"^(\S+) \S+ \S+ \[([^\]]+)\]", re.MULTILINE)  # combined/common log format


def _processes(session: Session, dev: Device) -> None:
    out = session.probe("processes", dev=dev.name, note="process list")
    if out is None or unreached(session, SCAN_P, dev, out):
        return
    procs = out.record.processes
    base = session.baseline("processes", dev=dev.name)
    if is_end(dev):
        _busy(session, dev, procs, base)
    if is_end(dev) and not procs and base is not None and base.record.processes:
        flag(session, SCAN_P, dev, "processes_gone", f"no process left (baseline: {len(base.record.processes)})",
             family="host_crash")
    sampled = session.seen("cpu_usage", dev=dev.name, interval_s=1.0)
    states = [p.state for p in sampled.record.processes] if sampled is not None and not sampled.record.error else []
    if is_end(dev) and states and all(s == "T" for s in states):
        # a hung machine: every process it runs stopped, none scheduled (what a crash leaves of a host that still
        # answers its console)
        flag(session, SCAN_P, dev, "processes_gone", f"every process stopped ({len(states)} in state T)",
             family="host_crash")
    daemon = DAEMON.get(dev.role)
    if daemon and not any(daemon in (p.args or p.comm) for p in procs):
        flag(session, SCAN_P, dev, "daemon_missing", f"no {daemon} process on {dev.name} ({len(procs)} processes)",
             family={"dns": "dns", "dhcp": "dhcp"}.get(dev.role, "service"), daemon=daemon)
    if dev.role == "router" and not any(name in (p.args or p.comm) for p in procs for name in ("zebra", "bgpd",
                                                                                               "ospfd", "ripd")):
        flag(session, SCAN_P, dev, "frr_processes_missing", f"no FRR daemon among {len(procs)} processes", family="frr")


def _busy(session: Session, dev: Device, procs: list, base) -> None:
    """Processes using half a CPU or more: over the last second (two samples of /proc) where the network can
    take them, else `ps`'s average over each process's life; a process as busy in the baseline is usual."""
    sampled = session.probe("cpu_usage", dev=dev.name, interval_s=1.0, note="CPU use over one second") \
        if session.backend.offers("cpu_usage") else None
    if sampled is not None and not sampled.record.error:
        rows, how = sampled.record.processes, "over 1 s"
        before = session.baseline("cpu_usage", dev=dev.name, interval_s=1.0)
        usual = {p.comm for p in before.record.processes if p.cpu_pct >= BUSY_PCT} if before else set()
        busy = [p for p in rows if p.cpu_pct >= BUSY_PCT and p.comm not in usual]
        load = f"; {sampled.record.running} runnable, the machine {sampled.record.busy_pct:.0f}% busy"
    else:
        how, load = "on average since it started", ""
        usual = {p.args or p.comm for p in base.record.processes if p.cpu_pct >= BUSY_PCT} if base else set()
        busy = [p for p in procs if p.cpu_pct >= BUSY_PCT and (p.args or p.comm) not in usual]
    if busy:
        total = sum(p.cpu_pct for p in busy)
        flag(session, SCAN_P, dev, "cpu_busy", f"{len(busy)} process(es) using {total:.0f}% of a CPU {how}: "
             + "; ".join(f"pid {p.pid} {p.comm} {p.cpu_pct:.0f}%" for p in busy[:4]) + load, family="resource",
             cpu_pct=round(total, 1))


def _cpu_throttled(session: Session, dev: Device) -> None:
    """A CPU group (a container's CPU limit) that the kernel stopped in most of its periods: its processes
    wait for the CPU whatever they run."""
    if not is_end(dev):
        return
    out = session.probe("cgroup_cpu", dev=dev.name, note="CPU limits and throttling counters")
    if out is None:
        return
    for g in out.record.groups:
        periods, throttled = g.nr_periods or 0, g.nr_throttled or 0
        if periods >= MIN_PERIODS and throttled >= THROTTLED_SHARE * periods:
            limit = f"{g.cpu_limit_pct:.0f}% of a CPU" if g.cpu_limit_pct is not None else "no limit"
            flag(session, SCAN_P, dev, "cpu_throttled", f"CPU group {g.path}: throttled in {throttled}/{periods} "
                 f"periods (limit {limit}, {(g.throttled_time_ns or 0) / 1e9:.1f} s waiting)", family="resource",
                 share=round(throttled / periods, 3))


def _access_log(session: Session, dev: Device) -> None:
    """The web server's request rate: its busiest second in the access log, and who sent those requests.
    The flood's victim is the server; the senders are named (devices of this network or outside ones)."""
    if dev.role not in ("web", "lb", "backend"):
        return
    path, text = _read(session, dev, "/access.log")
    if not text:
        return
    rows = _ACCESS.findall(text)
    per_second = Counter(stamp for _, stamp in rows)
    if not per_second:
        return
    stamp, peak = per_second.most_common(1)[0]
    if peak < SURGE_PER_S:
        return
    clients = Counter(ip for ip, _ in rows)
    names = []
    for ip, n in clients.most_common(4):
        owner = owner_of(session, ip)
        names.append(f"{ip} ({owner.name if owner else 'outside this network'}): {n}")
    cut = (out := session.seen("read_file", dev=dev.name, path=path)) is not None and out.record.truncated
    flag(session, SCAN_S, dev, "request_surge", f"{path}: {peak} requests in the second {stamp}, {len(rows)} logged"
         f"{' (the start of the file only)' if cut else ''}; senders {', '.join(names)}", family="resource",
         peak_per_s=peak, senders=[ip for ip, _ in clients.most_common(4)])


def _read(session: Session, dev: Device, suffix: str):
    path = next((p for p in session.backend.files.get(dev.name, []) if p.endswith(suffix)), None)
    if path is None:
        return None, None
    out = session.probe("read_file", dev=dev.name, path=path, note=f"service file {suffix}")
    return path, (out.record.text if out is not None and not out.record.error else None)


_ADDRESS_RECORD = re.compile(r"^address=/([^/]+)/(\d{1,3}(?:\.\d{1,3}){3})\s*$")
_HOST_RECORD = re.compile(r"^host-record=([^,\s]+(?:,[^,\s]+)*)\s*$")


def dns_records(text: str, path: str) -> list[tuple[str, str, str]]:
    """(name, IPv4 address, the line) of every A record a name server's file defines: a hosts file's lines, and
    a dnsmasq configuration's `address=/name/ip` and `host-record=name[,name...],ip` lines."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if path.endswith("hosts"):
            parts = line.split()
            if len(parts) >= 2 and IPV4_TEXT.fullmatch(parts[0]):
                out += [(name, parts[0], line) for name in parts[1:] if not name.startswith("#")]
        elif m := _ADDRESS_RECORD.match(line):
            out.append((m.group(1), m.group(2), line))
        elif m := _HOST_RECORD.match(line):
            fields = m.group(1).split(",")
            addrs = [f for f in fields if IPV4_TEXT.fullmatch(f)]
            out += [(name, addrs[0], line) for name in fields if addrs and not IPV4_TEXT.fullmatch(name)
                    and ":" not in name and not name.isdigit()]
    return out


def _dns_records(session: Session, dev: Device) -> None:
    """Every record the name server defines (its hosts file, then its configuration) pointing at no server: at no
    device, or at a user's or a router's address; with a baseline, a name whose address changed."""
    if dev.role != "dns":
        return
    for suffix in ("/hosts", "/dnsmasq.conf"):
        if _records_wrong(session, dev, suffix):
            return


def _records_wrong(session: Session, dev: Device, suffix: str) -> bool:
    path, text = _read(session, dev, suffix)
    if not text or path is None:
        return False
    base = session.baseline("read_file", dev=dev.name, path=path)
    before = {name: ip for name, ip, _ in dns_records(base.record.text or "", path)} if base is not None else {}
    found = False
    for name, ip, line in dns_records(text, path):
        owner = owner_of(session, ip)
        moved = name in before and before[name] != ip
        if moved or owner is None or owner.role in ("host", "client", "router", "switch"):
            where = f"{owner.name} ({owner.role})" if owner else "no device"
            flag(session, SCAN_S, dev, "dns_record_wrong", f"{path}: {line} -> {where}"
                 + (f" (baseline {before[name]})" if moved else ""), family="dns", name=name, vs_baseline=moved)
            found = True
    return found


def _dhcp_config(session: Session, dev: Device) -> None:
    if dev.role != "dhcp":
        return
    path, text = _read(session, dev, "/dnsmasq.conf")
    if not text:
        return
    ranges = re.findall(r"^dhcp-range=set:(\w+),([\d.]+)", text, re.MULTILINE)
    options = re.findall(r"^dhcp-option=tag:(\w+),option:([\w-]+),([\d.]+)", text, re.MULTILINE)
    dns_ips = {p[0] for d in session.devices("dns") for a in d.addresses if (p := ipv4(a))}
    for tag, option, value in options:
        owner = owner_of(session, value)
        if option == "router" and (owner is None or owner.role not in ("router", "switch")):
            flag(session, SCAN_S, dev, "dhcp_router_foreign", f"{path}: dhcp-option tag:{tag} router {value} (no "
                 "router owns it)", family="dhcp", tag=tag, subnet_ip=value)
        if option == "dns-server" and dns_ips and value not in dns_ips:
            flag(session, SCAN_S, dev, "dhcp_dns_foreign", f"{path}: dhcp-option tag:{tag} dns-server {value} (the "
                 f"network's DNS: {' '.join(sorted(dns_ips))})", family="dhcp", tag=tag, subnet_ip=value)
    served = [start for _, start in ranges]
    for host in session.devices("host"):
        if host.addresses and not any(same_subnet(host.addresses[0], ip + "/32") for ip in served):
            flag(session, SCAN_S, dev, "dhcp_subnet_missing", f"{path}: no dhcp-range for {host.name}'s subnet "
                 f"({host.addresses[0]})", family="dhcp", host=host.name)


_SLOWING = re.compile(r"^\s*(?:limit_rate|limit_req|limit_conn)\b[^;]*;", re.MULTILINE)


def _web_config(session: Session, dev: Device) -> None:
    if dev.role not in ("web", "lb"):
        return
    path, text = _read(session, dev, "/nginx.conf")
    if not text or path is None:
        return
    base = session.baseline("read_file", dev=dev.name, path=path)
    before = set(_SLOWING.findall(base.record.text or "")) if base is not None else set()
    # a server that paces its answers (limit_rate), holds requests in a queue (limit_req) or caps its connections
    # (limit_conn): with a baseline, only a directive it did not have then
    for m in _SLOWING.finditer(text):
        if m.group(0) not in before:
            flag(session, SCAN_S, dev, "web_rate_limited", f"{path}: {m.group(0).strip()}", family="resource",
                 vs_baseline=base is not None)


CHECKS = [_processes, _dns_records, _dhcp_config, _web_config, _access_log, _cpu_throttled]
