"""The year of a log file's year-less timestamps (classic syslog, IOS-XR): the rules, in order.

1. given: `faultline ingest logs --year YYYY`, or the `log_default_year` setting;
2. the archive's layout: the deepest date in the file's path below the ingested folder, or in its name
   (`2024/03/05/`, `2024-03-05/`, `messages-20240305`, `syslog.2024-03-05.log`, `router1-2024.log`);
3. the tickets already ingested: the year that puts the file's lines nearest their opening times
   (`TICKET_YEAR_SQL`);
4. the year the file was last modified, which a copy to a new disk resets: the last resort.

The rules are docs/scope.md's "Timestamps without a year".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePath

import duckdb

from faultline.ingest.logspec import LogFormat
from faultline.ingest.logtime import NEW_YEAR_JUMP, has_year

SOURCES = ("given", "folder", "file_name", "tickets", "mtime")
_EARLIEST = 1990

# a date (year, month, day or year, month) or a bare year, not inside a longer number or word
_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)([-_.]?)(0[1-9]|1[0-2])(?:\2(0[1-9]|[12]\d|3[01]))?(?!\d)")
_YEAR = re.compile(r"(?<![A-Za-z0-9])((?:19|20)\d\d)(?![A-Za-z0-9])")


@dataclass(frozen=True)
class YearChoice:
    """The year given to a file's year-less timestamps, the rule that chose it, and what it read."""

    year: int
    source: str  # one of SOURCES
    detail: str = ""
    month: int | None = None  # the month a dated path names, if any

    def summary(self) -> str:
        """The ingest summary's words for it, e.g. "year 2024 from the folder name 2024/03/05"."""
        says = {
            "given": "as given (--year or the log_default_year setting)",
            "folder": f"from the folder name {self.detail}",
            "file_name": f"from the file name {self.detail}",
            "tickets": "from the tickets already ingested (it puts the file's lines nearest their opening times) "
                       "— pass --year if wrong",
            "mtime": "from the file's modification time — pass --year if wrong",
        }[self.source]
        return f"timestamps without a year: year {self.year} {says}"


def needs_year(fmt: LogFormat) -> bool:
    """Whether the format may write timestamps without a year (a template's layout is only known later)."""
    return fmt.timestamp is None or any(not has_year(f) for f in fmt.timestamp)


def _plausible(year: int) -> bool:
    return _EARLIEST <= year <= datetime.now().year + 1


def _in_part(part: str) -> tuple[int, int | None] | None:
    """(year, month or None) of the last plausible date or year in one path part."""
    for match in reversed(list(_DATE.finditer(part))):
        if _plausible(int(match.group(1))):
            return int(match.group(1)), int(match.group(3))
    for match in reversed(list(_YEAR.finditer(part))):
        if _plausible(int(match.group(1))):
            return int(match.group(1)), None
    return None


def year_from_layout(path: Path, roots: Sequence[str | Path] = ()) -> YearChoice | None:
    """The year the archive's layout gives the file: its own name first, then its folders below the deepest of
    `roots` (the folders ingested) that holds it, deepest first; a year-only folder takes its month from the folder
    below it (`2024/03/`). Only the name counts for a file given on its own. None without a plausible year."""
    holders = [PurePath(r) for r in roots if PurePath(path).is_relative_to(r)]
    root = max(holders, key=lambda r: len(r.parts)) if holders else None
    parts = PurePath(path).relative_to(root).parts if root else (path.name,)
    if not parts:
        return None
    found = _in_part(parts[-1])
    if found:
        return YearChoice(found[0], "file_name", parts[-1], found[1])
    for depth in range(len(parts) - 2, -1, -1):
        found = _in_part(parts[depth])
        if found:
            below = parts[depth + 1] if depth + 1 < len(parts) - 1 else ""
            month = found[1] or (int(below) if below.isdigit() and 1 <= int(below) <= 12 else None)
            return YearChoice(found[0], "folder", "/".join(parts[depth:-1]), month)
    return None


