"""``sprint-plan-v0``: day one of a two-day story; a team lead plans next sprint within the team's capacity.

The story (``story = ("sprint-plan-v0", "sprint-execute-v0")``) is played as a campaign: today the lead writes
the plan, tomorrow (``sprint-execute-v0``, the next working morning on the same world) they act on it, and
tomorrow is graded against the plan that exists then, right or wrong.

Setup (raw statements, as the apps write): a future sprint of the team's project starting on the next weekday,
candidate tickets labelled ``candidate-<first day>`` with priorities and story points, the planning rules as a
document by the lead's manager, and, by difficulty, time off ("Out of office") and training days ("Training:
...") in members' calendars on sprint days (difficulty >= 1), and a candidate that is blocked (difficulty 3).
The rules:

- capacity: every member of the team (``directory_team_members``) gives 2 points for each sprint day that is
  one of their workdays; 0 on a day with an "Out of office" event, 1 on a day with a "Training:" event (the
  day in their own time zone);
- selection: candidates by priority (urgent, high, medium, low), then lowest ticket number; commit a ticket
  when its points fit in what capacity is left, else defer it and go on; a blocked candidate is deferred.

Difficulty adds candidates (5, 7, 9, 11), time off for members (0, 1, 2, 3 of them, as far as the team has
them) on one to three sprint days each, training days (0, 1, 2, 3 members, a day each) and a blocked candidate
that must be deferred whatever its priority (3).

The plan is a new text document with sections Capacity ("@username: N points" per member, "Total: N points"),
Committed and Deferred (a line per candidate, "KEY: N points"), shared with the manager. The rubric (version 2)
is one check per member's capacity, one for the total, two per candidate (in its section and no other; its story
points given), the share, and a gate allowing only the new document.
The oracle reads the team, hours and calendars through the tools and applies the rules; it never reads params.
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
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from scenarios.library.setup import NEW_DOCUMENT_CHANGES
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

STORY = ("sprint-plan-v0", "sprint-execute-v0")
CANDIDATES = (5, 7, 9, 11)
AWAY = (0, 1, 2, 3)
"""Members with time off on one to three sprint days, by difficulty."""
TRAINED = (0, 1, 2, 3)
"""Members with a training day (half capacity that day), by difficulty."""
PRIORITIES = ("urgent", "high", "medium", "low")
POINTS = (1, 2, 3, 5, 8, 13, 21)
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
OFF, TRAINING = "Out of office", "Training: "
RULES_NAME = "Sprint planning rules.odt"
TITLES = (
    "Retry the nightly export with backoff when the storage API throttles",
    "Show the last sync time on the account settings page",
    "Move the report scheduler off the deprecated cron library",
    "Add pagination to the audit log endpoint",
    "Cache the pricing table lookups for the checkout flow",
    "Alert when the queue backlog stays above 10k for 15 minutes",
    "Let admins export the member list as CSV",
    "Remove the legacy v1 webhook payloads",
    "Speed up the search index rebuild for large tenants",
    "Add an audit trail for permission changes",
    "Write the runbook for the failover drill",
    "Validate uploaded CSV headers before the import starts",
    "Fix the timezone shown in weekly digest emails",
)
RULES = """# How we plan a sprint

These are the rules every team lead follows when planning a sprint, so that plans are comparable across teams.

# Capacity

Every member of the team, as the directory lists the team, gives 2 points for each sprint day that is one of their
workdays. A day with an "Out of office" event of their own gives 0 points instead, and a day with a training of
their own ("Training: ..." in the title) gives 1 point. People invite their lead to these, so the lead sees them in
each member's calendar. Days are counted in each person's own time zone.

# Choosing tickets

Candidates are the project's tickets labelled candidate-<the sprint's first day>. Go through them by priority
(urgent, then high, medium, low) and, within a priority, lowest ticket number first. Commit a ticket when its
story points fit in the capacity that is left, otherwise defer it and carry on with the next one. A blocked ticket
is always deferred.

# The plan

