"""The verdict's citations: statements about this incident, each with the verbatim quote it rests on.

The ticket, the network's flags (with the probe step that read them) and log lines in scope are VERIFIED;
precedents and documentation sections are REFERENCE, never evidence that this fault happened. Which statements,
in what order: docs/verdict.md#honest-evidence.
"""

from __future__ import annotations

import re

import duckdb

from faultline.sade.records import Flag
from faultline.sade.store import StoredDiagnosis
from faultline.verdict.fixes import DocSection, Precedent
from faultline.verdict.records import Citation, Section, VerdictClaim
from faultline.verdict.sources import Inputs

MAX_NETWORK = 4
MAX_LOG_LINES = 4
MAX_QUOTE = 400
_DIGITS = re.compile(r"\d+")
_IFACE_KEYS = ("ifname", "iface", "interface", "dev_if")

TAGGED_SQL = """
SELECT coalesce(device, host), source_file, line_no, raw FROM log_lines
WHERE incident_id = ? ORDER BY source_file, line_no
"""


def quote_of(text: str) -> str:
    """A quote as stored: whitespace collapsed, cut at `MAX_QUOTE` characters."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE else text[:MAX_QUOTE - 3] + "..."


class Claims:
    """The claims of one verdict, numbered in the order they are added."""

    def __init__(self) -> None:
        self.items: list[VerdictClaim] = []

    def add(self, section: Section, text: str, quote: str, citation: Citation) -> VerdictClaim:
        status = "REFERENCE" if citation.source in ("history", "docs") else "VERIFIED"
        claim = VerdictClaim(seq=len(self.items) + 1, section=section, text=text.strip(), quote=quote_of(quote),
                             citation=citation, status=status)
        self.items.append(claim)
        return claim

    def of(self, section: Section) -> list[VerdictClaim]:
        return [c for c in self.items if c.section == section]


def ticket_claim(claims: Claims, inputs: Inputs) -> None:
    """The symptom as the ticket reports it."""
    inc = inputs.incident
    claims.add("symptom", f"Reported: {inc.title.strip()}", inc.title,
               Citation(source="ticket", ref=inc.ticket_id or inc.incident_id, detail="ticket title"))


def _describe(flag: Flag) -> str:
    where = flag.device or "the network"
    return f"{where}: {flag.kind.replace('_', ' ')} (found by the {flag.scan.replace('_', ' ')})"


def network_flags(network: StoredDiagnosis | None, labels: list[str], devices: list[str]) -> list[Flag]:
    """The flags behind the verdict: on its devices or in its families, strong and baseline-backed first."""
    if network is None:
        return []
    from faultline.nika.labels import skill_of

    families = set(network.families) | {skill_of(lb) for lb in labels} - {None}
    chosen = [f for f in network.flags if (f.device in devices) or (f.family in families)]
    return sorted(chosen, key=lambda f: (f.strength != "strong", f.family not in families, not f.vs_baseline,
                                         f.device not in devices))


def network_claims(claims: Claims, network: StoredDiagnosis | None, flags: list[Flag]) -> None:
    """One evidence claim per flag behind the verdict (the reachability picture goes to the symptom)."""
    if network is None:
        return
    for flag in flags[:MAX_NETWORK]:
        step = network.step_for(flag)
        ref = (f"step {step.seq}: {step.tool} on {step.args.get('dev') or flag.device or 'every device'}, "
               f"output {step.output_digest or 'n/a'}") if step else f"scan {flag.scan}"
        claims.add("evidence", _describe(flag), flag.evidence,
                   Citation(source="network", ref=ref, device=flag.device, detail=step.tool if step else flag.scan))
    seen = {id(f) for f in flags[:MAX_NETWORK]}
    picture = [f for f in network.flags if f.phase == "initial" and id(f) not in seen][:1]
    for flag in picture:
        claims.add("symptom", f"Observed on the network: {_describe(flag)}", flag.evidence,
                   Citation(source="network", ref=f"scan {flag.scan}", device=flag.device, detail=flag.scan))


def healthy_claim(claims: Claims, network: StoredDiagnosis | None) -> None:
    """What a clean network diagnosis rests on: how much was probed, and its own summary."""
    if network is None:
        return
    probes = sum(s.probe_calls for s in network.steps)
    tools = sorted({s.tool for s in network.steps})
    claims.add("evidence", f"The network was probed ({probes} probe calls: {', '.join(tools)}) and no scan found a "
               "fault", network.summary or "is_anomaly: false",
               Citation(source="network", ref=f"{network.method} submission", detail="no anomaly"))


def interfaces(network: StoredDiagnosis | None, flags: list[Flag], devices: list[str]) -> list[str]:
    """Interfaces the verdict's flags and the submission's v2 resources name, as ``device:ifname``."""
    found: list[str] = []
    for flag in flags:
        for key in _IFACE_KEYS:
            value = flag.attrs.get(key)
            if isinstance(value, str) and flag.device:
                found.append(f"{flag.device}:{value}")
    for rc in network.v2.root_causes if network and network.v2 else []:
        parts = rc.resource_id.split("/")
        if parts[0] == "interface" and len(parts) == 3 and (not devices or parts[1] in devices):
            found.append(f"{parts[1]}:{parts[2]}")
    return list(dict.fromkeys(found))


def scope_rows(conn: duckdb.DuckDBPyConnection, inputs: Inputs, log_timezone: str) -> list[tuple]:
    """(device, file, line, raw) of the lines in ASTRA's last stored scope, else of the incident's tagged lines."""
    from faultline.scope.resolve import scope_lines
    from faultline.scope.store import read_scope

    rounds = [r.round for r in inputs.astra.rounds] if inputs.astra else []
    for rnd in sorted(rounds, reverse=True):
        scope = read_scope(conn, inputs.incident.incident_id, rnd, log_timezone)
        if scope is not None:
            return scope_lines(conn, scope, "coalesce(l.device, l.host), l.source_file, l.line_no, l.raw").fetchall()
    return conn.execute(TAGGED_SQL, [inputs.incident.incident_id]).fetchall()


def label_lines(rows: list[tuple], labels: list[str], devices: list[str],
                limit: int = MAX_LOG_LINES) -> list[tuple[str, str, int, str]]:
    """Lines matching the signals of `labels` (the verdict's devices first, then time order in each file)."""
    from faultline.truth.taxonomy import taxonomy

    patterns: list[re.Pattern[str]] = []
    for label in labels:
        entry = taxonomy().get(label)
        patterns += [s.pattern for s in entry.signals] if entry else []
    if not patterns:
        return []
    hits, seen = [], set()
    for r in rows:
        if not any(p.search(r[3]) for p in patterns):
            continue
        shape = (r[0], _DIGITS.sub("#", str(r[3])))  # the same message again, at another time: cited once
        if shape not in seen:
            seen.add(shape)
            hits.append(r)
    wanted = {d.lower() for d in devices}
    hits.sort(key=lambda r: (str(r[0]).lower() not in wanted,))
    return [(str(r[0]), str(r[1]), int(r[2]), str(r[3])) for r in hits[:limit]]


def log_claims(claims: Claims, rows: list[tuple], labels: list[str], devices: list[str],
               section: Section = "evidence", lead: str = "") -> int:
    """Evidence claims from the log lines in scope that show `labels`; how many were added."""
    lines = label_lines(rows, labels, devices)
    for device, file, line_no, raw in lines:
        claims.add(section, f"{lead}{device} logged a line showing {', '.join(labels)}", raw,
                   Citation(source="logs", ref=f"{file}:{line_no}", device=device, detail="log line in scope"))
    return len(lines)


def chain_claims(claims: Claims, chain: dict | None) -> int:
    """The event chain ASTRA's log agent found (root event, then its echoes on both ends, then what came later),
    one claim per line, each quoting its log line; how many were added."""
    if not chain:
        return 0
    rows = [(chain["root"], "Root event" if chain["root"]["role"] == "root" else "Observed (no root event logged)")]
    rows += [(e, "Echo at the far end (affected peer)" if e["end"] == "far" else "Echo on the same device")
             for e in chain.get("echoes") or []]
    rows += [(e, "Context on the device") for e in chain.get("context") or []]
    rows += [(e, "Later, after the ticket was opened (not its cause)") for e in chain.get("later") or []]
    from faultline.astra.event_chain import ChainEvent

    for event, lead in rows:
        claims.add("chain", f"{lead}: {ChainEvent(**event).describe()}", event["quote"],
                   Citation(source="logs", ref=f"{event['source_file']}:{event['line_no']}", device=event.get("device"),
                            detail="log line in scope"))
    return len(rows)


def reference_claims(claims: Claims, precedents: list[Precedent], docs: list[DocSection]) -> None:
    """Precedents and documentation sections, as reference material in the resolution."""
    for p in precedents:
        how = "the same fault" if p.exact else "a fault of the same family"
        cite = Citation(source="history", ref=p.ticket_id, detail=f"resolved {p.resolved_at}: {p.title}")
        if p.causes:
            claims.add("fix", f"Resolved ticket {p.ticket_id} was {how}: what was found", p.causes[0], cite)
        for sentence in p.fixes[:1]:
            claims.add("fix", f"What fixed it in {p.ticket_id}", sentence, cite)
        for sentence in p.checks[:1]:
            claims.add("verification", f"How {p.ticket_id} was confirmed fixed", sentence, cite)
    for d in docs:
        about = d.label if d.exact else "faults of the same family"
        claims.add("fix", f"The documentation on {about} ({d.title})", d.text,
                   Citation(source="docs", ref=d.chunk_id, detail=d.title))
