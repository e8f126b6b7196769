"""User-visible symptoms of an incident, derived from its probe outputs (pure functions over records).

Each `Symptom` carries the command a person would type and that command's output as the real tool prints it;
against a healthy baseline only changes count. docs/corpus.md#symptoms-and-tickets.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from faultline.network.probes import ProbeOutput
from faultline.network.reachability import ReachabilityMatrix, ReachabilityRow
from faultline.network.records import DnsResult, HttpTiming, InterfaceList, PingResult

SymptomKind = Literal["unreachable", "packet_loss", "slow", "dns_failure", "dns_wrong_answer", "http_error",
                      "http_slow", "no_address", "service_refused"]
KINDS: tuple[str, ...] = SymptomKind.__args__  # type: ignore[attr-defined]

# "well above baseline": both a factor and an absolute margin, so jitter on tiny values never counts
RTT_FACTOR, RTT_MARGIN_MS = 3.0, 50.0
DNS_FACTOR, DNS_MARGIN_MS, DNS_SLOW_MS = 5.0, 200.0, 500
HTTP_FACTOR, HTTP_MARGIN_S, HTTP_SLOW_S = 3.0, 0.5, 2.0
DIG_VERSION = "9.18.28-1~deb12u2-Debian"


class Symptom(BaseModel):
    """One thing an affected party would notice. `dst` is a device, a DNS name or a URL (None: no_address)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SymptomKind
    src: str  # the device it is seen from
    dst: str | None
    dst_ip: str | None = None
    detail: str  # terse and factual: "100% loss (0/2 replies)", "answer 10.1.1.10, baseline 10.1.5.16"
    command: str  # what a person would type to see it
    evidence: str  # that command's output, formatted as the real tool prints it
    observed_at: datetime | None = None


# ------------------------------------------------------------------ tool output as a person would see it

def ping_text(dst_ip: str, tx: int, rx: int, loss_pct: float, rtt_avg_ms: float | None, error: str | None) -> str:
    """iputils `ping -c N` output for these counts (summary only, as for lost or quiet pings)."""
    if error and not tx:
        return error if error.startswith("ping") else f"ping: {error}"
    lines = [f"PING {dst_ip} ({dst_ip}) 56(84) bytes of data.", "", f"--- {dst_ip} ping statistics ---",
             f"{tx} packets transmitted, {rx} received, {loss_pct:g}% packet loss, time {max(tx - 1, 0) * 1000 + 3}ms"]
    if rx and rtt_avg_ms is not None:
        a = rtt_avg_ms
        lines.append(f"rtt min/avg/max/mdev = {a * 0.85:.3f}/{a:.3f}/{a * 1.2:.3f}/{a * 0.1:.3f} ms")
    return "\n".join(lines)


def dig_text(rec: DnsResult) -> str:
    """`dig NAME` output: header, answers, query time; or dig's line for a query that got no answer."""
    at = f"@{rec.server} " if rec.server else ""
    head = [f"; <<>> DiG {DIG_VERSION} <<>> {at}{rec.name}", ";; global options: +cmd"]
    if rec.status in ("timeout", "refused", "error"):
        reason = {"timeout": ";; connection timed out; no servers could be reached",
                  "refused": ";; communications error: connection refused"}.get(rec.status, f";; {rec.error}")
        return "\n".join(head + [reason])
    qid = zlib.crc32(rec.name.encode()) % 65536
    fqdn = rec.name.rstrip(".") + "."
    lines = head + [";; Got answer:", f";; ->>HEADER<<- opcode: QUERY, status: {rec.status}, id: {qid}",
                    f";; flags: qr aa rd; QUERY: 1, ANSWER: {len(rec.answers)}, AUTHORITY: 0, ADDITIONAL: 1",
                    "", ";; QUESTION SECTION:", f";{fqdn}\t\t\tIN\t{rec.rtype}"]
    if rec.answers:
        lines += ["", ";; ANSWER SECTION:"]
        lines += [f"{a.name}\t\t{a.ttl}\tIN\t{a.rtype}\t{a.data}" for a in rec.answers]
    server = rec.server or "127.0.0.53"
    lines += ["", f";; Query time: {rec.query_time_ms or 0} msec", f";; SERVER: {server}#53({server}) (UDP)"]
    return "\n".join(lines)


