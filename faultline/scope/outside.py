"""Devices the ticket names that logged, but not in its window: why a scope came back empty, and the fix.

An archive copied to a new disk and ingested without `--year` dates year-less lines (classic syslog, IOS-XR) in
the copy's year, years after its tickets: the devices are in the logs, the window holds none of their lines. The
scope says so with both time ranges rather than "no device matched" (docs/scope.md).
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from faultline.scope.devices import Candidate, resolve_mentions

_LOGGED_SQL = """
SELECT list(DISTINCT device ORDER BY device), min(ts), max(ts) FROM log_lines
WHERE device IN (SELECT unnest(?::VARCHAR[])) AND incident_id IS NULL AND ts IS NOT NULL
"""
_YEAR_RULES_SQL = """
SELECT DISTINCT f.log_year, f.log_year_source FROM ingest_files f
WHERE f.kind = 'logs' AND f.log_year_source IS NOT NULL AND f.source_file IN (
    SELECT DISTINCT source_file FROM log_lines WHERE device IN (SELECT unnest(?::VARCHAR[])) AND incident_id IS NULL)
ORDER BY 1, 2
"""
_RULE_WORDS = {"given": "as given", "folder": "from a folder name", "file_name": "from the file name",
               "tickets": "from the tickets", "mtime": "from the file's modification time"}


def logged_outside(conn: duckdb.DuckDBPyConnection, title: str, description: str, window: tuple[datetime, datetime],
                   devices: list[str] | None = None) -> tuple[str, list[str]] | None:
    """Why the window holds nothing of the devices the ticket names (`devices`, else every device of the logs its
    words name, whenever it logged), when they logged at another time: (reason, their names), the reason naming
    both time ranges (the window on the log clock), how far apart they are and the fix; None when they never
    logged, or the ticket names none."""
    if devices is None:
        known = {d: Candidate(d, sources={"logs"}) for (d,) in conn.execute(
            "SELECT DISTINCT device FROM log_lines WHERE device IS NOT NULL AND incident_id IS NULL").fetchall()}
        devices = sorted({m.device for m in resolve_mentions(title, description, known)[0]})
    if not devices:
        return None
    # fetchall: a result left unfinished would block the cursor's next query
    ((names, first, last),) = conn.execute(_LOGGED_SQL, [devices]).fetchall()
    if not names:
        return None
    lo, hi = window
    reason = (f"the ticket's window {_span(lo, hi)} holds no line of {', '.join(names)}, which logged from "
              f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M}")
    if lo <= last and first <= hi:
        reason += ", but not within it"
    else:
        reason += "; " + _apart(conn, names, (lo, hi), first, last)
    return reason, list(names)


def _span(lo: datetime, hi: datetime) -> str:
    end = f"{hi:%H:%M}" if hi.date() == lo.date() else f"{hi:%Y-%m-%d %H:%M}"
    return f"{lo:%Y-%m-%d %H:%M}–{end}"


def _moved(stamp: datetime, years: int) -> datetime:
    try:
        return stamp.replace(year=stamp.year - years)
    except ValueError:  # 29 February in a year that has none
        return stamp.replace(year=stamp.year - years, day=28)


def _distance(first: datetime, last: datetime, lo: datetime, hi: datetime) -> float:
    return max((first - hi).total_seconds(), (lo - last).total_seconds(), 0.0)


def _whole_years(first: datetime, last: datetime, lo: datetime, hi: datetime) -> int:
    """The whole years to take from the lines' dates that bring them nearest the window (0: less than a year off)."""
    near = {first.year - lo.year + e for e in (-1, 0, 1)} | {last.year - hi.year + e for e in (-1, 0, 1)} | {0}
    return min(near, key=lambda k: (_distance(_moved(first, k), _moved(last, k), lo, hi), abs(k)))


def _apart(conn: duckdb.DuckDBPyConnection, names: list[str], window: tuple[datetime, datetime],
           first: datetime, last: datetime) -> str:
    """How far the lines are from the window; whole years (a wrong year for year-less timestamps) name the fix."""
    lo, hi = window
    years = _whole_years(first, last, lo, hi)
    if years == 0:
        gap = first - hi if first > hi else lo - last
        side = "after" if first > hi else "before"
        size = f"{gap.total_seconds() / 3600:.0f} hours" if gap.days < 2 else f"{gap.days} days"
        return (f"the archive's lines are dated {size} {side} the ticket — check the ticket's opening time and the "
                "log_timezone setting")
    side = "after" if years > 0 else "before"
    plural = "year" if abs(years) == 1 else "years"
    rules = conn.execute(_YEAR_RULES_SQL, [names]).fetchall()
    took = "; their files took " + ", ".join(f"{y} {_RULE_WORDS.get(r, r)}" for y, r in rules) if rules else ""
    return (f"the archive's lines are dated {abs(years)} {plural} {side} the ticket{took} — if its timestamps carry "
            f"no year, ingest it again with `faultline ingest logs DIR --year {first.year - years}`")
