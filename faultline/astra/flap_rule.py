"""Flap rules of the taxonomy (`Flap`): one interface's state changes counted over time on one device.

A flap is not one line but a rate: the same interface logging down/up again and again. The times come
from the lines themselves (FRR's ``2026/11/30 01:41:29``, syslog and IOS-XR's ``Sep 19 16:52:12.382``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from faultline.truth.taxonomy import Flap

_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                       "nov", "dec"), start=1)}
_ISO_TIME = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d(?:\.\d+)?)")
_SYSLOG_TIME = re.compile(r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+(\d{1,2}) "
                          r"(\d\d):(\d\d):(\d\d(?:\.\d+)?)", re.IGNORECASE)


def line_time(text: str) -> float | None:
    """Seconds of the first timestamp in a log line (FRR/ISO or syslog/IOS-XR ``Sep 19 16:52:12.382``), else None.

    Syslog stamps have no year; only differences within one file are used, so any fixed year does.
    """
    if m := _ISO_TIME.search(text):
        year, month, day, hour, minute = (int(g) for g in m.groups()[:5])
        second = float(m.group(6))
    elif m := _SYSLOG_TIME.search(text):
        year, month, day = 2000, _MONTHS[m.group(1).lower()], int(m.group(2))
        hour, minute, second = int(m.group(3)), int(m.group(4)), float(m.group(5))
    else:
        return None
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() + second
    except ValueError:
        return None


class _Line(Protocol):
    @property
    def text(self) -> str: ...

    @property
    def device(self) -> str | None: ...


L = TypeVar("L", bound=_Line)


def _changes(flap: Flap, lines: Sequence[L]) -> dict[tuple[str | None, str], list[L]]:
    """Each (device, interface)'s state-change lines: the rule's pattern, or the catalogue classes of its
    ``states`` with a repeated state kept once (a driver and a daemon both logging one change)."""
    groups: dict[tuple[str | None, str], list[L]] = {}
    if flap.pattern is not None:
        for line in lines:
            if m := flap.pattern.search(line.text):
                groups.setdefault((line.device, m.group("iface")), []).append(line)
        return groups
    from faultline.events.catalogue import match

    states = dict(flap.states)
    last: dict[tuple[str | None, str], str] = {}
    for line in lines:
        event = match(line.text)
        if event is None or event.cls not in states or not event.fields.get("iface"):
            continue
        key = (line.device, event.fields["iface"])
        if last.get(key) != states[event.cls]:
            last[key] = states[event.cls]
            groups.setdefault(key, []).append(line)
    return groups


def flap_runs(flap: Flap, lines: Sequence[L]) -> list[tuple[L, ...]]:
    """Per (device, interface), the largest run of the rule's changes within ``window_s`` if it has >= ``min_changes``.

    ``lines`` in log order. A group with an unstamped line is judged by its count alone.
    """
    groups = _changes(flap, lines)
    runs = []
    for found in groups.values():
        if len(found) < flap.min_changes:
            continue
        times = [line_time(line.text) for line in found]
        if any(t is None for t in times):
            runs.append(tuple(found))
            continue
        best, start = (0, 0), 0
        for end, t in enumerate(times):
            while t - times[start] > flap.window_s:
                start += 1
            if end - start + 1 > best[1] - best[0]:
                best = (start, end + 1)
        if best[1] - best[0] >= flap.min_changes:
            runs.append(tuple(found[best[0]:best[1]]))
    return runs


__all__ = ["flap_runs", "line_time"]
