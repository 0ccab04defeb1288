"""``weekly-status-report-v0``: a team lead writes the week's status report from tickets and the team channel.

Setup (raw statements, as the apps write): this week's tickets of the team's project carry the label
``week-NN`` (ISO week) and a status set this week (done, in progress or in review, blocked, each with its
status-change row), and the people working on blocked tickets said why in the team channel. The lead must
create a text document at the stated path with sections Done, In progress and Blocked, list each of the week's
tickets by key in the section its status says, give each blocked ticket's reason, and share the document with
their manager.

Difficulty adds tickets (4, 6, 8, 10, as far as the project has them), tickets from last week with last
week's label (0, 1, 2, 3 of them), tickets in review, which count as in progress (0, 1, 2, 4 of them), a
second blocked ticket (2+), and a ticket that was blocked early in the week and unblocked since, whose old
"blocked" post is still in the channel (2+): the ticket's status is the truth.

The rubric (version 3) is two checks per ticket (its key in the right section and in no other; its title on that
line), one per blocked reason, one per last-week ticket that it is not listed, one that no other ticket of the
project is listed (version 1 lacked it and paid a report of every ticket in full), the share with the manager, and a
gate allowing only the new document and its share. The oracle finds the tickets, the reasons and the manager through
the tools; it never reads the hidden params.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

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

COUNT = (4, 6, 8, 10)
LAST_WEEK = (0, 1, 2, 3)
"""Tickets done last week under last week's label (traps for a report of every ticket), by difficulty."""
IN_REVIEW = (0, 1, 2, 4)
"""This week's tickets in review (in progress, not done), by difficulty."""
SECTIONS = {"done": "Done", "in_progress": "In progress", "in_review": "In progress", "blocked": "Blocked"}
REASONS = (
    "waiting for the payments vendor to rotate our sandbox keys",
    "the staging database is frozen until the migration window on Thursday",
    "we need a decision from product on the export format",
    "the security review of the new token scopes has not started yet",
)
UNBLOCKED = "waiting for legal to review the data processing terms"


