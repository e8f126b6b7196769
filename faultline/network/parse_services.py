"""Parsers for firewall, FRR, socket, process, DNS and HTTP probe output (pure, never raise)."""

from __future__ import annotations

import json
import re
from typing import Any

from faultline.network import filters as fm
from faultline.network import records as r
from faultline.network.allowlist import HTTP_MARKER
from faultline.network.filters_iptables import iptables_filter_rule
from faultline.network.parsers import _first_line, _load_json

_VERDICTS = ("accept", "drop", "reject", "queue", "return", "continue", "jump", "goto")
_DIG_STATUS = re.compile(r"status: ([A-Z]+)")
_DIG_TIME = re.compile(r";; Query time: (\d+) msec")


def _operand(value: Any) -> str:
    if isinstance(value, dict):
        if "payload" in value:
            return f"{value['payload'].get('protocol', '?')} {value['payload'].get('field', '?')}"
        if "meta" in value:
            return f"meta {value['meta'].get('key', '?')}"
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def parse_nft(device: str, stdout: str) -> r.NftRuleset:
    """`nft -j list ruleset`: tables, base chains and rules with a readable match summary and counters."""
    data, error = _load_json(stdout) if stdout.strip() else ({"nftables": []}, None)
    if error or not isinstance(data, dict):
        return r.NftRuleset(device=device, tables=[], chains=[], rules=[], error=error or "expected a JSON object")
    tables, chains, rules = [], [], []
    for item in data.get("nftables", []):
        if "table" in item:
            tables.append(f"{item['table'].get('family')} {item['table'].get('name')}")
        elif "chain" in item:
            c = item["chain"]
            chains.append(r.NftChain(family=c.get("family", "?"), table=c.get("table", "?"), name=c.get("name", "?"),
                                     hook=c.get("hook"), type=c.get("type"), priority=c.get("prio"),
                                     policy=c.get("policy")))
        elif "rule" in item:
            rules.append(_nft_rule(item["rule"]))
    return r.NftRuleset(device=device, tables=tables, chains=chains, rules=rules, filters=fm.nft_filter_rules(data))


def _nft_rule(rule: dict[str, Any]) -> r.NftRule:
    matches: list[str] = []
    verdict = None
    packets = nbytes = None
    for expr in rule.get("expr", []):
        if "match" in expr:
            m = expr["match"]
            matches.append(f"{_operand(m.get('left'))} {m.get('op', '==')} {_operand(m.get('right'))}")
        elif "counter" in expr and isinstance(expr["counter"], dict):
            packets, nbytes = expr["counter"].get("packets"), expr["counter"].get("bytes")
        elif isinstance(expr.get("xt"), dict):
            # an iptables match or target iptables-nft wrote (nft shows its name, not its options)
            name = str(expr["xt"].get("name", "?"))
            if expr["xt"].get("type") == "target":
                verdict = fm.TARGETS.get(name.upper(), verdict)
            else:
                matches.append(f"xt {name}")
        else:
            for key in _VERDICTS:
                if key in expr:
                    target = expr[key].get("target") if isinstance(expr[key], dict) else None
                    verdict = f"{key} {target}" if target else key
    return r.NftRule(family=rule.get("family", "?"), table=rule.get("table", "?"), chain=rule.get("chain", "?"),
                     handle=rule.get("handle"), matches=matches, verdict=verdict, packets=packets, bytes=nbytes)


def parse_iptables(device: str, table: str, stdout: str, stderr: str = "",
                   exit_code: int | None = 0) -> r.IptablesRules:
    """`iptables -t TABLE -S` (or `iptables-save`): policies of built-in chains, the `-A` rules verbatim and as
    the kernel runs them."""
    policies: dict[str, str] = {}
    rules: list[str] = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "-P":
            policies[parts[1]] = parts[2]
        elif len(parts) >= 2 and parts[0].startswith(":") and parts[1] != "-":  # iptables-save ":INPUT ACCEPT [0:0]"
            policies[parts[0][1:]] = parts[1]
        elif parts and parts[0] == "-A":
            rules.append(line.strip())
    error = None if exit_code == 0 else (_first_line(stderr) or "iptables failed")
    filters = [f for line in rules if (f := iptables_filter_rule(line, table)) is not None]
    return r.IptablesRules(device=device, table=table, policies=policies, rules=rules, filters=filters, error=error)


def _bgp_peers(data: Any) -> list[r.BgpPeer]:
    """`show [ip] bgp summary json`: peers at the top level or under each address family."""
    blocks = [data] if isinstance(data, dict) and "peers" in data else (
        [v for v in data.values() if isinstance(v, dict) and "peers" in v] if isinstance(data, dict) else [])
    peers = []
    for block in blocks:
        for addr, p in sorted(block["peers"].items()):
            peers.append(r.BgpPeer(peer=addr, remote_as=p.get("remoteAs"), state=str(p.get("state", "?")),
                                   prefixes_received=p.get("pfxRcd"), uptime=p.get("peerUptime")))
    return peers


