"""Per-device clock offsets, detected from the logs themselves.

A state change is logged by both ends within seconds, so the whole quarter-hour within ±14 h that lines a
device's state-change lines up with its peers' is its clock offset (a device logging in another zone), taken only
when it lines up clearly more lines than no offset does. How clearly: docs/scope.md.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import duckdb
import numpy as np

# lines that report a change of state: adjacencies, sessions, links (IOS-XR, FRR, Linux forms)
CHANGE_PATTERN = r"ADJCHANGE|ADJCHG|AdjChg|UPDOWN|changed state|[Ll]ink is (?:[Dd]own|[Uu]p)|NIC Link|carrier"
TOLERANCE_S = 2.0
STEP_S = 900
MAX_OFFSET_S = 14 * 3600
MIN_LINES = 3

_CHANGES_SQL = f"""
SELECT device, epoch(ts) FROM log_lines
WHERE device IS NOT NULL AND ts BETWEEN ? AND ? AND regexp_matches(raw, '{CHANGE_PATTERN}')
"""


OFFSETS = np.arange(-MAX_OFFSET_S, MAX_OFFSET_S + 1, STEP_S)  # offset 0 is among them


def _lined_up(times: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For every offset of `OFFSETS`: how many of `times`, moved back by it, have a line of `others`
    (sorted) within the tolerance. One array operation per device: the search ran once per line and
    offset before, a quarter of an ASTRA unit's time on a collector's archive."""
    targets = times[None, :] - OFFSETS[:, None]
    at = np.searchsorted(others, targets - TOLERANCE_S, side="left")
    found = others[np.minimum(at, len(others) - 1)]
    return ((at < len(others)) & (found <= targets + TOLERANCE_S)).sum(axis=1)


def detect_offsets(changes: dict[str, list[float]]) -> dict[str, tuple[int, str]]:
    """device -> (offset in seconds its clock runs ahead, why) for devices whose clock is off.

    `changes`: device -> epoch seconds (as the device logged them) of its state-change lines.
    """
    found: dict[str, tuple[int, str]] = {}
    stamps = {device: np.asarray(times, dtype=float) for device, times in changes.items()}
    zero = int(np.flatnonzero(OFFSETS == 0)[0])
    for device, times in stamps.items():
        if len(times) < MIN_LINES:
            continue
        others = np.sort(np.concatenate([ts for d, ts in stamps.items() if d != device] or [np.empty(0)]))
        if not len(others):
            continue
        times = np.unique(times)
        counts = _lined_up(times, others)
        at_zero = int(counts[zero])
        counts[zero] = -1
        pick = int(np.argmax(counts))  # the first offset with the most lines, as a scan upwards finds it
        best, best_count = (int(OFFSETS[pick]), int(counts[pick])) if counts[pick] > at_zero else (0, at_zero)
        if best and best_count >= MIN_LINES and best_count >= 2 * at_zero + 1:
            shift = "earlier" if best > 0 else "later"
            why = (f"clock {_hours(-best)}: read {abs(best) / 3600:g} h {shift}, {best_count} of its "
                   f"{len(times)} state changes line up with its peers' ({at_zero} at face value)")
            found[device] = (best, why)
    return found


def _hours(seconds: int) -> str:
    sign = "+" if seconds > 0 else "−"
    hours = abs(seconds) / 3600
    return f"{sign}{hours:g} h"


def offsets_around(conn: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime) -> dict[str, tuple[int, str]]:
    """Clock offsets of the devices that logged state changes within ±14 h of [lo, hi] (naive log times)."""
    span = timedelta(seconds=MAX_OFFSET_S)
    changes: dict[str, list[float]] = defaultdict(list)
    for device, stamp in conn.execute(_CHANGES_SQL, [lo - span, hi + span]).fetchall():
        changes[device].append(float(stamp))
    return detect_offsets(changes)