class WeeklyStatusReport:
    """The ``weekly-status-report-v0`` family."""

    id = "weekly-status-report-v0"
    description = "Team lead writes the week's status report document from tickets and chat, shared with the manager."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Label and move this week's tickets, post the blockers, return the instance with the expected sections."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/status-report")
        sql = Sql.of(session)
        team, slug, project_id, project, dept, lead, lead_user, lead_name, manager = self._pick(sql, rng)
        now = start_day(session, clock, lead)
        week = now.isocalendar().week
        label = f"week-{week:02d}"
        channel = int(sql.scalar("SELECT id FROM channels WHERE name = ? ORDER BY id LIMIT 1", (f"team-{slug}",)))
        tickets = sql.all(
            "SELECT id, key, status, assignee_id, title FROM tickets WHERE project_id = ? ORDER BY number",
            (project_id,),
        )
        order = [int(i) for i in rng.permutation(len(tickets))]
        count = min(COUNT[difficulty], len(tickets) - LAST_WEEK[difficulty])  # a small project keeps its traps
        chosen = [tickets[i] for i in order[:count]]
        blocked = 2 if difficulty >= 2 else 1
        statuses = ["blocked"] * blocked + ["done", "in_progress"] + ["in_review"] * IN_REVIEW[difficulty]
        statuses += [("done", "in_progress")[int(rng.integers(2))] for _ in range(count - len(statuses))]
        reasons = [REASONS[int(i)] for i in rng.permutation(len(REASONS))]
        # A campaign may have labelled tickets for this week already (an earlier report of the same week):
        # they are this week's too, and the report lists them as they stand now.
        earlier = sql.all(
            "SELECT t.key, t.status, t.title FROM tickets t JOIN ticket_labels l ON l.ticket_id = t.id"
            " WHERE t.project_id = ? AND l.label = ? ORDER BY t.number",
            (project_id, label),
        )
        expected: list[dict[str, Any]] = []
        for k, (row, status) in enumerate(zip(chosen, statuses, strict=False)):
            tid, key, old, assignee = int(row[0]), str(row[1]), str(row[2]), row[3]
            who = int(assignee) if assignee is not None else lead
            at = now - timedelta(days=3) + timedelta(hours=3 * k)
            self._move(sql, tid, old, status, who, at)
            setup.label(sql, tid, label)
            item: dict[str, Any] = {"key": key, "section": SECTIONS[status], "title": str(row[4])}
            if status == "blocked":
                item["reason"] = reasons[len([e for e in expected if "reason" in e])]
                setup.ensure_member(sql, channel, who, now)
                setup.post(sql, channel, who, f"{key} is blocked: {item['reason']}.", at + timedelta(minutes=20))
            elif difficulty >= 2 and status == "in_progress" and not any(e.get("unblocked") for e in expected):
                item["unblocked"] = True
                setup.ensure_member(sql, channel, who, now)
                setup.post(sql, channel, who, f"{key} is blocked: {UNBLOCKED}.", at - timedelta(days=1))
                setup.post(sql, channel, who, f"{key} is unblocked: legal signed off this morning.", at)
            expected.append(item)
        this_week = {str(key) for key, _, _ in earlier}
        spare = [tickets[i] for i in order[count:] if str(tickets[i][1]) not in this_week]
        last_week: list[str] = []  # last week's tickets, the traps: never one labelled this week
        for k, old_row in enumerate(spare[: LAST_WEEK[difficulty]]):
            self._move(sql, int(old_row[0]), str(old_row[2]), "done", lead, now - timedelta(days=9, hours=3 * k))
            setup.label(sql, int(old_row[0]), f"week-{week - 1:02d}")
            last_week.append(str(old_row[1]))
        mine = {e["key"] for e in expected}
        for key, status, title in earlier:
            if str(key) in mine or str(status) not in SECTIONS:
                continue
            item = {"key": str(key), "section": SECTIONS[str(status)], "title": str(title)}
            if status == "blocked":
                said = sql.scalar(
                    "SELECT message FROM posts WHERE message LIKE ? AND deleted_at IS NULL ORDER BY id DESC LIMIT 1",
                    (f"{key} is blocked: %",),
                )
                item["reason"] = str(said).split("is blocked: ", 1)[1].rstrip(".") if said else ""
            expected.append(item)
        folder = f"Shared/{dept}"
        name = f"{team} status {label}.odt"
        if sql.one("SELECT 1 FROM documents WHERE lower(name) = lower(?)", (name,)) is not None:
            # A campaign asks again later in the week the report was written: the new one is dated.
            name = f"{team} status {label} {now:%a %d %b}.odt"
        manager_user = str(sql.scalar("SELECT username FROM employees WHERE id = ?", (manager,)))
        prompt = (
            f"You are {lead_name} (@{lead_user}), lead of the {team} team. Write this week's status report as a new "
            f"document {folder}/{name} with the sections Done, In progress and Blocked: list every {project} "
            f"ticket labelled {label} by its key and title in the section its current status belongs to (in review "
            "counts as in progress), and give the reason for each blocked one as the team said it in "
            f"~team-{slug}. Share it with your manager so they can read it. Do not change anything else. Call the "
            "submit tool when you are done."
        )
        document = f"{folder}/{name}"
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead_user,
            rubric=self._rubric(document, expected, manager_user, last_week),
            params={"document": document, "tickets": expected, "manager": manager_user, "last_week": last_week},
            limits=Limits(max_turns=30 + 3 * count, time_budget_s=8 * 3600),
            apps=("chat", "directory", "docs", "tickets"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _pick(sql: Sql, rng: np.random.Generator) -> tuple[str, str, int, str, str, int, str, str, int]:
        """A team lead with an active manager, the team's active project with enough tickets, and its channel."""
        rows = sql.all(
            "SELECT t.name, t.slug, p.id, p.key, d.name, e.id, e.username, e.first_name || ' ' || e.last_name,"
            " e.manager_id FROM teams t JOIN projects p ON p.team_id = t.id"
            " JOIN departments d ON d.id = t.department_id JOIN employees e ON e.id = t.lead_id"
            " JOIN employees m ON m.id = e.manager_id JOIN channels c ON c.name = 'team-' || t.slug"
            " WHERE p.status = 'active' AND e.active = ? AND m.active = ?"
            " AND (SELECT count(*) FROM tickets x WHERE x.project_id = p.id) >= 5 ORDER BY t.id, p.id",
            (True, True),
        )
        if not rows:
            raise ValueError("no team lead with a manager, a channel and a project of 5+ tickets: world too small")
        r = rows[int(rng.integers(len(rows)))]
        return str(r[0]), str(r[1]), int(r[2]), str(r[3]), str(r[4]), int(r[5]), str(r[6]), str(r[7]), int(r[8])

    @staticmethod
    def _move(sql: Sql, ticket: int, old: str, new: str, actor: int, at: datetime) -> None:
        """Set a ticket's status as a transition would: the field, its resolution time, a status-change row."""
        if old == new:
            return
        changes: dict[str, Any] = {"status": (old, new)}
        resolved = sql.scalar("SELECT resolved_at FROM tickets WHERE id = ?", (ticket,))
        target = at if new == "done" else None
        if (resolved is None) != (target is None) or new == "done":
            changes["resolved_at"] = (resolved, target)
        sql.update("tickets", ticket, changes)
        sql.insert(
            "ticket_status_changes",
            {"ticket_id": ticket, "from_status": old, "to_status": new, "actor_id": actor, "changed_at": at},
        )

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(document: str, tickets: list[dict[str, Any]], manager: str, last_week: list[str]) -> Rubric:
        """Version 2, and per ticket its title on the line that lists it (version 3).

        A status report is read by a manager who does not know the keys by heart: a bare ``ENG-12`` under Done
        says nothing about what got done. The prompt asks for each ticket by key and title, and the check wants
        the title (as the ticket has it, any case) on the same line as the key, in the ticket's own section, so
        a title pasted elsewhere or under the wrong heading does not count. Each weighs 1, like the ticket's.
        """
        old = WeeklyStatusReport._rubric_v2(document, tickets, manager, last_week)
        checks: list[dict[str, Any]] = []
        titles = {t["key"]: t for t in tickets}
        for check in old.checks:
            checks.append(check.model_dump(mode="json"))
            t = titles.get(check.id.removeprefix("ticket-")) if check.id.startswith("ticket-") else None
            if t is None or not t.get("title"):
                continue
            key, title = re.escape(t["key"]), re.escape(str(t["title"]).strip())
            checks.append(
                {
                    "id": f"title-{t['key']}",
                    "description": f"{t['key']} is listed with its title ({t['title']}) under {t['section']}.",
                    "fn": "doc_section_contains",
                    "params": {
                        "document": document,
                        "heading": rf"^{t['section']}$",
                        "pattern": rf"\b{key}\b[^\n]*{title}|{title}[^\n]*\b{key}\b",
                        "only_there": False,
                        "label": f"{t['key']} title",
                    },
                }
            )
        return load_rubric(
            {
                "id": old.id,
                "version": 3,
                "description": "The week's tickets by key and title in their sections, blocked reasons, shared.",
                "checks": checks,
                "provenance": "v3: each ticket's title on its line (one check per ticket)",
            }
        )

    @staticmethod
    def _rubric_v2(document: str, tickets: list[dict[str, Any]], manager: str, last_week: list[str]) -> Rubric:
        """One check per ticket (right section, no other), one per blocked reason and last-week ticket, share, gate."""
        checks: list[dict[str, Any]] = []
        for t in tickets:
            checks.append(
                {
                    "id": f"ticket-{t['key']}",
                    "description": f"{t['key']} is listed under {t['section']} and nowhere else.",
                    "fn": "doc_section_contains",
                    "params": {
                        "document": document,
                        "heading": rf"^{t['section']}$",
                        "pattern": rf"\b{re.escape(t['key'])}\b",
                        "label": t["key"],
                    },
                }
            )
            if "reason" in t:
                checks.append(
                    {
                        "id": f"reason-{t['key']}",
                        "description": f"The Blocked section gives {t['key']}'s reason as the team stated it.",
                        "fn": "doc_section_contains",
                        "params": {
                            "document": document,
                            "heading": r"^Blocked$",
                            "pattern": re.escape(t["reason"]),
                            "only_there": False,
                            "label": f"{t['key']} reason",
                        },
                    }
                )
        for key in last_week:
            checks.append(
                {
                    "id": f"not-last-week-{key}",
                    "description": f"{key} (done last week, labelled last week) is not listed.",
                    "fn": "doc_mentions_none",
                    "params": {"document": document, "pattern": rf"\b{re.escape(key)}\b", "label": key},
                }
            )
        project = tickets[0]["key"].split("-")[0]
        numbers = "|".join(t["key"].split("-")[1] for t in tickets)
        checks += [
            {
                "id": "no-other-tickets",
                "description": f"No other {project} ticket is listed (last week's ones are not this week's status).",
                "fn": "doc_mentions_none",
                "params": {
                    "document": document,
                    "pattern": rf"\b{project}-(?!(?:{numbers})\b)\d+\b",
                    "label": f"{project} tickets not labelled this week",
                },
            },
            {
                "id": "shared-with-manager",
                "description": f"The report is shared with {manager} (view or more).",
                "fn": "doc_shared_with",
                "params": {"document": document, "username": manager, "permission": "view"},
            },
            {
                "id": "no-collateral",
                "description": "Only the new report, its versions and its shares changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": NEW_DOCUMENT_CHANGES},
            },
        ]
        return load_rubric(
            {
                "id": "weekly-status-report",
                "version": 2,
                "description": "The week's tickets by section with blocked reasons, shared with the manager.",
                "checks": checks,
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Versions 2 (no titles) and 1 (also without ``no-other-tickets`` and the last-week checks), rebuilt.

        Version 1 checked only that each of the week's tickets was in its section, so a report listing every
        ticket of the project (last week's under Done too) scored 1.0; calibration's verifier caught it.
        """
        rubric = instance.rubric
        if version not in (1, 2) or rubric.id != "weekly-status-report":  # a variant's rubric has its own history
            return None
        checks = [c.model_dump(mode="json") for c in rubric.checks if not c.id.startswith("title-")]
        description = "The week's tickets by section with blocked reasons, shared with the manager."
        if version == 1:
            checks = [c for c in checks if c["id"] != "no-other-tickets" and not c["id"].startswith("not-last-week-")]
        return load_rubric({"id": rubric.id, "version": version, "description": description, "checks": checks})

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Find the week's tickets and the blockers' reasons, write the document, share it with the manager."""
        path = self._write(env)
        manager = env.call("directory_get_profile", username=env.actor)["manager"]
        env.call("docs_share", document=path, username=manager, permission="view")
        env.call("submit", summary="status report written and shared")

    @staticmethod
    def _write(env: AgentEnv) -> str:
        """Write the report from the week's tickets and the blockers' posts; return its path."""
        m = re.search(r"document (Shared/.+)/([^/]+\.odt) with", env.prompt)
        label = re.search(r"ticket labelled (week-\d+)", env.prompt)
        project = re.search(r"list every ([A-Z][A-Z0-9]*) ticket", env.prompt)
        channel = re.search(r"~(team-[a-z0-9-]+)", env.prompt)
        assert m and label and project and channel
        found = env.call("tickets_search", project=project.group(1), label=label.group(1), limit=100)["tickets"]
        parts: dict[str, list[str]] = {"Done": [], "In progress": [], "Blocked": []}
        for t in sorted(found, key=lambda t: t["key"]):
            section = SECTIONS.get(t["status"])
            if section is None:
                continue
            line = f"{t['key']}: {t['title']}"
            if section == "Blocked":
                posts = env.call("chat_search_posts", text=f"{t['key']} is blocked", channel=channel.group(1))["posts"]
                if posts:  # a ticket blocked before this week may have no post in the channel
                    latest = max(posts, key=lambda p: p["id"])["message"]
                    line += f". Blocked: {latest.split('is blocked: ', 1)[1].rstrip('.')}"
            parts[section].append(line)
        text = "\n\n".join(
            f"# {h}\n\n" + ("\n\n".join(lines) if lines else "Nothing this week.") for h, lines in parts.items()
        )
        return str(env.call("docs_create", name=m.group(2), folder=m.group(1), text=text)["path"])
