"""The built-in device probes: one read-only argument vector each, run on one device.

Probes: ping, traceroute, ip_addr, ip_route, ip_link, link_counters, ip_neigh, nft_ruleset, iptables_rules,
tc_qdisc, vtysh_show, sockets, processes, nstat, bridge_fdb, dig, http_get, read_file, tail_file,
dhcp_check, cgroup_cpu, cpu_usage. Every argument is validated (`validate`) before a process starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faultline.network import allowlist
from faultline.network import parse_services as ps
from faultline.network import parsers as pp
from faultline.network import validate as v
from faultline.network.records import FileContent, Record
from faultline.network.registry import ProbeContext, ProbeFunc, ProbeOutput, register
from faultline.network.runner import CommandResult
from faultline.network.validate import ProbeError


def _timeout(value: float | None) -> float | None:
    return None if value is None else float(v.number("timeout_s", value, 0.1, 120, integer=False))


def _output(name: str, device: str, args: dict[str, Any], record: Record, result: CommandResult) -> ProbeOutput:
    raw = result.stdout if not result.stderr else f"{result.stdout}{result.stderr}"
    return ProbeOutput(probe=name, device=device, args=args, record=record, raw=raw, result=result)


def _json_probe(name: str, argv: list[str], parse: Callable[[str, str], Record]) -> ProbeFunc:
    """A device probe with one fixed JSON command: no arguments beyond the device and timeout."""

    def probe(ctx: ProbeContext, dev: str, timeout_s: float | None = None) -> ProbeOutput:
        d = v.device(ctx.directory, dev)
        res = ctx.runner.run(d.name, argv, namespace=d.namespace, timeout_s=_timeout(timeout_s))
        record = parse(d.name, res.stdout)
        if not res.ok:
            reason = "probe timed out" if res.timed_out else pp._first_line(res.stderr)
            record = record.model_copy(update={"error": reason or getattr(record, "error", None) or "command failed"})
        return _output(name, d.name, {"dev": d.name}, record, res)

    probe.__doc__ = f"`{' '.join(argv)}` inside the device's namespace."
    return register(name)(probe)


ip_addr = _json_probe("ip_addr", ["ip", "-j", "addr", "show"], pp.parse_interfaces)
ip_link = _json_probe("ip_link", ["ip", "-j", "-s", "-d", "link", "show"], pp.parse_interfaces)
# the error counters in full, and each link's carrier changes (how often it went down and up)
link_counters = _json_probe("link_counters", ["ip", "-j", "-s", "-s", "link", "show"], pp.parse_interfaces)
ip_route = _json_probe("ip_route", ["ip", "-j", "route", "show"], pp.parse_routes)
ip_neigh = _json_probe("ip_neigh", ["ip", "-j", "neigh", "show"], pp.parse_neighbors)
tc_qdisc = _json_probe("tc_qdisc", ["tc", "-s", "-j", "qdisc", "show"], pp.parse_qdiscs)
nft_ruleset = _json_probe("nft_ruleset", ["nft", "-j", "list", "ruleset"], ps.parse_nft)
nstat = _json_probe("nstat", ["nstat", "-a", "-z", "-s", "--json"], ps.parse_nstat)
bridge_fdb = _json_probe("bridge_fdb", ["bridge", "-j", "fdb", "show"], ps.parse_fdb)
sockets = _json_probe("sockets", ["ss", "-H", "-tulpn"], ps.parse_ss)


@register("ping")
def ping(ctx: ProbeContext, src: str, dst_ip: str, count: int = 3, timeout_s: float | None = None) -> ProbeOutput:
    """`ping -n -q -c COUNT -i 0.2 -W 1 DST` from `src`; record `PingResult`."""
    d, dst, n = v.device(ctx.directory, src), v.ip(dst_ip), v.number("count", count, 1, 100)
    res = ctx.runner.run(d.name, ["ping", "-n", "-q", "-c", str(n), "-i", "0.2", "-W", "1", dst],
                         namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = pp.parse_ping(d.name, dst, res.stdout, res.stderr, res.timed_out)
    return _output("ping", d.name, {"src": d.name, "dst_ip": dst, "count": n}, record, res)


@register("traceroute")
def traceroute(ctx: ProbeContext, src: str, dst_ip: str, max_hops: int = 15,
               timeout_s: float | None = None) -> ProbeOutput:
    """`traceroute -n -q 1 -w 1 -m MAX DST` from `src`; record `TracerouteResult`."""
    d, dst, hops = v.device(ctx.directory, src), v.ip(dst_ip), v.number("max_hops", max_hops, 1, 30)
    res = ctx.runner.run(d.name, ["traceroute", "-n", "-q", "1", "-w", "1", "-m", str(hops), dst],
                         namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = pp.parse_traceroute(d.name, dst, res.stdout, res.stderr)
    if res.timed_out:
        record = record.model_copy(update={"error": "probe timed out"})
    return _output("traceroute", d.name, {"src": d.name, "dst_ip": dst, "max_hops": hops}, record, res)


@register("iptables_rules")
def iptables_rules(ctx: ProbeContext, dev: str, table: str = "filter", timeout_s: float | None = None) -> ProbeOutput:
    """`iptables -t TABLE -S`; record `IptablesRules`."""
    d, t = v.device(ctx.directory, dev), v.choice("iptables table", table, v.IPTABLES_TABLES)
    res = ctx.runner.run(d.name, ["iptables", "-t", t, "-S"], namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = ps.parse_iptables(d.name, t, res.stdout, res.stderr, res.exit_code)
    return _output("iptables_rules", d.name, {"dev": d.name, "table": t}, record, res)


@register("vtysh_show")
def vtysh_show(ctx: ProbeContext, dev: str, command: str, timeout_s: float | None = None) -> ProbeOutput:
    """`vtysh --vty_socket <dir> -c 'show ...'` (or `vtysh -N <namespace>` when the context has no vty dir
    for the device) from the root namespace."""
    d, cmd = v.device(ctx.directory, dev), v.vtysh_command(command)
    vty_dir = ctx.vty_dirs.get(d.name)
    # with --vty_socket no -N: a pathspace would make vtysh look in a subdir of the socket dir
    target = ["--vty_socket", vty_dir] if vty_dir else ["-N", d.namespace]
    res = ctx.runner.run(d.name, ["vtysh", *target, "-c", cmd], namespace=None, timeout_s=_timeout(timeout_s))
    record = ps.parse_vtysh(d.name, cmd, res.stdout, res.stderr, res.exit_code)
    return _output("vtysh_show", d.name, {"dev": d.name, "command": cmd}, record, res)


@register("processes")
def processes(ctx: ProbeContext, dev: str, timeout_s: float | None = None) -> ProbeOutput:
    """Processes whose network namespace is the device's (`ip netns pids`, then `ps -p`)."""
    d, t = v.device(ctx.directory, dev), _timeout(timeout_s)
    pids_res = ctx.runner.run(d.name, ["ip", "netns", "pids", d.namespace], namespace=None, timeout_s=t)
    pids = sorted({int(tok) for tok in pids_res.stdout.split() if tok.isdigit()})
    if not pids:
        record = ps.parse_ps(d.name, "")
        if not pids_res.ok:
            record = record.model_copy(update={"error": pp._first_line(pids_res.stderr) or "ip netns pids failed"})
        return _output("processes", d.name, {"dev": d.name}, record, pids_res)
    res = ctx.runner.run(d.name, ["ps", "-o", allowlist.PS_FORMAT, "-p",
                                  ",".join(map(str, pids))], namespace=None, timeout_s=t)
    return _output("processes", d.name, {"dev": d.name}, ps.parse_ps(d.name, res.stdout), res)


