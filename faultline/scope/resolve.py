"""A ticket's log scope: the devices it points at and their neighbours, over the window its words give.

`build_scope` takes an incident's own lines whole when it has them; else the window of the ticket's words
(`timewords`), the devices it names (`devices`), their neighbours (`neighbours`), the fleet when nothing matched
or when asked, and each device's clock offset (`clocks`), every row with its reason. The steps: docs/scope.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import duckdb
import polars as pl
from pydantic import BaseModel, ConfigDict

from faultline.config import Settings
from faultline.scope.clocks import offsets_around
from faultline.scope.devices import Candidate, resolve_mentions
from faultline.scope.neighbours import Link, describe, learn_from_logs, neighbours
from faultline.scope.outside import logged_outside
from faultline.scope.timewords import Window, ticket_window

_SPAN = timedelta(hours=15)  # devices and links are learned from the logs within this much of the window
SILENT_HOPS = 3  # how far past devices that log nothing (switches, hosts) neighbours are followed
NOTE_KINDS = ("window", "no_match", "out_of_window")  # rows that say why, naming no device


class ScopeEntry(BaseModel):
    """One row of a scope: a device (or a note), its window in UTC, its clock offset, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str | None
    kind: str
    reason: str
    matched: str | None = None
    window_start: datetime | None = None
    window_end: datetime | None = None
    clock_offset_s: int = 0
    lines_in_scope: int | None = None


class Scope(BaseModel):
    """Which log lines an incident's round reads, and why."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    round: int
    log_timezone: str
    entries: list[ScopeEntry]
    focus_at: datetime | None = None  # the moment the ticket names, if any (not stored; orders the evidence)

    @property
    def devices(self) -> list[str]:
        """Devices in scope, in entry order."""
        return list(dict.fromkeys(e.device for e in self.entries if e.device))

    @property
    def matched_devices(self) -> bool:
        """True when the ticket pointed at a device (not the fleet fallback, not a whole incident)."""
        return any(e.kind not in ("fleet", "incident_id", *NOTE_KINDS) for e in self.entries)

    def describe(self, limit: int = 12) -> list[str]:
        """The scope in words, one line per entry (the report's "Logs read" section)."""
        out = []
        rows = [e for e in self.entries if e.device]
        for entry in self.entries:
            if entry.kind in NOTE_KINDS:
                out.append(entry.reason)
        for entry in rows[:limit]:
            count = f", {entry.lines_in_scope} lines" if entry.lines_in_scope is not None else ""
            out.append(f"{entry.device}: {entry.reason}{count}")
        if len(rows) > limit:
            rest = sum(e.lines_in_scope or 0 for e in rows[limit:])
            out.append(f"... and {len(rows) - limit} more devices ({rest} lines)")
        return out


def _log_zone(settings: Settings) -> ZoneInfo:
    return ZoneInfo(settings.log_timezone)


def local_time(stamp: datetime, zone: ZoneInfo, offset_s: int = 0) -> datetime:
    """A UTC moment as the device's naive log clock shows it."""
    return stamp.astimezone(zone).replace(tzinfo=None) + timedelta(seconds=offset_s)


def _table_exists(conn: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                             [name]).fetchone()[0])


def _inventory_name(conn: duckdb.DuckDBPyConnection, incident_id: str) -> str | None:
    row = conn.execute("SELECT attributes->>'inventory' FROM incidents WHERE incident_id = ?", [incident_id]).fetchone()
    return row[0] if row and row[0] else None


def _inventory(conn: duckdb.DuckDBPyConnection, name: str | None) -> tuple[dict[str, Candidate], list[Link]]:
    if not _table_exists(conn, "inventory_hosts"):
        return {}, []
    where, params = ("WHERE inventory = ?", [name]) if name else ("", [])
    devices: dict[str, Candidate] = {}
    for host, hostname, addresses, dns, interfaces, role, site in conn.execute(
            f"SELECT host, hostname, addresses, dns_names, interfaces, role, site FROM inventory_hosts {where}",
            params).fetchall():
        dev = devices.setdefault(host, Candidate(host))
        dev.addresses |= set(addresses or [])
        dev.dns_names |= set(dns or []) | ({hostname} if hostname and not hostname[0].isdigit() else set())
        dev.interfaces |= set(interfaces or [])
        dev.role, dev.site = dev.role or role, dev.site or site
        dev.sources.add("inventory")
    links = [Link(host, peer, iface, peer_iface, "inventory")
             for host, iface, peer, peer_iface in conn.execute(
                 f"SELECT host, interface, peer, peer_interface FROM inventory_links {where}", params).fetchall()]
    return devices, links