_CURL_ERRORS = {28: "Connection timed out after 5001 milliseconds",
                7: "Failed to connect to {host} port {port} after 1 ms: Couldn't connect to server",
                6: "Could not resolve host: {host}"}


def curl_text(rec: HttpTiming, slow: bool = False) -> tuple[str, str]:
    """(command, output) of curl as an operator runs it: an error line, the status code, or timings."""
    parts = urlsplit(rec.url)
    host, port = parts.hostname or rec.url, parts.port or (443 if parts.scheme == "https" else 80)
    if rec.status in ("timeout", "refused", "dns_error", "error") and not slow:
        code = rec.curl_exit or {"timeout": 28, "refused": 7, "dns_error": 6}.get(rec.status, 56)
        msg = rec.error or _CURL_ERRORS.get(code, "Recv failure: Connection reset by peer")
        return f"curl -sS -o /dev/null {rec.url}", f"curl: ({code}) {msg.format(host=host, port=port)}"
    if slow:
        fmt = "connect %{time_connect}s  first byte %{time_starttransfer}s  total %{time_total}s\\n"
        out = (f"connect {rec.time_connect_s or 0:.6f}s  first byte {rec.time_starttransfer_s or 0:.6f}s  "
               f"total {rec.time_total_s or 0:.6f}s")
        return f"curl -s -o /dev/null -w '{fmt}' {rec.url}", out
    fmt = "HTTP %{http_code} in %{time_total}s\\n"
    return f"curl -s -o /dev/null -w '{fmt}' {rec.url}", f"HTTP {rec.http_code or 0} in {rec.time_total_s or 0:.6f}s"


def excerpt(evidence: str, max_lines: int = 16) -> str:
    """The part of a tool's output worth pasting: dig without its boilerplate lines, anything capped."""
    lines = evidence.strip().splitlines()
    if any("<<>> DiG" in line for line in lines):
        skip = (";; OPT", "; EDNS", "; COOKIE", ";; WHEN", ";; MSG SIZE", ";; global options")
        lines = [line for line in lines if not line.startswith(skip)]
    return "\n".join(lines[:max_lines] + (["[...]"] if len(lines) > max_lines else []))


# ------------------------------------------------------------------ per-probe derivation

Key = tuple[str, ...]


def _row_symptoms(row: ReachabilityRow | PingResult, src: str, dst: str, dst_ip: str,
                  base: ReachabilityRow | PingResult | None, at: datetime | None) -> list[Symptom]:
    tx, rx = row.tx, row.rx
    loss = row.loss if isinstance(row, ReachabilityRow) else row.loss_pct
    rtt = row.rtt if isinstance(row, ReachabilityRow) else row.rtt_avg_ms
    base_rtt = None if base is None else (base.rtt if isinstance(base, ReachabilityRow) else base.rtt_avg_ms)
    command = f"ping -c {max(tx, 1)} {dst_ip}"
    evidence = ping_text(dst_ip, tx, rx, loss, rtt, row.error)
    if base is not None and base.status != "ok":
        return []  # failing before the incident too: not this incident's symptom
    if row.status == "loss":
        detail = f"{loss:g}% loss ({rx}/{tx} replies)"
        return [Symptom(kind="packet_loss", src=src, dst=dst, dst_ip=dst_ip, detail=detail, command=command,
                        evidence=evidence, observed_at=at)]
    if row.status != "ok":
        detail = row.error or f"100% loss (0/{tx} replies)"
        return [Symptom(kind="unreachable", src=src, dst=dst, dst_ip=dst_ip, detail=detail, command=command,
                        evidence=evidence, observed_at=at)]
    if rtt is not None and base_rtt is not None and rtt > base_rtt * RTT_FACTOR and rtt - base_rtt > RTT_MARGIN_MS:
        return [Symptom(kind="slow", src=src, dst=dst, dst_ip=dst_ip, detail=f"rtt {rtt:.1f} ms, baseline "
                        f"{base_rtt:.1f} ms", command=command, evidence=evidence, observed_at=at)]
    return []