@register("dig")
def dig(ctx: ProbeContext, src: str, name: str, server: str | None = None, rtype: str = "A",
        tcp: bool = False, port: int = 53, timeout_s: float | None = None) -> ProbeOutput:
    """`dig +time=2 +tries=1 [+tcp] [@SERVER] [-p PORT] -t RTYPE -q NAME` from `src`; record `DnsResult`.
    `-p` only for a port other than 53 (the command every earlier snapshot recorded stays the same)."""
    d, qname, qtype = v.device(ctx.directory, src), v.hostname(name), v.dns_type(rtype)
    srv = None if server is None else v.ip(server)
    if not isinstance(tcp, bool):
        raise ProbeError(f"tcp must be true or false, got {tcp!r}")
    qport = v.number("port", port, 1, 65535)
    argv = ["dig", "+time=2", "+tries=1", *(["+tcp"] if tcp else []), *([f"@{srv}"] if srv else []),
            *(["-p", str(qport)] if qport != 53 else []), "-t", qtype, "-q", qname]
    res = ctx.runner.run(d.name, argv, namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = ps.parse_dig(d.name, qname, srv, qtype, res.stdout, res.stderr)
    if res.timed_out:
        record = record.model_copy(update={"status": "timeout", "error": "probe timed out"})
    args = {"src": d.name, "name": qname, "server": srv, "rtype": qtype, "tcp": tcp,
            **({"port": qport} if qport != 53 else {})}
    return _output("dig", d.name, args, record, res)


@register("http_get")
def http_get(ctx: ProbeContext, src: str, url: str, timeout_s: float | None = None) -> ProbeOutput:
    """curl from `src` discarding the body: HTTP code and timings; record `HttpTiming`."""
    d, u, t = v.device(ctx.directory, src), v.url(url), _timeout(timeout_s)
    max_time = str(max(1, int((t or ctx.runner.timeout_s) - 1)))
    argv = ["curl", "-sS", "-o", "/dev/null", "--proto", "=http,https", "--max-redirs", "0",
            "--connect-timeout", "5", "--max-time", max_time, "-w", allowlist.HTTP_WRITE_OUT, u]
    res = ctx.runner.run(d.name, argv, namespace=d.namespace, timeout_s=t)
    record = ps.parse_curl(d.name, u, res.stdout, res.stderr, res.exit_code)
    return _output("http_get", d.name, {"src": d.name, "url": u}, record, res)


@register("read_file")
def read_file(ctx: ProbeContext, dev: str, path: str, timeout_s: float | None = None) -> ProbeOutput:
    """A file under one of the device's configured roots (`cat` inside its namespace); record `FileContent`."""
    d = v.device(ctx.directory, dev)
    real = v.file_path(path, ctx.file_roots.get(d.name, ()))
    res = ctx.runner.run(d.name, ["cat", "--", real], namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = FileContent(device=d.name, path=real, text=res.stdout, truncated=res.truncated,
                         error=None if res.ok else (pp._first_line(res.stderr) or "read failed"))
    return _output("read_file", d.name, {"dev": d.name, "path": real}, record, res)


@register("tail_file")
def tail_file(ctx: ProbeContext, dev: str, path: str, lines: int = 200, timeout_s: float | None = None) -> ProbeOutput:
    """The last LINES lines of a file under one of the device's roots (`tail -n`), for growing logs that
    `read_file` (which keeps the first 256 KiB) cannot show the end of; record `FileContent`."""
    d = v.device(ctx.directory, dev)
    real = v.file_path(path, ctx.file_roots.get(d.name, ()))
    n = v.number("lines", lines, 1, 5000)
    res = ctx.runner.run(d.name, ["tail", "-n", str(n), "--", real], namespace=d.namespace,
                         timeout_s=_timeout(timeout_s))
    record = FileContent(device=d.name, path=real, text=res.stdout, truncated=res.truncated,
                         error=None if res.ok else (pp._first_line(res.stderr) or "read failed"))
    return _output("tail_file", d.name, {"dev": d.name, "path": real, "lines": n}, record, res)


@register("dhcp_check")
def dhcp_check(ctx: ProbeContext, src: str, ifname: str = "eth0", timeout_s: float | None = None) -> ProbeOutput:
    """`busybox udhcpc -n -q -f -i IF -t 3 -T 1 -s /bin/true` from `src`; record `DhcpCheck`.

    Asks for a lease (three discovers one second apart) and quits: the hook is /bin/true, so the
    interface, routes and resolv.conf are untouched, and without `-R` nothing is released. The only
    trace is on the server, which refreshes the lease it already holds for the device's MAC.
    """
    d, i = v.device(ctx.directory, src), v.interface(ifname)
    argv = ["busybox", "udhcpc", "-n", "-q", "-f", "-i", i, "-t", "3", "-T", "1", "-s", "/bin/true"]
    res = ctx.runner.run(d.name, argv, namespace=d.namespace, timeout_s=_timeout(timeout_s))
    record = ps.parse_udhcpc(d.name, i, res.stdout, res.stderr, res.exit_code, res.timed_out)
    return _output("dhcp_check", d.name, {"src": d.name, "ifname": i}, record, res)




@register("cpu_usage")
def cpu_usage(ctx: ProbeContext, dev: str, interval_s: float = 1.0, timeout_s: float | None = None) -> ProbeOutput:
    """CPU time of each of the device's processes over `interval_s` (two samples of /proc, read from the root
    namespace: `ip netns pids`, then `grep -H` over /proc/stat and each /proc/<pid>/stat, twice); record
    `CpuUsage`. What a process really used lately, where `ps` averages over its whole life."""
    from faultline.network import parse_cpu

    d, t = v.device(ctx.directory, dev), _timeout(timeout_s)
    gap = float(v.number("interval_s", interval_s, 0.2, 5, integer=False))
    args = {"dev": d.name, "interval_s": gap}
    pids_res = ctx.runner.run(d.name, ["ip", "netns", "pids", d.namespace], namespace=None, timeout_s=t)
    pids = sorted({int(tok) for tok in pids_res.stdout.split() if tok.isdigit()})
    paths = ["/proc/stat", *(f"/proc/{pid}/stat" for pid in pids)]
    res = ctx.runner.run(d.name, ["sh", "-c", allowlist.TWO_SAMPLES, str(gap), *paths], namespace=None, timeout_s=t)
    # a process may exit between the samples: grep complains about its file, the rest is read
    error = None if pids_res.ok else (pp._first_line(pids_res.stderr) or "ip netns pids failed")
    return _output("cpu_usage", d.name, args, parse_cpu.parse_cpu_usage(d.name, res.stdout, gap, error), res)


@register("cgroup_cpu")
def cgroup_cpu(ctx: ProbeContext, dev: str, timeout_s: float | None = None) -> ProbeOutput:
    """The cgroup v1 `cpu` groups holding the device's processes, with each group's CPU cap
    (`cpu.cfs_quota_us` / `cpu.cfs_period_us`) and throttling counters (`cpu.stat`); record `CgroupCpu`.

    All read from the root namespace: `ip netns pids`, then `grep -H` over `/proc/<pid>/cgroup`, then
    over the groups' files (group paths are checked before they reach the command line).
    """
    from faultline.network import parse_cgroup as pc

    d, t = v.device(ctx.directory, dev), _timeout(timeout_s)
    args = {"dev": d.name}
    pids_res = ctx.runner.run(d.name, ["ip", "netns", "pids", d.namespace], namespace=None, timeout_s=t)
    pids = sorted({int(tok) for tok in pids_res.stdout.split() if tok.isdigit()})
    if not pids:
        error = None if pids_res.ok else (pp._first_line(pids_res.stderr) or "ip netns pids failed")
        return _output("cgroup_cpu", d.name, args, pc.parse_cgroup_cpu(d.name, {}, "", error), pids_res)
    # a process may exit between the two commands: grep then complains about its file, the rest is read
    res = ctx.runner.run(d.name, ["grep", "-H", "-E", pc.CPU_LINE_PATTERN, *(f"/proc/{p}/cgroup" for p in pids)],
                         namespace=None, timeout_s=t)
    members = pc.cpu_groups(res.stdout)
    unsafe = sorted({path for path in members.values() if not pc.safe_group(path)})
    members = {pid: path for pid, path in members.items() if pc.safe_group(path)}
    error = f"skipped group path(s) with unexpected characters: {', '.join(unsafe)[:200]}" if unsafe else None
    if not members:
        return _output("cgroup_cpu", d.name, args, pc.parse_cgroup_cpu(d.name, {}, "", error or "no cpu cgroup found"),
                       res)
    files = pc.group_files(sorted(set(members.values())))
    res = ctx.runner.run(d.name, ["grep", "-H", "", *files], namespace=None, timeout_s=t)
    if not res.ok and not res.stdout:
        error = error or pp._first_line(res.stderr) or "reading the cgroup files failed"
    return _output("cgroup_cpu", d.name, args, pc.parse_cgroup_cpu(d.name, members, res.stdout, error), res)