def rotated_back(choice: YearChoice, first: datetime | None) -> YearChoice:
    """The year before a dated path's when the file starts `NEW_YEAR_JUMP` or more months after that date's month:
    logrotate names a file by the day it was rotated, so `messages-20240101` begins in December 2023."""
    if choice.month is None or first is None or first.month - choice.month < NEW_YEAR_JUMP:
        return choice
    return YearChoice(choice.year - 1, choice.source, f"{choice.detail}, whose lines begin the year before",
                      choice.month)


def year_from_mtime(path: Path) -> YearChoice:
    """The year the file was last modified (the current year when that cannot be read)."""
    try:
        return YearChoice(datetime.fromtimestamp(path.stat().st_mtime).year, "mtime")
    except OSError:
        return YearChoice(datetime.now().year, "mtime")


# Candidates: each ticket's opening year, the year before and after (a file may begin in December before a
# January ticket). Per candidate the file's first and last lines move to that year; the cost of a ticket is 0
# when it was opened within that span, the time from the last line to its opening when opened after, and twice
# the time from its opening to the first line when opened before (logs after a ticket can belong to it, logs
# before it are likelier). The candidate whose nearest ticket costs least wins; a tie goes to the earlier year.
TICKET_YEAR_SQL = """
WITH opened AS (
    SELECT timezone(?, created_at) AS t FROM tickets WHERE created_at IS NOT NULL
), years AS (
    SELECT DISTINCT year(t) + k AS y FROM opened, (VALUES (-1), (0), (1)) shift(k)
), spans AS (
    SELECT y, ?::TIMESTAMP + to_years(y - ?) AS s, ?::TIMESTAMP + to_years(y - ?) AS e FROM years
    WHERE y BETWEEN ? AND ?
)
SELECT y, min(CASE WHEN t BETWEEN s AND e THEN 0 WHEN t > e THEN epoch(t - e) ELSE 2 * epoch(s - t) END) AS cost
FROM spans, opened GROUP BY y ORDER BY cost, y LIMIT 1
"""


def year_from_tickets(conn: duckdb.DuckDBPyConnection, zone: str, first: datetime, last: datetime,
                      parsed_year: int) -> YearChoice | None:
    """The year `TICKET_YEAR_SQL` picks for a file whose year-less lines, read in `parsed_year`, run from `first`
    to `last` (naive, on the log clock of `zone`); None when no ticket has an opening time."""
    rows = conn.execute(TICKET_YEAR_SQL, [zone, first, parsed_year, last, parsed_year, _EARLIEST,
                                          datetime.now().year + 1]).fetchall()
    return YearChoice(int(rows[0][0]), "tickets") if rows else None


MTIME_FILES_SQL = "SELECT source_file, log_year FROM ingest_files WHERE kind = 'logs' AND log_year_source = 'mtime'"
SPAN_SQL = "SELECT min(ts), max(ts) FROM log_lines WHERE source_file = ? AND ts IS NOT NULL"


def redate_from_tickets(conn: duckdb.DuckDBPyConnection, zone: str) -> list[str]:
    """Log files whose year-less lines took their file's modification year, re-dated by the tickets now ingested
    (rule 3 with the tickets that arrived after the logs): every line of such a file moves by whole years. What was
    moved, in words (the ingest summary's)."""
    said = []
    for source_file, year in conn.execute(MTIME_FILES_SQL).fetchall():  # usually none: no scan of the lines then
        ((first, last),) = conn.execute(SPAN_SQL, [source_file]).fetchall()
        if first is None:
            continue
        choice = year_from_tickets(conn, zone, first, last, year)
        if choice is None or choice.year == year:
            continue
        shift = choice.year - year
        conn.execute("UPDATE log_lines SET ts = ts + to_years(?) WHERE source_file = ? AND ts IS NOT NULL",
                     [shift, source_file])
        conn.execute("UPDATE ingest_files SET log_year = ?, log_year_source = 'tickets' "
                     "WHERE kind = 'logs' AND source_file = ?", [choice.year, source_file])
        said.append(f"{source_file}: its timestamps without a year had taken {year} from the file's modification "
                    f"time; re-dated to {choice.year} by the tickets now ingested — pass `ingest logs --year` if wrong")
    return said
