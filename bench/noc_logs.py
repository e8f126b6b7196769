"""ASTRA on a NOC's own data: a syslog archive with no incident ids, tickets that name devices loosely.

The routers' logs of a data set in the shared IOS-XR layout (`logs/<device>.<scenario>.log`,
`events.csv`) are ingested as ONE archive — as a syslog collector keeps them, with no incident id —
with the FRR error catalogue as documentation when the data folder has it. Each event then gets tickets
(`--tickets FILE`: JSONL in Faultline's ticket layout plus `event_id`; by default three per event,
written here):

* ``device``: names the event's device and the time ("BGP sessions dropped on spine2 around 10:30");
* ``peer``: names only a peer that logged the event too (the device with the most adjacency changes within
  2 s of the event device's first one) and the time;
* ``vague``: names no device, only the time.

Every ticket is analysed by ASTRA (deterministic analyst) through the product's path, and scored:

* scope recall: the share of the event's lines (the event device's adjacency, up/down and alarm lines
  in [start - slack, end + slack], on its own clock) inside the round-1 scope;
* lines in scope (how much the scope asks the filter to read);
* whether the final report names the event's device (its `devices`), its interface (when the event
  has one) and its event type (the report's label is the taxonomy event the event type maps to);
* quotes outside the scope: log lines quoted as evidence that are not lines of the ticket's scopes;
* the same device and event-type checks on the verdict (`faultline.verdict`), which here has no network and
  stands on ASTRA's sources alone.

    .venv/bin/python bench/noc_logs.py [--data DIR] [--tickets FILE] [--scenario S] [--rounds N] [--copied] [--json]

`--copied`: the archive as a NOC copies it to a new disk (every file modified today, no year given): the logs are
ingested first, the tickets after them re-date the lines (docs/scope.md#timestamps-without-a-year). The peer
tickets need the lines' dates before the tickets exist, so this mode writes the device and vague tickets only.

Clocks: the logs carry no zone; the events' offset (`-07:00` in the shared set) gives the log and
ticket time zone. leaf4 logs UTC: the scope must find that itself; the truth side applies the
documented offset (`--clock-offset leaf4=7`, docs/data.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from log_filter import EVENT_LINE, _offsets  # noqa: E402

from faultline.datasets import configured_path, require_paths  # noqa: E402

VARIANTS = ("device", "peer", "vague")


def read_events(data: Path, scenario: str | None) -> list[dict[str, str]]:
    with open(data / "events.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if not scenario or r["scenario"] == scenario]


def _zone_name(events: list[dict[str, str]]) -> str:
    """The IANA fixed-offset zone of the events' offset (Etc/GMT+7 is UTC-7: the sign is inverted)."""
    offsets = {datetime.fromisoformat(e["start"]).utcoffset() for e in events}
    if len(offsets) != 1:
        return "UTC"
    hours = int(next(iter(offsets)).total_seconds() // 3600)
    return "UTC" if hours == 0 else f"Etc/GMT{-hours:+d}"


def _event_lines(conn, event: dict[str, str], slack: float, offset: timedelta) -> set[tuple[str, int]]:
    start = datetime.fromisoformat(event["start"]).replace(tzinfo=None) - timedelta(seconds=slack) + offset
    end = datetime.fromisoformat(event["end"]).replace(tzinfo=None) + timedelta(seconds=slack) + offset
    rows = conn.execute("SELECT source_file, line_no FROM log_lines WHERE device = ? AND ts BETWEEN ? AND ? "
                        "AND source_file LIKE ? AND regexp_matches(coalesce(message, raw), ?)",
                        [event["device"], start, end, f"%.{event['scenario']}.log", EVENT_LINE]).fetchall()
    return {(f, n) for f, n in rows}


def _peer(conn, event: dict[str, str], slack: float, offsets: dict[str, timedelta]) -> str | None:
    """The device with the most adjacency changes within 2 s of the event device's first event line."""
    own = offsets.get(event["device"], timedelta())
    start = datetime.fromisoformat(event["start"]).replace(tzinfo=None) - timedelta(seconds=slack)
    end = datetime.fromisoformat(event["end"]).replace(tzinfo=None) + timedelta(seconds=slack)
    first = conn.execute("SELECT min(ts) FROM log_lines WHERE device = ? AND ts BETWEEN ? AND ? AND source_file LIKE ? "
                         "AND regexp_matches(coalesce(message, raw), 'ADJCHANGE')",
                         [event["device"], start + own, end + own, f"%.{event['scenario']}.log"]).fetchone()[0]
    if first is None:
        return None
    first -= own
    counts: dict[str, int] = defaultdict(int)
    for device, off in [(d, offsets.get(d, timedelta())) for (d,) in conn.execute(
            "SELECT DISTINCT device FROM log_lines WHERE device <> ?", [event["device"]]).fetchall()]:
        counts[device] += conn.execute(
            "SELECT count(*) FROM log_lines WHERE device = ? AND source_file LIKE ? AND ts BETWEEN ? AND ? "
            "AND regexp_matches(coalesce(message, raw), 'ADJCHANGE')",
            [device, f"%.{event['scenario']}.log", first + off - timedelta(seconds=2),
             first + off + timedelta(seconds=2)]).fetchone()[0]
    ranked = sorted((n, d) for d, n in counts.items() if n)
    return ranked[-1][1] if ranked else None  # the device with the most adjacency changes at that moment


def write_tickets(conn, events: list[dict[str, str]], slack: float, offsets: dict[str, timedelta]) -> list[dict]:
    """Three tickets per event (see the module docstring), opened 5 minutes after the event's end."""
    tickets = []
    for event in events:
        start = datetime.fromisoformat(event["start"])
        opened = datetime.fromisoformat(event["end"]) + timedelta(minutes=5)
        hhmm = start.strftime("%H:%M")
        peer = _peer(conn, event, slack, offsets)
        texts = {
            "device": (f"BGP sessions dropped on {event['device']}",
                       f"Around {hhmm} {event['device']} lost its BGP sessions; traffic moved to other paths."),
            "peer": (f"BGP neighbours flapped on {peer}", f"Monitoring: {peer} reported BGP neighbours going down "
                                                          f"around {hhmm}. Please check.") if peer else None,
            "vague": ("Routing problem in the fabric", f"Several users saw errors starting around {hhmm}."),
        }
        for variant, text in texts.items():
            if text is None:
                continue
            tickets.append({"ticket_id": f"{event['event_id']}-{variant}", "project": "NOC", "title": text[0],
                            "description": text[1], "status": "Open", "priority": "Major",
                            "created_at": opened.isoformat(), "updated_at": opened.isoformat(),
                            "event_id": event["event_id"], "variant": variant})
    return tickets


def run(data: Path, tickets_file: Path | None, scenario: str | None, rounds: int, slack: float,
        offsets: dict[str, timedelta], work: Path, copied: bool = False) -> dict[str, Any]:
    from faultline import db
    from faultline.astra.unit import run_astra
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths
    from faultline.outcome import IncidentRef
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index
    from faultline.scope.resolve import scope_lines
    from faultline.scope.store import read_scope
    from faultline.truth.taxonomy import event_for_type
    from faultline.verdict.unit import run_verdict

    events = read_events(data, scenario)
    zone = _zone_name(events)
    year = datetime.fromisoformat(events[0]["start"]).year
    settings = Settings(duckdb_path=work / "noc.duckdb", lancedb_dir=work / "lancedb", progress=False,
                        log_default_year=None if copied else year, log_timezone=zone)
    conn = db.open_warehouse(settings)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    logs = [p for p in sorted((data / "logs").glob("*.log")) if not scenario or p.name.endswith(f".{scenario}.log")]
    if copied:  # as a NOC copies an archive to a new disk: every file modified today, no year given
        (work / "copied").mkdir(exist_ok=True)
        logs = [Path(shutil.copy(p, work / "copied" / p.name)) for p in logs]
    ingest_paths(conn, settings, "logs", logs)
    timings["ingest_logs_s"] = round(time.perf_counter() - t, 2)
    catalogue = configured_path("docs", "frr_errors.jsonl")
    docs = [catalogue] if catalogue and catalogue.is_file() else []
    if tickets_file:
        tickets = [json.loads(line) for line in tickets_file.read_text().splitlines() if line.strip()]
    else:
        tickets = write_tickets(conn, events, slack, offsets)
    ticket_path = work / "tickets.jsonl"
    ticket_path.write_text("".join(json.dumps({k: v for k, v in tk.items() if k not in ("event_id", "variant")}) + "\n"
                                   for tk in tickets))
    t = time.perf_counter()
    ingest_paths(conn, settings, "tickets", [ticket_path])
    if docs:
        ingest_paths(conn, settings, "docs", docs)
    embedder = Embedder(settings)
    for kind in ("tickets", "docs"):
        sync_index(conn, settings, kind, embedder)  # type: ignore[arg-type]
    timings["ingest_index_s"] = round(time.perf_counter() - t, 2)
    by_event = {e["event_id"]: e for e in events}
    rows = []
    t = time.perf_counter()
    for ticket in tickets:
        event = by_event[ticket["event_id"]]
        truth = _event_lines(conn, event, slack, offsets.get(event["device"], timedelta()))
        analysed = run_astra(settings, conn, ticket["ticket_id"], max_rounds=rounds)
        incident, result = analysed.incident, analysed.result
        report = result.rounds[-1].report
        verdict = run_verdict(settings, conn,
                              IncidentRef(incident_id=incident.incident_id, ticket_id=incident.ticket_id),
                              network_backend=None).verdict
        scoped: set[tuple[str, int]] = set()
        raws: set[str] = set()
        lines_in_scope = None
        for round_ in sorted({r for (r,) in conn.execute("SELECT DISTINCT round FROM log_scopes WHERE incident_id = ?",
                                                         [incident.incident_id]).fetchall()}):
            scope = read_scope(conn, incident.incident_id, round_, settings.log_timezone)
            got = scope_lines(conn, scope, "l.source_file, l.line_no, l.raw").fetchall()
            if lines_in_scope is None:
                lines_in_scope = len(got)
                first = {(f, n) for f, n, _ in got}
            scoped |= {(f, n) for f, n, _ in got}
            raws |= {r.strip() for _f, _n, r in got}
        quotes = [q for out in result.outputs if out.agent == "log" for f in out.findings for q in f.quotes]
        outside = [q for q in quotes if q.strip() and q.strip() not in raws]
        mapped = event_for_type(event["event_type"])
        rows.append({
            "ticket_id": ticket["ticket_id"], "event_id": event["event_id"], "variant": ticket.get("variant", "given"),
            "device": event["device"], "event_type": event["event_type"],
            "event_lines": len(truth), "scope_recall": (len(truth & first) / len(truth)) if truth else None,
            "lines_in_scope": lines_in_scope or 0, "report_devices": report.devices, "report_label": report.label,
            "names_device": event["device"] in report.devices,
            "names_interface": (event["interface"] in report.text) if event.get("interface") else None,
            "names_event_type": bool(mapped) and report.label == mapped.label,
            "verdict_labels": verdict.labels, "verdict_devices": verdict.devices, "verdict_rule": verdict.rule,
            "verdict_names_device": event["device"] in verdict.devices,
            "verdict_names_event_type": bool(mapped) and mapped.label in verdict.labels,
            "log_quotes": len(quotes), "quotes_outside_scope": len(outside),
        })
    timings["analyse_s"] = round(time.perf_counter() - t, 2)
    return {"data": str(data), "log_timezone": zone, "tickets": len(rows), "timings": timings,
            "summary": summarise(rows), "rows": rows}


def _share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant and overall: mean scope recall, median lines in scope, share naming device / event type."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row["variant"]].append(row)
        groups["all"].append(row)
    out = {}
    for name, group in groups.items():
        recalls = [r["scope_recall"] for r in group if r["scope_recall"] is not None]
        sizes = sorted(r["lines_in_scope"] for r in group)
        out[name] = {
            "tickets": len(group), "events_with_lines": len(recalls),
            "scope_recall_mean": round(sum(recalls) / len(recalls), 3) if recalls else None,
            "scope_recall_min": round(min(recalls), 3) if recalls else None,
            "lines_in_scope_median": sizes[len(sizes) // 2] if sizes else 0,
            "names_device": _share([r["names_device"] for r in group]),
            "names_event_type": _share([r["names_event_type"] for r in group]),
            "verdict_names_device": _share([r["verdict_names_device"] for r in group]),
            "verdict_names_event_type": _share([r["verdict_names_event_type"] for r in group]),
            "quotes_outside_scope": sum(r["quotes_outside_scope"] for r in group),
        }
    return out


def _print(report: dict[str, Any]) -> None:
    print(f"data: {report['data']}  (log/ticket zone {report['log_timezone']}, {report['tickets']} tickets, "
          f"timings {report['timings']})")
    print(f"{'ticket':34} {'recall':>6} {'scope':>6} {'device':>6} {'type':>5} {'outside':>7}  label / devices")
    for r in report["rows"]:
        recall = "-" if r["scope_recall"] is None else f"{r['scope_recall']:.2f}"
        print(f"{r['ticket_id']:34} {recall:>6} {r['lines_in_scope']:>6} {str(r['names_device']):>6} "
              f"{str(r['names_event_type']):>5} {r['quotes_outside_scope']:>7}  "
              f"{r['report_label']} {r['report_devices']}")
    print()
    print(f"{'variant':8} {'tickets':>7} {'recall':>7} {'min':>5} {'median lines':>12} {'device':>7} {'type':>6} "
          f"{'outside':>7} {'verdict device':>14} {'verdict type':>12}")
    for name, s in report["summary"].items():
        print(f"{name:8} {s['tickets']:>7} {s['scope_recall_mean']!s:>7} {s['scope_recall_min']!s:>5} "
              f"{s['lines_in_scope_median']:>12} {s['names_device']!s:>7} {s['names_event_type']!s:>6} "
              f"{s['quotes_outside_scope']:>7} {s['verdict_names_device']!s:>14} {s['verdict_names_event_type']!s:>12}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=configured_path("logs", "iosxr", "bgpclear"))
    parser.add_argument("--tickets", type=Path, default=None, help="JSONL tickets with an event_id field")
    parser.add_argument("--scenario", default=None, help="only this scenario's logs and events (e.g. bgpclear)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--slack", type=float, default=60.0)
    parser.add_argument("--clock-offset", action="append", default=None, help="DEVICE=HOURS for the truth side")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--copied", action="store_true",
                        help="ingest a fresh copy of the logs with no year given, then the tickets (README's order)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    require_paths(parser, args, "data")
    offsets = _offsets(args.clock_offset or ["leaf4=7"])
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        report = run(args.data, args.tickets, args.scenario, args.rounds, args.slack, offsets, args.work, args.copied)
    else:
        with tempfile.TemporaryDirectory(prefix="noc-logs-") as tmp:
            report = run(args.data, args.tickets, args.scenario, args.rounds, args.slack, offsets, Path(tmp),
                         args.copied)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)


if __name__ == "__main__":
    main()