Write the plan as a document with the sections Capacity (one line per member as "@username: N points", then
"Total: N points"), Committed and Deferred (every candidate by its key, in exactly one of the two), and share it
with your manager.
"""


@dataclass(frozen=True, kw_only=True)
class Team:
    """Who plans and where: the lead, the team, its project, department, channel and manager."""

    lead_id: int
    lead: str
    lead_name: str
    team_id: int
    team: str
    slug: str
    project_id: int
    project: str
    dept: str
    manager_id: int
    manager: str


def sprint_days(start: date) -> list[date]:
    """The five weekdays of a sprint starting on ``start`` (a weekday)."""
    days: list[date] = []
    d = start
    while len(days) < 5:
        if d.weekday() < 5:
            days.append(d)
        d += timedelta(days=1)
    return days


def next_weekday(day: date) -> date:
    """The first Monday-to-Friday date after ``day``."""
    d = day + timedelta(days=1)
    while d.weekday() >= 5:
        d += timedelta(days=1)
    return d


def plan_path(team: Team, start: date, suffix: str = "") -> str:
    """Where the plan of the sprint starting ``start`` lives."""
    return f"Shared/{team.dept}/{team.team} sprint plan {start.isoformat()}{suffix}.odt"


def sprint_name(start: date) -> str:
    """The sprint's name in the tickets app."""
    return f"Sprint {start.isoformat()}"


def candidate_label(start: date) -> str:
    """The label of the sprint's candidates (one per sprint: a campaign plans many sprints of one project)."""
    return f"candidate-{start.isoformat()}"


def expected_in_world(sql: Sql, team: Team, start: date) -> dict[str, Any]:
    """The right plan by the rules, read from the world as it is (members, their own events, the candidates).

    Day two uses it to write a coworker's plan when day one left none, so both days agree on what is right.
    """
    days = sprint_days(start)
    people = members(sql, team)
    lo = datetime(days[0].year, days[0].month, days[0].day, tzinfo=UTC) - timedelta(days=1)
    hi = datetime(days[-1].year, days[-1].month, days[-1].day, tzinfo=UTC) + timedelta(days=2)
    off: set[tuple[str, date]] = set()
    half: set[tuple[str, date]] = set()
    for _, user, zone, _, _, _ in people:
        rows = sql.all(
            "SELECT v.title, v.start_at FROM events v JOIN employees e ON e.id = v.organizer_id"
            " WHERE e.username = ? AND v.cancelled = ? AND v.start_at >= ? AND v.start_at < ? ORDER BY v.id",
            (user, False, lo, hi),
        )
        for title, at in rows:
            when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
            d = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(ZoneInfo(zone)).date()
            if title == OFF:
                off.add((user, d))
            elif str(title).startswith(TRAINING):
                half.add((user, d))
    caps = capacity(people, days, off, half)
    rows = sql.all(
        "SELECT t.key, t.priority, t.story_points, t.status FROM tickets t JOIN ticket_labels l ON l.ticket_id = t.id"
        " WHERE t.project_id = ? AND l.label = ? ORDER BY t.number",
        (team.project_id, candidate_label(start)),
    )
    candidates = [{"key": str(k), "priority": str(p), "points": int(n or 0), "status": str(st)} for k, p, n, st in rows]
    committed, deferred = choose(candidates, sum(caps.values()))
    return {"capacity": caps, "total": sum(caps.values()), "committed": committed, "deferred": deferred,
            "days": [d.isoformat() for d in days], "points": {c["key"]: c["points"] for c in candidates}}  # fmt: skip


def pick_team(sql: Sql, rng: np.random.Generator) -> Team:
    """A team lead with an active manager, a team channel, an active project and >= 2 active members."""
    rows = sql.all(
        "SELECT e.id, e.username, e.first_name || ' ' || e.last_name, t.id, t.name, t.slug, p.id, p.key, d.name,"
        " m.id, m.username FROM teams t JOIN employees e ON e.id = t.lead_id JOIN employees m ON m.id = e.manager_id"
        " JOIN departments d ON d.id = t.department_id JOIN projects p ON p.team_id = t.id"
        " JOIN channels c ON c.name = 'team-' || t.slug"
        " WHERE p.status = 'active' AND e.active = ? AND m.active = ?"
        " AND (SELECT count(*) FROM employees x WHERE x.team_id = t.id AND x.active = ?) >= 2 ORDER BY t.id, p.id",
        (True, True, True),
    )
    if not rows:
        raise ValueError("no team lead with a manager, a channel, an active project and 2+ members: world too small")
    r = rows[int(rng.integers(len(rows)))]
    return Team(
        lead_id=int(r[0]), lead=str(r[1]), lead_name=str(r[2]), team_id=int(r[3]), team=str(r[4]), slug=str(r[5]),
        project_id=int(r[6]), project=str(r[7]), dept=str(r[8]), manager_id=int(r[9]), manager=str(r[10]),
    )  # fmt: skip


