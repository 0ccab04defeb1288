"""``triage-tickets-v0``: a team lead triages the new tickets of a backlog by posted routing rules.

Setup: the lead's manager (or the lead) posts numbered routing rules in the team channel and pins them
("first matching rule wins": keywords -> priority and assignee; the critical rule also asks for the ticket
key in ~incidents), and new tickets arrive in the project's backlog with priority ``none`` and no assignee.
The agent must set priority and assignee on each by the rules and post every critical ticket's key in
~incidents. Difficulty 0..3 adds tickets (3, 5, 8, 12) and traps, each something a careless agent would get
wrong while a careful one can settle it from what the tools show:

* 1+: ambiguous tickets whose title names a later rule's keyword and whose description an earlier one's
  (first matching rule wins), and an already-triaged look-alike in the same backlog that must stay as is;
* 2+: a second critical ticket, an older rules post with other assignees (marked superseded by a thread
  reply and by the new post's wording), and untriaged look-alikes in another team's backlog;
* 3: near-miss tickets whose words belong to no rule (they fall to the catch-all).

The expected answer is computed from the rules by ``route`` and kept in ``params``; it is never written to a
table. The oracle reads the rules and the tickets through the tools and applies the same routing itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

#: Keyword groups a rule can route on. ``outage`` is always the critical rule; the others are drawn.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "payments": ("payment", "checkout", "refund", "invoice"),
    "outage": ("crash", "outage", "data loss", "returns 500"),
    "ui": ("typo", "misaligned", "cosmetic", "wrong colour"),
    "performance": ("slow", "latency", "timeout", "memory leak"),
    "security": ("password", "token", "permission", "login"),
    "docs": ("documentation", "readme", "docs page"),
}
SUBJECTS = ("the dashboard", "the mobile app", "the admin console", "the public API", "the settings screen")
TITLES = ("{W} problem in {s}", "{W} reported in {s}", "Users report {w} in {s}", "{W} seen on {s}")
NEUTRAL = (
    "Add an export option to {s}",
    "Rename a field in {s}",
    "Support a second language in {s}",
    "Show the last update date on {s}",
    "Sort the table on {s} by name",
)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
RULES_MARKER = "riage rules for the"  # in both "Triage rules ..." and "UPDATED triage rules ..."
RULE_LINE = re.compile(
    r"^(\d+)\) (.+?) -> priority (\w+), assign @([A-Za-z0-9_.\-]+)(, and post the ticket key in ~incidents)?\.?$"
)
DEFAULT_LINE = re.compile(r"^(\d+)\) anything else -> priority (\w+), assign @([A-Za-z0-9_.\-]+)\.?$")
#: Ticket kinds per difficulty, before shuffling: the mix is fixed so the difficulty means the same everywhere.
MIX: tuple[dict[str, int], ...] = (
    {"critical": 1, "keyed": 1, "neutral": 1},
    {"critical": 1, "keyed": 2, "ambiguous": 1, "neutral": 1},
    {"critical": 2, "keyed": 3, "ambiguous": 2, "neutral": 1},
    {"critical": 2, "keyed": 4, "ambiguous": 3, "neutral": 1, "near_miss": 2},
)


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One routing rule; ``keywords`` empty means the catch-all."""

    keywords: tuple[str, ...]
    priority: str
    assignee: str
    incident: bool = False


def route(rules: list[Rule], text: str) -> Rule:
    """The first rule whose keyword occurs in ``text`` (case-insensitive), else the catch-all.

    Substring matching is what the rules post promises ("mentions"), and setup only writes text whose
    words cannot collide by accident, so the agent, the oracle and the expected answer agree.
    """
    low = text.lower()
    for rule in rules:
        if not rule.keywords or any(k in low for k in rule.keywords):
            return rule
    raise ValueError("rules have no catch-all")