def _ospf_neighbors(data: Any) -> list[r.OspfNeighbor]:
    """`show ip ospf neighbor json`: {"neighbors": {router_id: [entry, ...]}} (FRR 8)."""
    out = []
    neighbors = data.get("neighbors", {}) if isinstance(data, dict) else {}
    for rid, entries in sorted(neighbors.items()):
        for e in entries if isinstance(entries, list) else [entries]:
            dead = e.get("deadTimeMsecs", e.get("routerDeadIntervalTimerDueMsec"))
            out.append(r.OspfNeighbor(
                neighbor_id=rid, address=e.get("address", e.get("ifaceAddress")), interface=e.get("ifaceName"),
                state=str(e.get("state", e.get("nbrState", "?"))), dead_time=None if dead is None else f"{dead}ms"))
    return out


def parse_vtysh(device: str, command: str, stdout: str, stderr: str = "", exit_code: int | None = 0) -> r.VtyshResult:
    """vtysh output: JSON for `... json` commands, typed BGP/OSPF lists where the command is known."""
    text = stdout + stderr
    daemon_down = "is not running" in text
    data = None
    error = None if exit_code == 0 and not daemon_down else (_first_line(text) or "vtysh failed")
    if command.endswith(" json") and stdout.strip() and not daemon_down:
        data, json_error = _load_json(stdout)
        error = error or json_error
    peers = _bgp_peers(data) if "bgp" in command and "summary" in command else []
    nbrs = _ospf_neighbors(data) if "ospf neighbor" in command else []
    return r.VtyshResult(device=device, command=command, data=data if isinstance(data, (dict, list)) else None,
                         bgp_peers=peers, ospf_neighbors=nbrs, daemon_down=daemon_down, error=error)


def parse_ss(device: str, stdout: str) -> r.SocketTable:
    """`ss -H -tulpn`: Netid State Recv-Q Send-Q Local Peer [Process]."""
    sockets = []
    for line in stdout.splitlines():
        parts = line.split(None, 6)
        if len(parts) >= 6:
            sockets.append(r.SocketEntry(netid=parts[0], state=parts[1], local=parts[4], peer=parts[5],
                                         process=parts[6].strip() if len(parts) > 6 else None))
    return r.SocketTable(device=device, sockets=sockets)


def parse_ps(device: str, stdout: str) -> r.ProcessTable:
    """`ps -o pid=,ppid=,user=,pcpu=,pmem=,comm=,args=` lines."""
    procs = []
    for line in stdout.splitlines():
        parts = line.split(None, 6)
        if len(parts) >= 6 and parts[0].isdigit():
            try:
                procs.append(r.ProcessEntry(pid=int(parts[0]), ppid=int(parts[1]), user=parts[2],
                                            cpu_pct=float(parts[3]), mem_pct=float(parts[4]), comm=parts[5],
                                            args=parts[6] if len(parts) > 6 else parts[5]))
            except ValueError:
                continue
    return r.ProcessTable(device=device, processes=procs)


def parse_nstat(device: str, stdout: str) -> r.NstatCounters:
    """`nstat -a -z -s --json`: {"kernel": {counter: value}}."""
    data, error = _load_json(stdout)
    if error or not isinstance(data, dict):
        return r.NstatCounters(device=device, counters={}, error=error or "expected a JSON object")
    kernel = data.get("kernel", data)
    return r.NstatCounters(device=device,
                           counters={k: int(v) for k, v in kernel.items() if isinstance(v, (int, float))})


def parse_fdb(device: str, stdout: str) -> r.FdbTable:
    """`bridge -j fdb show`."""
    data, error = _load_json(stdout) if stdout.strip() else ([], None)
    if error or not isinstance(data, list):
        return r.FdbTable(device=device, entries=[], error=error or "expected a JSON list")
    return r.FdbTable(device=device, entries=[
        r.FdbEntry(mac=e.get("mac", "?"), dev=e.get("ifname", e.get("dev")), master=e.get("master"),
                   vlan=e.get("vlan"), state=e.get("state"), flags=list(e.get("flags", []))) for e in data])