def team_of_project(sql: Sql, project_id: int) -> Team | None:
    """The team owning ``project_id`` (as ``pick_team`` would describe it), or None."""
    r = sql.one(
        "SELECT e.id, e.username, e.first_name || ' ' || e.last_name, t.id, t.name, t.slug, p.id, p.key, d.name,"
        " m.id, m.username FROM projects p JOIN teams t ON t.id = p.team_id JOIN employees e ON e.id = t.lead_id"
        " JOIN employees m ON m.id = e.manager_id JOIN departments d ON d.id = t.department_id WHERE p.id = ?",
        (project_id,),
    )
    if r is None:
        return None
    return Team(
        lead_id=int(r[0]), lead=str(r[1]), lead_name=str(r[2]), team_id=int(r[3]), team=str(r[4]), slug=str(r[5]),
        project_id=int(r[6]), project=str(r[7]), dept=str(r[8]), manager_id=int(r[9]), manager=str(r[10]),
    )  # fmt: skip


def members(sql: Sql, team: Team) -> list[tuple[int, str, str, int, int, str]]:
    """(id, username, zone, work start, work end, workdays) of the team's active members, by username."""
    rows = sql.all(
        "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays FROM employees"
        " WHERE team_id = ? AND active = ? ORDER BY username",
        (team.team_id, True),
    )
    return [(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5])) for r in rows]


def _local(day: date, zone: str, minute: int) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone)) + timedelta(minutes=minute)


def capacity(
    people: list[tuple[int, str, str, int, int, str]], days: list[date], off: set[tuple[str, date]], half: set[Any]
) -> dict[str, int]:
    """Points per member by the rules: 2 a workday, 0 when out of office, 1 on a training day."""
    out: dict[str, int] = {}
    for _, user, _, _, _, flags in people:
        total = 0
        for d in days:
            if flags[d.weekday()] != "1":
                continue
            total += 0 if (user, d) in off else 1 if (user, d) in half else 2
        out[user] = total
    return out


def choose(candidates: list[dict[str, Any]], cap: int) -> tuple[list[str], list[str]]:
    """(committed keys, deferred keys) by the rules: priority, then number; greedy fit; blocked deferred."""
    order = sorted(candidates, key=lambda c: (PRIORITIES.index(c["priority"]), int(c["key"].rsplit("-", 1)[1])))
    left, committed, deferred = cap, [], []
    for c in order:
        if c["status"] != "blocked" and int(c["points"]) <= left:
            committed.append(c["key"])
            left -= int(c["points"])
        else:
            deferred.append(c["key"])
    return committed, deferred


def prepare(
    session: Session, clock: Clock, rng: np.random.Generator, team: Team, start: date, difficulty: int
) -> dict[str, Any]:
    """Write the sprint, the candidates, the calendar entries and the rules; returns the expected plan.

    Time off and training are the members' own events with the lead invited as optional (how people tell their
    lead; the lead declined, staying free), so the lead sees their titles; everyone else sees only busy blocks.
    """
    sql = Sql.of(session)
    now = clock.now()
    days = sprint_days(start)
    sql.insert(
        "sprints",
        {"project_id": team.project_id, "name": sprint_name(start), "start_date": days[0], "end_date": days[-1],
         "state": "future"},
    )  # fmt: skip
    people = members(sql, team)
    off: set[tuple[str, date]] = set()
    half: set[tuple[str, date]] = set()
    if AWAY[difficulty]:
        for k in rng.permutation(len(people))[: AWAY[difficulty]]:
            pid, user, zone, a, b, flags = people[int(k)]
            picked = {int(x) for x in rng.choice(5, size=int(rng.integers(1, 4)), replace=False)}
            for j in sorted(picked - ({0} if pid == team.lead_id else set())):  # the lead runs the kickoff on day 1
                off.add((user, days[j]))
                _event(sql, pid, team.lead_id, OFF, _local(days[j], zone, a), _local(days[j], zone, b), now)
    if TRAINED[difficulty]:
        for k in rng.permutation(len(people))[: TRAINED[difficulty]]:
            pid, user, zone, a, _, _ = people[int(k)]
            free = [d for d in days[1 if pid == team.lead_id else 0 :] if (user, d) not in off]
            d = free[int(rng.integers(len(free)))]
            half.add((user, d))
            title = TRAINING + "incident command course"
            _event(sql, pid, team.lead_id, title, _local(d, zone, a), _local(d, zone, a + 240), now)
    cap = sum(capacity(people, days, off, half).values())
    count = CANDIDATES[difficulty]
    weights = [POINTS[int(rng.integers(1, 5))] for _ in range(count)]
    target = cap * (1.3 + 0.15 * difficulty)
    titles = [TITLES[int(i)] for i in rng.permutation(len(TITLES))[:count]]
    for i, (w, title) in enumerate(zip(weights, titles, strict=True)):
        points = min(POINTS, key=lambda p: abs(p - w * target / sum(weights)))
        priority = PRIORITIES[int(rng.integers(len(PRIORITIES)))]
        status = "blocked" if difficulty >= 3 and i == 0 else "backlog"
        _ticket(sql, team, title, priority, points, status, start, now - timedelta(days=int(rng.integers(2, 12))))
    folder = f"Shared/{team.dept}"
    if (
        sql.one(
            "SELECT 1 FROM documents d JOIN doc_folders f ON f.id = d.folder_id WHERE d.name = ? AND f.name = ?",
            (RULES_NAME, team.dept),
        )
        is None
    ):
        setup.create_document(session, clock, team.manager_id, folder, RULES_NAME, RULES, now - timedelta(days=20))
    return expected_in_world(sql, team, start)


