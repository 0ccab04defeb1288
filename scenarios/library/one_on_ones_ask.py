"""``one-on-ones-ask-v0``: day one of a two-day story; a manager asks each direct report for a 1:1 time.

The story (``story = ("one-on-ones-ask-v0", "one-on-ones-book-v0")``) is played as a campaign: today the manager
proposes one 30-minute time to each report by direct message (reports sit in other time zones, so most answers
arrive after the manager's day ends); tomorrow (``one-on-ones-book-v0``) the reports, as NPCs, answer the
questions that waited overnight and the manager books the 1:1s they agreed to. Day two depends on day one: the
times it books are the ones asked today, and nobody answers a question that was never sent.

Setup (raw statements, as the apps write): the reports' NPC personas (cooperative, reading their DMs from now
on, so tomorrow they answer what arrives today) and, by difficulty, commitments in the reports' calendars inside
the common hours (0, 1, 2, 3 of them by difficulty; at 3 the first two are their first allowed half-hours) and
in the manager's (one at difficulty 2, two at 3, from the first report's first allowed start).

Difficulty sets the number of reports (2, 2, 3, 4; those sharing >= 3 working hours with the manager), the
half-hours each report already has booked in the common hours (0, 1, 2, 3; their mornings first at 3) and the
manager's (0, 0, 1, 2), so the first common time is more often taken, and proposals must avoid each other and
read both calendars. Every report shares (reports + 2 + booked) usable half-hours with the manager, free in both
calendars, so there is always a time for each, however the commitments fall.

The rubric is one ``dm_time_proposed`` check per report (the newest question to them proposes an ISO time on the
day, inside both working hours, free in both calendars, not clashing with the other proposals) and a gate that
nothing but chat changed (booking today is against the rules). The oracle reads the reports from the prompt
and their hours from the directory, the free slots from the calendar; it never reads params.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from mcp_tools.calendar.service import busy_intervals
from npcs.persona import ensure_persona
from npcs.traits import TraitVector
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

STORY = ("one-on-ones-ask-v0", "one-on-ones-book-v0")
REPORTS = (2, 2, 3, 4)
BOOKED = (0, 1, 2, 3)
"""Half-hours each report already has booked inside the common hours, by difficulty."""
FIRST_TAKEN = (0, 0, 0, 2)
"""How many of each report's commitments sit at the start of their allowed hours (their mornings fill first)."""
MANAGER_BOOKED = (0, 0, 1, 2)
"""Half-hours the manager already has booked from the first report's first allowed start, by difficulty."""
MANAGER_BUSY = ("Budget sync", "Hiring sync")
MINUTES = 30
EARLIEST = 10
"""No 1:1 before 10:00 in the manager's zone: tomorrow's episode starts at 09:00 there, and a time that has passed
by then cannot be booked."""
NOTICE = 120
BUSY = ("Customer call", "Interview loop", "Design review", "Focus time")
CHAT_CHANGES: list[dict[str, Any]] = [
    {"table": "posts", "ops": ["insert"]},
    {"table": "mentions", "ops": ["insert"]},
    {"table": "channels", "ops": ["insert"]},
    {"table": "channel_members", "ops": ["insert", "update"]},
]
"""What asking by direct message may change."""


@dataclass(frozen=True, kw_only=True)
class Person:
    """An employee with their working hours."""

    id: int
    username: str
    name: str
    zone: str
    start: int
    end: int
    workdays: str


_PERSON = (
    "SELECT id, username, first_name || ' ' || last_name, timezone, work_start_minute, work_end_minute, workdays"
    " FROM employees"
)


def _person(row: Any) -> Person:
    return Person(id=int(row[0]), username=str(row[1]), name=str(row[2]), zone=str(row[3]), start=int(row[4]),
                  end=int(row[5]), workdays=str(row[6]))  # fmt: skip


def window(day: date, p: Person) -> tuple[datetime, datetime]:
    """UTC start and end of ``p``'s working hours on the local date ``day``."""
    local = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(p.zone))
    return (local + timedelta(minutes=p.start)).astimezone(UTC), (local + timedelta(minutes=p.end)).astimezone(UTC)


def common(day: date, a: Person, b: Person) -> tuple[datetime, datetime]:
    """The interval both work on ``day`` (``a``'s local date; empty when end <= start)."""
    (a0, a1), (b0, b1) = window(day, a), window(day, b)
    return max(a0, b0), min(a1, b1)


