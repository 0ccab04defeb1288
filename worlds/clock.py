"""The Clock protocol: the only source of time for world, NPC, grader and sim code.

The simulation engine (``sim``) implements it with a simulated clock; world code only ever receives a Clock and
never reads the wall clock, so the same seed and actions produce the same timestamps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Something that can tell the current simulated time."""

    def now(self) -> datetime:
        """Return the current simulated time, timezone-aware UTC."""
        ...


@runtime_checkable
class MovableClock(Clock, Protocol):
    """A clock that setup code may move forward, e.g. to the morning an episode starts on."""

    def advance_to(self, at: datetime) -> None:
        """Move to ``at`` (timezone-aware, not before now)."""
        ...


class FixedClock:
    """A clock that always returns the same instant; used by generators and tests.

    Args:
        at: The instant to report; naive values are refused so that no local time sneaks in.
    """

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware datetime")
        self._at = at.astimezone(UTC)

    def now(self) -> datetime:
        """Return the fixed instant."""
        return self._at

    def advance_to(self, at: datetime) -> None:
        """Move the clock to ``at`` (what ``MovableClock`` asks; a fixed clock has no queue to run)."""
        self.set(at)

    def set(self, at: datetime) -> None:
        """Move the clock to ``at`` (timezone-aware)."""
        if at.tzinfo is None:
            raise ValueError("FixedClock needs a timezone-aware datetime")
        self._at = at.astimezone(UTC)
