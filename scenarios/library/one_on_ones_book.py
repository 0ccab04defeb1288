"""``one-on-ones-book-v0``: day two of the 1:1 story; the reports answer overnight questions, the manager books.

In a campaign after ``one-on-ones-ask-v0`` the task is the newest set of 1:1 questions a manager sent their
direct reports by DM and has not booked yet: the reports are NPCs (``needs_npcs``, pinned cooperative) whose
personas day one created, so they answer those questions on their first turns today, in their own hours. Played
alone, setup prepares the day as day one would (``one_on_ones_ask.prepare``) and writes the manager's questions
as yesterday's, each a free common time today. What is booked is graded against what the reports themselves
answered before the booking (``meeting_agreed`` reads the NPCs' memory), never against chat text the agent wrote.

Difficulty, when setup prepares the day, is day one's (2, 2, 3, 4 reports; 0-3 busy half-hours in their
calendars, their mornings first at 3; 0, 0, 1, 2 of the manager's) and today's own: the chance that a report
accepted another meeting overnight at the very time they were asked about (0, 25, 50, 75 %, only where a second
common time exists), so they answer "doesn't work" and need a new time and a second answer; and how busy the
reports are (responsiveness 0.9, 0.85, 0.65, 0.5: a median answer in 7, 9, 19, 35 working minutes). What a
harder day costs: more re-proposals, each to be timed with notice and waited for; a manager who books without
waiting, or who books only part of the team, loses more of it. In a campaign yesterday's questions decide who
must be booked when, and nothing clashes overnight.

The rubric (version 2), per report: a meeting titled "1:1 with @username" at a time they agreed to, inviting
them, 30 minutes long, inside the report's and the manager's working hours and free in both calendars (one
check each), one 1:1 double-booking nobody; and a gate that only chat and the calendar changed. The oracle reads
the reports from the directory and, each half-hour (``wait``), the direct messages with news (``chat_unread``):
a yes is booked; a "does not work" (or a yes to a time that passed meanwhile) gets a new free time by DM, an hour
after their answer at the earliest, avoiding the times still open with the others (``propose``; it waits when the
only free time is one of those, and says so when none is left); three quiet hours get the question again, or a
new time when the one asked about is less than an hour away (asking about a time that has passed helps nobody). It
never reads params or the NPCs' traits.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from mcp_tools.base import Actor, ToolContext
from mcp_tools.calendar import service as calendar
from mcp_tools.calendar.service import busy_intervals
from mcp_tools.chat import service as chat
from scenarios.base import AgentEnv, Limits, ScenarioInstance, ToolFailed, WorldDefaults, start_day
from scenarios.library.one_on_ones_ask import (
    BOOKED,
    CHAT_CHANGES,
    EARLIEST,
    MANAGER_BOOKED,
    MINUTES,
    REPORTS,
    STORY,
    Person,
    earliest,
    event,
    pick,
    prepare,
    propose,
    usable,
)
from worlds.clock import Clock, FixedClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

_PERSON = (
    "SELECT id, username, first_name || ' ' || last_name, timezone, work_start_minute, work_end_minute, workdays"
    " FROM employees WHERE id = ?"
)
CLASHED = (0.0, 0.25, 0.5, 0.75)
"""The chance, by difficulty, that a report accepted another meeting overnight at the time they were asked about."""
RESPONSIVE = (0.9, 0.85, 0.65, 0.5)
"""How quickly the reports answer a DM, by difficulty (median 7, 9, 19, 35 working minutes): on a harder day
they are busier people with fuller calendars, so a manager who does not wait for them misses more answers."""
REASK = 60
"""Minutes of notice a re-proposal leaves from the report's last answer: time to read it and answer before it
passes (the day's first question left two hours; later in the day the free times are fewer)."""
NUDGE = 180
"""Minutes waited without an answer before the oracle asks again (a rare NPC lets a question slide)."""
OVERNIGHT = ("Customer escalation call", "Incident review", "Hiring debrief", "Vendor demo")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d)?(?:Z|[+-]\d\d:\d\d)")
_LOCAL = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) \(([A-Za-z_/+-]+)\)")
_YES = re.compile(r"\b(works for me|is fine with me|works)\b", re.I)
_NO = re.compile(r"\b(can't make|doesn't work|busy at)\b", re.I)


def _load(sql: Sql, employee: int) -> Person:
    r = sql.one(_PERSON, (employee,))
    assert r is not None
    return Person(id=int(r[0]), username=str(r[1]), name=str(r[2]), zone=str(r[3]), start=int(r[4]), end=int(r[5]),
                  workdays=str(r[6]))  # fmt: skip