def _dig_symptoms(rec: DnsResult, base: DnsResult | None, at: datetime | None) -> list[Symptom]:
    def make(kind: SymptomKind, detail: str) -> list[Symptom]:
        at_server = f"@{rec.server} " if rec.server else ""
        return [Symptom(kind=kind, src=rec.src, dst=rec.name, detail=detail, command=f"dig {at_server}{rec.name}",
                        evidence=dig_text(rec), observed_at=at)]

    answers = sorted(a.data for a in rec.answers if a.rtype == rec.rtype)
    if base is not None and (base.status != "NOERROR" or not base.answers):
        return []
    if rec.status != "NOERROR":
        return make("dns_failure", rec.status + (f": {rec.error}" if rec.error else ""))
    if not answers:
        return make("dns_failure", f"NOERROR with no {rec.rtype} answer")
    if base is not None:
        before = sorted(a.data for a in base.answers if a.rtype == base.rtype)
        if before and answers != before:
            return make("dns_wrong_answer", f"answer {', '.join(answers)}, baseline {', '.join(before)}")
        q, q0 = rec.query_time_ms or 0, base.query_time_ms or 0
        if q > q0 * DNS_FACTOR and q - q0 > DNS_MARGIN_MS:
            return make("slow", f"query time {q} ms, baseline {q0} ms")
    elif (rec.query_time_ms or 0) >= DNS_SLOW_MS:
        return make("slow", f"query time {rec.query_time_ms} ms")
    return []


def _http_symptoms(rec: HttpTiming, base: HttpTiming | None, at: datetime | None) -> list[Symptom]:
    def make(kind: SymptomKind, detail: str, slow: bool = False) -> list[Symptom]:
        command, evidence = curl_text(rec, slow)
        return [Symptom(kind=kind, src=rec.src, dst=rec.url, dst_ip=rec.remote_ip, detail=detail, command=command,
                        evidence=evidence, observed_at=at)]

    if base is not None and base.status != "ok":
        return []
    if rec.status == "refused":
        return make("service_refused", f"curl exit {rec.curl_exit or 7}: {rec.error or 'connection refused'}")
    if rec.status == "dns_error":
        return make("dns_failure", f"curl exit {rec.curl_exit or 6}: {rec.error or 'could not resolve host'}")
    if rec.status == "http_error":
        return make("http_error", f"HTTP {rec.http_code}")
    if rec.status != "ok":
        return make("http_error", f"curl exit {rec.curl_exit}: {rec.error or rec.status}")
    total = rec.time_total_s or 0.0
    if base is not None:
        before = base.time_total_s or 0.0
        if total > before * HTTP_FACTOR and total - before > HTTP_MARGIN_S:
            return make("http_slow", f"total {total:.2f} s, baseline {before:.2f} s", slow=True)
    elif total >= HTTP_SLOW_S:
        return make("http_slow", f"total {total:.2f} s", slow=True)
    return []


