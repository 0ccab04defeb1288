"""``sprint-execute-v0``: day two of the sprint story; the lead acts on the sprint plan found in the world.

In a campaign after ``sprint-plan-v0`` the task is the newest future sprint ("Sprint YYYY-MM-DD") whose
candidates still wait, and the plan is the document the lead wrote yesterday at the path the rules name: its
Committed section, right or wrong, is what today is graded against (a day-one mistake costs day one, and day
two is judged on acting faithfully on what was decided). When there is no such sprint (played alone), setup
prepares one exactly as day one would (``sprint_plan.prepare``); when there is no usable plan (no document,
or none of the candidates under Committed), a teammate writes the plan by the rules (``expected_in_world``)
and shares it with the lead, as a coworker covering for a lead who was out would. So the family also works
standalone, and its difficulty is day one's (more candidates, time off, training, a blocked one).

Difficulty is day one's when setup prepares the sprint (5, 7, 9, 11 candidates; time off, training, a blocked
candidate), and overnight people from other teams start 0, 1, 2, 4 committed tickets (assigned to themselves,
moved to in progress, a comment saying why): those go into the sprint but stay in progress, and their assignees
are invited to the kickoff; in a campaign the plan written yesterday decides how much else there is to do.

The work: every committed ticket into the sprint, to ``todo`` from the backlog (started work stays in
progress); every other candidate left as it is; a kickoff post in the team channel naming each committed key; a
30-minute "<sprint> kickoff" meeting on the sprint's first day (today, when it has begun) inviting the whole
team and every outside assignee of a committed ticket. The rubric (version 2) is two checks per committed
ticket (its sprint; its status), one per deferred ticket (untouched, counted only once the kickoff is booked),
one per key in the kickoff post, the meeting on the day, its length, one per teammate and per outside assignee
invited, and a gate on what may change. The oracle reads the
plan, the tickets and the team through the tools; it never reads params. Its steps (``read_prompt``,
``move_to_sprint``, ``book_kickoff``) are shared with the cancelled variant.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from mcp_tools.base import Actor, ToolContext
from mcp_tools.docs import service as docs
from mcp_tools.errors import AppError
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from scenarios.library.sprint_plan import (
    STORY,
    Team,
    candidate_label,
    expected_in_world,
    members,
    next_weekday,
    pick_team,
    plan_path,
    plan_text,
    prepare,
    sprint_name,
    team_of_project,
)
from worlds.clock import Clock, FixedClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

KICKOFF_MINUTES = 30
STARTED = (0, 1, 2, 4)
"""Committed tickets someone from another team picked up overnight (assigned, in progress), by difficulty."""
WHY_EARLY = (
    "our release depends on it, so I picked it up last night to get ahead",
    "we need this for our own migration and had a free evening, so I started on it",
    "it blocks a customer fix on our side; I've started and will keep going in your sprint",
)
"""What the engineer from another team says in the comment on the ticket they started."""
_SPRINT = re.compile(r"^Sprint (\d{4}-\d\d-\d\d)$")


class SprintExecute:
    """The ``sprint-execute-v0`` family."""

    id = "sprint-execute-v0"
    description = "Day two of a campaign: team lead acts on yesterday's sprint plan (sprint, kickoff post, meeting)."
    world = WorldDefaults(employees=40, history_days=30)
    story: tuple[str, ...] = STORY

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Find yesterday's sprint and plan (or set both up), return the instance graded against that plan."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/sprint-execute")
        sql = Sql.of(session)
        found = _pending_sprint(sql)
        if found is not None:
            team, start, sprint_id = found
            now = start_day(session, clock, team.lead_id)
        else:
            team = pick_team(sql, rng)
            now = start_day(session, clock, team.lead_id)
            today = self._local(sql, team, now).date()
            start = today if today.weekday() < 5 else next_weekday(today)
            prepare(session, clock, rng, team, start, difficulty)
            sprint_id = int(sql.scalar("SELECT max(id) FROM sprints WHERE project_id = ?", (team.project_id,)))
        label = candidate_label(start)
        candidates = [
            str(k)
            for (k,) in sql.all(
                "SELECT t.key FROM tickets t JOIN ticket_labels l ON l.ticket_id = t.id"
                " WHERE t.project_id = ? AND l.label = ? ORDER BY t.number",
                (team.project_id, label),
            )
        ]
        path = plan_path(team, start)
        committed = self._committed(session, team, path, candidates, now)
        author = team.lead
        if not committed:
            path, author = self._coworker_plan(session, team, start, now)
            committed = self._committed(session, team, path, candidates, now)
        deferred = [k for k in candidates if k not in committed]
        started = _start_early(session, seeds, team, committed, now, STARTED[difficulty])
        people = [m[1] for m in members(sql, team)]
        day = max(self._local(sql, team, now).date(), start)
        zone = ZoneInfo(str(sql.scalar("SELECT timezone FROM employees WHERE id = ?", (team.lead_id,))))
        lo = datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)
        statuses = {
            str(k): str(s)
            for k, s in sql.all(
                "SELECT t.key, t.status FROM tickets t JOIN ticket_labels l ON l.ticket_id = t.id"
                " WHERE t.project_id = ? AND l.label = ? ORDER BY t.number",
                (team.project_id, label),
            )
        }
        name = sprint_name(start)
        by = "" if author == team.lead else f", written by @{author} while you were out"
        prompt = (
            f"You are {team.lead_name} (@{team.lead}), lead of the {team.team} team. {name} of the {team.project} "
            f"project starts on {start.isoformat()}. Act on its plan, the document {path}{by}: put every ticket the "
            f"plan lists under Committed into the sprint {name} and move each one still in the backlog to todo "
            f"(work someone already started stays in progress); leave every other ticket labelled {label} as it "
            f"is; post the sprint kickoff in ~team-{team.slug} naming every committed ticket by its key; and book "
            f'a {KICKOFF_MINUTES}-minute meeting titled "{name} kickoff" on {day.isoformat()} (your time zone, '
            f"{zone.key}) inviting everyone in the team as the directory lists it and anyone outside the team "
            "assigned a committed ticket. Do not change anything else. Call the submit tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=team.lead,
            rubric=self._rubric_v2(
                team.lead,
                sprint_id,
                {k: "in_progress" if k in started else "todo" for k in committed},
                {k: statuses[k] for k in deferred},
                f"team-{team.slug}",
                name,
                people,
                (lo, lo + timedelta(days=1)),
                sorted(set(started.values())),
            ),  # fmt: skip
            params={
                "plan": path,
                "plan_author": author,
                "sprint": name,
                "sprint_id": sprint_id,
                "committed": committed,
                "deferred": deferred,
                "started": started,
                "channel": f"team-{team.slug}",
                "team": people,
                "kickoff_day": [lo.isoformat(), (lo + timedelta(days=1)).isoformat()],
            },
            limits=Limits(max_turns=40 + 4 * len(candidates), time_budget_s=8 * 3600),
            apps=("calendar", "chat", "directory", "docs", "tickets"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _local(sql: Sql, team: Team, now: datetime) -> datetime:
        zone = str(sql.scalar("SELECT timezone FROM employees WHERE id = ?", (team.lead_id,)))
        return now.astimezone(ZoneInfo(zone))

    @staticmethod
    def _committed(session: Session, team: Team, path: str, candidates: list[str], now: datetime) -> list[str]:
        """The candidates the plan at ``path`` lists under Committed, in its order (read as the lead would)."""
        ctx = ToolContext(session=session, actor=Actor.load(session, team.lead_id), clock=FixedClock(now))
        try:
            section = docs.read(ctx, path, "Committed")
        except AppError:
            return []
        text = "\n".join(p for s in section["sections"] for p in [s["heading"] or "", *s["paragraphs"]])
        keys = re.findall(rf"\b{re.escape(team.project)}-\d+\b", text)
        return [k for k in dict.fromkeys(keys) if k in candidates]

    @staticmethod
    def _coworker_plan(session: Session, team: Team, start: date, now: datetime) -> tuple[str, str]:
        """A teammate writes the plan by the rules and shares it with the lead; returns (path, author)."""
        sql = Sql.of(session)
        mates = [m for m in members(sql, team) if m[0] != team.lead_id]
        author_id, author = (mates[0][0], mates[0][1]) if mates else (team.manager_id, team.manager)
        expected = expected_in_world(sql, team, start)
        path = plan_path(team, start)
        folder, name = path.rsplit("/", 1)
        exists = sql.one(
            "SELECT 1 FROM documents d JOIN doc_folders f ON f.id = d.folder_id WHERE d.name = ? AND f.name = ?",
            (name, team.dept),
        )
        if exists is not None:  # the lead's own plan is there but commits none of the candidates
            path = plan_path(team, start, f" by {author}")
            name = path.rsplit("/", 1)[1]
        text = plan_text(expected["capacity"], expected["committed"], expected["deferred"])
        made = setup.create_document(session, FixedClock(now), author_id, folder, name, text, now - timedelta(hours=14))
        setup.share(sql, int(made["id"]), team.lead_id, "edit")
        return path, author

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric_v2(
        lead: str,
        sprint_id: int,
        committed: dict[str, str],
        deferred: dict[str, str],
        channel: str,
        name: str,
        people: list[str],
        window: tuple[datetime, datetime],
        outsiders: list[str],
    ) -> Rubric:
        """Version 2: each committed ticket's sprint and status apart, the kickoff's length and each invitee.

        Why: version 1 judged "in the sprint and in todo" as one check per ticket and "the meeting, inviting
        the whole team" as one; a lead who forgot the sprint field but moved every ticket, or who left one
        teammate off the invitation, read as having done none of it. Here a ticket's sprint and its status are
        two items, read from the ticket as it ends (``ticket_field_equals``: a step decides them from the
        ticket's row, without a query; a ticket started overnight was in progress before the episode, so its
        "still in progress" counts once the ticket is in the sprint), the kickoff is booked on the day (one
        check), lasts the asked 30 minutes, and invites each teammate (one check each, the lead organising it);
        the deferred tickets still count only once the kickoff is booked. The same keys in the post, the same
        outside assignees, the same gate.
        """
        old = SprintExecute._rubric(sprint_id, committed, deferred, channel, name, people, window, outsiders)
        by_id = {c.id: c.model_dump(mode="json") for c in old.checks}
        meeting = dict(by_id["kickoff-meeting"]["params"])
        meeting.pop("attendees")
        title = meeting["title_pattern"]
        checks: list[dict[str, Any]] = []
        for key, status in committed.items():
            checks += [
                {"id": f"sprint-{key}", "description": f"{key} is in {name}.", "fn": "ticket_field_equals",
                 "params": {"key": key, "field": "sprint", "value": name}},
                {"id": f"status-{key}", "description": f"{key} is in todo.", "fn": "ticket_field_equals",
                 "params": {"key": key, "field": "status", "value": status}}
                if status == "todo" else
                {"id": f"status-{key}", "description": f"{key}, started overnight, is still in progress in the sprint.",
                 "fn": "ticket_field_equals", "needs": [f"sprint-{key}"],
                 "params": {"key": key, "field": "status", "value": status}},
            ]  # fmt: skip
        checks += [by_id[f"kickoff-{key}"] for key in committed]
        checks += [
            {"id": "kickoff-meeting", "description": f'A "{name} kickoff" is booked on the day.',
             "fn": "event_exists", "params": meeting},
            {"id": "kickoff-length", "description": f"The kickoff lasts {KICKOFF_MINUTES} minutes.",
             "fn": "meeting_length", "params": {"title_pattern": title, "minutes": KICKOFF_MINUTES},
             "needs": ["kickoff-meeting"]},
        ]  # fmt: skip
        checks += [
            {"id": f"kickoff-team-{user}", "description": f"@{user}, on the team, is invited to the kickoff.",
             "fn": "event_exists", "params": {**meeting, "attendees": [user]}}
            for user in people
            if user != lead
        ]  # fmt: skip
        checks += [by_id[f"kickoff-invites-{user}"] for user in outsiders]
        checks += [by_id[f"deferred-{key}"] for key in deferred]
        checks.append(by_id["no-collateral"])
        return load_rubric(
            {
                "id": "sprint-execute",
                "version": 2,
                "description": old.description,
                "checks": checks,
                "provenance": "v2: per ticket its sprint and its status; the kickoff's length and each invitee",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (sprint and status together, the whole team invited as one check), for rescoring old traces."""
        if version != 1 or instance.rubric.id != "sprint-execute":  # a variant's rubric has its own history
            return None
        p = instance.params
        lo, hi = (datetime.fromisoformat(x) for x in p["kickoff_day"])
        started = {str(k): str(u) for k, u in p["started"].items()}
        where: dict[str, dict[str, Any]] = {}  # each row check's row, by check id
        for c in instance.rubric.checks:
            row = c.params.get("where")
            if isinstance(row, dict):
                where[c.id] = row
        deferred = {k: str(where[f"deferred-{k}"]["status"]) for k in p["deferred"]}
        return SprintExecute._rubric(
            int(p["sprint_id"]), {k: "in_progress" if k in started else "todo" for k in p["committed"]}, deferred,
            p["channel"], p["sprint"], list(p["team"]), (lo, hi), sorted(set(started.values())),
        )  # fmt: skip

    @staticmethod
    def _rubric(
        sprint_id: int,
        committed: dict[str, str],
        deferred: dict[str, str],
        channel: str,
        name: str,
        people: list[str],
        window: tuple[datetime, datetime],
        outsiders: list[str],
    ) -> Rubric:
        """Per committed ticket its sprint, status and key in the kickoff; per deferred one, untouched.

        ``committed`` maps each key to the status it must end in (todo, or in progress when someone started it);
        each outsider (assigned a committed ticket, not in the team) gets a check of their own for the invite.
        """
        checks: list[dict[str, Any]] = [
            {
                "id": f"sprint-{key}",
                "description": f"{key} is in {name} and {'still in progress' if status != 'todo' else 'in todo'}.",
                "fn": "row_exists",
                "params": {"table": "tickets", "where": {"key": key, "sprint_id": sprint_id, "status": status}},
            }
            for key, status in committed.items()
        ]
        checks += [
            {
                "id": f"kickoff-{key}",
                "description": f"The kickoff post in ~{channel} names {key}.",
                "fn": "post_in_channel",
                "params": {"channel": channel, "pattern": rf"\b{re.escape(key)}\b"},
            }
            for key in committed
        ]
        meeting = {
            "title_pattern": rf"{re.escape(name)} kickoff",
            "start_after": window[0].isoformat(),
            "start_before": window[1].isoformat(),
        }
        checks.append(
            {
                "id": "kickoff-meeting",
                "description": f'A {KICKOFF_MINUTES}-minute "{name} kickoff" on the day, inviting the whole team.',
                "fn": "event_exists",
                "params": {**meeting, "attendees": people},
            }
        )
        checks += [
            {
                "id": f"kickoff-invites-{user}",
                "description": f"@{user}, outside the team but assigned a committed ticket, is invited to the kickoff.",
                "fn": "event_exists",
                "params": {**meeting, "attendees": [user]},
            }
            for user in outsiders
        ]
        checks += [
            {
                "id": f"deferred-{key}",
                "description": f"{key} (deferred) stays out of the sprint, {status} as it was.",
                "fn": "row_exists",
                "params": {
                    "table": "tickets",
                    "where": {"key": key, "sprint_id": None, "status": status},
                    "scope": "any",
                },
                "needs": ["kickoff-meeting"],
            }  # fmt: skip
            for key, status in deferred.items()
        ]
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only the committed tickets, the kickoff post and the meeting changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "tickets", "fields": ["sprint_id", "status", "updated_at"], "keys": list(committed)},
                        {"table": "ticket_status_changes", "ops": ["insert"]},
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "channel_members", "ops": ["insert", "update"]},
                        {"table": "events", "ops": ["insert", "update"]},
                        {"table": "event_attendees", "ops": ["insert", "update"]},
                    ]
                },
            }
        )
        return load_rubric(
            {
                "id": "sprint-execute",
                "version": 1,
                "description": "Yesterday's committed tickets into the sprint, the kickoff posted and booked.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the plan's Committed section, move those tickets, post the kickoff, book the meeting."""
        ask = read_prompt(env.prompt)
        plan = env.call("docs_read", document=ask["path"], heading="Committed")
        text = "\n".join(q for s in plan["sections"] for q in s["paragraphs"])
        committed = list(dict.fromkeys(re.findall(rf"\b{re.escape(ask['project'])}-\d+\b", text)))
        assignees = [move_to_sprint(env, key, ask["sprint"]) for key in committed]
        name = ask["sprint"]
        env.call(
            "chat_post", channel=ask["channel"], message=f"{name} kicks off today. Committed: {', '.join(committed)}."
        )
        book_kickoff(env, ask, committed, assignees)
        env.call("submit", summary=f"{name}: {len(committed)} tickets in the sprint, kickoff posted and booked")


def read_prompt(prompt: str) -> dict[str, str]:
    """What the day-two prompt names: team, sprint, project, plan path, channel, kickoff day and time zone.

    Both this family's oracle and its cancelled variant's read the task from the prompt alone (never params).
    """
    day, zone = _must(re.search(r"on (\d{4}-\d\d-\d\d) \(your time zone, (\S+)\)", prompt)).groups()
    return {
        "team": _must(re.search(r"lead of the (.+?) team\. ", prompt)).group(1),
        "sprint": _must(re.search(r"(Sprint \d{4}-\d\d-\d\d) of the", prompt)).group(1),
        "project": _must(re.search(r" of the ([A-Z][A-Z0-9]*) project", prompt)).group(1),
        "path": _must(re.search(r"the document (Shared/.+?\.odt)", prompt)).group(1),
        "channel": _must(re.search(r"in ~(team-[a-z0-9-]+) naming", prompt)).group(1),
        "day": day,
        "zone": zone,
    }


def move_to_sprint(env: AgentEnv, key: str, sprint: str) -> str | None:
    """Put ``key`` into ``sprint``, to todo only from the backlog (started work stays); returns its assignee."""
    ticket = env.call("tickets_get", key=key)
    env.call("tickets_set_sprint", key=key, sprint=sprint)
    if ticket["status"] == "backlog":
        env.call("tickets_transition", key=key, status="todo")
    return ticket.get("assignee") or None


def book_kickoff(env: AgentEnv, ask: dict[str, str], committed: list[str], assignees: list[str | None]) -> None:
    """Book the kickoff on the day for the team and every outside assignee, at the first time all are free.

    When there is no such time (someone out all day), the first time the team is free, then the lead.
    """
    people = [m["username"] for m in env.call("directory_team_members", team=ask["team"])["members"]]
    outside = sorted({u for u in assignees if u and u not in people and u != env.actor})
    local = datetime.fromisoformat(ask["day"]).replace(tzinfo=ZoneInfo(ask["zone"]))
    everyone = people if env.actor in people else [env.actor, *people]
    slots: list[dict[str, Any]] = []
    for who in ([*everyone, *outside], everyone, [env.actor]):
        slots = env.call(
            "calendar_find_free_slots", usernames=",".join(who), duration_minutes=KICKOFF_MINUTES,
            start=local.astimezone(UTC).isoformat(), end=(local + timedelta(days=1)).astimezone(UTC).isoformat(),
            step_minutes=30, limit=5,
        )["slots"]  # fmt: skip
        if slots:
            break
    start = datetime.fromisoformat(slots[0]["start"])
    env.call(
        "calendar_create_event", title=f"{ask['sprint']} kickoff", start=start.isoformat(),
        end=(start + timedelta(minutes=KICKOFF_MINUTES)).isoformat(),
        attendees=",".join([*(u for u in people if u != env.actor), *outside]),
        description=f"Kickoff of {ask['sprint']}: {', '.join(committed)}.",
    )  # fmt: skip


def _start_early(
    session: Session, seeds: Seeds, team: Team, committed: list[str], now: datetime, count: int
) -> dict[str, str]:
    """Overnight, engineers from other teams pick up ``count`` committed tickets; returns key -> username.

    Each takes the ticket (assignee), moves it through todo to in progress and says why in a comment, as
    people who need a change on their side do. For the lead it is more to handle: those tickets go into the
    sprint but must not be moved back to todo, and their assignees belong at the kickoff.
    """
    if not count or not committed:
        return {}
    sql = Sql.of(session)
    rng = seeds.rng("scenario/sprint-execute/started")
    # People on another team, those of the same department first (the ones who need this team's changes).
    rows = sql.all(
        "SELECT e.id, e.username, e.department_id = t.department_id FROM employees e JOIN teams t ON t.id = ?"
        " WHERE e.active = ? AND e.team_id IS NOT NULL AND e.team_id <> t.id AND e.id <> ? ORDER BY e.id",
        (team.team_id, True, team.manager_id),
    )
    near = [(int(i), str(u)) for i, u, same in rows if same]
    others = near if len(near) >= count else [(int(i), str(u)) for i, u, _ in rows]
    picked = [committed[int(i)] for i in sorted(rng.permutation(len(committed))[:count])]
    who = [others[int(i)] for i in rng.permutation(len(others))[: len(picked)]]
    started: dict[str, str] = {}
    for k, (key, (pid, user)) in enumerate(zip(picked, who, strict=False)):
        row = sql.one("SELECT id, status, updated_at, assignee_id FROM tickets WHERE key = ?", (key,))
        if row is None or str(row[1]) != "backlog":
            continue
        at = now - timedelta(hours=10 - k)
        tid = int(row[0])
        for j, (a, b) in enumerate((("backlog", "todo"), ("todo", "in_progress"))):
            sql.insert(
                "ticket_status_changes",
                {"ticket_id": tid, "from_status": a, "to_status": b, "actor_id": pid,
                 "changed_at": at + timedelta(minutes=j)},
            )  # fmt: skip
        sql.update(
            "tickets", tid,
            {"status": ("backlog", "in_progress"), "assignee_id": (row[3], pid), "updated_at": (row[2], at)},
        )  # fmt: skip
        body = f"Taking this one: {WHY_EARLY[int(rng.integers(len(WHY_EARLY)))]}."
        sql.insert("ticket_comments", {"ticket_id": tid, "author_id": pid, "created_at": at, "body": body})
        started[key] = user
    session.flush()
    return started


def _pending_sprint(sql: Sql) -> tuple[Team, date, int] | None:
    """The newest future sprint named by date that holds no ticket yet and whose candidates wait, with its team.

    A sprint some ticket is already in was acted on (a campaign that played day two before keeps it): its
    deferred candidates stay out of every sprint by design, so they alone do not make it pending.
    """
    for sid, project, sprint in sql.all(
        "SELECT id, project_id, name FROM sprints WHERE state = ? ORDER BY id DESC", ("future",)
    ):
        m = _SPRINT.match(str(sprint))
        if m is None:
            continue
        start = date.fromisoformat(m.group(1))
        if sql.one("SELECT 1 FROM tickets WHERE sprint_id = ?", (sid,)) is not None:
            continue
        waiting = sql.one(
            "SELECT 1 FROM tickets t JOIN ticket_labels l ON l.ticket_id = t.id"
            " WHERE t.project_id = ? AND l.label = ? AND t.sprint_id IS NULL",
            (project, candidate_label(start)),
        )
        team = team_of_project(sql, int(project)) if waiting else None
        if team is not None:
            return team, start, int(sid)
    return None


def _must(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "the prompt names this"
    return m
