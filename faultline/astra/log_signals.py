"""The log evidence for one incident, scored: taxonomy signals weighted by how rare they are in the history.

`label_scores` fires the taxonomy's regex, volume and flap signals over every line of the incident's scope and
discounts each by its document frequency in the logs of incidents resolved before it; `analysis_scope` picks the
lines a round reads. The rules: docs/astra.md#log-signals.
"""

from __future__ import annotations

import re
import statistics
import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import PurePath
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from faultline.astra.flap_rule import flap_runs
from faultline.astra.ticket_time import TicketTime, ticket_time
from faultline.config import Settings
from faultline.events.catalogue import match
from faultline.scope.resolve import Scope, build_scope, local_time, scope_lines
from faultline.truth.taxonomy import Volume, taxonomy

# the settings a scope depends on (a history incident's scope is computed once per process for them)
_SCOPE_SETTINGS = {"log_timezone", "ticket_timezone", "scope_lookback_minutes", "scope_around_minutes",
                   "scope_after_minutes"}

if TYPE_CHECKING:
    import duckdb

    from faultline.astra.event_chain import EventChain
    from faultline.astra.records import Incident

MIN_HISTORY = 10
SPREAD_MINUTES = 1  # devices whose lines fall within this many whole minutes of the ticket's moment are all quoted
ECHO_SHARE = 0.25  # what a label's score keeps when the entry that `explains` it fired in the same scope
RECURRENT = 2
QUOTES_PER_SIGNAL = 3
_FIRED_CACHE: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}  # (incident, its scope) -> signal keys
SCORES_KEPT = 256  # incidents' scores kept for their later rounds; a night's backlog is far larger


class _Recent:
    """The `size` most recently used entries of a mapping, safe to share between worker threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
            return self._data.get(key)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


# (incident, its scope, its history) -> (scores, hits): a unit's rounds ask again; bounded, so a night of
# thousands of incidents does not keep every incident's hits and quoted lines until the process ends
_SCORE_CACHE = _Recent(SCORES_KEPT)

# incidents resolved before this one; their logs are whatever their own scope reads (their corpus folder's
# lines, or the archive's lines by device and time)
_HISTORY_SQL = """
SELECT i.incident_id, t.title, coalesce(t.description, ''), coalesce(i.opened_at, t.created_at)
FROM incidents i
JOIN tickets t ON t.ticket_id = i.ticket_id
WHERE t.resolved_at IS NOT NULL AND i.incident_id <> ?
  AND (?::TIMESTAMPTZ IS NULL OR t.resolved_at < ?::TIMESTAMPTZ)
