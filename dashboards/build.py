"""Build the static dashboard site from the warehouse marts (the `mart_*` tables only, through `MartReader`).

`build_dashboards(conn, out_dir)` writes `index.html`, `incidents.html`, `stratification.html`, `rounds.html`,
`sade.html`, `cost.html`, `incidents/<id>.html` and `style.css`: relative links, no JavaScript, no external URL, so
it opens from disk and copies anywhere. Call `faultline.marts.refresh_marts` first; empty marts' pages say so.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from dashboards.html import Html, incident_file, render_page, stylesheet
from dashboards.pages_incidents import incident_page, incidents_list_page
from dashboards.pages_overview import cost_page, index_page
from dashboards.pages_results import rounds_page, sade_page, stratification_page
from dashboards.query import MartReader
from faultline.errors import FaultlineError

PARTIAL_SUFFIX = ".partial"
DATABASE_SQL = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"


@dataclass(frozen=True)
class BuildResult:
    """What a dashboard build wrote."""

    out_dir: Path
    index: Path
    pages: list[Path]
    incident_pages: int
    seconds: float
    missing_marts: list[str] = field(default_factory=list)


def build_dashboards(conn: duckdb.DuckDBPyConnection, out_dir: Path) -> BuildResult:
    """Write the whole site into `out_dir` (created; earlier incident pages no longer backed by a mart row
    are removed) and return the pages written. Each file is written whole (`write_whole`), so a killed build
    leaves the previous page, never half of a new one."""
    started = time.perf_counter()
    out_dir = Path(out_dir)
    try:
        (out_dir / "incidents").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FaultlineError(f"cannot create the dashboard folder {out_dir}: {exc}",
                             fix="pass a writable folder with --out") from exc
    reader = MartReader(conn)
    generated = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    row = conn.execute(DATABASE_SQL).fetchone()
    warehouse = Path(row[0]).name if row and row[0] else "in-memory warehouse"
    written: list[Path] = []

    def write(path: Path, title: str, page_id: str, body: Html, *, root: str = "", current: str = "") -> None:
        write_whole(path, render_page(title=title, page_id=page_id, body=body, root=root, generated=generated,
                                      warehouse=warehouse, current=current))
        written.append(path)

    for partial in out_dir.rglob(f"*{PARTIAL_SUFFIX}"):  # what a killed build was writing
        partial.unlink()
    write_whole(out_dir / "style.css", stylesheet())
    incidents = reader.rows("mart_incidents", order_by=["is_historical", "incident_id"])
    pages: list[tuple[str, str, Callable[[], Html]]] = [
        ("index.html", "Run overview", lambda: index_page(reader)),
        ("incidents.html", "Incidents", lambda: incidents_list_page(reader, incidents)),
        ("stratification.html", "ASTRA accuracy by fault type", lambda: stratification_page(reader)),
        ("rounds.html", "Refinement rounds", lambda: rounds_page(reader)),
        ("sade.html", "SADE and the diagnosis baselines", lambda: sade_page(reader)),
        ("cost.html", "Cost", lambda: cost_page(reader)),
    ]
    for name, title, body in pages:
        write(out_dir / name, title, name.removesuffix(".html"), body(), current=name)
    kept = set()
    for incident in incidents:
        name = incident_file(incident["incident_id"])
        kept.add(name)
        write(out_dir / "incidents" / name, f"Incident {incident['incident_id']}: {incident['ticket_title']}",
              "incident", incident_page(reader, incident), root="../", current="incidents.html")
    for stale in (out_dir / "incidents").glob("*.html"):
        if stale.name not in kept:
            stale.unlink()
    return BuildResult(out_dir=out_dir, index=out_dir / "index.html", pages=written, incident_pages=len(incidents),
                       seconds=time.perf_counter() - started, missing_marts=sorted(reader.missing))


def write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader (or a crash) never sees half of it: a sibling file, then a rename."""
    partial = path.with_name(path.name + PARTIAL_SUFFIX)
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)
