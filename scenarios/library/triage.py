"""``triage-tickets-v0``: a team lead triages the new tickets of a backlog by posted routing rules.

Setup: the lead's manager (or the lead) posts numbered routing rules in the team channel ("first matching
rule wins": keywords -> priority and assignee; the critical rule also asks for a post in ~incidents), and new
tickets arrive in the project's backlog with priority ``none`` and no assignee. The agent must set priority
and assignee on each by the rules and post every critical ticket's key in ~incidents. Difficulty adds
tickets, distractors (similar tickets in another project, already-triaged tickets, a superseded older rules
post) and ambiguous tickets that match two rules.

The expected answer is computed from the rules by ``route`` and kept in ``params``; it is never written to a
table. The oracle reads the rules and the tickets through the tools and applies the same routing itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import literal, select
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults
from worlds.clock import Clock
from worlds.schema import (
    Channel,
    ChannelMember,
    Employee,
    Post,
    Project,
    ProjectMember,
    Team,
    Ticket,
    TicketStatusChange,
)
from worlds.seeding import Seeds

CATEGORIES: dict[str, tuple[str, ...]] = {
    "payments": ("payment", "checkout", "refund", "invoice"),
    "outage": ("crash", "outage", "data loss", "returns 500"),
    "ui": ("typo", "misaligned", "cosmetic", "wrong colour"),
    "performance": ("slow", "latency", "timeout", "memory leak"),
    "security": ("password", "token", "permission", "login"),
    "docs": ("documentation", "readme", "docs page"),
}
SUBJECTS = ("the dashboard", "the mobile app", "the admin console", "the public API", "the settings screen")
NEUTRAL = (
    "Add an export option to {s}",
    "Rename a field in {s}",
    "Support a second language in {s}",
    "Show the last update date on {s}",
    "Sort the table on {s} by name",
)
RULE_LINE = re.compile(
    r"^(\d+)\) (.+?) -> priority (\w+), assign @([A-Za-z0-9_.\-]+)(, and post the ticket key in ~incidents)?\.?$"
)
DEFAULT_LINE = re.compile(r"^(\d+)\) anything else -> priority (\w+), assign @([A-Za-z0-9_.\-]+)\.?$")


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One routing rule; ``keywords`` empty means the catch-all."""

    keywords: tuple[str, ...]
    priority: str
    assignee: str
    incident: bool = False


def route(rules: list[Rule], text: str) -> Rule:
    """The first rule whose keyword occurs in ``text`` (case-insensitive), else the catch-all."""
    low = text.lower()
    for rule in rules:
        if not rule.keywords or any(k in low for k in rule.keywords):
            return rule
    raise ValueError("rules have no catch-all")


def rules_text(project_key: str, rules: list[Rule], *, updated: bool) -> str:
    """The chat post that states the rules (parsed back by ``parse_rules``)."""
    head = "UPDATED triage rules" if updated else "Triage rules"
    lines = [f"{head} for the {project_key} backlog (first matching rule wins; match on title or description):"]
    for i, rule in enumerate(rules, 1):
        if rule.keywords:
            extra = ", and post the ticket key in ~incidents" if rule.incident else ""
            lines.append(f"{i}) {', '.join(rule.keywords)} -> priority {rule.priority}, assign @{rule.assignee}{extra}")
        else:
            lines.append(f"{i}) anything else -> priority {rule.priority}, assign @{rule.assignee}")
    if updated:
        lines.append("These replace the earlier rules.")
    return "\n".join(lines)


def parse_rules(message: str) -> list[Rule]:
    """Rules from a rules post (what the oracle does with what it reads)."""
    rules: list[Rule] = []
    for line in message.splitlines():
        line = line.strip()
        if m := DEFAULT_LINE.match(line):
            rules.append(Rule(keywords=(), priority=m.group(2), assignee=m.group(3)))
        elif m := RULE_LINE.match(line):
            keywords = tuple(k.strip().lower() for k in m.group(2).split(","))
            rules.append(Rule(keywords=keywords, priority=m.group(3), assignee=m.group(4), incident=bool(m.group(5))))
    return rules