def earliest(day: date, boss: Person, r: Person) -> datetime:
    """The first allowed start: ``EARLIEST`` o'clock for the manager, ``NOTICE`` minutes into the report's day.

    Why the notice: the report reads the question when their day starts, and a time that passes before they can
    answer is a time they can only refuse.
    """
    ten = datetime(day.year, day.month, day.day, EARLIEST, tzinfo=ZoneInfo(boss.zone)).astimezone(UTC)
    return max(ten, window(day, r)[0] + timedelta(minutes=NOTICE))


def usable(day: date, boss: Person, r: Person) -> tuple[datetime, datetime]:
    """The common interval on ``day`` (the manager's local date) from the first allowed start."""
    a, b = common(day, boss, r)
    return max(a, earliest(day, boss, r)), b


def next_weekday(day: date) -> date:
    """The first Monday-to-Friday date after ``day``."""
    d = day + timedelta(days=1)
    while d.weekday() >= 5:
        d += timedelta(days=1)
    return d


def works_on(p: Person, day: date) -> bool:
    """Whether ``day`` is one of ``p``'s workdays."""
    return p.workdays[day.weekday()] == "1"


def pick(sql: Sql, rng: np.random.Generator, now: datetime, count: int, booked: int = 0) -> tuple[Person, list[Person]]:
    """A manager and ``count`` reports (or as many as any manager has, >= 2), one in another zone if possible.

    Each report shares ``count + 2 + booked`` usable half-hours with the manager, free in both calendars, so a
    time exists for each whatever the setup's commitments (``booked`` half-hours of theirs, one of the
    manager's) and the earlier proposals take.
    """
    managers = [
        _person(r)
        for r in sql.all(
            f"{_PERSON} e WHERE active = ? AND (SELECT count(*) FROM employees r WHERE r.manager_id = e.id"  # noqa: S608
            " AND r.active = ?) >= 2 ORDER BY id",
            (True, True),
        )
    ]
    day = next_weekday((now + timedelta(days=1)).date())
    teams: list[tuple[Person, list[tuple[float, Person]]]] = []
    for k in rng.permutation(len(managers)):
        boss = managers[int(k)]
        rows = sql.all(f"{_PERSON} WHERE manager_id = ? AND active = ? ORDER BY username", (boss.id, True))  # noqa: S608
        if works_on(boss, day):
            windows = [(r, usable(day, boss, r)) for r in map(_person, rows) if works_on(r, day)]
            teams.append((boss, [(free_minutes(sql, boss, r, a, b), r) for r, (a, b) in windows]))
    for want in range(count, 1, -1):  # a small company may have no manager with that many: as many as there are
        for mixed in (True, False):
            for lead, spans in teams:
                fit = sorted(
                    (r for m, r in spans if m >= MINUTES * (want + 2 + booked)),
                    key=lambda r: (r.zone == lead.zone, r.username),
                )
                if len(fit) >= want and (not mixed or fit[0].zone != lead.zone):
                    return lead, sorted(fit[:want], key=lambda r: r.username)
    raise ValueError("no manager with 2 reports sharing 2 free working hours: world too small")


def free_minutes(sql: Sql, boss: Person, r: Person, a: datetime, b: datetime) -> float:
    """Minutes of [a, b) in half-hour steps when neither calendar has a commitment (their series included).

    Why not just the overlap of working hours: the history gives people weekly meetings and 1:1 series (and, after
    a reorg, a new lead's), so a window can be long and still have no time both are free.
    """
    busy = busy_intervals(sql, boss.id, a, b) + busy_intervals(sql, r.id, a, b)
    step, free, t = timedelta(minutes=30), 0.0, a
    while t + timedelta(minutes=MINUTES) <= b:
        end = t + timedelta(minutes=MINUTES)
        if not any(s < end and t < e for s, e in busy):
            free += 30
        t += step
    return free


def event(
    sql: Sql, who: int, title: str, start: datetime, end: datetime, now: datetime, created: datetime | None = None
) -> None:
    """A commitment of ``who`` (organiser and only attendee), written four days before ``now`` unless ``created``."""
    eid = sql.insert(
        "events",
        {"organizer_id": who, "title": title, "description": "", "start_at": start, "end_at": end, "rrule": None,
         "until": None, "room_id": None, "cancelled": False,
         "created_at": created if created is not None else now - timedelta(days=4)},
    )  # fmt: skip
    sql.insert("event_attendees", {"event_id": eid, "employee_id": who, "rsvp": "accepted", "optional": False})