ORDER BY i.incident_id
"""
_HISTORY_SCOPES: dict[tuple[str, str], Scope] = {}  # (incident, settings fingerprint) -> its round-0 scope


@dataclass(frozen=True)
class LogLine:
    """A raw line with where it came from (device: the folder a lab incident's file sits in, else the parsed host)."""

    text: str
    device: str | None
    source_file: str
    line_no: int
    ts: datetime | None = None
    component: str | None = None  # the program that wrote it (dnsmasq, bgpd), when the format names one


@dataclass(frozen=True)
class Hit:
    """A signal that fired: the label it points at, its discounted weight and the lines that show it."""

    label: str
    key: str
    weight: float
    df: float | None  # share of history incidents whose logs fire it; None without enough history
    lines: tuple[LogLine, ...]
    note: str  # what fired, in words (volume rules say how many lines against how many)
    later: bool = False  # an event logged only after the ticket was opened: listed, never the cause


def device_of(source_file: str, host: str | None) -> str | None:
    """The device a log file belongs to: ``.../logs/<device>/<file>`` names it; otherwise the parsed host."""
    parts = PurePath(source_file).parts
    if len(parts) >= 3 and parts[-3] == "logs":
        return parts[-2]
    return host


_ACCESS_LINE = re.compile(r'"(?:GET|POST|HEAD|PUT|DELETE|OPTIONS|PATCH) \S+ HTTP/[\d.]+" \d{3} ')


_CLIENT = re.compile(r"(?:^|\s)(\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:]+) - ")


def _client(text: str) -> str:
    """The client address an access-log line starts with (after a syslog header, when it came through one)."""
    match = _CLIENT.search(text)
    return match.group(1) if match else text.split(" ", 1)[0]


def _kind(line: LogLine) -> str:
    """What a line is a line of: its own file (`access.log`), else, in a collector's archive where every line of a
    device shares one file, what it looks like (an HTTP access line is an access.log line wherever it was filed)."""
    if _ACCESS_LINE.search(line.text):
        return "access.log"
    return PurePath(line.source_file).name.removesuffix(".gz")


def _volume_hits(volume: Volume, lines: list[LogLine]) -> list[tuple[LogLine, ...]]:
    by_device: dict[str, list[LogLine]] = defaultdict(list)
    for line in lines:
        if _kind(line) == volume.file and line.device:
            by_device[line.device].append(line)
    if len(by_device) < 2:
        return []
    found = []
    for device, own in by_device.items():
        others = [len(v) for d, v in by_device.items() if d != device]
        if len(own) >= volume.min_lines and len(own) >= volume.ratio * max(statistics.median(others), 1):
            found.append(tuple(own))
    return found


def _fire(lines: list[LogLine]) -> dict[str, tuple[str, tuple[LogLine, ...], str]]:
    """Signal key -> (label, the lines that fired it, a note) for every signal these lines fire."""
    fired: dict[str, tuple[str, tuple[LogLine, ...], str]] = {}
    contexts: dict[str, set[str | None]] = {}
    # a `final` line is its program's last in its file within the scope (a collector's file mixes programs)
    last = {(line.source_file, line.component): line.line_no for line in lines}  # lines come in file, line order
    # an event class's signals are its vendor messages: each line is read once by the catalogue (cached by text)
    # rather than by every message's pattern, and a line is the one event its first matching message says
    by_message: dict[tuple[str, str], list[LogLine]] = defaultdict(list)
    for line in lines:
        event = match(line.text)
        if event is not None:
            by_message[(event.cls, event.pattern)].append(line)
    for info in taxonomy().values():
        for signal in info.signals:
            if info.kind == "event":
                hits = tuple(by_message.get((info.label, signal.pattern.pattern), ()))
                if hits:
                    fired[f"{info.label}:re:{signal.pattern.pattern}"] = (info.label, hits,
                                                                         f"/{signal.pattern.pattern}/")
                continue
            hits = tuple(line for line in lines if signal.pattern.search(line.text)
                         and (not signal.final or last[(line.source_file, line.component)] == line.line_no))
            if hits and signal.context is not None:
                pattern = signal.context.pattern
                if pattern not in contexts:
                    contexts[pattern] = {line.device for line in lines if signal.context.search(line.text)}
                hits = tuple(line for line in hits if line.device in contexts[pattern])
            if hits:
                fired[f"{info.label}:re:{signal.pattern.pattern}"] = (info.label, hits, f"/{signal.pattern.pattern}/")
        for volume in info.volumes:
            for own in _volume_hits(volume, lines):
                clients = Counter(_client(line.text) for line in own).most_common(1)
                top = f"; {clients[0][1]} of them from {clients[0][0]}" if clients else ""
                fired[f"{info.label}:volume:{volume.file}:{own[0].device}"] = (
                    info.label, own, f"{own[0].device}'s {volume.file} has {len(own)} lines, at least "
                                     f"{volume.ratio:g}x the median of its peers{top}")
        for n, flap in enumerate(info.flaps):
            for run in flap_runs(flap, lines):
                fired[f"{info.label}:flap:{n}:{run[0].device}"] = (
                    info.label, run, (f"{run[0].device} logged {len(run)} state changes of one interface "
                                      f"within {flap.window_s:g} s"))
    return fired


def _generic(key: str) -> str:
    """Volume and flap keys name the device; the history counts the rule, wherever it fired."""
    return key.rsplit(":", 1)[0] if ":volume:" in key or ":flap:" in key else key


def _lines(conn: duckdb.DuckDBPyConnection, scope: Scope) -> list[LogLine]:
    rows = scope_lines(conn, scope, "l.raw, l.host, l.device, l.source_file, l.line_no, l.ts, l.component").fetchall()
    return [LogLine(raw, device_of(src, host) if device is None else device, src, no, ts, component)
            for raw, host, device, src, no, ts, component in rows]


# how close to the ticket a device of the scope is: what the ticket names first, the whole fleet last
_FOCUS = {"incident_id": 0, "named": 0, "address": 0, "interface": 0, "service": 1, "role": 2, "neighbour": 3,
          "fleet": 4}


def _quoted(lines: tuple[LogLine, ...], focus: Callable[[LogLine], tuple]) -> tuple[LogLine, ...]:
    """The lines a hit quotes: the best by `focus`, then the best line of every other device that logged the same
    signal within a minute or so of the ticket's moment (a cascade: three routers cleared around 10:40), then the
    next best, up to ``QUOTES_PER_SIGNAL``."""
    ordered = sorted(lines, key=focus)
    chosen = ordered[:1]
    if ordered and len(focus(ordered[0])) == 5:  # the ticket names a moment: keys start with minutes away
        for line in ordered[1:]:
            if len(chosen) >= QUOTES_PER_SIGNAL or focus(line)[0] > SPREAD_MINUTES:
                break
            if line.device not in {c.device for c in chosen}:
                chosen.append(line)
    chosen += [line for line in ordered if line not in chosen][:QUOTES_PER_SIGNAL - len(chosen)]
    return tuple(chosen)


def _focus(scope: Scope) -> Callable[[LogLine], tuple]:
    """Sort key for the lines a hit quotes (and so the devices it blames).

    When the ticket names a moment ("around 10:40"), lines within the same minute of it come first, then the
    ticket's own devices before their neighbours (an operator's time is more precise than the device they
    happened to look at); otherwise the ticket's own devices first, then the lines nearest the middle of the
    window. Times are read on each device's own clock; file order breaks ties."""
    rank = {e.device: _FOCUS.get(e.kind, 5) for e in scope.entries if e.device}
    offsets = {e.device: e.clock_offset_s for e in scope.entries if e.device}
    bounded = next((e for e in scope.entries if e.window_start and e.window_end), None)
    centre = None
    if scope.focus_at is not None:
        centre = local_time(scope.focus_at, ZoneInfo(scope.log_timezone))
    elif bounded is not None:
        middle = bounded.window_start + (bounded.window_end - bounded.window_start) / 2
        centre = local_time(middle, ZoneInfo(scope.log_timezone))

    def key(line: LogLine) -> tuple:
        distance = float("inf")
        if centre is not None and line.ts is not None:
            distance = abs((line.ts - timedelta(seconds=offsets.get(line.device, 0)) - centre).total_seconds())
        if scope.focus_at is not None:
            return distance // 60, rank.get(line.device, 5), distance, line.source_file, line.line_no
        return rank.get(line.device, 5), distance, line.source_file, line.line_no

    return key


def _scope_key(scope: Scope) -> tuple[str, ...]:
    return tuple(f"{e.device}|{e.window_start}|{e.window_end}|{e.clock_offset_s}|{e.lines_in_scope}"
                 for e in scope.entries if e.device)


def _history_scope(conn: duckdb.DuckDBPyConnection, settings: Settings, row: tuple) -> Scope:
    incident_id, title, description, opened = row
    key = (incident_id, settings.model_dump_json(include=_SCOPE_SETTINGS))
    if key not in _HISTORY_SCOPES:
        _HISTORY_SCOPES[key] = build_scope(conn, settings, incident_id=incident_id, title=title,
                                           description=description, opened_at=opened)
    return _HISTORY_SCOPES[key]


def _history(conn: duckdb.DuckDBPyConnection, settings: Settings, incident: Incident) -> list[Scope]:
    rows = conn.sql(_HISTORY_SQL, params=[incident.incident_id, incident.opened_at, incident.opened_at]).fetchall()
    scopes = [_history_scope(conn, settings, row) for row in rows]
    return [s for s in scopes if any(e.lines_in_scope for e in s.entries if e.device)]


def _fired_keys(conn: duckdb.DuckDBPyConnection, scope: Scope) -> frozenset[str]:
    cache_key = (scope.incident_id, _scope_key(scope))
    if cache_key not in _FIRED_CACHE:
        _FIRED_CACHE[cache_key] = frozenset(_generic(k) for k in _fire(_lines(conn, scope)))
    return _FIRED_CACHE[cache_key]


def history_frequency(conn: duckdb.DuckDBPyConnection, settings: Settings,
                      incident: Incident) -> tuple[dict[str, float], int]:
    """(generic signal key -> share of history incidents whose logs fire it beyond the first ``RECURRENT``,
    how many history incidents have logs)."""
    history = _history(conn, settings, incident)
    counts: Counter[str] = Counter()
    for scope in history:
        counts.update(_fired_keys(conn, scope))
    return ({k: max(0, n - RECURRENT) / len(history) for k, n in counts.items()} if history else {}), len(history)


def label_scores(conn: duckdb.DuckDBPyConnection, settings: Settings, incident: Incident,
                   scope: Scope) -> tuple[dict[str, float], list[Hit]]:
    """Label scores from every line of the incident's scope and the hits behind them, strongest first.

    Memoised per (incident, its scope, the history it may use): a round with the same scope gets the same answer.
    """
    history = tuple(r[0] for r in conn.sql(_HISTORY_SQL, params=[incident.incident_id, incident.opened_at,
                                                                 incident.opened_at]).fetchall())
    key = (incident.incident_id, _scope_key(scope), history)
    cached = _SCORE_CACHE.get(key)
    if cached is None:
        cached = _score(conn, settings, incident, scope)
        _SCORE_CACHE.put(key, cached)
    scores, hits = cached
    return dict(scores), list(hits)


def _score(conn: duckdb.DuckDBPyConnection, settings: Settings, incident: Incident,
           scope: Scope) -> tuple[dict[str, float], list[Hit]]:
    lines = _lines(conn, scope)
    if not lines:
        return {}, []
    fired = _fire(lines)
    frequency, n_history = history_frequency(conn, settings, incident) if fired else ({}, 0)
    specific = {info.label: {**{f"{info.label}:re:{s.pattern.pattern}": s.weight for s in info.signals},
                             **{f"{info.label}:volume:{v.file}": v.weight for v in info.volumes},
                             **{f"{info.label}:flap:{n}": f.weight for n, f in enumerate(info.flaps)}}
                for info in taxonomy().values()}
    hits = []
    focus = _focus(scope)
    clock = _clock(scope, incident)
    for key, (label, shown, note) in fired.items():
        if taxonomy()[label].kind == "fault":  # a vendor's own event reads its line better than a fault's words
            shown = tuple(line for line in shown if not _vendor_event(line.text))
            if not shown:
                continue
        written = specific[label][_generic(key)]
        df = frequency.get(_generic(key), 0.0) if n_history >= MIN_HISTORY else None
        weight = written * (1 - df) ** 2 if df is not None else written
        later = False
        if clock is not None:
            shown, weight, note, later = _in_time(clock, shown, weight, note, taxonomy()[label].kind == "event")
        hits.append(Hit(label, key, round(weight, 4), df, _quoted(shown, focus), note, later))
    hits.sort(key=lambda h: (-h.weight, h.label, h.key))
    scores: dict[str, float] = {}
    for hit in hits:
        scores[hit.label] = round(scores.get(hit.label, 0.0) + hit.weight, 4)
    for info in taxonomy().values():  # an echo of a cause that is itself in scope counts for a quarter
        if scores.get(info.label):
            for echo in info.explains:
                if echo in scores:
                    scores[echo] = round(scores[echo] * ECHO_SHARE, 4)
    return scores, hits


def _vendor_event(text: str) -> bool:
    """Whether the event catalogue reads the line as an event of its own (anything but a protocol's echo, which
    a fault such as a filter may well be the cause of)."""
    found = match(text)
    return found is not None and found.role != "echo"


def _clock(scope: Scope, incident: Incident) -> TicketTime | None:
    """The ticket's times on the log clock; None for a lab incident's own logs (tagged lines, not an archive)."""
    if any(e.kind == "incident_id" for e in scope.entries):
        return None
    return ticket_time(scope, incident.title, incident.description, incident.opened_at)


def _in_time(clock: TicketTime, shown: tuple[LogLine, ...], weight: float, note: str,
             event: bool) -> tuple[tuple[LogLine, ...], float, str, bool]:
    """A signal's lines judged by the ticket's time: those logged after the ticket was opened are no cause unless
    the ticket says the problem goes on; an event's lines also count by how near the ticket's moment they are."""
    before = tuple(line for line in shown if not clock.after_opening(line))
    after = len(shown) - len(before)
    if after and not before:
        if clock.ongoing is None:
            return shown, 0.0, f"{note}; logged only after the ticket was opened: later, not its cause", True
        note = (f"{note}; logged after the ticket was opened, counted because the ticket says the problem goes on "
                f"(\"{clock.ongoing}\")")
    elif after and clock.ongoing is None:
        shown = before
    if not event:
        return shown, weight, note, False
    nearness = max(clock.nearness(line) for line in shown)
    if nearness < 1.0:
        away = min(m for line in shown if (m := clock.minutes_away(line)) is not None)
        note = f"{note}; {away:.0f} minutes from the ticket's moment"
    return shown, weight * nearness, note, False


def event_chain(conn: duckdb.DuckDBPyConnection, incident: Incident, scope: Scope, label: str,
                hits: list[Hit]) -> EventChain | None:
    """The chain of the event `label` the analysis named: its root line (the strongest hit's nearest line), the
    echoes in scope, what came later and what is missing (`faultline.astra.event_chain`)."""
    from faultline.astra.event_chain import build_chain

    clock = _clock(scope, incident) or ticket_time(scope, incident.title, incident.description, None)
    mine = [h for h in hits if h.label == label and not h.later and h.weight > 0]
    if not mine:
        return None
    later = [line for h in hits if h.later for line in h.lines]
    return build_chain(label, mine[0].lines, later, _lines(conn, scope), scope, clock)


def analysis_scope(conn: duckdb.DuckDBPyConnection, settings: Settings, incident: Incident, *,
                   round: int = 1, built: dict[tuple[str, int, bool], Scope] | None = None) -> Scope:
    """The lines an analysis round reads: the devices the ticket points at and their neighbours; when their lines
    name no label, every device that logged in the window too (and from round 2 on a wider window).

    `built`: the scopes this analysis has already built, by (incident, widen, fleet), reused and filled in (a
    scope depends on the round only through its number; the analysis writes nothing a scope reads)."""
    from faultline.astra.labels import best_label

    def build(widen: int = 0, fleet: bool = False) -> Scope:
        key = (incident.incident_id, widen, fleet)
        known = None if built is None else built.get(key)
        if known is None:
            known = build_scope(conn, settings, incident_id=incident.incident_id, title=incident.title,
                                description=incident.description, opened_at=incident.opened_at, round=round,
                                widen=widen, fleet=fleet)
            if built is not None:
                built[key] = known
        return known if known.round == round else known.model_copy(update={"round": round})

    scope = build()
    if scope.entries and scope.entries[0].kind != "incident_id" and scope.matched_devices:
        scores, _hits = label_scores(conn, settings, incident, scope)
        if best_label(scores) is None:
            scope = build(widen=min(max(round - 1, 0), 2), fleet=True)
    return scope


def clear_cache() -> None:
    """Forget the per-incident signal cache (tests that rewrite an incident's logs in place)."""
    _FIRED_CACHE.clear()
    _SCORE_CACHE.clear()
    _HISTORY_SCOPES.clear()


__all__ = ["Hit", "LogLine", "analysis_scope", "clear_cache", "device_of", "event_chain", "history_frequency",
           "label_scores"]