def _pending(sql: Sql) -> tuple[Person, list[Person]] | None:
    """The manager of the newest 1:1 question to a direct report, and the reports asked then, if none is booked."""
    rows = sql.all(
        "SELECT p.id, p.author_id, r.id, p.created_at FROM posts p JOIN channels c ON c.id = p.channel_id"
        " JOIN channel_members m ON m.channel_id = c.id JOIN employees r ON r.id = m.employee_id"
        " WHERE c.type = 'D' AND r.manager_id = p.author_id AND r.active = ? AND p.deleted_at IS NULL"
        " AND p.message LIKE ? ORDER BY p.id DESC LIMIT 50",
        (True, "%1:1%?%"),
    )
    if not rows:
        return None
    boss = int(rows[0][1])
    newest = rows[0][3] if isinstance(rows[0][3], datetime) else datetime.fromisoformat(str(rows[0][3]))
    asked: list[int] = []
    for _, author, report, at in rows:
        when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
        if int(author) == boss and newest - when < timedelta(hours=12) and int(report) not in asked:
            asked.append(int(report))
    reports = [_load(sql, r) for r in asked]
    booked = sql.one(
        "SELECT 1 FROM events WHERE organizer_id = ? AND title LIKE ? AND created_at >= ?",
        (boss, "1:1 with @%", newest),
    )
    if booked is not None or not reports:
        return None
    return _load(sql, boss), sorted(reports, key=lambda r: r.username)


def _spare(sql: Sql, boss: Person, r: Person, at: datetime, asked: list[datetime]) -> int:
    """Half-hours on ``at``'s day free for both ``boss`` and ``r``, from ``r``'s first allowed start, none asked."""
    a, b = usable(at.astimezone(ZoneInfo(boss.zone)).date(), boss, r)
    busy = busy_intervals(sql, boss.id, a, b) + busy_intervals(sql, r.id, a, b)
    busy += [(t, t + timedelta(minutes=MINUTES)) for t in asked]
    spare, t, step = 0, a, timedelta(minutes=MINUTES)
    while t + step <= b:
        spare += not any(s < t + step and t < e for s, e in busy)
        t += timedelta(minutes=30)
    return spare


