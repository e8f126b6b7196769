"""When a ticket says its problem happened, on each device's own log clock: which lines came after the ticket was
opened (never its cause unless the ticket says the problem goes on) and how far a line is from the moment it names.
The rules: docs/astra.md#time-that-fits-the-ticket.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

from faultline.scope.resolve import local_time

if TYPE_CHECKING:
    from faultline.scope.resolve import Scope

OPENING_GRACE_S = 60  # a ticket's opening time is often written to the minute
NEAR_MINUTES = 5  # events within this many minutes of the ticket's moment count in full
# words that say the problem is still going on or comes back, so lines after the opening may still show it
_ONGOING = re.compile(r"(?i)\b(still|ongoing|on-going|keeps?|kept|continu\w*|recurr\w*|intermittent\w*|"
                      r"again|repeated\w*|flapp\w*|on and off|every \w+ minutes?|persist\w*|not resolved)\b")


class _Stamped(Protocol):
    @property
    def device(self) -> str | None: ...

    @property
    def ts(self) -> datetime | None: ...


def ongoing_word(*texts: str) -> str | None:
    """The word of the ticket that says its problem goes on or recurs ("still", "again", "intermittent"), else None."""
    for text in texts:
        found = _ONGOING.search(text or "")
        if found:
            return found.group(1)
    return None


@dataclass(frozen=True)
class TicketTime:
    """A ticket's moment and opening on the log clock (naive, the logs' zone) and each device's clock offset."""

    moment: datetime | None  # the moment the ticket names, else its opening
    opened: datetime | None
    offsets: dict[str, int]
    ongoing: str | None  # the ticket's own word for "still going on", if any
    named_moment: bool  # whether `moment` is one the ticket's words name (not its opening)

    def at(self, line: _Stamped) -> datetime | None:
        """The line's time on the common clock (its device's offset taken off)."""
        if line.ts is None:
            return None
        return line.ts - timedelta(seconds=self.offsets.get(line.device or "", 0))

    def after_opening(self, line: _Stamped) -> bool:
        """Whether the line was logged after the ticket was opened (with a minute's grace)."""
        at = self.at(line)
        return bool(self.opened and at and at > self.opened + timedelta(seconds=OPENING_GRACE_S))

    def minutes_away(self, line: _Stamped) -> float | None:
        """Minutes between the line and the ticket's moment (None without both times)."""
        at = self.at(line)
        return None if at is None or self.moment is None else abs((at - self.moment).total_seconds()) / 60

    def nearness(self, line: _Stamped) -> float:
        """1 within `NEAR_MINUTES` of the moment, then falling as the distance grows (5/minutes); 1 without times,
        and 1 after the moment when the ticket says the problem goes on (it may have been logged any time since)."""
        at = self.at(line)
        if self.ongoing and at is not None and self.moment is not None and at >= self.moment:
            return 1.0
        away = self.minutes_away(line)
        return 1.0 if away is None or away <= NEAR_MINUTES else NEAR_MINUTES / away


def ticket_time(scope: Scope, title: str, description: str, opened_at: str | datetime | None) -> TicketTime:
    """The ticket's times on the log clock of `scope` (whose `focus_at` is the moment the ticket's words name)."""
    zone = ZoneInfo(scope.log_timezone)
    opened = None
    if opened_at:
        stamp = datetime.fromisoformat(opened_at) if isinstance(opened_at, str) else opened_at
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        opened = local_time(stamp, zone)
    moment = local_time(scope.focus_at, zone) if scope.focus_at is not None else opened
    offsets = {e.device: e.clock_offset_s for e in scope.entries if e.device}
    return TicketTime(moment, opened, offsets, ongoing_word(title, description), scope.focus_at is not None)


__all__ = ["NEAR_MINUTES", "TicketTime", "ongoing_word", "ticket_time"]
