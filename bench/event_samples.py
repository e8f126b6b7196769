"""ASTRA and the verdict on a labelled set built from the vendor event catalogue's real samples, across vendors.

Every root event sample of `faultline/events/vendors/*.yml` becomes an incident of one syslog archive
(`bench/event_cases.py`: the sample on device a, the echoes it causes at the far end b from the same platform's
samples, an unrelated event on c 40 minutes before, another event on a 10 minutes after the ticket was opened),
with three tickets each (naming a, naming only b, naming no device). Each ticket is analysed by ASTRA (deterministic
analyst, no network) and the verdict, and scored:

* device: the report names a (its `devices`); event: the report's label is the sample's class;
* far end: for link and BGP roots, the report's event chain lists b as an affected peer;
* after: the cause named was logged after the ticket was opened (must be 0).

    .venv/bin/python bench/event_samples.py [--platform P ...] [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.event_cases import BGP_ROOTS, LINK_ROOTS, build_cases, write_archive, write_inventory  # noqa: E402


def run(platforms: list[str] | None, rounds: int, work: Path) -> dict[str, Any]:
    from faultline import db
    from faultline.astra.unit import run_astra
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths
    from faultline.ingest.inventory import ingest_inventory
    from faultline.outcome import IncidentRef
    from faultline.verdict.unit import run_verdict

    cases = build_cases(platforms)
    settings = Settings(duckdb_path=work / "events.duckdb", lancedb_dir=work / "lancedb", progress=False,
                        log_timezone="UTC", ticket_timezone="UTC")
    conn = db.open_warehouse(settings)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    ingest_paths(conn, settings, "logs", write_archive(cases, work / "archive"))
    ingest_inventory(conn, settings, write_inventory(cases, work / "inventory"), name="events")
    unparsed = conn.execute("SELECT count(*) FROM log_lines WHERE ts IS NULL").fetchone()[0]
    tickets = [t for case in cases for t in case.tickets()]
    (work / "tickets.jsonl").write_text("".join(json.dumps({k: v for k, v in tk.items()
                                                            if k not in ("case_id", "variant")}) + "\n"
                                                for tk in tickets))
    ingest_paths(conn, settings, "tickets", [work / "tickets.jsonl"])
    timings["ingest_s"] = round(time.perf_counter() - t, 2)
    by_case = {c.case_id: c for c in cases}
    rows = []
    t = time.perf_counter()
    for ticket in tickets:
        case = by_case[ticket["case_id"]]
        analysed = run_astra(settings, conn, ticket["ticket_id"], max_rounds=rounds)
        report = analysed.result.rounds[-1].report
        log = next((o for o in reversed(analysed.result.outputs) if o.agent == "log"), None)
        chain = (log.data.get("event_chain") if log else None) or {}
        verdict = run_verdict(settings, conn, IncidentRef(incident_id=analysed.incident.incident_id,
                                                          ticket_id=analysed.incident.ticket_id),
                              network_backend=None).verdict
        root_at = (chain.get("root") or {}).get("at")
        rows.append({
            "ticket_id": ticket["ticket_id"], "platform": case.platform, "cls": case.cls,
            "variant": ticket["variant"], "report_label": report.label, "report_devices": report.devices,
            "names_device": case.a in report.devices, "names_event": report.label == case.cls,
            "far_end": (case.b in (chain.get("affected_peers") or [])) if case.cls in LINK_ROOTS + BGP_ROOTS
            else None,
            "after_opening": bool(root_at and datetime.fromisoformat(root_at) > case.opened),
            "verdict_names_device": case.a in verdict.devices, "verdict_names_event": case.cls in verdict.labels,
            "fix_generic": "Generic guidance" in verdict.fix,
        })
    timings["analyse_s"] = round(time.perf_counter() - t, 2)
    return {"cases": len(cases), "tickets": len(rows), "unparsed_lines": unparsed, "timings": timings,
            "summary": summarise(rows), "rows": rows}


def _share(values: list[bool | None]) -> str | None:
    known = [v for v in values if v is not None]
    return f"{sum(known)}/{len(known)}" if known else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per platform, per variant and overall: device, event, far end, causes after the opening."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for key in (f"platform={row['platform']}", f"variant={row['variant']}", "all"):
            groups[key].append(row)
    return {name: {"tickets": len(g), "names_device": _share([r["names_device"] for r in g]),
                   "names_event": _share([r["names_event"] for r in g]),
                   "far_end": _share([r["far_end"] for r in g]),
                   "after_opening": sum(r["after_opening"] for r in g),
                   "verdict_device": _share([r["verdict_names_device"] for r in g]),
                   "verdict_event": _share([r["verdict_names_event"] for r in g])}
            for name, g in sorted(groups.items())}


def _print(report: dict[str, Any]) -> None:
    print(f"{report['cases']} cases, {report['tickets']} tickets, {report['unparsed_lines']} archive lines without a "
          f"time, timings {report['timings']}")
    for r in report["rows"]:
        if not (r["names_device"] and r["names_event"]) or r["after_opening"] or r["far_end"] is False:
            print(f"  miss {r['ticket_id']:48} {r['cls']:26} -> {r['report_label']} {r['report_devices']}"
                  f"{' far end not named' if r['far_end'] is False else ''}"
                  f"{' CAUSE AFTER OPENING' if r['after_opening'] else ''}")
    print(f"{'group':20} {'tickets':>7} {'device':>8} {'event':>8} {'far end':>8} {'after':>5} {'v.device':>8} "
          f"{'v.event':>8}")
    for name, s in report["summary"].items():
        print(f"{name:20} {s['tickets']:>7} {s['names_device']!s:>8} {s['names_event']!s:>8} {s['far_end']!s:>8} "
              f"{s['after_opening']:>5} {s['verdict_device']!s:>8} {s['verdict_event']!s:>8}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", default=None, help="only this platform (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        report = run(args.platform, args.rounds, args.work)
    else:
        with tempfile.TemporaryDirectory(prefix="event-samples-") as tmp:
            report = run(args.platform, args.rounds, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)


if __name__ == "__main__":
    main()