def _incident_scope(conn: duckdb.DuckDBPyConnection, incident_id: str) -> list[ScopeEntry]:
    rows = conn.execute("SELECT device, count(*) FROM log_lines WHERE incident_id = ? GROUP BY device ORDER BY device",
                        [incident_id]).fetchall()
    return [ScopeEntry(device=device, kind="incident_id", reason="its logs were ingested for this incident",
                       lines_in_scope=count) for device, count in rows]


def _pick_window(incident_text: tuple[str, str], opened: datetime, settings: Settings, widen: int) -> Window:
    title, description = incident_text
    window = ticket_window(f"{title}\n{description}", opened, settings.ticket_timezone or settings.log_timezone,
                           lookback_min=settings.scope_lookback_minutes, around_min=settings.scope_around_minutes,
                           after_min=settings.scope_after_minutes)
    return window.widened(widen * settings.scope_widen_minutes) if widen and settings.scope_widen_minutes else window


def build_scope(conn: duckdb.DuckDBPyConnection, settings: Settings, *, incident_id: str, title: str,
                description: str, opened_at: datetime | str | None, round: int = 0, widen: int = 0,
                fleet: bool = False) -> Scope:
    """The scope of one incident's round (not stored: see `store.write_scope`).

    `widen`: levels of `scope_widen_minutes` on each side, and two hops of neighbours from level 1 on;
    `fleet`: also every other device that logged in the window (what an engineer reads next when the devices
    the ticket points at show nothing)."""
    zone_name = settings.log_timezone
    own = _incident_scope(conn, incident_id)
    if own:
        return Scope(incident_id=incident_id, round=round, log_timezone=zone_name, entries=own)
    if isinstance(opened_at, str):
        opened_at = datetime.fromisoformat(opened_at)
    opened = opened_at or datetime.now(timezone.utc)
    window = _pick_window((title, description), opened, settings, widen)
    zone = _log_zone(settings)
    lo, hi = local_time(window.start, zone), local_time(window.end, zone)
    inventory, inv_links = _inventory(conn, _inventory_name(conn, incident_id))
    devices = dict(inventory)
    for (device,) in conn.execute("SELECT DISTINCT device FROM log_lines WHERE device IS NOT NULL "
                                  "AND incident_id IS NULL "
                                  "AND ts BETWEEN ? AND ?", [lo - _SPAN, hi + _SPAN]).fetchall():
        devices.setdefault(device, Candidate(device)).sources.add("logs")
    log_links, learned = learn_from_logs(conn, lo - _SPAN, hi + _SPAN)
    mentions, unmatched = resolve_mentions(title, description, devices, learned)
    entries: dict[str, ScopeEntry] = {}
    for mention in mentions:
        if mention.device not in entries:
            entries[mention.device] = ScopeEntry(device=mention.device, kind=mention.kind, reason=mention.reason,
                                                 matched=mention.matched)
    links = inv_links + log_links

    def logs(device: str) -> bool:
        return device in devices and "logs" in devices[device].sources

    def expand(frontier: set[str]) -> set[str]:
        added = set()
        for peer, via in neighbours(links, set(entries)).items():
            via = [link for link in via if link.device in frontier]
            if via:
                entries[peer] = ScopeEntry(device=peer, kind="neighbour", reason=describe(via[0]),
                                           matched=via[0].device)
                added.add(peer)
        return added

    frontier = set(entries)
    for _ in range(2 if widen >= 1 else 1):
        frontier = expand(frontier)
    for _ in range(SILENT_HOPS):  # a switch or host that logs nothing is no place to stop: look past it
        silent = {d for d in frontier if not logs(d)}
        if not silent:
            break
        frontier = expand(silent)
    notes = [ScopeEntry(device=None, kind="window", reason=f"window: {window.reason}", matched=window.matched,
                        window_start=window.start, window_end=window.end)]
    offsets = offsets_around(conn, lo, hi)
    if not entries:
        elsewhere = _outside_note(conn, title, description, lo, hi, window)
        if elsewhere is not None:
            notes.append(elsewhere)
        else:
            words = ", ".join(unmatched) if unmatched else "no device-like words"
            notes.append(ScopeEntry(device=None, kind="no_match", matched=", ".join(unmatched) or None,
                                    reason=f"scope: no device matched the ticket's words ({words}); reading every "
                                           "device that logged in the window",
                                    window_start=window.start, window_end=window.end))
        for device in sorted(d for d, dev in devices.items() if "logs" in dev.sources):
            entries[device] = ScopeEntry(device=device, kind="fleet", reason="logged in the window")
    elif fleet:
        notes.append(ScopeEntry(device=None, kind="no_match", matched=None,
                                reason="scope: the devices the ticket points at and their neighbours showed nothing "
                                       "the taxonomy names; reading every device that logged in the window too",
                                window_start=window.start, window_end=window.end))
        for device in sorted(d for d, dev in devices.items() if "logs" in dev.sources and d not in entries):
            entries[device] = ScopeEntry(device=device, kind="fleet", reason="logged in the window")
    counted = []
    for device, entry in entries.items():
        offset, why = offsets.get(device, (0, ""))
        reason = f"{entry.reason}; {why}" if why else entry.reason
        counted.append(entry.model_copy(update={"window_start": window.start, "window_end": window.end,
                                                "clock_offset_s": offset, "reason": reason}))
    counts = _count_lines(conn, counted, zone)
    counted = [e.model_copy(update={"lines_in_scope": counts.get(e.device, 0)}) for e in counted
               if e.kind != "fleet" or counts.get(e.device)]  # the fleet: devices that logged in their window
    asked = [e.device for e in counted if e.device and e.kind not in ("neighbour", "fleet")]
    if asked and not any(counts.get(d) for d in asked):  # named (by the inventory) but silent in the window
        elsewhere = _outside_note(conn, title, description, lo, hi, window, asked)
        notes += [elsewhere] if elsewhere else []
    return Scope(incident_id=incident_id, round=round, log_timezone=zone_name, entries=notes + counted,
                 focus_at=window.at)