def _addr_symptoms(rec: InterfaceList, base: InterfaceList | None, at: datetime | None) -> list[Symptom]:
    """Interfaces without an IPv4 address (with a baseline: that had one), or gone since the baseline."""
    if rec.error:
        return []  # the probe itself failed: nothing is known about the addresses
    had = {i.ifname for i in base.interfaces if any("." in a for a in i.addresses)} if base else None
    out = []

    def lost(ifname: str, evidence: str, detail: str) -> None:
        out.append(Symptom(kind="no_address", src=rec.device, dst=None, detail=detail,
                           command=f"ip -br addr show dev {ifname}", evidence=evidence, observed_at=at))

    for iface in rec.interfaces:
        if iface.ifname == "lo" or any("." in a for a in iface.addresses):
            continue
        if had is not None and iface.ifname not in had:
            continue  # without an IPv4 address before the incident too
        state = "UP" if iface.up else iface.operstate.upper()
        lost(iface.ifname, f"{iface.ifname:<16} {state:<14} {' '.join(iface.addresses)}".rstrip(),
             f"{iface.ifname} has no IPv4 address")
    for ifname in sorted((had or set()) - {i.ifname for i in rec.interfaces} - {"lo"}):
        lost(ifname, f'Device "{ifname}" does not exist.', f"{ifname} is gone")
    return out


def _keyed(outputs: Iterable[ProbeOutput]) -> dict[Key, Any]:
    """Baseline records by what they measured, so the incident's same measurement can be compared."""
    found: dict[Key, Any] = {}
    for out in outputs:
        rec = out.record
        if isinstance(rec, ReachabilityMatrix):
            found.update({("ping", row.src, row.dst_ip): row for row in rec.rows})
        elif isinstance(rec, PingResult):
            found[("ping", rec.src, rec.dst_ip)] = rec
        elif isinstance(rec, DnsResult):
            found[("dig", rec.src, rec.name, rec.server or "", rec.rtype)] = rec
        elif isinstance(rec, HttpTiming):
            found[("http", rec.src, rec.url)] = rec
        elif isinstance(rec, InterfaceList):
            found[("addr", rec.device)] = rec
    return found


def _pastable(new: list[Symptom], raw: str, marks: tuple[str, ...]) -> list[Symptom]:
    """Use the probe's own output as evidence when it is what the tool prints (not a parsed summary)."""
    text = raw.strip()
    if not text or not any(m in text for m in marks):
        return new
    update = {"evidence": text}
    if header := re.search(r"<<>> DiG \S+ <<>> (.+)", text):  # the command as dig echoes it
        update["command"] = f"dig {header.group(1).strip()}"
    return [s.model_copy(update=update) for s in new]


def symptoms_from_probes(outputs: list[ProbeOutput], baseline: list[ProbeOutput] | None = None, *,
                         observed_at: datetime | None = None) -> list[Symptom]:
    """Every user-visible symptom in `outputs`, in probe order; changes from `baseline` only, when given.

    Reachability rows and pings that fail or lose packets (or whose RTT is well above baseline), dig
    failures and answers that differ from the baseline (or lookups well slower), curl errors and totals
    well above baseline, end-host interfaces that lost their IPv4 address. Other probes yield nothing.
    """
    base = _keyed(baseline) if baseline is not None else {}
    at = observed_at
    found: list[Symptom] = []
    for out in outputs:
        rec = out.record
        if isinstance(rec, ReachabilityMatrix):
            for row in rec.rows:
                found += _row_symptoms(row, row.src, row.dst, row.dst_ip, base.get(("ping", row.src, row.dst_ip)), at)
        elif isinstance(rec, PingResult):
            new = _row_symptoms(rec, rec.src, rec.dst_ip, rec.dst_ip, base.get(("ping", rec.src, rec.dst_ip)), at)
            found += _pastable(new, out.raw, ("ping statistics", "ping:"))
        elif isinstance(rec, DnsResult):
            new = _dig_symptoms(rec, base.get(("dig", rec.src, rec.name, rec.server or "", rec.rtype)), at)
            found += _pastable(new, out.raw, ("<<>> DiG",))
        elif isinstance(rec, HttpTiming):
            found += _http_symptoms(rec, base.get(("http", rec.src, rec.url)), at)
        elif isinstance(rec, InterfaceList):
            found += _addr_symptoms(rec, base.get(("addr", rec.device)), at)
    return found
