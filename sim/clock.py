"""SimClock: the simulated time of an episode, with an event queue.

Tool calls advance the clock by their cost; NPC turns and scheduled world events are queued at simulated
instants and run, in (time, insertion order), when the clock passes them. Nothing here reads the wall clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


@dataclass(order=True)
class _Scheduled:
    at: datetime
    seq: int
    action: Callable[[], None] = field(compare=False)
    name: str = field(compare=False, default="")


class SimClock:
    """A timezone-aware UTC simulated clock implementing ``worlds.clock.Clock``.

    Args:
        start: The initial instant (timezone-aware).
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("SimClock needs a timezone-aware start")
        self._now = start.astimezone(UTC)
        self._queue: list[_Scheduled] = []
        self._seq = 0

    def now(self) -> datetime:
        """The current simulated instant."""
        return self._now

    def schedule(self, at: datetime, action: Callable[[], None], name: str = "") -> None:
        """Run ``action`` when the clock reaches ``at`` (ties run in scheduling order)."""
        self._seq += 1
        heapq.heappush(self._queue, _Scheduled(at.astimezone(UTC), self._seq, action, name))

    def pending(self) -> int:
        """How many events are queued."""
        return len(self._queue)

    def advance_to(self, at: datetime) -> None:
        """Move time forward to ``at`` (``worlds.clock.MovableClock``: how a setup sets its start morning).

        Raises:
            ValueError: ``at`` is naive or before now.
        """
        if at.tzinfo is None:
            raise ValueError("SimClock needs a timezone-aware instant")
        self.advance((at.astimezone(UTC) - self._now).total_seconds())

    def advance(self, seconds: float) -> list[str]:
        """Move time forward, running every event that falls due; returns their names in run order."""
        if seconds < 0:
            raise ValueError(f"cannot move the clock backwards ({seconds} s)")
        target = self._now + timedelta(seconds=seconds)
        ran: list[str] = []
        while self._queue and self._queue[0].at <= target:
            event = heapq.heappop(self._queue)
            self._now = max(self._now, event.at)
            event.action()
            ran.append(event.name)
        self._now = target
        return ran