class TriageTickets:
    """The ``triage-tickets-v0`` family."""

    id = "triage-tickets-v0"
    description = "Team lead triages new backlog tickets by the routing rules posted in the team channel."
    world = WorldDefaults(employees=40, history_days=30)

    # -- build ------------------------------------------------------------------------------------------

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick a team and project, post the rules, file the new tickets; return the instance."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng(f"scenario/{self.id}")
        now = clock.now()
        team, project, lead = self._pick(session, rng)
        members = session.scalars(
            select(Employee.username)
            .join(ProjectMember, ProjectMember.employee_id == Employee.id)
            .where(ProjectMember.project_id == project.id, Employee.id != lead.id, Employee.active.is_(True))
            .order_by(Employee.username)
        ).all()
        pool = list(members) or [lead.username]
        rules = self._rules(rng, pool)
        channel = session.scalars(select(Channel).where(Channel.name == f"team-{team.slug}")).one()
        poster_id = lead.manager_id or lead.id
        self._ensure_member(session, channel.id, poster_id, now)
        if difficulty >= 2:
            old = self._rules(rng, pool)
            self._post(
                session,
                channel.id,
                poster_id,
                rules_text(project.key, old, updated=False),
                now - timedelta(days=6),
            )
        self._post(
            session,
            channel.id,
            poster_id,
            rules_text(project.key, rules, updated=difficulty >= 2),
            now - timedelta(hours=3),
        )

        count = (3, 5, 8, 12)[difficulty]
        texts = self._ticket_texts(rng, rules, count, ambiguous=difficulty >= 1)
        reporter_ids = session.scalars(select(Employee.id).where(Employee.active.is_(True)).order_by(Employee.id)).all()
        new_keys: list[str] = []
        for i, (title, description) in enumerate(texts):
            created = now - timedelta(minutes=int(rng.integers(20, 170)) + i)
            reporter = int(reporter_ids[int(rng.integers(len(reporter_ids)))])
            new_keys.append(self._file(session, project, title, description, reporter, created).key)
        if difficulty >= 1:
            self._distractors(session, rng, project, reporter_ids, now)

        # Every untriaged backlog ticket of the project is part of the task, including any the world had.
        pending = session.scalars(
            select(Ticket)
            .where(
                Ticket.project_id == project.id,
                Ticket.status == "backlog",
                Ticket.priority == "none",
                Ticket.assignee_id.is_(None),
            )
            .order_by(Ticket.number)
        ).all()
        expected: dict[str, dict[str, Any]] = {}
        critical: list[str] = []
        for ticket in pending:
            rule = route(rules, f"{ticket.title} {ticket.description}")
            expected[ticket.key] = {"priority": rule.priority, "assignee": rule.assignee}
            if rule.incident:
                critical.append(ticket.key)
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
            rubric=self._rubric(expected, critical),
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
    def _pick(session: Session, rng: np.random.Generator) -> tuple[Team, Project, Employee]:
        rows = session.execute(
            select(Team, Project, Employee)
            .join(Project, Project.team_id == Team.id)
            .join(Employee, Employee.id == Team.lead_id)
            .join(
                ProjectMember,
                (ProjectMember.project_id == Project.id) & (ProjectMember.employee_id == Employee.id),
            )
            .join(Channel, Channel.name == literal("team-") + Team.slug)
            .where(Project.status == "active", Employee.active.is_(True))
            .order_by(Team.id, Project.id)
        ).all()
        if not rows:
            raise ValueError("no team with an active project led by a project member: world too small")
        team, project, lead = rows[int(rng.integers(len(rows)))]
        return team, project, lead

    @staticmethod
    def _rules(rng: np.random.Generator, pool: list[str]) -> list[Rule]:
        names = sorted(CATEGORIES)
        chosen = [str(c) for c in rng.choice([n for n in names if n != "outage"], size=2, replace=False)]
        order = ["outage", *chosen]
        rng.shuffle(order)
        priorities = {"outage": "critical"}
        others = ["high", "low"]
        rng.shuffle(others)
        for cat, prio in zip(chosen, others, strict=True):
            priorities[cat] = prio
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
        rules.append(Rule(keywords=(), priority="medium", assignee=people[len(order) % len(people)]))
        return rules

    @staticmethod
    def _ticket_texts(
        rng: np.random.Generator, rules: list[Rule], count: int, *, ambiguous: bool
    ) -> list[tuple[str, str]]:
        keyed = [r for r in rules if r.keywords]
        out: list[tuple[str, str]] = []
        for i in range(count):
            subject = SUBJECTS[int(rng.integers(len(SUBJECTS)))]
            if i == 0:
                rule = next(r for r in keyed if r.incident)  # at least one critical ticket
            elif i % 4 == 3:
                rule = None  # falls through to the catch-all
            else:
                rule = keyed[int(rng.integers(len(keyed)))]
            if rule is None:
                template = NEUTRAL[int(rng.integers(len(NEUTRAL)))]
                out.append((template.format(s=subject), f"Request from a customer call about {subject}."))
                continue
            word = rule.keywords[int(rng.integers(len(rule.keywords)))]
            title = f"{word.capitalize()} problem in {subject}"
            description = f"Reported by a user: {word} seen in {subject} since this morning."
            if ambiguous and i % 3 == 2:
                other = keyed[int(rng.integers(len(keyed)))]
                description += f" Possibly related: {other.keywords[0]}."
            out.append((title, description))
        return out

    @staticmethod
    def _distractors(session: Session, rng: np.random.Generator, project: Project, reporters: Any, now: Any) -> None:
        other = session.scalars(select(Project).where(Project.id != project.id).order_by(Project.id)).first()
        if other is not None:
            TriageTickets._file(
                session,
                other,
                "Checkout crash in the mobile app",
                "Seen twice today.",
                int(reporters[0]),
                now - timedelta(hours=1),
            )
        lead_member = session.scalars(
            select(ProjectMember.employee_id)
            .where(ProjectMember.project_id == project.id)
            .order_by(ProjectMember.employee_id)
        ).first()
        done = TriageTickets._file(
            session,
            project,
            "Slow login on the dashboard",
            "Already looked at.",
            int(reporters[-1]),
            now - timedelta(hours=2),
        )
        done.priority, done.assignee_id = "high", lead_member

    @staticmethod
    def _file(session: Session, project: Project, title: str, description: str, reporter: int, created: Any) -> Ticket:
        number = project.next_ticket_number
        project.next_ticket_number = number + 1
        ticket = Ticket(
            key=f"{project.key}-{number}",
            project_id=project.id,
            number=number,
            type="bug",
            title=title,
            description=description,
            status="backlog",
            priority="none",
            assignee_id=None,
            reporter_id=reporter,
            sprint_id=None,
            story_points=None,
            created_at=created,
            updated_at=created,
            resolved_at=None,
        )
        session.add(ticket)
        session.flush()
        session.add(
            TicketStatusChange(
                ticket_id=ticket.id,
                from_status=None,
                to_status="backlog",
                actor_id=reporter,
                changed_at=created,
            )
        )
        return ticket

    @staticmethod
    def _ensure_member(session: Session, channel_id: int, employee_id: int, now: Any) -> None:
        exists = session.scalar(
            select(ChannelMember.id).where(
                ChannelMember.channel_id == channel_id, ChannelMember.employee_id == employee_id
            )
        )
        if exists is None:
            session.add(
                ChannelMember(channel_id=channel_id, employee_id=employee_id, joined_at=now - timedelta(days=7))
            )

    @staticmethod
    def _post(session: Session, channel_id: int, author_id: int, message: str, at: Any) -> None:
        session.add(Post(channel_id=channel_id, author_id=author_id, root_id=None, message=message, created_at=at))
        session.flush()

    @staticmethod
    def _rubric(expected: dict[str, dict[str, Any]], critical: list[str]) -> Rubric:
        allowed_keys = sorted(expected)
        checks: list[dict[str, Any]] = [
            {
                "id": "triaged",
                "description": "Every new ticket has the priority and assignee its routing rule gives.",
                "weight": 3,
                "fn": "ticket_fields_equal",
                "params": {"expected": expected},
            }
        ]
        for key in critical:
            checks.append(
                {
                    "id": f"incident-{key}",
                    "description": f"The critical ticket {key} is posted in ~incidents by the agent.",
                    "weight": 1,
                    "fn": "post_in_channel",
                    "params": {
                        "channel": "incidents",
                        "pattern": rf"\b{re.escape(key)}\b",
                        "author": "actor",
                    },
                }
            )
        checks.append(
            {
                "id": "no-collateral",
                "description": "Nothing changed except the new tickets' priority/assignee and posts in ~incidents.",
                "weight": 1,
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {
                            "table": "tickets",
                            "fields": ["priority", "assignee_id", "updated_at"],
                            "keys": allowed_keys,
                        },
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "channel_members", "ops": ["insert"]},
                    ]
                },
            }
        )
        return load_rubric(
            {
                "id": "triage-tickets",
                "version": 1,
                "description": "Triage by the posted routing rules.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the newest rules post, route each untriaged ticket, post criticals, submit."""
        channel = re.search(r"~(team-[a-z0-9-]+)", env.prompt)
        project = re.search(r"the ([A-Z]{2,5}) backlog", env.prompt)
        assert channel and project, "prompt names the channel and project"
        history = env.call("chat_read_channel", channel=channel.group(1), limit=200)
        posts = [p for p in history["posts"] if "riage rules for the" in p["message"]]
        rules = parse_rules(posts[-1]["message"])
        found = env.call("tickets_search", project=project.group(1), status="backlog", priority="none", limit=100)
        critical: list[str] = []
        for item in found["tickets"]:
            if item.get("assignee"):
                continue
            ticket = env.call("tickets_get", key=item["key"])
            rule = route(rules, f"{ticket['title']} {ticket['description']}")
            env.call("tickets_update", key=item["key"], priority=rule.priority)
            env.call("tickets_assign", key=item["key"], username=rule.assignee)
            if rule.incident:
                critical.append(item["key"])
        if critical:
            env.call("chat_post", channel="incidents", message="Critical tickets triaged: " + ", ".join(critical))
        env.call("submit", summary=f"triaged {len(found['tickets'])} tickets")