def _event(sql: Sql, who: int, lead: int, title: str, start: datetime, end: datetime, now: datetime) -> None:
    event = sql.insert(
        "events",
        {"organizer_id": who, "title": title, "description": "", "start_at": start.astimezone(UTC),
         "end_at": end.astimezone(UTC), "rrule": None, "until": None, "room_id": None, "cancelled": False,
         "created_at": now - timedelta(days=10)},
    )  # fmt: skip
    sql.insert("event_attendees", {"event_id": event, "employee_id": who, "rsvp": "accepted", "optional": False})
    if lead != who:
        # An FYI invitation, declined so the lead's own calendar stays free (declined invitations are not busy).
        sql.insert("event_attendees", {"event_id": event, "employee_id": lead, "rsvp": "declined", "optional": True})


def _ticket(
    sql: Sql, team: Team, title: str, priority: str, points: int, status: str, start: date, at: datetime
) -> str:
    """A candidate ticket reported by the lead, with its status rows; returns its key."""
    number = int(sql.scalar("SELECT next_ticket_number FROM projects WHERE id = ?", (team.project_id,)))
    sql.update("projects", team.project_id, {"next_ticket_number": (number, number + 1)})
    key = f"{team.project}-{number}"
    tid = sql.insert(
        "tickets",
        {"key": key, "project_id": team.project_id, "number": number, "type": "task", "title": title,
         "description": f"{title}. Estimated at {points} points in backlog grooming.", "status": status,
         "priority": priority, "assignee_id": None, "reporter_id": team.lead_id, "sprint_id": None,
         "story_points": points, "created_at": at, "updated_at": at, "resolved_at": None},
    )  # fmt: skip
    steps = [(None, "backlog")] + ([("backlog", "blocked")] if status == "blocked" else [])
    for k, (a, b) in enumerate(steps):
        sql.insert(
            "ticket_status_changes",
            {"ticket_id": tid, "from_status": a, "to_status": b, "actor_id": team.lead_id,
             "changed_at": at + timedelta(hours=k)},
        )  # fmt: skip
    sql.insert("ticket_labels", {"ticket_id": tid, "label": candidate_label(start)})
    return key