def prepare(
    sql: Sql, rng: np.random.Generator, boss: Person, reports: list[Person], day: date, now: datetime, difficulty: int
) -> None:
    """The reports' personas (reading DMs from now on) and the day's commitments by difficulty."""
    cooperative = (TraitVector.parse("cooperative"), "cooperative")
    for r in reports:
        ensure_persona(sql, 0, r.id, cooperative, now)
    for r in reports:
        a, b = usable(day, boss, r)
        halves = max(1, int((b - a).total_seconds() // 1800) - 1)
        ks = sorted(int(i) for i in rng.choice(halves, size=min(BOOKED[difficulty], halves), replace=False))
        first = list(range(min(FIRST_TAKEN[difficulty], len(ks))))
        ks = sorted({*first, *[k for k in ks if k not in first][: len(ks) - len(first)]})
        # their first allowed half-hours are taken: the obvious first proposals fail
        for k in ks:
            start = a + timedelta(minutes=30 * k)
            event(sql, r.id, BUSY[int(rng.integers(len(BUSY)))], start, start + timedelta(minutes=30), now)
    a, _ = usable(day, boss, reports[0])
    for k, title in enumerate(MANAGER_BUSY[: MANAGER_BOOKED[difficulty]]):
        event(sql, boss.id, title, a + timedelta(minutes=30 * k), a + timedelta(minutes=30 * (k + 1)), now)


class OneOnOnesAsk:
    """The ``one-on-ones-ask-v0`` family."""

    id = "one-on-ones-ask-v0"
    description = "Day one of a campaign: a manager asks each direct report by DM whether a 1:1 time works."
    world = WorldDefaults(employees=40, history_days=30)
    story: tuple[str, ...] = STORY

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick the manager and reports, give the reports personas and commitments, return the instance."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/one-on-ones")
        sql = Sql.of(session)
        boss, reports = pick(sql, rng, clock.now(), REPORTS[difficulty], BOOKED[difficulty])
        now = start_day(session, clock, boss.id)
        day = next_weekday(now.astimezone(ZoneInfo(boss.zone)).date())
        prepare(sql, rng, boss, reports, day, now, difficulty)
        lo = datetime(day.year, day.month, day.day, EARLIEST, tzinfo=ZoneInfo(boss.zone)).astimezone(UTC)
        local = now.astimezone(ZoneInfo(boss.zone))
        who = ", ".join(f"@{r.username}" for r in reports)
        prompt = (
            f"You are {boss.name} (@{boss.username}). It is {local:%A %H:%M} in your time zone ({boss.zone}). "
            f"You hold a {MINUTES}-minute 1:1 with each of your direct reports {who} on "
            f"{day:%A} {day.isoformat()}. Today, only ask: send each of them a direct message proposing one time "
            "for it, as a question giving the time in ISO 8601 with an offset (e.g. 2026-03-03T15:00:00+00:00). "
            f"Each time must be on {day.isoformat()} from {EARLIEST}:00 in your time zone and at least "
            f"{NOTICE // 60} hours into their working day (so they can answer first), within both your and their "
            "working hours "
            "(each in their own time zone), free in both calendars, and your 1:1s must not overlap each other. "
            "Book nothing today: tomorrow you will book the 1:1s at the times they agree to. Call the submit tool "
            "when you are done."
        )
        names = [r.username for r in reports]
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=boss.username,
            rubric=self._rubric(
                {r.username: earliest(day, boss, r) for r in reports}, lo + timedelta(hours=24 - EARLIEST)
            ),
            params={
                "reports": names,
                "day": [lo.isoformat(), (lo + timedelta(hours=24 - EARLIEST)).isoformat()],
                "earliest": {r.username: earliest(day, boss, r).isoformat() for r in reports},
            },
            limits=Limits(max_turns=20 + 6 * len(reports), time_budget_s=8 * 3600),
            apps=("calendar", "chat", "directory"),
            difficulty=difficulty,
            npc_population=(boss.username,),  # nobody answers today (the manager is the agent): answers wait
        )

    @staticmethod
    def _rubric(first: dict[str, datetime], hi: datetime) -> Rubric:
        """Per report a workable proposal by DM (from their first allowed start); a gate that only chat changed."""
        reports = sorted(first)
        checks: list[dict[str, Any]] = [
            {
                "id": f"ask-{u}",
                "description": f"@{u} was asked by DM about one workable {MINUTES}-minute time on the day.",
                "fn": "dm_time_proposed",
                "params": {
                    "username": u,
                    "start_after": first[u].isoformat(),
                    "start_before": hi.isoformat(),
                    "duration_minutes": MINUTES,
                    "others": [o for o in reports if o != u],
                },
            }  # fmt: skip
            for u in reports
        ]
        checks.append(
            {
                "id": "no-booking",
                "description": "Only chat changed: nothing is booked before the reports answer.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": CHAT_CHANGES},
            }
        )
        return load_rubric(
            {
                "id": "one-on-ones-ask",
                "version": 1,
                "description": "Ask each direct report by DM whether one workable 1:1 time suits them.",
                "checks": checks,
            }
        )

    def oracle(self, env: AgentEnv) -> None:
        """Reports from the directory, a free slot per report avoiding the others, one DM each."""
        day = _must(re.search(r"on (\w+day) (\d{4}-\d\d-\d\d)\. Today", env.prompt)).group(2)
        zone = _must(re.search(r"in your time zone \(([^)]+)\)", env.prompt)).group(1)
        who = _must(re.search(r"direct reports (.+?) on \w+day", env.prompt)).group(1)
        propose(env, day, zone, re.findall(r"@([a-z0-9][a-z0-9._-]*[a-z0-9])", who))
        env.call("submit", summary="asked every report about a 1:1 time")