class OneOnOnesBook:
    """The ``one-on-ones-book-v0`` family."""

    id = "one-on-ones-book-v0"
    description = "Day two of a campaign: a manager books the 1:1s their reports agreed to overnight, by DM."
    world = WorldDefaults(employees=40, history_days=30)
    story: tuple[str, ...] = STORY

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Find yesterday's questions (or ask them in setup), return the instance with the reports as NPCs."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/one-on-ones-book")
        sql = Sql.of(session)
        found = _pending(sql)
        if found is not None:
            boss, reports = found
            now = start_day(session, clock, boss.id)
        else:
            count, booked = REPORTS[difficulty], BOOKED[difficulty] + MANAGER_BOOKED[difficulty]
            # room for one more time: a report may refuse yesterday's (an overnight commitment)
            boss, reports = pick(sql, rng, clock.now() - timedelta(days=1), count, booked + 1)
            now = start_day(session, clock, boss.id)
            day = now.astimezone(ZoneInfo(boss.zone)).date()
            prepare(sql, rng, boss, reports, day, now - timedelta(days=1), difficulty)
            asked = self._ask_yesterday(session, boss, reports, now)
            self._overnight(sql, rng, boss, reports, asked, now, CLASHED[difficulty])
        local = now.astimezone(ZoneInfo(boss.zone))
        names = [r.username for r in reports]
        who = ", ".join(f"@{u}" for u in names)
        prompt = (
            f"You are {boss.name} (@{boss.username}). It is {local:%A %H:%M} in your time zone ({boss.zone}), "
            f"{now:%Y-%m-%d %H:%M} UTC. Yesterday you asked your direct reports {who} by direct message whether a "
            f"time today works for your {MINUTES}-minute 1:1. They answer in their own working hours: read their "
            'answers (use the wait tool to let time pass). Book a 1:1 titled "1:1 with @username" with each of '
            "them at the time they agreed to, inviting them. If someone says the time does not work, propose "
            "another free time today by direct message, as a question giving the time in ISO 8601 with an offset, "
            "and book it once they agree. Never double-book anyone. Call the submit tool when every 1:1 is booked."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=boss.username,
            rubric=self._rubric(names, boss.username),
            params={"reports": names, "manager": boss.username},
            limits=Limits(max_turns=60 + 25 * len(names), time_budget_s=10 * 3600),
            apps=("calendar", "chat", "directory"),
            difficulty=difficulty,
            npcs={u: {"base": "cooperative", "responsiveness": RESPONSIVE[difficulty]} for u in names},
            npc_population=tuple(names),
            needs_npcs=True,
        )

    @staticmethod
    def _overnight(
        sql: Sql,
        rng: np.random.Generator,
        boss: Person,
        reports: list[Person],
        asked: list[datetime],
        now: datetime,
        chance: float,
    ) -> None:
        """Commitments the reports accepted overnight, each over the time they were asked about (``chance`` each).

        Why: a day-old question is stale information. A report whose time got taken answers "doesn't work", so
        the manager must propose another free time and wait for a second answer; a harder day has more of them.
        A report keeps their time when fewer than two other half-hours are free for both of them that day (none
        asked of anyone): a second time must exist, as ``pick`` makes sure a first one does.
        """
        for r, at in zip(reports, asked, strict=True):
            clash = float(rng.random()) < chance
            title = OVERNIGHT[int(rng.integers(len(OVERNIGHT)))]
            created = now - timedelta(minutes=int(rng.integers(60, 12 * 60)))
            if clash and _spare(sql, boss, r, at, asked) >= 2:
                event(sql, r.id, title, at, at + timedelta(minutes=MINUTES), now, created=created)

    @staticmethod
    def _ask_yesterday(session: Session, boss: Person, reports: list[Person], now: datetime) -> list[datetime]:
        """The manager's questions of yesterday afternoon: one free common time today per report, none clashing."""
        actor = Actor.load(session, boss.id)
        today = now.astimezone(ZoneInfo(boss.zone)).replace(hour=EARLIEST, minute=0, second=0, microsecond=0)
        sent = (now - timedelta(hours=18)).replace(second=0, microsecond=0)
        taken: list[datetime] = []
        day = today.date()
        for k, r in enumerate(reports):
            at: datetime | None = None
            for ahead in range(5):  # today if a common time is free, else the next days (a full calendar)
                start = today + timedelta(days=ahead)
                first = max(start.astimezone(UTC), earliest(start.date(), boss, r))
                slots = calendar.find_free_slots(
                    ToolContext(session=session, actor=actor, clock=FixedClock(now)), r.username, MINUTES,
                    first.isoformat(), (start + timedelta(hours=24 - EARLIEST)).astimezone(UTC).isoformat(), 30, 48,
                )["slots"]  # fmt: skip
                free = [datetime.fromisoformat(s["start"]) for s in slots]
                at = next((t for t in free if all(abs((t - o).total_seconds()) >= MINUTES * 60 for o in taken)), None)
                if at is not None:
                    break
            if at is None:
                raise ValueError(f"no free common time for @{r.username} and @{boss.username} in five days")
            taken.append(at)
            ctx = ToolContext(session=session, actor=actor, clock=FixedClock(sent + timedelta(minutes=2 * k)))
            when = "tomorrow" if at.astimezone(ZoneInfo(boss.zone)).date() == day else "this week"
            chat.direct_message(ctx, r.username, f"Hi, would {at.isoformat()} work for our 1:1 {when} ({MINUTES} min)?")
        return taken

    @staticmethod
    def _rubric(reports: list[str], manager: str) -> Rubric:
        """Version 2: per report, each thing the booking must get right for that person, one check each.

        Why: a manager booking three 1:1s who gets one report's time wrong should read "@a: 8/8, @b: 8/8,
        @c: 3/8" and see why. Version 1 judged the working hours of both people and the double booking of
        everyone as one check each; here the report's hours and the manager's hours, and the report's and the
        manager's calendars, are items of their own (``graders.checks_items``), the 1:1 is the asked length,
        and the whole-meeting check stays for "one 1:1, nobody double-booked" (a second booking, another
        invitee). Every item of the booking counts only once the time is one the report agreed to: a 1:1 at a
        time nobody accepted earns nothing for fitting the calendars.
        """
        old = {c.id: c.model_dump(mode="json") for c in OneOnOnesBook._rubric_v1(reports).checks}
        checks: list[dict[str, Any]] = []
        for u in reports:
            title = rf"^1:1 with @{re.escape(u)}$"
            agreed = f"agreed-{u}"
            person = {"fn": "meeting_person_in_hours", "needs": [agreed]}
            free = {"fn": "meeting_person_free", "needs": [agreed]}
            checks += [
                old[agreed],
                old[f"invited-{u}"],
                {"id": f"length-{u}", "description": f"The 1:1 with @{u} lasts {MINUTES} minutes.",
                 "fn": "meeting_length", "params": {"title_pattern": title, "minutes": MINUTES}, "needs": [agreed]},
                {"id": f"hours-{u}", "description": f"The 1:1 is inside @{u}'s working hours, on a workday of theirs.",
                 **person, "params": {"title_pattern": title, "username": u}},
                {"id": f"manager-hours-{u}", "description": f"The 1:1 with @{u} is inside your own working hours.",
                 **person, "params": {"title_pattern": title, "username": manager}},
                {"id": f"free-{u}", "description": f"Nothing else is on @{u}'s calendar at their 1:1.",
                 **free, "params": {"title_pattern": title, "username": u}},
                {"id": f"manager-free-{u}", "description": f"Nothing else is on your calendar at the 1:1 with @{u}.",
                 **free, "params": {"title_pattern": title, "username": manager}},
                old[f"single-{u}"],
            ]  # fmt: skip
        checks.append(old["no-collateral"])
        return load_rubric(
            {
                "id": "one-on-ones-book",
                "version": 2,
                "description": "Book each 1:1 at the time the report agreed to, re-proposing when one does not work.",
                "checks": checks,
                "provenance": "v2: per report, the length and each person's hours and calendar as items of their own",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (hours and double booking judged for the whole meeting), for rescoring old traces."""
        if version != 1 or instance.rubric.id != "one-on-ones-book":  # a variant's rubric has its own history
            return None
        return OneOnOnesBook._rubric_v1(list(instance.params["reports"]))

    @staticmethod
    def _rubric_v1(reports: list[str]) -> Rubric:
        """Per report: agreed time, invited, working hours, no double booking; a gate on what may change."""
        checks: list[dict[str, Any]] = []
        for u in reports:
            title = rf"^1:1 with @{re.escape(u)}$"
            agreed = f"agreed-{u}"
            checks += [
                {"id": agreed, "description": f"The 1:1 with @{u} is at a time @{u} agreed to.",
                 "fn": "meeting_agreed", "weight": 2, "params": {"title_pattern": title, "attendees": [u]}},
                {"id": f"invited-{u}", "description": f"@{u} is invited to their 1:1.", "fn": "meeting_attendees",
                 "params": {"title_pattern": title, "attendees": [u]}},
                {"id": f"hours-{u}", "description": f"The 1:1 with @{u} is inside both working hours.",
                 "fn": "meeting_in_working_hours", "params": {"title_pattern": title}, "needs": [agreed]},
                {"id": f"single-{u}", "description": f"One 1:1 with @{u}, double-booking nobody.",
                 "fn": "meeting_no_double_booking", "params": {"title_pattern": title}, "needs": [agreed]},
            ]  # fmt: skip
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only chat and the calendar changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        *CHAT_CHANGES,
                        {"table": "events", "ops": ["insert", "update"]},
                        {"table": "event_attendees", "ops": ["insert", "update"]},
                    ]
                },
            }
        )
        return load_rubric(
            {
                "id": "one-on-ones-book",
                "version": 1,
                "description": "Book each 1:1 at the time the report agreed to, re-proposing when one does not work.",
                "checks": checks,
            }
        )

    def oracle(self, env: AgentEnv) -> None:
        """Read each report's answer to the newest question; book the yeses; re-propose after a no; wait."""
        zone = _must(re.search(r"in your time zone \(([^)]+)\)", env.prompt)).group(1)
        stated = _must(re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC", env.prompt)).group(1)
        start = datetime.fromisoformat(stated).replace(tzinfo=UTC)
        today = start.astimezone(ZoneInfo(zone)).date().isoformat()
        reports = [r["username"] for r in env.call("directory_reports", username=env.actor)["reports"]]
        named = set(re.findall(r"@([a-z0-9][a-z0-9._-]*[a-z0-9])", env.prompt.split("reports ", 1)[1]))
        pending = [u for u in reports if u in named]
        dm: dict[str, str] = {}
        for c in env.call("chat_list_channels")["channels"]:
            if c["type"] == "direct" and len(dm) < len(pending):
                people = {m["username"] for m in env.call("chat_list_members", channel=c["name"])["members"]}
                dm.update({u: c["name"] for u in pending if u in people})
        refused: dict[str, list[datetime]] = {}  # per report: a time one refused may suit another
        heard: dict[str, datetime] = {}  # when each report last answered
        stalled: set[str] = set()  # refused, with no new time asked yet
        quiet: dict[str, int] = {}  # minutes waited since each report's conversation last had news
        waited = 0  # minutes the last wait let pass
        now = start  # the clock as the waits moved it (a lower bound: each call also takes a few seconds)
        seen: dict[str, int | None] = {}  # the unread count of each report's conversation when last read
        open_: dict[str, datetime] = {}  # the time each pending report was last asked about: a yes may still come
        last: dict[str, int] = {}  # the newest post id read in each report's conversation
        for _ in range(60):
            if not pending or env.done:
                break
            # One look at the unread counts, then read only the conversations with news (every one the first time),
            # all of them before acting on one: a re-proposal must avoid the times still open with the others.
            counts = {c["name"]: c["unread"] for c in env.call("chat_unread")["channels"]}
            news = [u for u in pending if counts.get(dm[u]) != seen.get(u)]
            seen.update({u: counts.get(dm[u]) for u in news})
            quiet.update({u: 0 if u in news else quiet.get(u, 0) + waited for u in pending})
            for u in [u for u in pending if quiet[u] >= NUDGE and u in open_ and u not in stalled]:  # ask again
                if open_[u] <= now + timedelta(minutes=REASK):  # too late to ask about that time: find another
                    refused.setdefault(u, []).append(open_[u])
                    stalled.add(u)
                    continue
                env.call("chat_direct_message", username=u, message=f"Just checking: would {open_[u].isoformat()} "
                         f"work for our 1:1 ({MINUTES} min)?")  # fmt: skip
                quiet[u] = 0
            answers = {u: self._answer(env, u, dm[u], heard, last) for u in news}
            open_.update({u: when for u, (_, when) in answers.items() if when is not None})
            for u, (verdict, when) in answers.items():
                if verdict == "yes" and when is not None:
                    try:
                        env.call(
                            "calendar_create_event", title=f"1:1 with @{u}", start=when.isoformat(),
                            end=(when + timedelta(minutes=MINUTES)).isoformat(), attendees=u,
                            description="Our weekly 1:1.",
                        )  # fmt: skip
                        pending.remove(u)
                        continue
                    except ToolFailed as failed:  # the agreed time passed while we waited: ask about another
                        if failed.code != "invalid_argument":
                            raise
                if verdict is not None and when is not None:
                    refused.setdefault(u, []).append(when)
                    stalled.add(u)
            for u in sorted(stalled):
                asked = tuple(t for o, t in open_.items() if o != u and o in pending)
                # While others still have a time open, the only free one may be theirs: wait for their answer
                # (a refusal frees it) rather than tell this report there is none.
                again = propose(
                    env, today, zone, [u], (*refused[u], *asked), give_up=not asked,
                    not_before=max(heard.get(u, start), now) + timedelta(minutes=REASK),
                )  # fmt: skip
                if u in again:
                    open_[u] = datetime.fromisoformat(again[u])
                    stalled.discard(u)
                elif not asked:
                    pending.remove(u)  # no time left today: they were told so, nothing to wait for
                    stalled.discard(u)
            if pending:
                waited = int(env.call("wait", minutes=30).get("waited_minutes", 0))
                now += timedelta(minutes=waited)
        if not env.done:
            env.call("submit", summary="every 1:1 booked at the agreed time")

    @staticmethod
    def _answer(
        env: AgentEnv, u: str, channel: str, heard: dict[str, datetime], last: dict[str, int]
    ) -> tuple[str | None, datetime | None]:
        """(yes/no/None, the time asked) for ``u``'s answer to the agent's newest question in their DM.

        The answer's time goes into ``heard``: a next proposal leaves them the notice to answer it. Called when
        the unread count moved; a read that shows nothing newer than the last one is read again once (a cache
        can serve a stale page, and acting on it would re-ask what was already answered).
        """
        posts = env.call("chat_read_channel", channel=channel, limit=50)["posts"]
        if posts and u in last and max(p["id"] for p in posts) <= last[u]:
            posts = env.call("chat_read_channel", channel=channel, limit=50)["posts"]
        if posts:
            last[u] = max(p["id"] for p in posts)
        mine = [p for p in posts if p["author"] == env.actor and "?" in p["message"] and _ISO.search(p["message"])]
        if not mine:
            return None, None
        asked = datetime.fromisoformat(_ISO.findall(mine[-1]["message"])[-1])
        for post in posts:
            if post["id"] <= mine[-1]["id"] or post["author"] != u:
                continue
            local = _LOCAL.search(post["message"])
            about = (
                datetime.fromisoformat(local.group(1)).replace(tzinfo=ZoneInfo(local.group(2))).astimezone(UTC)
                if local
                else None
            )
            if about is not None and about != asked:
                continue
            heard[u] = datetime.fromisoformat(post["at"])
            if _NO.search(post["message"]):
                return "no", asked
            if _YES.search(post["message"]):
                return "yes", asked
        return None, asked


def _must(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "the prompt names this"
    return m