class SprintPlan:
    """The ``sprint-plan-v0`` family."""

    id = "sprint-plan-v0"
    description = "Day one of a campaign: team lead plans next sprint from calendars' capacity and the planning rules."
    world = WorldDefaults(employees=40, history_days=30)
    story: tuple[str, ...] = STORY

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick the team, write the sprint, candidates, calendars and rules; return the instance."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/sprint-plan")
        sql = Sql.of(session)
        team = pick_team(sql, rng)
        now = start_day(session, clock, team.lead_id)
        local = now.astimezone(
            ZoneInfo(str(sql.scalar("SELECT timezone FROM employees WHERE id = ?", (team.lead_id,))))
        )
        start = next_weekday(local.date())
        expected = prepare(session, clock, rng, team, start, difficulty)
        path = plan_path(team, start)
        days = expected["days"]
        prompt = (
            f"You are {team.lead_name} (@{team.lead}), lead of the {team.team} team. Plan {sprint_name(start)} of the "
            f"{team.project} project, which runs on the weekdays {days[0]} to {days[-1]}, by the planning rules in "
            f"Shared/{team.dept}/{RULES_NAME}: work out each team member's capacity from their calendars, then "
            f"choose among the {team.project} tickets labelled {candidate_label(start)}. "
            f"Write the plan as a new document {path} with "
            'the sections Capacity (one line per member as "@username: N points", then "Total: N points"), '
            'Committed and Deferred (every candidate in one of them, a line each as "KEY: N points" with its story '
            "points), and share it with your manager "
            f"@{team.manager}. Do not change anything else: tomorrow you will act on this plan. Call the submit "
            "tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=team.lead,
            rubric=self._rubric(path, expected, team.manager),  # v2; older_rubric rebuilds v1
            params={"document": path, "manager": team.manager, **expected},
            limits=Limits(max_turns=60 + 4 * len(expected["capacity"]), time_budget_s=8 * 3600),
            apps=("calendar", "directory", "docs", "tickets"),
            difficulty=difficulty,
        )

    @staticmethod
    def _rubric(path: str, expected: dict[str, Any], manager: str) -> Rubric:
        """Version 2: version 1's checks, and per candidate the plan gives its story points.

        Why: the manager reading the plan checks the committed points against the total capacity, which they
        can do only with each ticket's estimate beside it; and a plan that lists a ticket under the right
        section with the wrong estimate shows the arithmetic went wrong there. One item per candidate, in
        either section (where it belongs is the other check), "KEY: N points" as the prompt asks.
        """
        old = SprintPlan._rubric_v1(path, expected, manager)
        checks: list[dict[str, Any]] = [c.model_dump(mode="json") for c in old.checks]
        at = next(i for i, c in enumerate(checks) if c["id"] == "shared-with-manager")
        checks[at:at] = [
            {
                "id": f"points-{key}",
                "description": f"The plan gives {key} its {expected['points'][key]} story points.",
                "fn": "doc_section_contains",
                "params": {
                    "document": path,
                    "heading": r"^(Committed|Deferred)$",
                    "pattern": rf"\b{re.escape(key)}:\s*{expected['points'][key]}\s+points?\b",
                    "only_there": False,
                    "label": f"{key}'s points",
                },
            }  # fmt: skip
            for key in [*expected["committed"], *expected["deferred"]]
        ]
        return load_rubric(
            {
                "id": old.id,
                "version": 2,
                "description": old.description,
                "checks": checks,
                "provenance": "v2: per candidate its story points in the plan",
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Version 1 (no points per candidate), for rescoring old traces."""
        if version != 1 or instance.rubric.id != "sprint-plan":  # a variant's rubric has its own history
            return None
        p = dict(instance.params)
        return SprintPlan._rubric_v1(str(p["document"]), p, str(p["manager"]))

    @staticmethod
    def _rubric_v1(path: str, expected: dict[str, Any], manager: str) -> Rubric:
        """One check per member's capacity, the total, one per candidate's section, the share, a gate."""
        checks: list[dict[str, Any]] = [
            {
                "id": f"capacity-{user}",
                "description": f"The Capacity section gives @{user} {points} points.",
                "fn": "doc_section_contains",
                "params": {
                    "document": path,
                    "heading": r"^Capacity$",
                    "pattern": rf"@{re.escape(user)}:\s*{points}\s+points?\b",
                    "only_there": False,
                    "label": f"@{user}'s capacity",
                },
            }  # fmt: skip
            for user, points in sorted(expected["capacity"].items())
        ]
        checks.append(
            {
                "id": "capacity-total",
                "description": f"The Capacity section gives the total, {expected['total']} points.",
                "fn": "doc_section_contains",
                "params": {
                    "document": path,
                    "heading": r"^Capacity$",
                    "pattern": rf"Total:\s*{expected['total']}\s+points?\b",
                    "only_there": False,
                    "label": "total capacity",
                },
            }  # fmt: skip
        )
        for section, keys in (("Committed", expected["committed"]), ("Deferred", expected["deferred"])):
            checks += [
                {
                    "id": f"ticket-{key}",
                    "description": f"{key} is listed under {section} and nowhere else.",
                    "fn": "doc_section_contains",
                    "params": {
                        "document": path,
                        "heading": rf"^{section}$",
                        "pattern": rf"\b{re.escape(key)}\b",
                        "label": key,
                    },
                }  # fmt: skip
                for key in keys
            ]
        checks += [
            {
                "id": "shared-with-manager",
                "description": f"The plan is shared with @{manager} (view or more).",
                "fn": "doc_shared_with",
                "params": {"document": path, "username": manager, "permission": "view"},
            },
            {
                "id": "no-collateral",
                "description": "Only the new plan, its versions and its shares changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": NEW_DOCUMENT_CHANGES},
            },
        ]
        return load_rubric(
            {
                "id": "sprint-plan",
                "version": 1,
                "description": "Capacity per member from calendars, candidates committed greedily by the rules.",
                "checks": checks,
            }
        )

    def oracle(self, env: AgentEnv) -> None:
        """Team from the directory, time off from calendars, candidates from tickets; the rules; the document."""
        p = env.prompt
        team = _must(re.search(r"lead of the (.+?) team\. ", p)).group(1)
        project = _must(re.search(r" of the ([A-Z][A-Z0-9]*) project", p)).group(1)
        first, last = _must(re.search(r"weekdays (\S+) to (\S+), by", p)).groups()
        path = _must(re.search(r"new document (Shared/.+?\.odt) with", p)).group(1)
        manager = _must(re.search(r"with your manager @(\S+)\. ", p)).group(1)
        days = sprint_days(date.fromisoformat(first))
        assert days[-1].isoformat() == last
        caps = oracle_capacity(env, team, days)
        label = _must(re.search(r"tickets labelled (candidate-\S+?)\. ", p)).group(1)
        found = env.call("tickets_search", project=project, label=label, limit=100)["tickets"]
        candidates = [
            {"key": t["key"], "priority": t["priority"], "status": t["status"],
             "points": env.call("tickets_get", key=t["key"])["story_points"]}
            for t in found
        ]  # fmt: skip
        committed, deferred = choose(candidates, sum(caps.values()))
        text = plan_text(caps, committed, deferred, {c["key"]: int(c["points"]) for c in candidates})
        folder, name = path.rsplit("/", 1)
        made = env.call("docs_create", name=name, folder=folder, text=text)
        env.call("docs_share", document=made["path"], username=manager, permission="view")
        env.call("submit", summary=self._summary(caps, committed, deferred))

    def _summary(self, caps: dict[str, int], committed: list[str], deferred: list[str]) -> str:
        """The submit summary (an impossible variant says why nothing fits)."""
        return f"sprint plan written: {len(committed)} committed, {len(deferred)} deferred"


def oracle_capacity(env: AgentEnv, team: str, days: list[date]) -> dict[str, int]:
    """Each member's points from the directory (zone, workdays) and their calendar over the sprint."""
    people = env.call("directory_team_members", team=team)["members"]
    start = datetime(days[0].year, days[0].month, days[0].day, tzinfo=UTC) - timedelta(days=1)
    end = datetime(days[-1].year, days[-1].month, days[-1].day, tzinfo=UTC) + timedelta(days=2)
    caps: dict[str, int] = {}
    for person in sorted(people, key=lambda m: m["username"]):
        user = person["username"]
        prof = env.call("directory_get_profile", username=user)
        zone = ZoneInfo(prof["timezone"])
        events = env.call("calendar_list_events", start=start.isoformat(), end=end.isoformat(), username=user)
        off: set[Any] = set()
        half: set[Any] = set()
        for ev in events["events"]:
            d = datetime.fromisoformat(ev["start"]).astimezone(zone).date()
            if ev.get("organizer") != user:
                continue  # someone else's time off the member is invited to
            if ev["title"] == OFF:
                off.add((user, d))
            elif ev["title"].startswith(TRAINING):
                half.add((user, d))
        flags = "".join("1" if day in prof["workdays"] else "0" for day in DAYS)
        caps.update(capacity([(0, user, prof["timezone"], 0, 0, flags)], days, off, half))
    return caps


def plan_text(
    caps: dict[str, int], committed: list[str], deferred: list[str], points: dict[str, int] | None = None
) -> str:
    """The plan document's text (headings, one line per member or ticket, a ticket with its points if known)."""
    lines = [f"@{u}: {n} points" for u, n in sorted(caps.items())] + [f"Total: {sum(caps.values())} points"]
    known = points or {}

    def listed(keys: list[str]) -> str:
        return "\n\n".join(f"{k}: {known[k]} points" if k in known else k for k in keys) or "Nothing."

    return (
        "# Capacity\n\n" + "\n\n".join(lines) + "\n\n# Committed\n\n" + listed(committed)
        + "\n\n# Deferred\n\n" + listed(deferred)
    )  # fmt: skip


def _must(m: re.Match[str] | None) -> re.Match[str]:
    assert m is not None, "the prompt names this"
    return m
