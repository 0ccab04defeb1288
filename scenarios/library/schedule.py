"""``schedule-with-coworkers-v0``: a project lead gets two or three coworkers to agree on a design review.

The task cannot be solved alone: the coworkers are NPCs (``needs_npcs``; pinned ``cooperative`` by default,
restricted to the cast so episodes stay fast), and what it takes depends on who they are. The prompt states
the team's meeting rules, and the rubric checks exactly those:

1. propose a time when everyone (the lead included) is in working hours, in their own zones, and free;
2. ask each coworker by direct message whether that exact time works (ISO 8601 with an offset);
3. someone says it does not work -> pick another free time and ask everyone again;
4. someone refuses or pushes back, or is silent for 3 of their working hours -> direct-message their manager
   naming them, and go ahead without their answer;
5. book one meeting (title with the ticket key) inviting all of them, in a room at the lead's office when
   the difficulty requires one, double-booking nobody;
6. post the decision with the key, the time and who is coming (each as ``@username``) in the team channel.

Difficulty (0..3): the coworkers (2, 2, 3, 4: each one more person to ask, wait for, invite and name); a room
at the lead's office from 1 (when it has two that hold everyone); busy blocks in the coworkers' calendars
inside the common hours from 2; the first room that fits taken all week at 3.

Cooperative coworkers answer yes within minutes; adversarial ones mostly push back (escalations); chaotic
ones answer wrongly half the time (a wrong "no" forces a new round) and add noise of their own; absent ones
never answer (everyone is escalated after the silence). Setup (raw statements, as the apps write): the lead's
manager asks for the review in the team channel, busy blocks in the coworkers' calendars inside the common
hours (difficulty >= 2) and a room taken all week (difficulty 3). Agreement is graded from what the NPCs
themselves answered before the booking (``graders.checks_meetings``), never from chat text the agent wrote.
Rules 1 and 5 are also judged per participant (version 4, ``graders.checks_items``): in their hours, free.
The oracle learns people, hours and managers from the directory, slots from the calendar and the answers from
its direct messages, waiting with the ``wait`` tool; it never reads the hidden params or the NPCs' traits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from npcs.hours import WorkHours
from scenarios.base import AgentEnv, Limits, ScenarioInstance, ToolFailed, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds
from worlds.workflow import TERMINAL_STATUSES

DURATION = 30
ANSWER_MINUTES = 180
MIN_OVERLAP = 120
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_PERSON = (
    "SELECT e.id, e.username, e.timezone, e.work_start_minute, e.work_end_minute, e.workdays, e.manager_id"
    " FROM employees e JOIN employees m ON m.id = e.manager_id WHERE e.active = ? AND m.active = ? ORDER BY e.id"
)


def _workday(at: datetime) -> datetime:
    """00:00 UTC of ``at``'s day, or of the next Monday-to-Friday day."""
    day = datetime(at.year, at.month, at.day, tzinfo=UTC)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def _window(day: datetime, zone: str, start: int, end: int) -> tuple[datetime, datetime]:
    """UTC start and end of a person's working day on the local date of ``day``."""
    local = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone))
    return (local + timedelta(minutes=start)).astimezone(UTC), (local + timedelta(minutes=end)).astimezone(UTC)


def _overlap(day: datetime, people: Sequence[Any]) -> tuple[datetime, datetime]:
    """The common working interval of ``people`` (rows: id, username, zone, start, end, ...) on ``day``."""
    spans = [_window(day, p[2], p[3], p[4]) for p in people]
    return max(a for a, _ in spans), min(b for _, b in spans)