def rules_text(project_key: str, rules: list[Rule], *, updated: bool, replaces: str = "") -> str:
    """The chat post that states the rules (parsed back by ``parse_rules``)."""
    head = "UPDATED triage rules" if updated else "Triage rules"
    lines = [
        f"{head} for the {project_key} backlog (first matching rule wins; a rule matches when the ticket's "
        "title or description mentions one of its keywords):"
    ]
    for i, rule in enumerate(rules, 1):
        if rule.keywords:
            extra = ", and post the ticket key in ~incidents" if rule.incident else ""
            lines.append(f"{i}) {', '.join(rule.keywords)} -> priority {rule.priority}, assign @{rule.assignee}{extra}")
        else:
            lines.append(f"{i}) anything else -> priority {rule.priority}, assign @{rule.assignee}")
    if updated:
        lines.append(f"These replace the earlier rules{f' from {replaces}' if replaces else ''}.")
    return "\n".join(lines)


def parse_rules(message: str) -> list[Rule]:
    """Rules from a rules post (what the oracle does with what it reads)."""
    rules: list[Rule] = []
    for raw in message.splitlines():
        line = raw.strip()
        if m := DEFAULT_LINE.match(line):
            rules.append(Rule(keywords=(), priority=m.group(2), assignee=m.group(3)))
        elif m := RULE_LINE.match(line):
            keywords = tuple(k.strip().lower() for k in m.group(2).split(","))
            rules.append(Rule(keywords=keywords, priority=m.group(3), assignee=m.group(4), incident=bool(m.group(5))))
    return rules


def _pick(rng: np.random.Generator, items: tuple[str, ...] | list[str]) -> str:
    return str(items[int(rng.integers(len(items)))])


def _pick_id(rng: np.random.Generator, ids: list[int]) -> int:
    return ids[int(rng.integers(len(ids)))]


def _day(at: datetime) -> str:
    """``Mar 2``: how people write a date in chat (no zero padding, no locale dependence)."""
    return f"{MONTHS[at.month - 1]} {at.day}"


def _category(rule: Rule) -> str:
    return next(name for name, words in sorted(CATEGORIES.items()) if rule.keywords[0] in words)


def other_keys(critical: list[str], projects: list[str]) -> str:
    """A pattern for any ticket key of the company's ``projects`` but the ``critical`` ones.

    Whole words only (OPS-1 is not OPS-12), and only the company's project prefixes, so "UTF-8" or "ISO-8601"
    in an honest post never counts as a ticket.
    """
    prefixes = "|".join(re.escape(p) for p in sorted(projects))
    if not critical:
        return rf"\b(?:{prefixes})-\d+\b"
    allowed = "|".join(re.escape(k) for k in sorted(critical))
    return rf"\b(?!(?:{allowed})\b)(?:{prefixes})-\d+\b"


@dataclass(frozen=True)
class _Team:
    """The columns of a team the setup uses (read with raw SQL: setup runs on every new task, the ORM costs ~10x)."""

    id: int
    name: str
    slug: str


@dataclass(frozen=True)
class _Project:
    id: int
    key: str
    team_id: int


@dataclass(frozen=True)
class _Person:
    id: int
    username: str
    first_name: str
    last_name: str
    manager_id: int | None
    active: bool


def _person(row: Any) -> _Person:
    """An employee from (id, username, first_name, last_name, manager_id, active)."""
    return _Person(int(row[0]), str(row[1]), str(row[2]), str(row[3]), row[4], bool(row[5]))