NO_TIME = (
    "Sorry, I have no free {minutes} minutes left on {day} that suit us both, so no 1:1 then. I'll find a time later."
)
"""What the manager writes when no common time is left on the day: a statement (no ``?``, no time), not a question."""


def propose(
    env: AgentEnv,
    day: str,
    zone: str,
    reports: list[str],
    avoid: tuple[datetime, ...] = (),
    give_up: bool = True,
    not_before: datetime | None = None,
) -> dict[str, str]:
    """DM each of ``reports`` a free common slot on ``day``, avoiding each other and ``avoid``; returns the times.

    A report with no common time left on the day (the calendar only offers times already refused or proposed,
    or the day is over) is told so by DM and is missing from the result: the caller stops waiting for them. Why
    not raise: a real manager who runs out of time says so, and a booking day that ran late (a time refused at
    the end of the day) must end the episode cleanly rather than with a StopIteration. With ``give_up`` false
    nothing is sent then: the caller expects a time to free up (another report's open question may be refused).
    ``not_before`` is the earliest start on the day (a re-proposal leaves the report the notice to answer it).
    """
    local = datetime.fromisoformat(day).replace(hour=EARLIEST, tzinfo=ZoneInfo(zone))
    taken: list[datetime] = list(avoid)  # times already refused are not proposed again
    chosen: dict[str, str] = {}
    for u in reports:
        prof = env.call("directory_get_profile", username=u)
        hh, mm = (int(x) for x in prof["working_hours"].split("-")[0].split(":"))
        theirs = datetime.fromisoformat(day).replace(hour=hh, minute=mm, tzinfo=ZoneInfo(prof["timezone"]))
        first = max(local, theirs + timedelta(minutes=NOTICE), _half_hour_up(not_before or local))
        slots = env.call(
            "calendar_find_free_slots",
            usernames=f"{env.actor},{u}",
            duration_minutes=MINUTES,
            start=first.astimezone(UTC).isoformat(),
            end=(local + timedelta(hours=24 - EARLIEST)).astimezone(UTC).isoformat(),
            step_minutes=30,
            limit=48,
        )["slots"]
        free = [datetime.fromisoformat(s["start"]) for s in slots]
        pick_at = next((t for t in free if all(abs((t - o).total_seconds()) >= MINUTES * 60 for o in taken)), None)
        if pick_at is None:
            if give_up:
                env.call("chat_direct_message", username=u, message=NO_TIME.format(minutes=MINUTES, day=day))
            continue
        taken.append(pick_at)
        chosen[u] = pick_at.isoformat()
        env.call("chat_direct_message", username=u, message=f"Hi, would {chosen[u]} work for our 1:1 ({MINUTES} min)?")
    return chosen


def _half_hour_up(t: datetime) -> datetime:
    """``t`` rounded up to a whole half-hour.

    Why: the free-slot search steps from its start, and 18:04 would offer only 18:04, 18:34, ... (none fitting
    a day that ends on the hour).
    """
    floor = t.replace(minute=t.minute // 30 * 30, second=0, microsecond=0)
    return floor if floor == t else floor + timedelta(minutes=30)


def _must(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "the prompt names this"
    return m
