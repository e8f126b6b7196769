"""The time window a ticket points at, from its own words, else from when it was opened.

Loose times ("since 01:20", "~10:34", "between 10:20 and 10:25", "this morning", "20 minutes ago", a date, a zone
after a time) are read in the ticket's zone on its opening day (the day before when more than an hour ahead of
the opening); every time found widens the window. The forms and defaults: docs/scope.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
# zone abbreviations operators write after a time; a fixed offset is what they mean at that moment
_ZONES = {"utc": 0, "gmt": 0, "z": 0, "pst": -8, "pdt": -7, "mst": -7, "mdt": -6, "cst": -6, "cdt": -5,
          "est": -5, "edt": -4, "cet": 1, "cest": 2, "bst": 1, "eet": 2, "eest": 3, "jst": 9, "ist": 5.5}

_ZONE_RE = r"(?:\s*(?P<zone>UTC|GMT|Z|[PMCE][SD]T|CEST?|BST|EES?T|JST|IST)\b)?"
_CLOCK = r"(?P<h>[01]?\d|2[0-3])[:h.](?P<m>[0-5]\d)(?::(?P<s>[0-5]\d))?(?:\.\d+)?\s*(?P<ampm>[ap]\.?m\.?\b)?" + _ZONE_RE
_ISO_DATE = r"(?P<y>(?:19|20)\d\d)-(?P<mo>[01]\d)-(?P<d>[0-3]\d)"
_WORD_DATE = (r"(?:(?P<d1>[0-3]?\d)(?:st|nd|rd|th)?\s+(?P<mon1>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
              r"|(?P<mon2>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?P<d2>[0-3]?\d)(?:st|nd|rd|th)?)"
              r"(?:,?\s+(?P<y2>(?:19|20)\d\d))?")

_A, _B = _CLOCK.replace("?P<", "?P<a_"), _CLOCK.replace("?P<", "?P<b_")
_RANGES = (re.compile(r"\b(?:between|from)\s+" + _A + r"\s+(?:and|to|until|till|-)\s+" + _B, re.IGNORECASE),
           re.compile(r"(?<![\d:])" + _A + r"\s*(?:-|–|to)\s*" + _B, re.IGNORECASE))
_SINCE = re.compile(r"\b(?P<word>since|from|starting(?: at)?|started(?: at)?|after|began(?: at)?|beginning)\s*:?\s*"
                    r"(?:about |around |approx\.? |approximately |~)?" + _CLOCK, re.IGNORECASE)
_UNTIL = re.compile(r"\b(?:until|till|before|up to)\s*:?\s*" + _CLOCK, re.IGNORECASE)
_AROUND = re.compile(r"(?:\b(?:around|about|approx\.?|approximately|circa|ca\.|at|@)\s*:?\s*|~\s*|(?<![\w:.-]))"
                     + _CLOCK + r"(?![\d:/])", re.IGNORECASE)
_AGO = re.compile(r"\b(?P<n>\d{1,3}|an?|one|two|few)\s+(?P<unit>min(?:ute)?s?|hours?|hrs?|h)\s+ago\b", re.IGNORECASE)
_LAST = re.compile(r"\b(?:in the |over the )?(?:last|past)\s+(?P<n>\d{1,3}|an?|one|two|few)?\s*"
                   r"(?P<unit>min(?:ute)?s?|hours?|hrs?|days?)\b", re.IGNORECASE)
_PERIOD = re.compile(r"\b(?P<p>this morning|this afternoon|this evening|tonight|last night|overnight"
                     r"|yesterday|today)\b",
                     re.IGNORECASE)
_DATE = re.compile(r"\b(?:" + _ISO_DATE + r"|" + _WORD_DATE + r")\b", re.IGNORECASE)
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "few": 3}


@dataclass(frozen=True)
class Window:
    """A time window in UTC and how the ticket's words (or its opening time) gave it."""

    start: datetime
    end: datetime
    reason: str
    matched: str | None = None  # the ticket's words the window came from; None for the fallback
    at: datetime | None = None  # the moment the ticket names ("around 10:28", "since 01:20"), when it names one

    def widened(self, minutes: int) -> Window:
        """The same window, `minutes` wider on each side (a follow-up round looking further)."""
        pad = timedelta(minutes=minutes)
        return Window(self.start - pad, self.end + pad, f"{self.reason}; widened by {minutes} min on each side",
                      self.matched, self.at)


def _zone_of(match: re.Match[str], prefix: str, default: tzinfo) -> tzinfo:
    name = match.group(f"{prefix}zone")
    if not name:
        return default
    return timezone(timedelta(hours=_ZONES[name.lower()]))


def _clock(match: re.Match[str], prefix: str = "") -> time:
    hour, minute = int(match.group(f"{prefix}h")), int(match.group(f"{prefix}m"))
    second = int(match.group(f"{prefix}s") or 0)
    ampm = (match.group(f"{prefix}ampm") or "").lower().replace(".", "")
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    return time(hour, minute, second)


def _at(day: date | None, clock: time, zone: tzinfo, opened: datetime) -> datetime:
    """`clock` on `day` in `zone`; without a day, the latest such moment not after the ticket's opening."""
    local_opened = opened.astimezone(zone)
    base = day or local_opened.date()
    stamp = datetime.combine(base, clock, tzinfo=zone)
    if day is None and stamp > local_opened + timedelta(minutes=60):
        stamp -= timedelta(days=1)  # "since 23:50" in a ticket opened at 00:10
    return stamp.astimezone(timezone.utc)


