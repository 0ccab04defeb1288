"""``customer-escalation-v0``: work a team lead's inbox of customer problem reports across mail, tickets and chat.

Setup (raw statements, as the apps write): a pinned escalation policy in the team channel (severity words ->
priority), and customer mails in the lead's Inbox, each with a customer reference (``REF-4821``). New
problems must be filed as bugs in the team's project with the reference in the title and the policy's
priority, answered by mail with the new ticket's key, and, when critical, posted in ~incidents with key and
reference. Difficulty (0..3) changes the work:

* the problems (``MIX``): 2, 3, 4 and 3 new ones; from difficulty 2 more of them are not "high" (two low at 2, two
  critical at 3), so filing by habit rather than by the policy's words goes wrong more often;
* follow-ups about problems already tracked (reply with the existing key, file no duplicate): one per difficulty
  level (0, 1, 2, 3), each a mail that looks like a new report but must only be answered;
* 2+: a newsletter that needs nothing and a superseded older policy; 3: an internal mail that needs nothing.

The rubric follows each case by its reference (keys depend on the agent's order); a collateral gate allows
only what the task needs. The oracle reads the policy and the mail through the tools; it never looks at the
hidden params.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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

POLICY_MARKER = "Customer escalation policy"
SEVERITY: dict[str, tuple[str, ...]] = {
    "critical": ("outage", "down", "locked out"),
    "high": ("error", "failing", "broken"),
    "low": ("slow", "typo", "cosmetic"),
}
PROBLEMS: dict[str, tuple[str, ...]] = {
    "critical": (
        "Since 08:00 the dashboard is down for all of our users.",
        "We have an outage: the API returns nothing at all.",
        "Our whole team is locked out of the admin console.",
    ),
    "high": (
        "Exports are failing halfway with no explanation.",
        "The invoice sync is broken since yesterday's release.",
        "Every report download ends in an error page.",
    ),
    "low": (
        "The settings page is slow to open, several seconds.",
        "There is a typo in the footer of the invoice PDF.",
        "A cosmetic glitch: the logo overlaps the menu on small screens.",
    ),
}
# New problems per difficulty (always one critical), and whether the distractors appear.
MIX = (
    ("critical", "high"),
    ("critical", "high", "low"),
    ("critical", "high", "low", "low"),
    ("critical",) * 2 + ("low",),
)


def classify(text: str, rules: Iterable[tuple[str, Iterable[str]]]) -> str:
    """The priority of the first rule with a word found in ``text`` (whole words, any case), else medium."""
    for priority, words in rules:
        if any(re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE) for w in words):
            return priority
    return "medium"


class CustomerEscalation:
    """The ``customer-escalation-v0`` family."""

    id = "customer-escalation-v0"
    description = "Team lead works customer problem mails: file bugs by policy, reply with keys, flag outages."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Post the policy, deliver the customer mails, return the instance with the hidden expectations."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/escalation")
        sql = Sql.of(session)
        team, slug, project_id, project, lead, lead_name, manager = self._pick(sql, rng)
        now = start_day(session, clock, lead)
        channel = sql.scalar("SELECT id FROM channels WHERE name = ? ORDER BY id LIMIT 1", (f"team-{slug}",))
        self._ensure_member(sql, channel, manager, now)
        if difficulty >= 2:
            old = self._policy(project, {"critical": ("outage",), "high": ("slow",), "low": ("typo",)}, old=True)
            self._post(sql, channel, manager, old, now - timedelta(days=20))
        self._post(sql, channel, manager, self._policy(project, SEVERITY), now - timedelta(days=2), pinned=True)

        inbox, lead_box = self._inbox(sql, lead)
        customers = sql.all(
            "SELECT b.id, b.address, b.display_name FROM mailboxes b WHERE b.employee_id IS NULL"
            " AND b.address LIKE '%@customer-%' ORDER BY b.id"
        )
        refs = [f"REF-{n}" for n in rng.choice(np.arange(1000, 10000), size=8, replace=False)]
        cases: list[dict[str, Any]] = []
        minute = 0
        for i, priority in enumerate(MIX[difficulty]):
            box, address, name = customers[int(rng.integers(len(customers)))]
            text = PROBLEMS[priority][int(rng.integers(len(PROBLEMS[priority])))]
            subject = f"Problem report {refs[i]}"
            body = f"Hello {lead_name},\n\n{text}\nOur reference: {refs[i]}.\n\nThanks,\n{name}"
            minute += int(rng.integers(5, 40))
            self._mail(sql, box, lead_box, inbox, subject, body, now - timedelta(hours=3) + timedelta(minutes=minute))
            cases.append({"reference": refs[i], "customer": address, "priority": classify(body, SEVERITY.items())})
        known: dict[str, Any] | None = None
        if difficulty >= 1:
            key = sql.scalar("SELECT key FROM tickets WHERE project_id = ? ORDER BY number LIMIT 1", (project_id,))
            box, address, name = customers[int(rng.integers(len(customers)))]
            body = f"Hi {lead_name},\n\nAny news on {key}? We still see it. Our reference: {refs[7]}.\n\n{name}"
            self._mail(sql, box, lead_box, inbox, f"Follow-up {refs[7]}", body, now - timedelta(minutes=50))
            known = {"reference": refs[7], "customer": address, "key": key}
        follow_ups: list[dict[str, Any]] = []
        if known is not None and difficulty >= 2:
            # More tracked problems asked after (one per level past the first), drawn after everything else so the
            # lower difficulties' worlds stay as they were.
            more = sql.column(
                "SELECT key FROM tickets WHERE project_id = ? ORDER BY number LIMIT ? OFFSET 1",
                (project_id, difficulty - 1),
            )
            for j, key in enumerate(str(k) for k in more):
                box, address, name = customers[int(rng.integers(len(customers)))]
                ref = refs[6 - j]
                body = (
                    f"Hello {lead_name},\n\nIs there an update on {key}? It still happens here. Ref: {ref}.\n\n{name}"
                )
                at = now - timedelta(minutes=95 + 25 * j)
                self._mail(sql, box, lead_box, inbox, f"Still waiting ({ref})", body, at)
                follow_ups.append({"reference": ref, "customer": address, "key": key})
        if difficulty >= 2:
            newsletter = sql.one("SELECT id FROM mailboxes WHERE address LIKE 'support@vendor%' ORDER BY id LIMIT 1")
            if newsletter is not None:
                body = "Our product is down... in price! 20% off all plans this week. No reply needed."
                self._mail(
                    sql, newsletter[0], lead_box, inbox, "Newsletter: November deals", body, now - timedelta(hours=1)
                )
        if difficulty >= 3:
            other = sql.one("SELECT b.id FROM mailboxes b WHERE b.employee_id = ?", (manager,))
            if other is not None:
                body = f"Hi {lead_name}, can you send me the on-call rota for next week? No rush."
                self._mail(sql, other[0], lead_box, inbox, "On-call rota", body, now - timedelta(minutes=20))
        prompt = (
            f"You are {lead_name} (@{lead}), lead of the {team} team. Customers have written to your inbox about "
            f"problems. Work through your unread mail and handle every customer problem report as the "
            f"{POLICY_MARKER.lower()} pinned in ~team-{slug} says. Do not change anything else. Call the submit "
            "tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead,
            rubric=self._rubric(project, cases, known, follow_ups),  # v3; older_rubric rebuilds v1 and v2
            params={
                "project": project,
                "cases": cases,
                "known": known,
                "follow_ups": follow_ups,
                "channel": f"team-{slug}",
            },
            limits=Limits(max_turns=24 + 8 * len(cases) + 4 * len(follow_ups), time_budget_s=8 * 3600),
            apps=("chat", "mail", "tickets"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    @staticmethod
    def _pick(sql: Sql, rng: np.random.Generator) -> tuple[str, str, int, str, str, str, int]:
        """A team lead with an Inbox, an active project of the team, a team channel and an active manager."""
        rows = sql.all(
            "SELECT t.name, t.slug, p.id, p.key, e.username, e.first_name || ' ' || e.last_name, e.manager_id"
            " FROM teams t JOIN projects p ON p.team_id = t.id JOIN employees e ON e.id = t.lead_id"
            " JOIN employees m ON m.id = e.manager_id JOIN mailboxes b ON b.employee_id = e.id"
            " JOIN channels c ON c.name = 'team-' || t.slug"
            " WHERE p.status = 'active' AND e.active = ? AND m.active = ? ORDER BY t.id, p.id",
            (True, True),
        )
        if not rows:
            raise ValueError("no team lead with a mailbox, an active project and a manager: world too small")
        row = rows[int(rng.integers(len(rows)))]
        return row[0], row[1], row[2], row[3], row[4], row[5], int(row[6])

    @staticmethod
    def _policy(project: str, severity: dict[str, tuple[str, ...]], *, old: bool = False) -> str:
        words = "\n".join(f"- {', '.join(repr(w) for w in ws)} -> priority {p}" for p, ws in severity.items())
        head = f"{POLICY_MARKER} (v1, superseded by the pinned one)" if old else f"{POLICY_MARKER} (current)"
        return (
            f"{head} for {project}:\n1) File every NEW problem a customer reports as a bug in {project}, with the "
            "customer's reference (REF-nnnn) in the title.\n2) Priority by the words in the report (first match "
            f"from the top wins; none of them -> medium):\n{words}\n3) Reply to the customer with the ticket key.\n"
            "4) For a critical one, also post in ~incidents with the key and the reference.\n5) A mail about a "
            "problem that already has a ticket: reply with that ticket's key and file nothing new."
        )

    @staticmethod
    def _ensure_member(sql: Sql, channel: int, employee: int, now: datetime) -> None:
        if sql.one("SELECT 1 FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel, employee)):
            return
        values = {"channel_id": channel, "employee_id": employee, "joined_at": now - timedelta(days=30)}
        sql.insert("channel_members", {**values, "last_viewed_at": None})

    @staticmethod
    def _post(sql: Sql, channel: int, author: int, message: str, at: datetime, *, pinned: bool = False) -> None:
        sql.insert(
            "posts",
            {
                "channel_id": channel,
                "author_id": author,
                "root_id": None,
                "message": message,
                "created_at": at,
                "edited_at": None,
                "deleted_at": None,
                "is_pinned": pinned,
            },
        )

    @staticmethod
    def _inbox(sql: Sql, username: str) -> tuple[int, int]:
        """(Inbox folder id, mailbox id) of an employee."""
        row = sql.one(
            "SELECT f.id, b.id FROM mailboxes b JOIN employees e ON e.id = b.employee_id"
            " JOIN mail_folders f ON f.mailbox_id = b.id AND f.name = 'Inbox' WHERE e.username = ?",
            (username,),
        )
        assert row is not None, "the picked lead has a mailbox with an Inbox"
        return int(row[0]), int(row[1])

    @staticmethod
    def _mail(sql: Sql, sender: int, to_box: int, folder: int, subject: str, body: str, at: datetime) -> None:
        """One message in a new thread, delivered unread to ``to_box``'s ``folder``."""
        thread = sql.insert("mail_threads", {"subject": subject, "created_at": at})
        header = f"<setup-{thread}-{sender}@customer.example>"
        message = sql.insert(
            "mail_messages",
            {
                "thread_id": thread,
                "message_id": header,
                "in_reply_to_id": None,
                "sender_mailbox_id": sender,
                "subject": subject,
                "body": body,
                "sent_at": at,
                "attachment_document_ids": [],
            },
        )
        sql.insert("mail_recipients", {"message_id": message, "mailbox_id": to_box, "kind": "to"})
        sql.insert(
            "mail_deliveries",
            {
                "message_id": message,
                "mailbox_id": to_box,
                "folder_id": folder,
                "is_read": False,
                "is_flagged": False,
                "read_at": None,
            },
        )

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(
        project: str,
        cases: list[dict[str, Any]],
        known: dict[str, Any] | None,
        more: list[dict[str, Any]] | None = None,
    ) -> Rubric:
        """Per case every rule of the policy on its own (version 3); the follow-up; the gates.

        The parts of a case: one ticket filed in the project for it, filed as a bug, the reference in its
        title, its priority, the key mailed back, the ~incidents post of a critical one. Version 3 splits
        version 2's ``filed`` part (one new bug naming the reference) into the ticket, its type and its title,
        the first and third rules of the policy, so a task has about 20 checks and an agent that files a task
        instead of a bug, or puts the reference only in the description, loses that part alone. Each case
        still weighs 1; every part needs the one ticket filed for the case, so the no-op agent scores 0.
        """
        return CustomerEscalation._rubric_v2(project, cases, known, split=True, more=more)

    @staticmethod
    def _rubric_v2(
        project: str,
        cases: list[dict[str, Any]],
        known: dict[str, Any] | None,
        *,
        split: bool = False,
        more: list[dict[str, Any]] | None = None,
    ) -> Rubric:
        """Per case each part of the policy on its own; the follow-up; the gates (``split``: version 3).

        The parts: filed as a bug, its priority, the key mailed back, the ~incidents post of a critical one.
        Version 2 splits version 1's one check per case into its parts (each case keeps weight 1), so the
        evidence names the part that went wrong and the partial score rises as each part is done. Every part
        needs the one ticket filed for the case, so the no-op agent still scores exactly 0.
        """
        checks: list[dict[str, Any]] = []
        for case in cases:
            ref, priority = case["reference"], case["priority"]
            base = {"project": project, "reference": ref}
            filed: list[tuple[str, str, dict[str, Any]]] = [
                ("filed", f"{ref}: exactly one new bug in {project} names it.", {"fields": {"type": "bug"}}),
            ]
            if split:
                filed = [
                    ("filed", f"{ref}: exactly one new ticket in {project} names it.", {}),
                    ("bug", f"{ref}: its ticket is filed as a bug.", {"fields": {"type": "bug"}}),
                    ("title", f"{ref}: its ticket's title names {ref}.", {"in_title": True}),
                ]
            parts: list[tuple[str, str, dict[str, Any]]] = [
                *filed,
                ("priority", f"{ref}: its ticket has priority {priority}.", {"fields": {"priority": priority}}),
                (
                    "reply",
                    f"{ref}: a mail to {case['customer']} gives the ticket's key.",
                    {"reply_to": case["customer"]},
                ),
            ]
            if priority == "critical":
                parts.append(
                    (
                        "incident",
                        f"{ref}: the key and {ref} are posted in ~incidents.",
                        {"incident_channel": "incidents"},
                    )
                )
            checks += [
                {
                    "id": f"{part}-{ref}",
                    "description": description,
                    "weight": 1 / len(parts),
                    "fn": "ticket_for_reference",
                    "params": {**base, **extra},
                }
                for part, description, extra in parts
            ]
        checks += CustomerEscalation._tail(project, known, more or [])
        provenance = "v2: each case's policy parts checked one by one (dense), a case still weighs 1"
        if split:
            provenance = "v3: a case's filing split into the ticket, its type and its title (rules 1 and 3)"
        return load_rubric(
            {
                "id": "customer-escalation",
                "version": 3 if split else 2,
                "description": "Handle customer problem mails by the pinned escalation policy.",
                "checks": checks,
                "provenance": provenance,
            }
        )

    @staticmethod
    def older_rubric(instance: ScenarioInstance, version: int) -> Rubric | None:
        """Versions 1 (one check per case) and 2 (filing as one part), rebuilt from the hidden params."""
        p = instance.params
        if version == 2:
            return CustomerEscalation._rubric_v2(p["project"], list(p["cases"]), p["known"], more=p.get("follow_ups"))
        if version != 1:
            return None
        return CustomerEscalation._rubric_v1(p["project"], list(p["cases"]), p["known"], p.get("follow_ups") or [])

    @staticmethod
    def _rubric_v1(
        project: str, cases: list[dict[str, Any]], known: dict[str, Any] | None, more: list[dict[str, Any]]
    ) -> Rubric:
        """One check per case (ticket + reply [+ incident post]); the follow-up; a collateral gate.

        Every scored check needs something new from the agent, so the no-op agent scores exactly 0.
        """
        checks: list[dict[str, Any]] = []
        for case in cases:
            params: dict[str, Any] = {
                "project": project,
                "reference": case["reference"],
                "fields": {"priority": case["priority"], "type": "bug"},
                "reply_to": case["customer"],
            }
            if case["priority"] == "critical":
                params["incident_channel"] = "incidents"
            checks.append(
                {
                    "id": f"case-{case['reference']}",
                    "description": f"{case['reference']}: one {case['priority']} bug in {project}, key mailed back"
                    + (", posted in ~incidents" if case["priority"] == "critical" else ""),
                    "weight": 1,
                    "fn": "ticket_for_reference",
                    "params": params,
                }
            )
        checks += CustomerEscalation._tail(project, known, more)
        return load_rubric(
            {
                "id": "customer-escalation",
                "version": 1,
                "description": "Handle customer problem mails by the pinned escalation policy.",
                "checks": checks,
            }
        )

    @staticmethod
    def _tail(project: str, known: dict[str, Any] | None, more: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each follow-up of an already tracked case (mail its key, file no duplicate) and the collateral gate."""
        checks: list[dict[str, Any]] = []
        for case in [k for k in (known, *more) if k is not None]:
            checks.append(
                {
                    "id": f"follow-up-{case['reference']}",
                    "description": f"The follow-up {case['reference']} gets {case['key']} by mail.",
                    "weight": 0.5,
                    "fn": "mail_sent",
                    "params": {"to": case["customer"], "body_pattern": rf"\b{re.escape(case['key'])}\b"},
                }
            )
            checks.append(
                {
                    "id": f"no-duplicate-{case['reference']}",
                    "description": f"No new ticket for the already tracked {case['reference']}.",
                    "weight": 1,
                    "must": True,
                    "fn": "no_ticket_for_reference",
                    "params": {"reference": case["reference"]},
                }
            )
        mail_tables = ("mail_threads", "mail_messages", "mail_recipients", "mail_deliveries", "mailboxes")
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only new tickets, mail, posts and read/flag marks on the agent's own mail.",
                "weight": 1,
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        {"table": "projects", "fields": ["next_ticket_number"], "keys": [project]},
                        {"table": "tickets", "ops": ["insert"]},
                        {"table": "ticket_labels", "ops": ["insert"]},
                        {"table": "ticket_status_changes", "ops": ["insert"]},
                        *({"table": t, "ops": ["insert"]} for t in mail_tables),
                        {"table": "mail_deliveries", "fields": ["is_read", "read_at", "is_flagged", "folder_id"]},
                        {"table": "mail_folders", "ops": ["insert"]},
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "channel_members", "ops": ["insert"]},
                    ]
                },
            }
        )
        return checks

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the pinned policy, then each unread mail: file, reply, flag outages; reply to follow-ups."""
        channel = re.search(r"~(team-[a-z0-9-]+)", env.prompt)
        assert channel is not None
        found = env.call("chat_search_posts", text=POLICY_MARKER, channel=channel.group(1), limit=20)
        policy = next(p["message"] for p in found["posts"] if "(current)" in p["message"])
        project = re.search(r"as a bug in ([A-Z][A-Z0-9]*)", policy)
        assert project is not None
        rules = [(p, re.findall(r"'([^']+)'", words)) for words, p in re.findall(r"- (.+) -> priority (\w+)", policy)]
        inbox = env.call("mail_list_messages", folder="Inbox", unread_only=True, limit=100)
        incidents: list[int] = []
        for summary in sorted(inbox["messages"], key=lambda m: m["id"]):
            mail = env.call("mail_read_message", message_id=summary["id"])
            incidents += self._handle(env, mail, project.group(1), rules)
            # Reading leaves a message unread; marking it keeps tomorrow's unread mail to tomorrow's work
            # (on a persistent world, a campaign's next episode starts from this inbox).
            env.call("mail_mark_read", message_id=mail["id"], read=True)
        self._see_incidents_taken(env, incidents)
        env.call("submit", summary=self._summary())

    @staticmethod
    def _see_incidents_taken(env: AgentEnv, posts: list[int], rounds: int = 2, minutes: int = 60) -> None:
        """Before leaving, make sure a teammate answered each outage thread; wait a little if not.

        The rubric does not ask for it (nobody may be awake); a lead who posts an outage checks it is picked up,
        and that waiting is what lets coworkers answer within the episode.
        """
        for k in range(rounds + 1):
            open_ = [p for p in posts if len(env.call("chat_read_thread", post_id=p)["posts"]) < 2]
            if not open_ or k == rounds:
                return
            env.call("wait", minutes=minutes)
            posts = open_

    def _handle(
        self, env: AgentEnv, mail: dict[str, Any], project: str, rules: list[tuple[str, list[str]]]
    ) -> list[int]:
        """File, answer and flag one customer mail as the policy says (other mail needs nothing); the posts."""
        ref = re.search(r"\bREF-\d{4}\b", mail["body"])
        if ref is None:
            return []  # newsletters and internal mail: nothing to do
        tracked = re.search(rf"\b{project}-\d+\b", mail["body"])
        if tracked is not None:
            if self._tracked(env, mail, tracked.group(0)):
                env.call("mail_reply", message_id=mail["id"], body=f"This is tracked as {tracked.group(0)}.")
            return []
        priority = classify(mail["body"], rules)
        title = f"{ref.group(0)}: {mail['subject']}"
        made = env.call(
            "tickets_create", project=project, title=title, description=mail["body"], type="bug", priority=priority
        )
        env.call("mail_reply", message_id=mail["id"], body=f"Thank you. We track this as {made['key']}.")
        if priority == "critical":
            post = env.call(
                "chat_post", channel="incidents", message=f"{made['key']} ({ref.group(0)}): {mail['subject']}"
            )
            return [int(post["id"])]
        return []

    def _tracked(self, env: AgentEnv, mail: dict[str, Any], key: str) -> bool:
        """Whether a follow-up's key is one to mail back (the policy's follow-ups name real tickets)."""
        return True

    def _summary(self) -> str:
        return "customer mail handled"
