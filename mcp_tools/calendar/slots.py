"""Time arithmetic of the calendar: parsing, recurrence expansion, working hours, busy intervals, free slots.

Kept apart from the service so the rules are testable without a database. Every time is timezone-aware UTC;
working hours are evaluated in each person's own zone (``zoneinfo``), so a slot that is 10:00 in Berlin and
18:00 in Tokyo is checked against both days. Recurrence is RFC 5545 RRULE through ``dateutil`` with an
explicit ``dtstart`` (without one it would read the wall clock).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr

from mcp_tools.errors import InvalidArgument

MAX_OCCURRENCES = 500
RRULE = re.compile(
    r"^FREQ=(DAILY|WEEKLY)(;(INTERVAL=[1-9]|BYDAY=(MO|TU|WE|TH|FR|SA|SU)(,(MO|TU|WE|TH|FR|SA|SU))*|COUNT=\d{1,3}))*$"
)


def parse_time(name: str, value: str) -> datetime:
    """An ISO 8601 time with an offset, as aware UTC.

    Raises:
        InvalidArgument: malformed, or naive (a meeting time without a zone is ambiguous).
    """
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InvalidArgument(f"{name} must be ISO 8601 like 2026-03-02T10:00:00+01:00; got {value!r:.60}") from None
    if parsed.tzinfo is None:
        raise InvalidArgument(f"{name} needs a UTC offset (e.g. +00:00 or Z); got {value!r:.60}")
    return parsed.astimezone(UTC)


def check_rrule(rule: str) -> str:
    """A supported recurrence rule (DAILY/WEEKLY with INTERVAL, BYDAY, COUNT), normalised to upper case.

    Raises:
        InvalidArgument: anything else (free-form rules could make expansion unbounded).
    """
    rule = rule.strip().upper()
    if not RRULE.match(rule):
        raise InvalidArgument(
            f"rrule must be like FREQ=WEEKLY;BYDAY=MO,WE or FREQ=DAILY;COUNT=5 (DAILY/WEEKLY, INTERVAL, BYDAY, "
            f"COUNT); got {rule!r:.80}"
        )
    return rule


def occurrences(
    start: datetime, end: datetime, rule: str | None, until: datetime | None, lo: datetime, hi: datetime
) -> list[tuple[datetime, datetime]]:
    """The (start, end) of every occurrence overlapping [lo, hi), capped at ``MAX_OCCURRENCES``."""
    length = end - start
    if not rule:
        return [(start, end)] if start < hi and end > lo else []
    series = rrulestr(rule, dtstart=start)
    out = []
    for s in series.xafter(lo - length, count=MAX_OCCURRENCES, inc=True):
        if s >= hi or (until is not None and s > until):
            break
        if s + length > lo:
            out.append((s, s + length))
    return out


@dataclass(frozen=True)
class Person:
    """Someone whose time is being looked at: id, username, zone and working week."""

    id: int
    username: str
    timezone: str
    work_start: int
    work_end: int
    workdays: str

    def works(self, start: datetime, end: datetime) -> bool:
        """Whether [start, end) lies inside one of this person's working days, in their own zone."""
        zone = ZoneInfo(self.timezone)
        a, b = start.astimezone(zone), end.astimezone(zone)
        if a.date() != (b - timedelta(microseconds=1)).date():
            return False  # crosses local midnight
        if self.workdays[a.weekday()] != "1":
            return False
        first = a.hour * 60 + a.minute
        last = first + int((end - start).total_seconds() // 60)
        return self.work_start <= first and last <= self.work_end


def overlaps(start: datetime, end: datetime, busy: Iterable[tuple[datetime, datetime]]) -> bool:
    """Whether [start, end) meets any busy interval."""
    return any(s < end and start < e for s, e in busy)


def free_slots(
    people: Sequence[Person],
    busy: dict[int, list[tuple[datetime, datetime]]],
    duration: timedelta,
    lo: datetime,
    hi: datetime,
    step: timedelta,
    limit: int,
) -> list[dict[str, Any]]:
    """Starts on a ``step`` grid in [lo, hi) where everyone works and nobody is busy, earliest first."""
    epoch = datetime(2000, 1, 1, tzinfo=UTC)
    offset = (lo - epoch) % step
    t = lo if not offset else lo + (step - offset)
    out: list[dict[str, Any]] = []
    while t + duration <= hi and len(out) < limit:
        end = t + duration
        if all(p.works(t, end) and not overlaps(t, end, busy.get(p.id, ())) for p in people):
            out.append({"start": t.isoformat(), "end": end.isoformat()})
        t += step
    return out
