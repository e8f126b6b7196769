"""The log evidence for one incident, scored: taxonomy signals weighted by how rare they are in the history.

A signal of the taxonomy (`prompts/astra/taxonomy.yml`) is a regex over raw lines or a volume rule
(one device's file of a kind holds far more lines than the same file on its peers: a flood). A
signal's weight there says how specific it is in principle; what it is worth for a given incident
also depends on how ordinary its lines are in *this* network's logs. So every signal is discounted
by its document frequency over the history: the share of incidents resolved before this one whose
logs fire it, not counting the first ``RECURRENT`` of them (a fault seen before fires its own signal
again; that is evidence for the signal, not against it): ``weight x (1 - df)^2``. A keep-alive line
that every web server writes counts for almost nothing; a "Bad Peer AS" seen in one past incident
keeps its weight. With fewer than ``MIN_HISTORY`` history incidents with logs the weights are used
as written.

Firing is computed over every ingested line of the incident, not only the capped excerpt: the
filter keeps what reads like an error, and some fault signatures (a daemon starting, a flood of
ordinary requests) do not.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from faultline.astra.taxonomy import Volume, taxonomy

if TYPE_CHECKING:
    import duckdb

    from faultline.astra.records import Incident

MIN_HISTORY = 10
RECURRENT = 2
QUOTES_PER_SIGNAL = 3
_FIRED_CACHE: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}  # (incident, file hashes) -> signal keys
_SCORE_CACHE: dict[tuple[str, tuple[str, ...], tuple[str, ...]], tuple[dict[str, float], list]] = {}

_HISTORY_SQL = """
SELECT DISTINCT l.incident_id
FROM log_lines l
JOIN incidents i USING (incident_id)
JOIN tickets t ON t.ticket_id = i.ticket_id
WHERE t.resolved_at IS NOT NULL AND l.incident_id <> ?
  AND (?::TIMESTAMPTZ IS NULL OR t.resolved_at < ?::TIMESTAMPTZ)