class ScheduleWithCoworkers:
    """The ``schedule-with-coworkers-v0`` family."""

    id = "schedule-with-coworkers-v0"
    description = "Project lead gets 2-3 coworkers in other time zones to agree on a design review and books it."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick the lead, the ticket and the coworkers; add busy blocks; return the instance."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/schedule")
        sql = Sql.of(session)
        lead, name, team, slug, office, key, title = self._lead(sql, rng)
        now = start_day(session, clock, lead[0])
        cast = self._cast(sql, rng, lead, now, (2, 2, 3, 4)[difficulty])
        coworkers = [p[1] for p in cast[1:]]
        day = _workday(now)
        deadline = day + timedelta(days=4 if day.weekday() <= 1 else 6)
        if difficulty >= 2:
            self._busy_blocks(sql, rng, cast, day, now)
        rooms = sql.scalar(
            "SELECT count(*) FROM rooms r JOIN locations l ON l.id = r.location_id"
            " WHERE l.name = ? AND r.capacity >= ?",
            (office, len(cast)),
        )
        room_needed = difficulty >= 1 and int(rooms or 0) >= 2  # a remote lead has no office to book in
        if difficulty >= 3:
            self._take_room(sql, office, len(cast), lead[0], day)
        who = ", ".join(f"@{u}" for u in coworkers[:-1]) + f" and @{coworkers[-1]}"
        self._request(
            sql,
            f"team-{slug}",
            int(lead[6]),
            f"@{lead[1]} please set up the design review of {key} with {who} this week, by our meeting rules.",
            now - timedelta(minutes=30),
        )
        local = now.astimezone(ZoneInfo(lead[2]))
        room_rule = f", in a meeting room at the {office} office that holds all of you" if room_needed else ""
        prompt = (
            f"You are {name} (@{lead[1]}), project lead in the {team} team. It is {local:%A %H:%M} in your time "
            f"zone ({lead[2]}), {now:%Y-%m-%d %H:%M} UTC. "
            f'Set up a {DURATION}-minute design review of {key} ("{title}") with {who}, starting before '
            f"{deadline.isoformat()}. Follow the team's meeting rules:\n"
            "1. Propose a time when all of you are within working hours (each in their own time zone) and free.\n"
            "2. Before booking, ask each of them by direct message whether that exact time works for them, "
            "as a question giving the time in ISO 8601 with an offset (e.g. 2026-03-03T15:00:00+00:00).\n"
            "3. If someone answers that the time does not work, pick another free time and ask everyone again.\n"
            "4. If someone refuses or pushes back instead of answering, or has not answered within 3 of their "
            "own working hours, stop waiting for them: send their manager (see the directory) a direct message "
            "naming them as @username and the time, then go ahead without their answer.\n"
            f"5. Book one meeting at the agreed time with {key} in the title, inviting all of them{room_rule}. "
            "Never double-book anyone.\n"
            f"6. Post the decision in ~team-{slug}: {key}, the time in ISO 8601 with an offset, and who is coming, "
            "each as @username.\n"
            "Use the wait tool to let time pass while people reply. Call the submit tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead[1],
            rubric=self._rubric(key, coworkers, deadline, f"team-{slug}", office if room_needed else None, lead[1]),
            params={
                "key": key,
                "coworkers": coworkers,
                "deadline": deadline.isoformat(),
                "channel": f"team-{slug}",
                "office": office if room_needed else None,
            },
            limits=Limits(max_turns=240, time_budget_s=int((deadline - now).total_seconds())),
            apps=("chat", "calendar", "directory"),
            difficulty=difficulty,
            npcs={u: "cooperative" for u in coworkers},
            npc_population=tuple(coworkers),
            needs_npcs=True,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _lead(sql: Sql, rng: np.random.Generator) -> tuple[Any, str, str, str, str, str, str]:
        """A team lead with a manager, a team channel and an open ticket in an active project of the team."""
        marks = ", ".join("?" * len(TERMINAL_STATUSES))
        rows = sql.all(
            "SELECT e.id, e.username, e.timezone, e.work_start_minute, e.work_end_minute, e.workdays, e.manager_id,"  # noqa: S608 - only placeholders are spliced in
            " e.first_name || ' ' || e.last_name, t.name, t.slug, l.name, k.key, k.title FROM teams t"
            " JOIN employees e ON e.id = t.lead_id JOIN employees m ON m.id = e.manager_id"
            " JOIN locations l ON l.id = e.location_id JOIN channels c ON c.name = 'team-' || t.slug"
            " JOIN projects p ON p.team_id = t.id JOIN tickets k ON k.project_id = p.id"
            f" WHERE e.active = ? AND m.active = ? AND p.status = 'active' AND k.status NOT IN ({marks})"
            " ORDER BY t.id, k.id",
            (True, True, *sorted(TERMINAL_STATUSES)),
        )
        if not rows:
            raise ValueError("no team lead with a manager, a team channel and an open ticket: world too small")
        r = rows[int(rng.integers(len(rows)))]
        return r[:7], r[7], r[8], r[9], r[10], r[11], r[12]

    @staticmethod
    def _cast(sql: Sql, rng: np.random.Generator, lead: Any, now: datetime, n: int) -> list[Any]:
        """The lead and ``n`` coworkers with >= 2 common working hours; at least one in another time zone.

        Nobody in the cast manages another member (escalations go outside the meeting), and the lead manages
        none of them (escalating to yourself is no escalation).
        """
        day = _workday(now)
        people = [p for p in sql.all(_PERSON, (True, True)) if p[0] != lead[0] and p[6] != lead[0]]
        order = [people[int(i)] for i in rng.permutation(len(people))]
        order.sort(key=lambda p: p[2] == lead[2])  # stable: other time zones first, in random order
        cast: list[Any] = [lead]
        for p in order:
            if len(cast) > n:
                break
            managers = {c[6] for c in cast} | {p[6]}
            if p[0] in managers or any(c[0] in managers for c in cast[1:]):
                continue
            a, b = _overlap(day, [*cast, p])
            if (b - a).total_seconds() >= MIN_OVERLAP * 60:
                cast.append(p)
        if len(cast) <= n:
            raise ValueError(f"cannot find {n} coworkers sharing {MIN_OVERLAP} working minutes with @{lead[1]}")
        return cast

    @staticmethod
    def _event(sql: Sql, organizer: int, title: str, start: datetime, end: datetime, **extra: Any) -> int:
        event = sql.insert(
            "events",
            {
                "organizer_id": organizer,
                "title": title,
                "description": "",
                "start_at": start,
                "end_at": end,
                "rrule": extra.get("rrule"),
                "until": None,
                "room_id": extra.get("room_id"),
                "cancelled": False,
                "created_at": start - timedelta(days=3),
            },
        )
        sql.insert(
            "event_attendees", {"event_id": event, "employee_id": organizer, "rsvp": "accepted", "optional": False}
        )
        return event

    def _busy_blocks(self, sql: Sql, rng: np.random.Generator, cast: list[Any], day: datetime, now: datetime) -> None:
        """One or two hour-long commitments per coworker inside the common hours of the first two days."""
        for p in cast[1:]:
            for k in range(int(rng.integers(1, 3))):
                d = day + timedelta(days=k)
                while d.weekday() >= 5:
                    d += timedelta(days=1)
                a, b = _overlap(d, cast)
                halves = int((b - a).total_seconds() // 1800) - 1
                start = a + timedelta(minutes=30 * int(rng.integers(max(1, halves))))
                if start > now:
                    title = ("Focus time", "1:1 with manager", "Customer call", "Interview")[int(rng.integers(4))]
                    self._event(sql, p[0], title, start, start + timedelta(hours=1))

    @staticmethod
    def _request(sql: Sql, channel: str, author: int, message: str, at: datetime) -> None:
        """The lead's manager asks for the review in the team channel (joining it first if needed).

        Why a setup row at all: it is where such a task comes from, and it gives every difficulty a setup in the
        change log, so an episode's own rows start after it (in a campaign too).
        """
        channel_id = sql.scalar("SELECT id FROM channels WHERE name = ? ORDER BY id LIMIT 1", (channel,))
        if not sql.one("SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel_id, author)):
            member = {"channel_id": channel_id, "employee_id": author, "joined_at": at - timedelta(days=30)}
            sql.insert("channel_members", {**member, "last_viewed_at": None})
        post = {"channel_id": channel_id, "author_id": author, "root_id": None, "message": message, "created_at": at}
        sql.insert("posts", {**post, "edited_at": None, "deleted_at": None, "is_pinned": False})

    def _take_room(self, sql: Sql, office: str, people: int, lead_id: int, day: datetime) -> None:
        """The first big enough room of the office is booked all week by someone outside the meeting."""
        room = sql.one(
            "SELECT r.id FROM rooms r JOIN locations l ON l.id = r.location_id WHERE l.name = ? AND r.capacity >= ?"
            " ORDER BY r.name LIMIT 1",
            (office, people),
        )
        owner = sql.scalar("SELECT id FROM employees WHERE active = ? AND id <> ? ORDER BY id LIMIT 1", (True, lead_id))
        if room is not None and owner is not None:
            start = day + timedelta(hours=6)
            self._event(
                sql,
                int(owner),
                "Hiring panel (room hold)",
                start,
                start + timedelta(hours=18),
                room_id=room[0],
                rrule="FREQ=DAILY;COUNT=8",
            )

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(
        key: str, coworkers: list[str], deadline: datetime, channel: str, office: str | None, lead: str
    ) -> Rubric:
        """Version 3, and rule 1 and 5 per participant (the lead too): the time is in their hours, they are free.

        Version 4 adds, for the lead and each coworker, a gate that the booked time lies in their working hours
        on their workday and one that nothing else of theirs is booked then (``graders.checks_items``). The
        whole-meeting gates stay (they also hold the deadline, a single meeting, the room and anyone invited
        beyond the cast); the per-person ones say whose calendar a bad booking broke, one line each.
        """
        old = ScheduleWithCoworkers._rubric_v3(key, coworkers, deadline, channel, office)
        title = rf"\b{re.escape(key)}\b"
        checks: list[dict[str, Any]] = [c.model_dump(mode="json") for c in old.checks]
        people = [lead, *coworkers]
        at = next(i for i, c in enumerate(checks) if c["id"] == "no-double-booking") + 1
        checks[at:at] = [
            {"id": f"hours-{who}", "must": True, "fn": "meeting_person_in_hours",
             "description": f"The meeting is inside @{who}'s working hours, on one of their workdays.",
             "params": {"title_pattern": title, "username": who}}
            for who in people
        ] + [
            {"id": f"free-{who}", "must": True, "fn": "meeting_person_free",
             "description": f"Nothing else is on @{who}'s calendar at the meeting's time.",
             "params": {"title_pattern": title, "username": who}}
            for who in people
        ]  # fmt: skip
        return load_rubric(
            {
                "id": old.id,
                "version": 4,
                "description": old.description,
                "checks": checks,
                "provenance": "v4: per participant (lead and coworkers) in working hours and not double-booked",
            }
        )

    @staticmethod
    def _rubric_v3(key: str, coworkers: list[str], deadline: datetime, channel: str, office: str | None) -> Rubric:
        """Version 2, and per coworker rule 6's "who is coming": the decision post names them (version 3).

        Each name weighs 1, so a bigger meeting is more to announce, and like the announcement it counts only
        once everyone agreed (``needs``): naming people in a post about a time nobody was asked about earns nothing.
        """
        old = ScheduleWithCoworkers._rubric_v2(key, coworkers, deadline, channel, office)
        agreed = [f"agreed-{who}" for who in coworkers]
        checks: list[dict[str, Any]] = [c.model_dump(mode="json") for c in old.checks]
        at = next(i for i, c in enumerate(checks) if c["id"] == "announced") + 1
        checks[at:at] = [
            {
                "id": f"announced-{who}",
                "description": f"The decision post in ~{channel} names @{who} as coming.",
                "weight": 1,
                "fn": "post_in_channel",
                "params": {"channel": channel, "pattern": rf"\b{re.escape(key)}\b", "mention": who},
                "needs": agreed,
            }
            for who in coworkers
        ]
        return load_rubric(
            {
                "id": old.id,
                "version": 3,
                "description": old.description,
                "checks": checks,
                "provenance": "v3: the decision post names each coworker (rule 6), one check each",
            }
        )

    @staticmethod
    def _rubric_v2(key: str, coworkers: list[str], deadline: datetime, channel: str, office: str | None) -> Rubric:
        """Version 1's rules with the people split out: per coworker an invitation gate and an agreement check.

        Version 2 names who was not invited or not asked (one check each, instead of a share in one check);
        agreement keeps its weight of 3 across the coworkers. The room, the announcement and clean tool use count
        only once everyone agreed (``needs``): booking a time nobody was asked about, announcing it and claiming
        in chat that people agreed scored 0.45 under version 1, and earns nothing now.
        """
        old = ScheduleWithCoworkers._rubric_v1(key, coworkers, deadline, channel, office)
        checks: list[dict[str, Any]] = []
        for check in old.checks:
            data = check.model_dump(mode="json")
            if check.id == "invites":
                checks += [
                    {**data, "id": f"invite-{who}", "description": f"@{who} is invited.",
                     "params": {**data["params"], "attendees": [who]}}
                    for who in coworkers
                ]  # fmt: skip
            elif check.id == "agreed":
                checks += [
                    {**data, "id": f"agreed-{who}", "weight": 3 / len(coworkers),
                     "description": f"@{who} agreed to the booked time, or was escalated to their manager by rule 4.",
                     "params": {**data["params"], "attendees": [who]}}
                    for who in coworkers
                ]  # fmt: skip
            elif check.id in ("room", "announced", "no-tool-errors"):
                checks.append({**data, "needs": [f"agreed-{who}" for who in coworkers]})
            else:
                checks.append(data)
        return load_rubric(
            {
                "id": old.id,
                "version": 2,
                "description": old.description,
                "checks": checks,
                "provenance": "v2: invitations and agreement per coworker (dense); room, announcement, tool use "
                "need agreement",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Versions 1, 2 and 3 of the rubric, rebuilt from the instance's params for rescoring old traces.

        Version 1 scored invitations and agreement as shares of one check each, version 2 had no names in the
        decision post, version 3 judged hours and calendars only for the meeting as a whole.
        """
        builds = {1: ScheduleWithCoworkers._rubric_v1, 2: ScheduleWithCoworkers._rubric_v2}
        build = builds.get(version, ScheduleWithCoworkers._rubric_v3 if version == 3 else None)
        if build is None:
            return None
        p = instance.params
        deadline = datetime.fromisoformat(p["deadline"])
        return build(p["key"], list(p["coworkers"]), deadline, p["channel"], p["office"])

    @staticmethod
    def _rubric_v1(key: str, coworkers: list[str], deadline: datetime, channel: str, office: str | None) -> Rubric:
        """The rules of the prompt as checks: three gates, then scored agreement, room, announcement, tool use.

        Gates (``must``): the meeting is in everyone's hours, invites everyone, double-books nobody; a wrong
        booking is worth nothing however well the rest went. Every scored check needs that meeting too, so the
        no-op agent scores exactly 0. Agreement weighs most because it is the part that needs the coworkers.
        """
        title = rf"\b{re.escape(key)}\b"
        checks: list[dict[str, Any]] = [
            {
                "id": "in-working-hours",
                "description": f"One live meeting on {key} inside every participant's working hours, before "
                f"{deadline.isoformat()}.",
                "must": True,
                "fn": "meeting_in_working_hours",
                "params": {"title_pattern": title, "start_before": deadline.isoformat()},
            },
            {
                "id": "invites",
                "description": "Every coworker is invited.",
                "must": True,
                "fn": "meeting_attendees",
                "params": {"title_pattern": title, "attendees": coworkers},
            },
            {
                "id": "no-double-booking",
                "description": "Exactly one meeting; no participant or room is committed elsewhere then.",
                "must": True,
                "fn": "meeting_no_double_booking",
                "params": {"title_pattern": title},
            },
            {
                "id": "agreed",
                "description": "Each coworker agreed to the booked time, or was escalated to their manager by rule 4.",
                "weight": 3,
                "fn": "meeting_agreed",
                "params": {"title_pattern": title, "attendees": coworkers, "answer_minutes": ANSWER_MINUTES},
            },
            {
                "id": "announced",
                "description": f"The decision ({key} and the time) is posted in ~{channel}.",
                "weight": 1,
                "fn": "meeting_announced",
                "params": {"title_pattern": title, "channel": channel, "key": key},
            },
            {
                "id": "no-tool-errors",
                "description": "No call failed for a bad argument, a missing object or a permission (a room or "
                "slot conflict is a fair probe).",
                "weight": 0.5,
                "fn": "no_tool_errors",
                "params": {"codes": ["invalid_argument", "not_found", "forbidden", "unknown_tool"]},
            },
        ]
        if office is not None:
            checks.insert(
                4,
                {
                    "id": "room",
                    "description": f"The meeting has a room at the {office} office that holds everyone.",
                    "weight": 1,
                    "fn": "meeting_room",
                    "params": {"title_pattern": title, "location": office},
                },
            )
        return load_rubric(
            {
                "id": "schedule-with-coworkers",
                "version": 1,
                "description": "Agree a design review time with coworkers by the team's meeting rules and book it.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Follow the rules through the tools: directory for people, calendar for slots, DMs for answers."""
        Scheduler(env).run()


_LOCAL = re.compile(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) \(([A-Za-z_/+-]+)\)")
_YES = re.compile(r"\b(works for me|is fine with me|works)\b", re.I)
_NO = re.compile(r"\b(can't make|doesn't work|busy at)\b", re.I)
MAX_ROUNDS = 8


class Scheduler:
    """The oracle's state: who is asked about which slot, who answered what, who was escalated."""

    def __init__(self, env: AgentEnv) -> None:
        self.env = env
        p = env.prompt
        self.key = _must(re.search(r"design review of ([A-Z][A-Z0-9]*-\d+)", p)).group(1)
        head = p.split("Follow the team's", 1)[0]
        self.people = re.findall(r"@([a-z0-9][a-z0-9._-]*[a-z0-9])", head.split(" with ", 1)[1])
        self.deadline = datetime.fromisoformat(_must(re.search(r"starting before (\S+?)\. ", p)).group(1))
        stated = _must(re.search(r"It is .*?(\d{4}-\d\d-\d\d) (\d\d:\d\d) UTC", p))
        self.now = datetime.fromisoformat(f"{stated.group(1)}T{stated.group(2)}:00+00:00")
        self.channel = _must(re.search(r"decision in ~([a-z0-9-]+)", p)).group(1)
        office = re.search(r"meeting room at the ([A-Z][A-Za-z ]*?) office", p)
        self.office = office.group(1) if office else None
        self.hours: dict[str, WorkHours] = {}
        self.manager: dict[str, str] = {}
        self.dm: dict[str, str] = {}
        self.seen: dict[str, int] = {}
        self.escalated: set[str] = set()

    def _clock(self, at: str | None) -> None:
        if at:
            self.now = max(self.now, datetime.fromisoformat(at))

    def call(self, name: str, **arguments: Any) -> Any:
        """A tool call that also advances the oracle's lower bound of the clock from what it returns."""
        out = self.env.call(name, **arguments)
        self.now += timedelta(seconds=1)  # every call costs at least a second: a lower bound of the clock
        if isinstance(out, dict):
            self._clock(out.get("at") if isinstance(out.get("at"), str) else None)
        return out

    def learn(self) -> None:
        """Each coworker's working hours and manager, from the directory."""
        for u in self.people:
            prof = self.call("directory_get_profile", username=u)
            start, end = (int(x[:2]) * 60 + int(x[3:]) for x in prof["working_hours"].split("-"))
            flags = "".join("1" if d in prof["workdays"] else "0" for d in DAYS)
            self.hours[u] = WorkHours(prof["timezone"], start, end, flags)
            self.manager[u] = prof["manager"]

    def run(self) -> None:
        """Rounds of ask -> collect -> (re-propose | escalate) until a slot stands, then book and announce."""
        self.learn()
        rejected: set[str] = set()
        slot: str | None = None
        for _ in range(MAX_ROUNDS):
            slot = self._propose(rejected)
            if slot is None or self.env.done:
                break
            if self._ask_and_collect(slot):
                self._book(slot)
                break
            rejected.add(slot)
        if not self.env.done:
            self.env.call("submit", summary=f"design review of {self.key} booked at {slot}")

    def _propose(self, rejected: set[str]) -> str | None:
        """The first common free slot after everyone still asked has had their full answer time."""
        waiting = [u for u in self.people if u not in self.escalated] or self.people
        earliest = max(self.hours[u].add(self.now, ANSWER_MINUTES) for u in waiting) + timedelta(minutes=20)
        if earliest >= self.deadline:
            return None
        found = self.call(
            "calendar_find_free_slots",
            usernames=",".join(self.people),
            duration_minutes=DURATION,
            start=earliest.isoformat(),
            end=self.deadline.isoformat(),
            step_minutes=30,
            limit=50,
        )
        return next((s["start"] for s in found["slots"] if s["start"] not in rejected), None)

    def _ask_and_collect(self, slot: str) -> bool:
        """Ask everyone not escalated; True when nobody said no (escalating whoever refuses or stays silent)."""
        when = datetime.fromisoformat(slot)
        asked: dict[str, datetime] = {}
        for u in self.people:
            if u in self.escalated:
                continue
            msg = f"Hi, can you make the design review of {self.key} at {slot} ({DURATION} minutes)?"
            out = self.call("chat_direct_message", username=u, message=msg)
            self.dm[u] = out["channel"]
            self.seen.setdefault(u, out["id"])
            self.seen[u] = max(self.seen[u], out["id"])
            asked[u] = datetime.fromisoformat(out["at"])
        pending = dict(asked)
        while pending and not self.env.done:
            for u in sorted(pending):
                verdict = self._read(u, when)
                if verdict == "no":
                    return False
                if verdict == "yes":
                    del pending[u]
                elif verdict == "other" or self.now >= self.hours[u].add(pending[u], ANSWER_MINUTES):
                    self._escalate(u, slot)
                    del pending[u]
            if pending:
                self._wait(pending)
        return True

    def _read(self, u: str, when: datetime) -> str | None:
        """The newest verdict of ``u`` about ``when`` in their DM since the last read: yes, no, other or None."""
        posts = self.call("chat_read_channel", channel=self.dm[u], limit=30)["posts"]
        verdict: str | None = None
        for post in posts:
            if post["id"] <= self.seen[u] or post["author"] != u:
                continue
            self.seen[u] = post["id"]
            local = _LOCAL.search(post["message"])
            about = (
                datetime.fromisoformat(local.group(1)).replace(tzinfo=ZoneInfo(local.group(2))).astimezone(UTC)
                if local
                else None
            )
            if about is not None and about != when:
                continue  # an answer to an earlier proposal
            if _NO.search(post["message"]):
                verdict = "no"
            elif about is not None and _YES.search(post["message"]):
                verdict = verdict or "yes"
            else:
                verdict = verdict or "other"
        return verdict

    def _wait(self, pending: dict[str, datetime]) -> None:
        """Sleep until someone pending is at work (then in 20-minute steps), never past a silence deadline."""
        due = min(self.hours[u].add(t, ANSWER_MINUTES) for u, t in pending.items())
        opens = min(self.hours[u].next_open(self.now) for u in pending)
        target = max(opens + timedelta(minutes=15), self.now + timedelta(minutes=20))
        target = min(target, max(due, self.now + timedelta(minutes=1)))
        minutes = max(1, min(480, int((target - self.now).total_seconds() // 60) + 1))
        self.env.call("wait", minutes=minutes)
        self.now += timedelta(minutes=minutes)

    def _escalate(self, u: str, slot: str) -> None:
        msg = (
            f"Hi, I could not get an answer from @{u} about the design review of {self.key} at {slot}. "
            "I am going ahead with that time; please make sure they can join."
        )
        self.call("chat_direct_message", username=self.manager[u], message=msg)
        self.escalated.add(u)

    def _book(self, slot: str) -> None:
        end = (datetime.fromisoformat(slot) + timedelta(minutes=DURATION)).isoformat()
        rooms: list[str | None] = [None]
        if self.office is not None:
            found = self.call("calendar_list_rooms", location=self.office, min_capacity=len(self.people) + 1)
            rooms = [r["name"] for r in found["rooms"]] or [None]
        for room in rooms:
            try:
                self.call(
                    "calendar_create_event",
                    title=f"Design review {self.key}",
                    start=slot,
                    end=end,
                    attendees=",".join(self.people),
                    room=room,
                    description=f"Design review of {self.key}.",
                )
                break
            except ToolFailed as exc:
                if exc.code != "conflict":
                    raise
        who = " ".join(f"@{u}" for u in self.people)
        text = f"Decision: the design review of {self.key} is booked for {slot} ({DURATION} minutes) with {who}."
        self.call("chat_post", channel=self.channel, message=text)


def _must(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "the prompt names this"
    return m
