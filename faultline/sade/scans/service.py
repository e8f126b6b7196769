"""Phase D — services and resources: daemons, load and CPU caps, service configuration, lookups.

The equivalents of SADE's pressure_sweep and service_snapshot for one device: the process list
(stress tools, traffic floods — blamed on their victim —, delay injectors, a service daemon that
should run and does not), CPU cgroup caps, and the configuration of the device's own service (DNS
records pointing at the wrong kind of device, DHCP ranges/options, web server rate limits).
"""

from __future__ import annotations

import re

from faultline.network.devices import Device
from faultline.sade.scans.common import flag, ipv4, is_end, owner_of, same_subnet
from faultline.sade.session import Session

SCAN_P, SCAN_S = "pressure_sweep", "service_snapshot"
STRESS = re.compile(r"\b(stress-ng|stress)\b")
HTTP_FLOOD = re.compile(r"\b(ab|wrk|hey|siege|slowhttptest)\b|loadgen\.py .*\bhttp\b")
UDP_FLOOD = re.compile(r"\biperf3?\b.*-c|loadgen\.py .*\budp\b")
DELAY = re.compile(r"nfqueue|tc .*netem|\bsleep_injector\b")
DAEMON = {"dns": "dnsmasq", "dhcp": "dnsmasq", "web": "nginx", "lb": "nginx", "backend": "nginx"}
_IP = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})\b")


def service_scan(s: Session, dev: Device) -> None:
    """Processes and CPU caps on every device; service configuration on service devices."""
    for check in CHECKS:
        check(s, dev)


def _processes(s: Session, dev: Device) -> None:
    out = s.probe("processes", dev=dev.name, note="process list")
    if out is None:
        return
    procs = out.record.processes
    for p in procs:
        line = p.args or p.comm
        if STRESS.search(line) and "[run]" not in line:
            flag(s, SCAN_P, dev, "stress_process", f"pid {p.pid}: {line[:160]}", family="resource")
        elif HTTP_FLOOD.search(line):
            _victim(s, dev, line, "http_flood")
        elif UDP_FLOOD.search(line):
            _victim(s, dev, line, "udp_flood")
        elif DELAY.search(line):
            flag(s, SCAN_P, dev, "delay_process", f"pid {p.pid}: {line[:160]}", family="resource")
    base = s.baseline("processes", dev=dev.name)
    if is_end(dev) and not procs and base is not None and base.record.processes:
        flag(s, SCAN_P, dev, "processes_gone", f"no process left (baseline: {len(base.record.processes)})",
             family="host_crash")
    daemon = DAEMON.get(dev.role)
    if daemon and not any(daemon in (p.args or p.comm) for p in procs):
        flag(s, SCAN_P, dev, "daemon_missing", f"no {daemon} process on {dev.name} ({len(procs)} processes)",
             family={"dns": "dns", "dhcp": "dhcp"}.get(dev.role, "service"), daemon=daemon)
    if dev.role == "router" and not any(name in (p.args or p.comm) for p in procs for name in ("zebra", "bgpd",
                                                                                               "ospfd", "ripd")):
        flag(s, SCAN_P, dev, "frr_processes_missing", f"no FRR daemon among {len(procs)} processes", family="frr")


def _victim(s: Session, dev: Device, line: str, kind: str) -> None:
    """A flood blames the device it targets, not the one it runs on (SADE's resource rule)."""
    for ip in _IP.findall(line):
        victim = owner_of(s, ip)
        if victim is not None and victim.name != dev.name:
            flag(s, SCAN_P, victim, f"{kind}_target", f"{dev.name} runs: {line[:160]}", family="resource",
                 source=dev.name)
            return


def _cpu_cap(s: Session, dev: Device) -> None:
    if not is_end(dev):
        return
    out = s.probe("cgroup_cpu", dev=dev.name, note="CPU cgroup limits")
    if out is None:
        return
    for g in out.record.groups:
        if g.cfs_quota_us and g.cfs_quota_us > 0 and g.cfs_period_us:
            pct = 100.0 * g.cfs_quota_us / g.cfs_period_us
            if pct < 50:
                flag(s, SCAN_P, dev, "cpu_capped", f"cgroup {g.path}: quota {g.cfs_quota_us}/{g.cfs_period_us} us "
                     f"({pct:.0f}% of a CPU), throttled {g.nr_throttled}/{g.nr_periods} periods",
                     family="resource", pct=round(pct, 1))


def _read(s: Session, dev: Device, suffix: str):
    path = next((p for p in s.backend.files.get(dev.name, []) if p.endswith(suffix)), None)
    if path is None:
        return None, None
    out = s.probe("read_file", dev=dev.name, path=path, note=f"service file {suffix}")
    return path, (out.record.text if out is not None and not out.record.error else None)


def _dns_records(s: Session, dev: Device) -> None:
    if dev.role != "dns":
        return
    path, text = _read(s, dev, "/hosts")
    if not text:
        return
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not _IP.fullmatch(parts[0]):
            continue
        owner = owner_of(s, parts[0])
        if owner is None or owner.role in ("host", "client", "router", "switch"):
            flag(s, SCAN_S, dev, "dns_record_wrong", f"{path}: {line.strip()} -> "
                 f"{owner.name + ' (' + owner.role + ')' if owner else 'no device'}", family="dns", name=parts[1])


def _dhcp_config(s: Session, dev: Device) -> None:
    if dev.role != "dhcp":
        return
    path, text = _read(s, dev, "/dnsmasq.conf")
    if not text:
        return
    ranges = re.findall(r"^dhcp-range=set:(\w+),([\d.]+)", text, re.MULTILINE)
    options = re.findall(r"^dhcp-option=tag:(\w+),option:([\w-]+),([\d.]+)", text, re.MULTILINE)
    dns_ips = {p[0] for d in s.devices("dns") for a in d.addresses if (p := ipv4(a))}
    for tag, option, value in options:
        owner = owner_of(s, value)
        if option == "router" and (owner is None or owner.role not in ("router", "switch")):
            flag(s, SCAN_S, dev, "dhcp_router_foreign", f"{path}: dhcp-option tag:{tag} router {value} (no router "
                 "owns it)", family="dhcp", tag=tag, subnet_ip=value)
        if option == "dns-server" and dns_ips and value not in dns_ips:
            flag(s, SCAN_S, dev, "dhcp_dns_foreign", f"{path}: dhcp-option tag:{tag} dns-server {value} (the "
                 f"network's DNS: {' '.join(sorted(dns_ips))})", family="dhcp", tag=tag, subnet_ip=value)
    served = [start for _, start in ranges]
    for host in s.devices("host"):
        if host.addresses and not any(same_subnet(host.addresses[0], ip + "/32") for ip in served):
            flag(s, SCAN_S, dev, "dhcp_subnet_missing", f"{path}: no dhcp-range for {host.name}'s subnet "
                 f"({host.addresses[0]})", family="dhcp", host=host.name)


def _web_config(s: Session, dev: Device) -> None:
    if dev.role not in ("web", "lb"):
        return
    path, text = _read(s, dev, "/nginx.conf")
    if text and (m := re.search(r"^\s*limit_rate\s+\S+;", text, re.MULTILINE)):
        flag(s, SCAN_S, dev, "web_rate_limited", f"{path}: {m.group(0).strip()}", family="resource")


CHECKS = [_processes, _dns_records, _dhcp_config, _web_config, _cpu_cap]