"""


@dataclass(frozen=True)
class LogLine:
    """A raw line with where it came from (device: the folder a lab incident's file sits in, else the parsed host)."""

    text: str
    device: str | None
    source_file: str
    line_no: int


@dataclass(frozen=True)
class Hit:
    """A signal that fired: the label it points at, its discounted weight and the lines that show it."""

    label: str
    key: str
    weight: float
    df: float | None  # share of history incidents whose logs fire it; None without enough history
    lines: tuple[LogLine, ...]
    note: str  # what fired, in words (volume rules say how many lines against how many)


def device_of(source_file: str, host: str | None) -> str | None:
    """The device a log file belongs to: ``.../logs/<device>/<file>`` names it; otherwise the parsed host."""
    parts = PurePath(source_file).parts
    if len(parts) >= 3 and parts[-3] == "logs":
        return parts[-2]
    return host


def _kind(source_file: str) -> str:
    return PurePath(source_file).name.removesuffix(".gz")


def _volume_hits(volume: Volume, lines: list[LogLine]) -> list[tuple[LogLine, ...]]:
    by_device: dict[str, list[LogLine]] = defaultdict(list)
    for line in lines:
        if _kind(line.source_file) == volume.file and line.device:
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
    last = {line.source_file: line.line_no for line in lines}  # lines come in file, line order
    for info in taxonomy().values():
        for signal in info.signals:
            hits = tuple(line for line in lines if signal.pattern.search(line.text)
                         and (not signal.final or last[line.source_file] == line.line_no))
            if hits and signal.context is not None:
                pattern = signal.context.pattern
                if pattern not in contexts:
                    contexts[pattern] = {line.device for line in lines if signal.context.search(line.text)}
                hits = tuple(line for line in hits if line.device in contexts[pattern])
            if hits:
                fired[f"{info.label}:re:{signal.pattern.pattern}"] = (info.label, hits, f"/{signal.pattern.pattern}/")
        for volume in info.volumes:
            for own in _volume_hits(volume, lines):
                clients = Counter(line.text.split(" ", 1)[0] for line in own).most_common(1)
                top = f"; {clients[0][1]} of them from {clients[0][0]}" if clients else ""
                fired[f"{info.label}:volume:{volume.file}:{own[0].device}"] = (
                    info.label, own, f"{own[0].device}'s {volume.file} has {len(own)} lines, at least "
                                     f"{volume.ratio:g}x the median of its peers{top}")
    return fired


def _generic(key: str) -> str:
    """Volume keys name the device; the history counts the rule, wherever it fired."""
    return key.rsplit(":", 1)[0] if ":volume:" in key else key


def _lines(conn: duckdb.DuckDBPyConnection, incident_id: str) -> list[LogLine]:
    rows = conn.sql("SELECT raw, host, source_file, line_no FROM log_lines WHERE incident_id = ? "
                    "ORDER BY source_file, line_no", params=[incident_id]).fetchall()
    return [LogLine(raw, device_of(src, host), src, no) for raw, host, src, no in rows]


def _file_hashes(conn: duckdb.DuckDBPyConnection, incident_ids: list[str]) -> dict[str, tuple[str, ...]]:
    """Each incident's log files (their SHA-256), which is what the signal caches are keyed by."""
    rows = conn.sql("SELECT incident_id, list(DISTINCT file_sha256 ORDER BY file_sha256) FROM log_lines "
                    "WHERE list_contains(?, incident_id) GROUP BY incident_id", params=[incident_ids]).fetchall()
    return {incident_id: tuple(hashes) for incident_id, hashes in rows}


def _fired_keys(conn: duckdb.DuckDBPyConnection, incident_id: str, hashes: tuple[str, ...]) -> frozenset[str]:
    cache_key = (incident_id, hashes)
    if cache_key not in _FIRED_CACHE:
        _FIRED_CACHE[cache_key] = frozenset(_generic(k) for k in _fire(_lines(conn, incident_id)))
    return _FIRED_CACHE[cache_key]


def history_frequency(conn: duckdb.DuckDBPyConnection, incident: Incident) -> tuple[dict[str, float], int]:
    """(generic signal key -> share of history incidents whose logs fire it beyond the first ``RECURRENT``,
    how many history incidents have logs)."""
    history = [r[0] for r in conn.sql(_HISTORY_SQL, params=[incident.incident_id, incident.opened_at,
                                                            incident.opened_at]).fetchall()]
    hashes = _file_hashes(conn, history) if history else {}
    counts: Counter[str] = Counter()
    for incident_id in history:
        counts.update(_fired_keys(conn, incident_id, hashes.get(incident_id, ())))
    return ({k: max(0, n - RECURRENT) / len(history) for k, n in counts.items()} if history else {}), len(history)


def score_incident(conn: duckdb.DuckDBPyConnection, incident: Incident) -> tuple[dict[str, float], list[Hit]]:
    """Label scores from the incident's whole log and the hits behind them, strongest first.

    Memoised per (incident, its log files, the history it may use): follow-up rounds get the same answer.
    """
    history = tuple(sorted(r[0] for r in conn.sql(_HISTORY_SQL, params=[incident.incident_id, incident.opened_at,
                                                                        incident.opened_at]).fetchall()))
    key = (incident.incident_id, _file_hashes(conn, [incident.incident_id]).get(incident.incident_id, ()), history)
    if key not in _SCORE_CACHE:
        _SCORE_CACHE[key] = _score(conn, incident)
    scores, hits = _SCORE_CACHE[key]
    return dict(scores), list(hits)


def _score(conn: duckdb.DuckDBPyConnection, incident: Incident) -> tuple[dict[str, float], list[Hit]]:
    lines = _lines(conn, incident.incident_id)
    if not lines:
        return {}, []
    fired = _fire(lines)
    frequency, n_history = history_frequency(conn, incident) if fired else ({}, 0)
    specific = {info.label: {**{f"{info.label}:re:{s.pattern.pattern}": s.weight for s in info.signals},
                             **{f"{info.label}:volume:{v.file}": v.weight for v in info.volumes}}
                for info in taxonomy().values()}
    hits = []
    for key, (label, shown, note) in fired.items():
        written = specific[label][_generic(key)]
        df = frequency.get(_generic(key), 0.0) if n_history >= MIN_HISTORY else None
        weight = written * (1 - df) ** 2 if df is not None else written
        hits.append(Hit(label, key, round(weight, 4), df, shown[:QUOTES_PER_SIGNAL], note))
    hits.sort(key=lambda h: (-h.weight, h.label, h.key))
    scores: dict[str, float] = {}
    for hit in hits:
        scores[hit.label] = round(scores.get(hit.label, 0.0) + hit.weight, 4)
    return scores, hits


def clear_cache() -> None:
    """Forget the per-incident signal cache (tests that rewrite an incident's logs in place)."""
    _FIRED_CACHE.clear()
    _SCORE_CACHE.clear()


__all__ = ["Hit", "LogLine", "clear_cache", "device_of", "history_frequency", "score_incident"]