def parse_dig(src: str, name: str, server: str | None, rtype: str, stdout: str, stderr: str = "") -> r.DnsResult:
    """dig's default output: header status, ANSWER section, query time; errors as status timeout/refused/error."""
    text = stdout + stderr
    status_match = _DIG_STATUS.search(stdout)
    answers, in_answer = [], False
    for line in stdout.splitlines():
        if line.startswith(";; ANSWER SECTION"):
            in_answer = True
        elif in_answer and (not line.strip() or line.startswith(";")):
            in_answer = False
        elif in_answer:
            parts = line.split(None, 4)
            if len(parts) == 5 and parts[1].isdigit():
                answers.append(r.DnsAnswer(name=parts[0], ttl=int(parts[1]), rtype=parts[3], data=parts[4].strip()))
    if status_match:
        status, error = status_match.group(1), None
    elif "timed out" in text or "no servers could be reached" in text:
        status, error = "timeout", _first_line(text)
    elif "refused" in text:
        status, error = "refused", _first_line(text)
    else:
        status, error = "error", _first_line(text) or "no dig answer"
    qtime = _DIG_TIME.search(stdout)
    return r.DnsResult(src=src, name=name, server=server, rtype=rtype, status=status, answers=answers,
                       query_time_ms=int(qtime.group(1)) if qtime else None, error=error)


def _num(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def parse_curl(src: str, url: str, stdout: str, stderr: str = "", exit_code: int | None = 0) -> r.HttpTiming:
    """The `HTTP_WRITE_OUT` marker line; status from curl's exit code and the HTTP code."""
    line = next((ln for ln in stdout.splitlines() if ln.startswith(HTTP_MARKER + " ")), None)
    if line is None:
        return r.HttpTiming(src=src, url=url, status="timeout" if exit_code is None else "error",
                            curl_exit=exit_code, error=_first_line(stderr) or "no curl timing line")
    parts = line.split(" ", 8)
    parts += [""] * (9 - len(parts))
    code, rc = int(_num(parts[1]) or 0), int(_num(parts[7]) or 0)
    status = {0: "ok", 28: "timeout", 7: "refused", 6: "dns_error"}.get(rc, "error")
    if status == "ok" and not (200 <= code < 400):
        status = "http_error"
    return r.HttpTiming(src=src, url=url, status=status, http_code=code or None,
                        time_namelookup_s=_num(parts[2]), time_connect_s=_num(parts[3]),
                        time_starttransfer_s=_num(parts[4]), time_total_s=_num(parts[5]),
                        remote_ip=parts[6] or None, curl_exit=rc, error=parts[8].strip() or None)


_UDHCPC_SELECT = re.compile(r"select for (\d+\.\d+\.\d+\.\d+), server (\d+\.\d+\.\d+\.\d+)")
_UDHCPC_LEASE = re.compile(r"lease of (\d+\.\d+\.\d+\.\d+) obtained from (\d+\.\d+\.\d+\.\d+)(?:, lease time (\d+))?")


def parse_udhcpc(src: str, ifname: str, stdout: str, stderr: str = "", exit_code: int | None = 0,
                 timed_out: bool = False) -> r.DhcpCheck:
    """busybox udhcpc's messages (on stderr): the selected offer, the acknowledged lease, or `no lease, failing`."""
    text = stdout + stderr
    select, lease = _UDHCPC_SELECT.search(text), _UDHCPC_LEASE.search(text)
    offered = select.group(1) if select else None
    if lease:
        return r.DhcpCheck(src=src, ifname=ifname, status="ok", offered_ip=offered, acked_ip=lease.group(1),
                           server=lease.group(2), lease_s=int(lease.group(3)) if lease.group(3) else None)
    server = select.group(2) if select else None
    if timed_out:
        return r.DhcpCheck(src=src, ifname=ifname, status="error", offered_ip=offered, server=server,
                           error="probe timed out")
    if "no lease" in text:
        nak = "received DHCP NAK" in text
        return r.DhcpCheck(src=src, ifname=ifname, status="no_lease", offered_ip=offered, server=server,
                           error="every request was refused (NAK)" if nak else "no DHCP server answered")
    problems = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("udhcpc: started")]
    return r.DhcpCheck(src=src, ifname=ifname, status="error", offered_ip=offered, server=server,
                       error=_first_line("\n".join(problems)) or f"udhcpc exited {exit_code} without a lease")


_SS_OWNER = re.compile(r'\("([^"]*)",pid=(\d+)')


def socket_address(local: str) -> tuple[str, int | None]:
    """An `ss` local column split into address and port: "10.1.2.10:53" -> ("10.1.2.10", 53),
    "0.0.0.0%eth0:67" -> ("0.0.0.0", 67), "[::]:80" -> ("::", 80), "*:53" -> ("*", 53)."""
    addr, _, port = local.rpartition(":")
    addr = addr.split("%", 1)[0].strip("[]")
    return addr, int(port) if port.isdigit() else None


def socket_owners(process: str | None) -> list[tuple[str, int]]:
    """The (command name, pid) pairs of an `ss -p` process column: users:(("dnsmasq",pid=10217,fd=4))."""
    return [(name, int(pid)) for name, pid in _SS_OWNER.findall(process or "")]