def _date(match: re.Match[str], opened_local: datetime) -> date | None:
    try:
        if match.group("y"):
            return date(int(match.group("y")), int(match.group("mo")), int(match.group("d")))
        month = _MONTHS[(match.group("mon1") or match.group("mon2"))[:3].lower()]
        day = int(match.group("d1") or match.group("d2"))
        year = int(match.group("y2")) if match.group("y2") else opened_local.year
        found = date(year, month, day)
        if not match.group("y2") and found > opened_local.date():
            found = date(year - 1, month, day)  # "Dec 31" in a ticket opened in January
        return found
    except ValueError:
        return None


def _amount(text: str | None) -> int:
    if not text:
        return 1
    return int(text) if text.isdigit() else _NUMBER_WORDS.get(text.lower(), 1)


def _unit(unit: str) -> timedelta:
    unit = unit.lower()
    if unit.startswith("d"):
        return timedelta(days=1)
    return timedelta(hours=1) if unit.startswith("h") else timedelta(minutes=1)


def _fmt(stamp: datetime, zone: tzinfo) -> str:
    return stamp.astimezone(zone).strftime("%Y-%m-%d %H:%M")


def ticket_window(text: str, opened: datetime, zone: tzinfo | str = "UTC", *, lookback_min: int = 30,
                  around_min: int = 15, after_min: int = 5) -> Window:
    """The window the ticket's words point at (see the module docstring); times are UTC.

    `opened`: when the ticket was opened (aware; naive is taken as UTC). `zone`: the zone the
    ticket's clock times are written in.
    """
    zone = ZoneInfo(zone) if isinstance(zone, str) else zone
    opened = opened if opened.tzinfo else opened.replace(tzinfo=timezone.utc)
    opened_local = opened.astimezone(zone)
    around, after = timedelta(minutes=around_min), timedelta(minutes=after_min)
    spans: list[tuple[datetime, datetime, str]] = []
    moments: list[datetime] = []  # the moments the ticket names, in the order found
    taken: list[tuple[int, int]] = []

    def free(match: re.Match[str]) -> bool:
        return not any(a < match.end() and match.start() < b for a, b in taken)

    day = None
    for match in _DATE.finditer(text):
        found = _date(match, opened_local)
        if found is not None:
            day = found
            taken.append(match.span())
    for match in (m for pattern in _RANGES for m in pattern.finditer(text)):
        if not free(match):
            continue
        start = _at(day, _clock(match, "a_"), _zone_of(match, "a_", zone), opened)
        end = _at(day, _clock(match, "b_"), _zone_of(match, "b_", zone), opened)
        if end < start:
            start -= timedelta(days=1)
        spans.append((start - timedelta(minutes=2), end + timedelta(minutes=2), match.group(0)))
        moments.append(start)
        taken.append(match.span())
    for match in _SINCE.finditer(text):
        if free(match):
            start = _at(day, _clock(match), _zone_of(match, "", zone), opened)
            spans.append((start - around, max(start, opened) + after, match.group(0)))
            moments.append(start)
            taken.append(match.span())
    for match in _UNTIL.finditer(text):
        if free(match):
            end = _at(day, _clock(match), _zone_of(match, "", zone), opened)
            spans.append((end - 4 * around, end + timedelta(minutes=2), match.group(0)))
            taken.append(match.span())
    for match in _AROUND.finditer(text):
        if free(match):
            stamp = _at(day, _clock(match), _zone_of(match, "", zone), opened)
            spans.append((stamp - around, stamp + around, match.group(0).strip()))
            moments.append(stamp)
            taken.append(match.span())
    for match in _AGO.finditer(text):
        stamp = opened - _amount(match.group("n")) * _unit(match.group("unit"))
        spans.append((stamp - around, stamp + around, match.group(0)))
        moments.append(stamp)
    for match in _LAST.finditer(text):
        spans.append((opened - _amount(match.group("n")) * _unit(match.group("unit")), opened + after, match.group(0)))
    for match in _PERIOD.finditer(text):
        word = match.group("p").lower()
        midnight = datetime.combine(opened_local.date(), time(0), tzinfo=zone)
        hours = {"this morning": (5, 12), "this afternoon": (12, 18), "this evening": (17, 24), "tonight": (17, 24),
                 "last night": (-6, 8), "overnight": (-6, 8), "yesterday": (-24, 0), "today": (0, 24)}[word]
        start, end = midnight + timedelta(hours=hours[0]), midnight + timedelta(hours=hours[1])
        spans.append((start.astimezone(timezone.utc), min(end.astimezone(timezone.utc), opened + after),
                      match.group(0)))
    if day is not None and not spans:
        start = datetime.combine(day, time(0), tzinfo=zone).astimezone(timezone.utc)
        spans.append((start, start + timedelta(days=1), day.isoformat()))
    if not spans:
        start, end = opened - timedelta(minutes=lookback_min), opened + after
        return Window(start, end, f"no time in the ticket: from {lookback_min} min before it was opened "
                                  f"({_fmt(opened, zone)}) to {after_min} min after")
    start, end = min(s for s, _, _ in spans), max(e for _, e, _ in spans)
    words = "; ".join(dict.fromkeys(w.strip() for _, _, w in spans))
    return Window(start, end, f"the ticket says {words!r}: {_fmt(start, zone)} to {_fmt(end, zone)} "
                              f"({getattr(zone, 'key', None) or str(zone)})", words, moments[0] if moments else None)