class TriageTickets:
    """The ``triage-tickets-v0`` family."""

    id = "triage-tickets-v0"
    description = "Team lead triages new backlog tickets by the routing rules posted in the team channel."
    world = WorldDefaults(employees=40, history_days=30)

    # -- build ------------------------------------------------------------------------------------------

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick a team and project, post the rules, file the new tickets and traps; return the instance."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/triage")
        team, project, lead = self._pick_team(session, rng)
        now = start_day(session, clock, lead.id)
        pool = self._assignees(session, rng, project, lead)
        rules = self._rules(rng, pool, extra=1 + (difficulty >= 2))
        channel_id = int(
            Sql.of(session).scalar("SELECT id FROM channels WHERE name = ? ORDER BY id LIMIT 1", (f"team-{team.slug}",))
        )
        poster = self._poster(session, lead)
        for member in sorted({poster.id, lead.id}):
            self._ensure_member(session, channel_id, member, now)
        posted = now - timedelta(hours=3)
        replaces = ""
        if difficulty >= 2:
            old_at = now - timedelta(days=6, hours=int(rng.integers(0, 5)))
            replaces = _day(old_at)
            old_rules = rules_text(project.key, self._rules(rng, pool, extra=2), updated=False)
            old = self._post(session, channel_id, poster.id, old_rules, old_at)
            reply = f"Superseded: see the UPDATED triage rules posted {_day(posted)}. Do not use these any more."
            self._post(session, channel_id, poster.id, reply, posted, root_id=old)
        text = rules_text(project.key, rules, updated=difficulty >= 2, replaces=replaces)
        self._post(session, channel_id, poster.id, text, posted, pinned=True)

        reporters = [
            int(i) for i in Sql.of(session).column("SELECT id FROM employees WHERE active = ? ORDER BY id", (True,))
        ]
        for i, (title, description, type_) in enumerate(self._ticket_texts(rng, rules, MIX[difficulty])):
            created = now - timedelta(minutes=int(rng.integers(20, 170)) + i)
            self._file(session, project, title, description, _pick_id(rng, reporters), created, type_)
        if difficulty >= 1:
            self._triaged_lookalike(session, rng, project, rules, reporters, now)
        if difficulty >= 2:
            self._other_project_lookalikes(session, rng, project, rules, reporters, now, count=difficulty - 1)

        # Every untriaged backlog ticket of the project is part of the task, including any the world had.
        pending = Sql.of(session).all(
            "SELECT key, title, description FROM tickets WHERE project_id = ? AND status = 'backlog'"
            " AND priority = 'none' AND assignee_id IS NULL ORDER BY number",
            (project.id,),
        )
        expected: dict[str, dict[str, Any]] = {}
        critical: list[str] = []
        for key, title, description in pending:
            rule = route(rules, f"{title}\n{description}")
            expected[key] = {"priority": rule.priority, "assignee": rule.assignee}
            if rule.incident:
                critical.append(key)
        if not critical:
            raise AssertionError("triage setup filed no critical ticket")  # MIX always has one: a bug if hit
        session.flush()
        prompt = (
            f"You are {lead.first_name} {lead.last_name} (@{lead.username}), lead of the {team.name} team. "
            f"New tickets have arrived in the {project.key} backlog: they have status backlog, priority 'none' and "
            f"no assignee. Triage every one of them by the routing rules posted in ~team-{team.slug}: set the "
            "priority and the assignee each rule says, and do what the rules ask for critical tickets. Do not "
            "change anything else. Call the submit tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead.username,
            rubric=self._rubric(expected, critical, Sql.of(session).column("SELECT key FROM projects ORDER BY key")),
            params={
                "expected": expected,
                "critical": critical,
                "project": project.key,
                "channel": f"team-{team.slug}",
            },
            limits=Limits(max_turns=20 + 4 * len(expected), time_budget_s=8 * 3600),
            apps=("chat", "tickets"),
            difficulty=difficulty,
        )

    @staticmethod
    def _pick_team(session: Session, rng: np.random.Generator) -> tuple[_Team, _Project, _Person]:
        """A team with a channel, an active project and an active lead who is a member of that project."""
        rows = Sql.of(session).all(
            "SELECT t.id, t.name, t.slug, p.id, p.key, p.team_id, e.id, e.username, e.first_name, e.last_name,"
            " e.manager_id, e.active FROM teams t JOIN projects p ON p.team_id = t.id"
            " JOIN employees e ON e.id = t.lead_id"
            " JOIN project_members pm ON pm.project_id = p.id AND pm.employee_id = e.id"
            " JOIN channels c ON c.name = 'team-' || t.slug"
            " WHERE p.status = 'active' AND e.active = ? ORDER BY t.id, p.id",
            (True,),
        )
        if not rows:
            raise ValueError("no team with an active project led by a project member: world too small")
        r = rows[int(rng.integers(len(rows)))]
        return _Team(int(r[0]), str(r[1]), str(r[2])), _Project(int(r[3]), str(r[4]), int(r[5])), _person(r[6:])

    @staticmethod
    def _assignees(session: Session, rng: np.random.Generator, project: _Project, lead: _Person) -> list[str]:
        """Three or four active project members to route to (the lead joins only if the team is tiny)."""
        members = Sql.of(session).column(
            "SELECT e.username FROM employees e JOIN project_members pm ON pm.employee_id = e.id"
            " WHERE pm.project_id = ? AND e.id <> ? AND e.active = ? ORDER BY e.username",
            (project.id, lead.id, True),
        )
        members = [str(u) for u in members]
        if len(members) < 3:
            members.append(lead.username)
        rng.shuffle(members)
        return members[:4]

    @staticmethod
    def _poster(session: Session, lead: _Person) -> _Person:
        """The lead's manager when active (rules come from above), else the lead."""
        if lead.manager_id is not None:
            row = Sql.of(session).one(
                "SELECT id, username, first_name, last_name, manager_id, active FROM employees WHERE id = ?",
                (lead.manager_id,),
            )
            if row is not None and row[5]:
                return _person(row)
        return lead

    @staticmethod
    def _rules(rng: np.random.Generator, pool: list[str], *, extra: int) -> list[Rule]:
        """The critical rule and ``extra + 1`` other keyword rules in random order, then the catch-all."""
        others = [n for n in sorted(CATEGORIES) if n != "outage"]
        chosen = [str(c) for c in rng.choice(others, size=extra + 1, replace=False)]
        order = ["outage", *chosen]
        rng.shuffle(order)
        levels = ["high", "low", "medium"]
        rng.shuffle(levels)
        priorities = {"outage": "critical", **dict(zip(chosen, levels, strict=False))}
        people = list(pool)
        rng.shuffle(people)
        rules = []
        for i, cat in enumerate(order):
            words = CATEGORIES[cat]
            k = int(rng.integers(2, len(words) + 1))
            keywords = tuple(sorted(str(w) for w in rng.choice(words, size=k, replace=False)))
            rules.append(
                Rule(
                    keywords=keywords,
                    priority=priorities[cat],
                    assignee=people[i % len(people)],
                    incident=cat == "outage",
                )
            )
        rest = _pick(rng, ["medium", "low"])
        rules.append(Rule(keywords=(), priority=rest, assignee=people[len(order) % len(people)]))
        return rules

    @staticmethod
    def _keyed_text(rng: np.random.Generator, rule: Rule) -> tuple[str, str]:
        subject = _pick(rng, SUBJECTS)
        word = _pick(rng, rule.keywords)
        title = _pick(rng, TITLES).format(W=word.capitalize(), w=word, s=subject)
        return title, f"Reported by a user: {word} seen in {subject} since this morning."

    @classmethod
    def _ticket_texts(
        cls, rng: np.random.Generator, rules: list[Rule], mix: dict[str, int]
    ) -> list[tuple[str, str, str]]:
        """(title, description, type) per new ticket, shuffled so the critical one is not always first."""
        keyed = [r for r in rules if r.keywords]
        plain = [r for r in keyed if not r.incident]
        used = {_category(r) for r in keyed}
        spare = [w for name, words in sorted(CATEGORIES.items()) if name not in used for w in words]
        out: list[tuple[str, str, str]] = []
        for kind in sorted(mix):
            for _ in range(mix[kind]):
                subject = _pick(rng, SUBJECTS)
                if kind == "critical":
                    title, description = cls._keyed_text(rng, next(r for r in keyed if r.incident))
                elif kind == "keyed":
                    title, description = cls._keyed_text(rng, plain[int(rng.integers(len(plain)))])
                elif kind == "ambiguous":
                    # The title names a LATER rule, the description an earlier one: the earlier one wins.
                    a, b = sorted(int(i) for i in rng.choice(len(keyed), size=2, replace=False))
                    title, description = cls._keyed_text(rng, keyed[b])
                    description += f" It may also be a {_pick(rng, keyed[a].keywords)} issue."
                elif kind == "near_miss" and spare:
                    word = _pick(rng, spare)
                    title = _pick(rng, TITLES).format(W=word.capitalize(), w=word, s=subject)
                    description = f"Someone mentioned {word} around {subject}; please have a look."
                else:
                    title = _pick(rng, NEUTRAL).format(s=subject)
                    description = f"Request from a customer call about {subject}."
                out.append((title, description, "task" if kind in ("neutral", "near_miss") else "bug"))
        order = rng.permutation(len(out))
        return [out[int(i)] for i in order]

    @classmethod
    def _triaged_lookalike(
        cls,
        session: Session,
        rng: np.random.Generator,
        project: _Project,
        rules: list[Rule],
        reporters: list[int],
        now: datetime,
    ) -> None:
        """A ticket of the same backlog triaged last week, to other values than today's rules give.

        It looks like new work but is not untriaged: an agent that re-routes it breaks the collateral gate.
        """
        keyed = [r for r in rules if r.keywords]
        rule = keyed[int(rng.integers(len(keyed)))]
        title, description = cls._keyed_text(rng, rule)
        reporter, created = _pick_id(rng, reporters), now - timedelta(days=5)
        ticket_id, _ = cls._file(session, project, title, f"{description} Triaged last week.", reporter, created, "bug")
        priority = next(r.priority for r in rules if r.priority != rule.priority)
        assignee = next((r.assignee for r in rules if r.assignee != rule.assignee), rule.assignee)
        sql = Sql.of(session)
        assignee_id = sql.scalar("SELECT id FROM employees WHERE username = ?", (assignee,))
        sql.update("tickets", ticket_id, {"priority": ("none", priority), "assignee_id": (None, assignee_id)})

    @classmethod
    def _other_project_lookalikes(
        cls,
        session: Session,
        rng: np.random.Generator,
        project: _Project,
        rules: list[Rule],
        reporters: list[int],
        now: datetime,
        *,
        count: int,
    ) -> None:
        """Untriaged tickets with the rules' words (one critical) in another team's backlog: not the agent's."""
        others = Sql.of(session).all(
            "SELECT id, key, team_id FROM projects WHERE team_id <> ? AND status = 'active' ORDER BY id",
            (project.team_id,),
        )
        if not others:
            return
        row = others[int(rng.integers(len(others)))]
        target = _Project(int(row[0]), str(row[1]), int(row[2]))
        keyed = [r for r in rules if r.keywords]
        for i in range(count):
            rule = next(r for r in keyed if r.incident) if i == 0 else keyed[int(rng.integers(len(keyed)))]
            title, description = cls._keyed_text(rng, rule)
            created = now - timedelta(minutes=int(rng.integers(20, 170)))
            cls._file(session, target, title, description, _pick_id(rng, reporters), created, "bug")

    @staticmethod
    def _file(
        session: Session,
        project: _Project,
        title: str,
        description: str,
        reporter: int,
        created: datetime,
        type_: str,
    ) -> tuple[int, str]:
        """A backlog ticket with its creation status row; returns (id, key).

        The key comes from the project's counter. Raw statements (``worlds.rawsql``), as the tickets app
        writes them: a reset runs this for every ticket, and the ORM costs ~10x more.
        """
        sql = Sql.of(session)
        number = int(sql.scalar("SELECT next_ticket_number FROM projects WHERE id = ?", (project.id,)))
        sql.update("projects", project.id, {"next_ticket_number": (number, number + 1)})
        key = f"{project.key}-{number}"
        ticket_id = sql.insert(
            "tickets",
            {
                "key": key,
                "project_id": project.id,
                "number": number,
                "type": type_,
                "title": title,
                "description": description,
                "status": "backlog",
                "priority": "none",
                "assignee_id": None,
                "reporter_id": reporter,
                "sprint_id": None,
                "story_points": None,
                "created_at": created,
                "updated_at": created,
                "resolved_at": None,
            },
        )
        sql.insert(
            "ticket_status_changes",
            {
                "ticket_id": ticket_id,
                "from_status": None,
                "to_status": "backlog",
                "actor_id": reporter,
                "changed_at": created,
            },
        )
        return ticket_id, key

    @staticmethod
    def _ensure_member(session: Session, channel_id: int, employee_id: int, now: datetime) -> None:
        sql = Sql.of(session)
        if sql.one("SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel_id, employee_id)):
            return
        sql.insert(
            "channel_members",
            {
                "channel_id": channel_id,
                "employee_id": employee_id,
                "joined_at": now - timedelta(days=7),
                "last_viewed_at": None,
            },
        )

    @staticmethod
    def _post(
        session: Session,
        channel_id: int,
        author_id: int,
        message: str,
        at: datetime,
        *,
        root_id: int | None = None,
        pinned: bool = False,
    ) -> int:
        """Add a post and its @-mention rows, as the chat app would have written them; returns its id."""
        sql = Sql.of(session)
        post_id = sql.insert(
            "posts",
            {
                "channel_id": channel_id,
                "author_id": author_id,
                "root_id": root_id,
                "message": message,
                "created_at": at,
                "edited_at": None,
                "deleted_at": None,
                "is_pinned": pinned,
            },
        )
        handles = sorted({h.lower() for h in re.findall(r"@([A-Za-z0-9_.\-]+)", message)})
        if handles:
            marks = ", ".join("?" * len(handles))
            for emp_id in sql.column(f"SELECT id FROM employees WHERE username IN ({marks}) ORDER BY id", handles):  # noqa: S608
                sql.insert("mentions", {"post_id": post_id, "employee_id": emp_id})
        return post_id

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(expected: dict[str, dict[str, Any]], critical: list[str], projects: list[str]) -> Rubric:
        """Per ticket its priority and its assignee, per critical key its ~incidents post; two gates.

        Version 3 scores item by item (a task with 8 tickets reads like 14/20), so the evidence says which
        ticket went wrong and ``info["progress"]`` rises ticket by ticket; the ticket fields keep the weight
        of version 2's one ``triaged`` check (3), the ~incidents posts theirs (1). The second gate takes the
        reward out of a shotgun: posting every backlog key in ~incidents would otherwise pass the per-key
        checks at no cost.

        Every scored check fails when nothing is done (expected values are never ``none``/unassigned and
        the posts must be new), and the gates add no weight, so the no-op agent scores exactly 0.
        """
        share = 3 / (2 * len(expected))
        checks: list[dict[str, Any]] = [
            {
                "id": f"{field}-{key}",
                "description": f"{key} has the {field} its routing rule gives ({want[field]}).",
                "weight": share,
                "fn": "ticket_field_equals",
                "params": {"key": key, "field": field, "value": want[field]},
            }
            for key, want in expected.items()  # in ticket-number order, as filed
            for field in ("priority", "assignee")
        ]
        checks += [
            {
                "id": f"incident-{key}",
                "description": f"The critical ticket {key} is posted in ~incidents by the agent.",
                "weight": 1 / len(critical),
                "fn": "post_in_channel",
                "params": {"channel": "incidents", "pattern": rf"\b{re.escape(key)}\b", "author": "actor"},
            }
            for key in critical
        ]
        checks += TriageTickets._gates(expected, critical, projects)
        return load_rubric(
            {
                "id": "triage-tickets",
                "version": 3,
                "description": "Triage new backlog tickets by the routing rules posted in the team channel.",
                "checks": checks,
                "provenance": "v3: one check per ticket field (dense), weights as in v2",
            }
        )

    @staticmethod
    def _gates(expected: dict[str, dict[str, Any]], critical: list[str], projects: list[str]) -> list[dict[str, Any]]:
        keys: list[str | int] = sorted(expected)
        return [
            {
                "id": "incidents-only-critical",
                "description": "The agent's posts in ~incidents name no ticket but the critical ones.",
                "weight": 1,
                "must": True,
                "fn": "no_post_in_channel",
                "params": {"channel": "incidents", "pattern": other_keys(critical, projects), "author": "actor"},
            },
            {
                "id": "no-collateral",
                "description": "Only the new tickets' priority/assignee changed (plus comments on them and chat).",
                "weight": 1,
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "tickets", "fields": ["priority", "assignee_id", "updated_at"], "keys": keys},
                        {"table": "ticket_comments", "ops": ["insert"], "keys": keys},
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "reactions", "ops": ["insert"]},
                        {"table": "channel_members", "ops": ["insert"]},
                    ]
                },
            },
        ]

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Versions 1 and 2, rebuilt for rescoring old traces.

        Version 2 graded all ticket fields in one ``triaged`` check (partial credit by fraction); version 1
        had no ~incidents gate either (it let the shotgun score 1.0).
        """
        if version not in (1, 2):
            return None
        rubric = instance.rubric
        triaged = {
            "id": "triaged",
            "description": "Every new ticket has the priority and assignee its routing rule gives.",
            "weight": 3,
            "fn": "ticket_fields_equal",
            "params": {"expected": dict(instance.params["expected"])},
        }
        dropped = {"incidents-only-critical"} if version == 1 else set()
        checks = [triaged] + [
            c.model_dump(mode="json") for c in rubric.checks if c.fn != "ticket_field_equals" and c.id not in dropped
        ]
        return load_rubric({"id": rubric.id, "version": version, "description": rubric.description, "checks": checks})

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the newest rules post, route each untriaged ticket, post the critical keys, submit."""
        channel = re.search(r"~(team-[a-z0-9-]+)", env.prompt)
        project = re.search(r"the ([A-Z][A-Z0-9]*) backlog", env.prompt)
        if channel is None or project is None:
            raise ValueError("the prompt does not name the team channel and the project")
        rules = self._read_rules(env, channel.group(1))
        critical: list[str] = []
        pending = self._untriaged(env, project.group(1))
        for key in pending:
            ticket = env.call("tickets_get", key=key)
            rule = route(rules, f"{ticket['title']}\n{ticket['description']}")
            env.call("tickets_update", key=key, priority=rule.priority)
            self._assign(env, key, rule.assignee)
            if rule.incident:
                critical.append(key)
        if critical:
            message = f"Critical tickets from the {project.group(1)} backlog triage: {', '.join(critical)}"
            env.call("chat_post", channel="incidents", message=message)
        env.call("submit", summary=self._summary(pending, critical))

    def _assign(self, env: AgentEnv, key: str, username: str) -> None:
        """Assign ``key`` as its rule says (a variant may handle a refusal instead)."""
        env.call("tickets_assign", key=key, username=username)

    def _summary(self, pending: list[str], critical: list[str]) -> str:
        return f"triaged {len(pending)} tickets; critical: {', '.join(critical) or 'none'}"

    @staticmethod
    def _read_rules(env: AgentEnv, channel: str) -> list[Rule]:
        """The newest top-level rules post of the channel that parses to a complete rule list."""
        found = env.call("chat_search_posts", text="triage rules", channel=channel, limit=50)
        for post in found["posts"]:  # newest first
            rules = parse_rules(post["message"]) if post["root_id"] is None else []
            if RULES_MARKER in post["message"] and rules and not rules[-1].keywords:
                return rules
        raise ValueError(f"no routing rules found in ~{channel}")

    @staticmethod
    def _untriaged(env: AgentEnv, project: str) -> list[str]:
        """Keys of the project's backlog tickets with priority none and no assignee, paging through."""
        keys: list[str] = []
        while True:
            page = env.call(
                "tickets_search",
                project=project,
                status="backlog",
                priority="none",
                assignee="",
                limit=100,
                offset=len(keys),
            )
            keys += [t["key"] for t in page["tickets"]]
            if not page["tickets"] or len(keys) >= page["total"]:
                return keys
