"""Shared state of one generation run: the spec, the streams, the time window and the rows so far."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

import numpy as np

from worlds.hours import WorkHours
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
    _hours: dict[int, WorkHours] = field(default_factory=dict, repr=False)
    # Filled by the work stage and read by later ones: how each employee writes (index = id - 1), the event
    # behind each ticket (by ticket id), and the companies the business deals with (name, contact first/last).
    styles: list[Any] = field(default_factory=list)
    stories: dict[int, Any] = field(default_factory=dict)
    customers: list[tuple[str, str, str]] = field(default_factory=list)
    vendors: list[tuple[str, str, str]] = field(default_factory=list)
    # Project id -> (work family, components it works on): later stages draw new tickets in the same areas.
    components: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    # Filled by the reorg stage: the instant the new reporting lines hold, and who each moved person reported to
    # (and each changed team's lead) before it. Rows hold today's lines; these give the lines of an earlier time.
    reorg_at: datetime | None = None
    manager_before: dict[int, int | None] = field(default_factory=dict)
    lead_before: dict[int, int] = field(default_factory=dict)
    # Filled by the leavers stage: each leaver's last working moment (end of their last day, UTC). Later stages
    # ask ``active_at``/``stand_in`` when they pick a person, and ``when``/``placed`` never go past it.
    leave_at: dict[int, datetime] = field(default_factory=dict)
    # Filled by the receipts stage for the actuals sheets: one dict per receipt mailed to finance.
    receipts: list[dict[str, Any]] = field(default_factory=list)

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

    def manager_at(self, emp: int, t: datetime) -> int | None:
        """Who ``emp`` reported to at ``t``: before a reorg the old line, else the directory's."""
        if self.reorg_at is not None and t < self.reorg_at and emp in self.manager_before:
            return self.manager_before[emp]
        return self.rows["employees"][emp - 1]["manager_id"]  # type: ignore[no-any-return]

    def lead_at(self, team: dict[str, Any], t: datetime) -> int:
        """Who led ``team`` at ``t`` (the lead before a reorg that changed it, else today's)."""
        if self.reorg_at is not None and t < self.reorg_at and team["id"] in self.lead_before:
            return self.lead_before[team["id"]]
        return int(team["lead_id"])

    def active_at(self, emp: int, t: datetime) -> bool:
        """Whether ``emp`` still works here at ``t`` (a leaver is, up to the end of their last day)."""
        last = self.leave_at.get(emp)
        return last is None or t <= last

    def stand_in(self, emp: int, t: datetime, pool: list[int]) -> int:
        """``emp`` if still here at ``t``, else the next person of ``pool`` (cyclically) who is.

        Why: stages draw an author from a team or channel before they know the time; swapping a leaver for the
        next colleague instead of drawing again keeps every stage's random numbers where they were.
        """
        if self.active_at(emp, t) or emp not in pool:
            return emp
        i = pool.index(emp)
        for other in pool[i + 1 :] + pool[:i]:
            if self.active_at(other, t):
                return other
        return emp

    def hours(self, emp: int) -> WorkHours:
        """The working week of employee ``emp`` (zone, start and end minute, workdays), read once."""
        found = self._hours.get(emp)
        if found is None:
            e = self.rows["employees"][emp - 1]
            found = WorkHours(e["timezone"], e["work_start_minute"], e["work_end_minute"], e["workdays"])
            self._hours[emp] = found
        return found

    def when(self, emp: int, t: datetime) -> datetime | None:
        """The first moment at or after ``t`` in ``emp``'s own working hours, or None once history has ended.

        Why: every generated post, mail, comment and status change is something a person did, so it happens on
        their workday in their time zone (issue 12 item 1); an action that would land after the world's start
        instant did not happen yet, and the caller drops it (a reply nobody wrote, a step the ticket has not taken).
        """
        out = self.hours(emp).next_open(t)
        return out if out <= self.leave_at.get(emp, self.start_at) else None

    def placed(self, emp: int, t: datetime) -> datetime:
        """``when(emp, t)``, or else ``emp``'s last working moment before history ends, or before they left."""
        out = self.when(emp, t)
        return out if out is not None else self.hours(emp).last_open(min(t, self.leave_at.get(emp, self.start_at)))


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
