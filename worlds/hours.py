"""Working hours in a person's own time zone: when they may act, and working-time arithmetic for latencies.

Lives in ``worlds`` because both the history generator (every generated post, mail, comment and status change
falls in its author's hours, issue 12 item 1) and the NPCs (``npcs.hours`` re-exports it) place actions in
working time; layers import downwards only. Why working time and not wall time: a coworker asked at 17:55 on a
Friday answers on Monday morning, not at 18:05; a latency of "20 minutes" is 20 minutes of their working day.
Every instant here is aware UTC; local days are computed with ``zoneinfo`` so daylight-saving shifts are handled
by the zone database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class WorkHours:
    """A working week: zone, start and end minute of the local day, seven 0/1 flags Monday first.

    A week with no working day or an empty day is treated as always open, so a misconfigured employee can
    never stall the scheduler in an endless search.
    """

    timezone: str
    start: int
    end: int
    workdays: str

    @property
    def _always(self) -> bool:
        return "1" not in self.workdays or self.end <= self.start

    def _window(self, day: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
        """UTC start and end of work on the local date of ``day``."""
        base = datetime(day.year, day.month, day.day, tzinfo=zone)
        a = base.replace(hour=self.start // 60, minute=self.start % 60)
        b = (
            base + timedelta(minutes=self.end)
            if self.end >= 1440
            else base.replace(hour=self.end // 60, minute=self.end % 60)
        )
        return a.astimezone(UTC), b.astimezone(UTC)

    def is_open(self, t: datetime) -> bool:
        """Whether ``t`` falls inside working hours."""
        return self.next_open(t) == t

    def next_open(self, t: datetime) -> datetime:
        """``t`` if it is working time, else the start of the next working period."""
        if self._always:
            return t
        zone = ZoneInfo(self.timezone)
        local = t.astimezone(zone)
        for d in range(8):
            day = local + timedelta(days=d)
            if self.workdays[day.weekday()] != "1":
                continue
            a, b = self._window(day, zone)
            if t < b:
                return max(t, a)
        return t  # unreachable with at least one workday

    def last_open(self, t: datetime) -> datetime:
        """``t`` if it is working time, else the last working second before it.

        Why: history ends at the world's start instant; an action that would fall after it is placed at the end
        of its author's previous working period instead, never outside their hours.
        """
        if self._always or self.is_open(t):
            return t
        zone = ZoneInfo(self.timezone)
        local = t.astimezone(zone)
        for d in range(8):
            day = local - timedelta(days=d)
            if self.workdays[day.weekday()] != "1":
                continue
            _, b = self._window(day, zone)
            if b <= t:
                return b - timedelta(seconds=1)
        return t  # unreachable with at least one workday

    def morning(self, not_before: datetime, at: time = time(9, 0)) -> datetime:
        """The first local ``at`` (09:00 by default) on one of the workdays, at or after ``not_before``.

        Why a local wall time and not working time: an episode starts when a person in this zone starts their
        day (``scenarios.library.setup.start_day``), whatever their own start minute; coworkers then answer in
        their own hours. A week with no workday takes any day.
        """
        zone = ZoneInfo(self.timezone)
        day = not_before.astimezone(zone).date()
        for d in range(9):
            local = datetime.combine(day + timedelta(days=d), at, tzinfo=zone)
            if "1" in self.workdays and self.workdays[local.weekday()] != "1":
                continue
            out = local.astimezone(UTC)
            if out >= not_before:
                return out
        raise AssertionError("unreachable: a workday recurs within a week")

    def add(self, t: datetime, minutes: float) -> datetime:
        """The instant ``minutes`` of working time after ``t`` (starting from the next working moment)."""
        t = self.next_open(t)
        if self._always:
            return t + timedelta(minutes=minutes)
        zone = ZoneInfo(self.timezone)
        left = timedelta(minutes=minutes)
        while True:
            _, b = self._window(t.astimezone(zone), zone)
            if t + left <= b:
                return t + left
            left -= b - t
            t = self.next_open(b)

    def minutes_between(self, a: datetime, b: datetime) -> float:
        """Working minutes in [a, b) (0 if b <= a): how long a reply took in the responder's own working time."""
        if b <= a:
            return 0.0
        if self._always:
            return (b - a).total_seconds() / 60
        zone = ZoneInfo(self.timezone)
        total = 0.0
        t = self.next_open(a)
        while t < b:
            _, end = self._window(t.astimezone(zone), zone)
            total += (min(end, b) - t).total_seconds() / 60
            t = self.next_open(end)
        return total
