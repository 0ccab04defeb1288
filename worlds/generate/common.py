"""Shared state of one generation run: the spec, the streams, the time window and the rows so far."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

import numpy as np

from worlds.rows import WorldRows
from worlds.seeding import Seeds
from worlds.spec import WorldSpec


@dataclass(kw_only=True)
class Gen:
    """Everything a stage reads and writes; stages run in a fixed order."""

    spec: WorldSpec
    seeds: Seeds
    rows: WorldRows = field(default_factory=dict)
    domain: str = ""
    company_name: str = ""
    _index: dict[tuple[str, str, str], dict[Any, list[Any]]] = field(default_factory=dict, repr=False)
    # Filled by the work stage and read by later ones: how each employee writes (index = id - 1), the event
    # behind each ticket (by ticket id), and the companies the business deals with (name, contact first/last).
    styles: list[Any] = field(default_factory=list)
    stories: dict[int, Any] = field(default_factory=dict)
    customers: list[tuple[str, str, str]] = field(default_factory=list)
    vendors: list[tuple[str, str, str]] = field(default_factory=list)

    start_at: datetime = field(init=False)
    history_start: datetime = field(init=False)
    span_s: float = field(init=False)

    def __post_init__(self) -> None:
        # The simulated 'now' is 09:00 UTC on the start date; history ends there. With zero history days every
        # timestamp collapses onto start_at, so span_s is floored at one second to keep ratios defined.
        self.start_at = datetime.combine(self.spec.start_date, time(9, 0), tzinfo=UTC)
        self.history_start = self.start_at - timedelta(days=self.spec.history_days)
        self.span_s = max(1.0, (self.start_at - self.history_start).total_seconds())

    def table(self, name: str) -> list[dict[str, Any]]:
        """The row list of a table (created on first use)."""
        return self.rows.setdefault(name, [])

    def add(self, name: str, row: dict[str, Any]) -> int:
        """Append a row with the next id; returns the id."""
        rows = self.table(name)
        row["id"] = len(rows) + 1
        rows.append(row)
        return int(row["id"])

    def index(self, table: str, key: str, value: str) -> dict[Any, list[Any]]:
        """``table``'s rows grouped by ``key`` -> their ``value``s in row order (team -> members, for instance).

        Built once per (table, key, value), so call it only after the stage that fills the table: scanning every
        row per team or project instead made generation quadratic (minutes at 20,000 employees).
        """
        found = self._index.get((table, key, value))
        if found is None:
            found = {}
            for row in self.rows.get(table, []):
                found.setdefault(row[key], []).append(row[value])
            self._index[(table, key, value)] = found
        return found

    def has(self, app: str) -> bool:
        """Whether the spec asks for an app's data."""
        return app in self.spec.apps

    def at(self, rng: np.random.Generator, lo: datetime | None = None, hi: datetime | None = None) -> datetime:
        """A uniform instant in [lo, hi] (defaults: the history window), whole seconds."""
        lo = lo or self.history_start
        hi = hi or self.start_at
        span = max(0.0, (hi - lo).total_seconds())
        return lo + timedelta(seconds=int(rng.uniform(0, span)))

    def work_time(self, rng: np.random.Generator, lo: datetime | None = None) -> datetime:
        """An instant during office hours (UTC 08:00-18:00 on weekdays) inside the window, after ``lo``."""
        lo = lo or self.history_start
        for _ in range(20):
            t = self.at(rng, lo)
            if t.weekday() < 5 and 8 <= t.hour < 18:
                return t
        return self.at(rng, lo)


def slug(text: str) -> str:
    """ASCII lowercase words joined by hyphens."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-") or "x"


def ascii_name(text: str) -> str:
    """Letters only, ASCII, lowercase (for usernames and emails)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z]", "", ascii_text.lower()) or "user"


def pick(rng: np.random.Generator, items: Any) -> Any:
    """One item of a sequence."""
    return items[int(rng.integers(len(items)))]