def _outside_note(conn: duckdb.DuckDBPyConnection, title: str, description: str, lo: datetime, hi: datetime,
                  window: Window, devices: list[str] | None = None) -> ScopeEntry | None:
    found = logged_outside(conn, title, description, (lo, hi), devices)
    if found is None:
        return None
    reason, names = found
    return ScopeEntry(device=None, kind="out_of_window", reason=reason, matched=", ".join(names),
                      window_start=window.start, window_end=window.end)


def _device_windows(entries: list[ScopeEntry], zone: ZoneInfo) -> list[dict]:
    return [{"device": e.device, "lo": local_time(e.window_start, zone, e.clock_offset_s),
             "hi": local_time(e.window_end, zone, e.clock_offset_s)}
            for e in entries if e.device and e.window_start and e.window_end]


_WINDOWED_SQL = """
WITH scope AS (SELECT unnest(?::STRUCT(device VARCHAR, lo TIMESTAMP, hi TIMESTAMP)[], recursive := true))
SELECT {select} FROM log_lines l JOIN scope s ON l.device = s.device AND l.ts BETWEEN s.lo AND s.hi
WHERE l.incident_id IS NULL {tail}
"""


def _count_lines(conn: duckdb.DuckDBPyConnection, entries: list[ScopeEntry], zone: ZoneInfo) -> dict[str, int]:
    windows = _device_windows(entries, zone)
    if not windows:
        return {}
    sql = _WINDOWED_SQL.format(select="l.device, count(*)", tail="GROUP BY l.device")
    return dict(conn.execute(sql, [windows]).fetchall())


def scope_lines(conn: duckdb.DuckDBPyConnection, scope: Scope, columns: str) -> duckdb.DuckDBPyRelation:
    """The log_lines rows in `scope` (`columns`: a SELECT list over alias l), by file and line."""
    whole = [e.device for e in scope.entries if e.kind == "incident_id"]
    if whole:
        return conn.sql(f"SELECT {columns} FROM log_lines l WHERE l.incident_id = ? ORDER BY l.source_file, l.line_no",
                        params=[scope.incident_id])
    windows = _device_windows(scope.entries, ZoneInfo(scope.log_timezone))
    if not windows:
        return conn.sql(f"SELECT {columns} FROM log_lines l WHERE false")
    sql = _WINDOWED_SQL.format(select=columns, tail="ORDER BY l.source_file, l.line_no")
    return conn.sql(sql, params=[windows])


def scope_frame(conn: duckdb.DuckDBPyConnection, scope: Scope) -> pl.DataFrame:
    """The scope's lines with the log pipeline's columns (log_lines columns plus `format`)."""
    columns = ("l.source_file, CAST(l.line_no AS BIGINT) AS line_no, l.ts, coalesce(l.device, l.host) AS host, "
               "l.severity, l.severity_raw, l.component, l.pid, l.message, l.raw, l.format")
    return scope_lines(conn, scope, columns).pl()
