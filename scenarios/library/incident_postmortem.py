"""``incident-postmortem-v0``: a team lead writes yesterday's incident postmortem from ~incidents and the tickets.

Setup writes one incident from a single event plan, so every trace agrees: the alert and its thread in ~incidents
(who acknowledged, declared, found the cause, rolled back, resolved), the fix ticket filed by the engineer who
found the cause and moved to done, and the incident commander's notes post (impact, root cause, the fix key, the
action items with their owners). Engineering's postmortem template states the company's time zone (the
headquarters' zone) and the sections. Times in chat are UTC; the postmortem wants local ``HH:MM``.

The agent writes the postmortem as a new document in its department's folder from the template: a timeline line
per event with the local time, impact (requests failed, minutes), root cause, the fix ticket under Resolution,
each action item listed and filed as a ticket in the team's project assigned to its owner; it shares the document
with the incident commander (comment) and posts its path in ~incidents.

Difficulty adds timeline events (4, 5, 7, 9) and action items (1, 2, 3, 4); from 2 an unrelated alert of the same
day sits in ~incidents and must stay out of the postmortem; from 1 owners hand action items over in the notes
thread (0, 1, 2, 3 of them), so those tickets go to the new owners, not to whom the notes first named. The rubric
is dense (one check per event, three per action item); the oracle reads the template and the channel through the
tools and never the params.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from mcp_tools.base import Actor, ToolContext
from mcp_tools.tickets import service as tickets
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library import setup
from worlds.clock import Clock, FixedClock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

TEMPLATE_NAME = "Postmortem template.odt"
TEMPLATE = """# Postmortem template

Copy this structure into a new document for every incident. Write every time in {zone_name} ({zone}), our company
time zone, as 24-hour HH:MM, one timeline line per event. Keep only events of the incident itself.

# Summary

One paragraph: what broke, for whom, for how long.

# Impact

What users saw, how many requests or customers were affected, and for how many minutes.

# Timeline

- HH:MM what happened, and who did it.

# Root cause

Why it happened.

# Resolution

How it was fixed, with the fix ticket's key.

# Action items

One line per action item with its owner and its ticket key. File each one as a ticket in the team's project,
assigned to the owner the incident commander named.

Share the postmortem with the incident commander (comment access) and post its path in ~incidents.
"""
SERVICES = ("checkout API", "search service", "billing sync", "login service", "report exporter")
CAUSES = (
    ("release 4.2 cut the database connection pool from 50 to 5", "Restore the database connection pool size",
     r"connection pool"),
    ("the internal gateway's TLS certificate expired overnight", "Renew the gateway TLS certificate and automate it",
     r"certificate|\bTLS\b"),
    ("a feature flag enabled a cache keyed on the wrong field", "Fix the cache key behind the new feature flag",
     r"cache|feature flag"),
)  # fmt: skip
# (name, role, minutes after the alert, message, what a timeline line must say besides the time)
EVENTS = (
    ("alert", "oncall", 0, "[alert] {service}: error rate above 5% for 5 minutes.", r"alert|error|fired|page"),
    ("ack", "oncall", 4, "Acknowledged, I'm looking at the {service} dashboards.", r"ack|investigat|look"),
    ("declared", "ic", 9, "Declaring a SEV-2 incident for the {service}. I'm incident commander.",
     r"declar|sev|incident commander|\bIC\b"),
    ("cause", "fixer", 17, "Found the cause: {cause}. Filed {key}.", r"cause|found|identif|{cause_kw}"),
    ("status", "ic", 21, "Status page updated: customers see a degraded {service}.", r"status|customer|notif"),
    ("rollback", "fixer", 26, "Rolling back the {service} to the previous release.", r"roll|revert"),
    ("update", "ic", 31, "Customer update posted: the {service} is recovering, next update in 30 minutes.",
     r"update|customer|recover"),
    ("resolved", "oncall", 38, "Error rate is back to normal. Resolved, still watching.",
     r"resolv|recover|normal|mitigat"),
    ("fixed", "fixer", 150, "Permanent fix is deployed ({key}).", r"fix|deploy"),
)  # fmt: skip
PLAN = (
    ("alert", "ack", "rollback", "resolved"),
    ("alert", "ack", "declared", "rollback", "resolved"),
    ("alert", "ack", "declared", "cause", "status", "rollback", "resolved"),
    ("alert", "ack", "declared", "cause", "status", "rollback", "update", "resolved", "fixed"),
)
ACTIONS = (
    "Alert on error rate per release",
    "Add a canary stage to {service} deploys",
    "Write a runbook for {service} rollbacks",
    "Add a status page template for {service} outages",
)
ACTION_COUNT = (1, 2, 3, 4)
HANDOVERS = (0, 1, 2, 3)
"""How many action items their first owner hands over in the notes thread, by difficulty."""
WHY_NOT_ME = (
    "I'm on leave from Monday for two weeks, so I can't take '{title}'.",
    "I'm moving to the platform rotation next sprint, so '{title}' should not sit with me.",
    "I already own three action items from last month's incident; I can't take '{title}' as well.",
)


PROMPTS = (
    "You are {lead_name} (@{lead}), lead of the {team} team. Yesterday's {service} incident is over; its alert, thread"
    " and the incident commander's notes are in ~incidents. Write the postmortem as a new document named '{name}' in"
    " {folder}, following {template}, and do everything the template asks (action item tickets go in {project}). Do"
    " not change anything else. Call the submit tool when you are done.",
    "You are {lead_name} (@{lead}), lead of the {team} team. Yesterday's {service} incident needs its postmortem:"
    " everything that happened is in ~incidents (the alert's thread and the incident commander's notes). Create a"
    " document named '{name}' in {folder}, following {template}, and finish what the template asks for (action item"
    " tickets go in {project}). Change nothing else, then call the submit tool.",
)
"""Phrasings of the task (picked by their own seed stream, so the setup does not move with them)."""


def hhmm(at: datetime, zone: str) -> str:
    """``at`` as 24-hour HH:MM in ``zone``."""
    return at.astimezone(ZoneInfo(zone)).strftime("%H:%M")


class IncidentPostmortem:
    """The ``incident-postmortem-v0`` family."""

    id = "incident-postmortem-v0"
    description = "Team lead writes yesterday's incident postmortem from ~incidents: timeline, cause, action tickets."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the template, the incident's posts and fix ticket, and the notes; return what the postmortem says."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/incident-postmortem")
        sql = Sql.of(session)
        team, project, lead, lead_name, dept, head, people = self._pick(sql, rng)
        now = start_day(session, clock, lead)
        zone, zone_name = self._zone(sql)
        local = now.astimezone(ZoneInfo(zone))
        day = (local - timedelta(days=1)).date()
        start = datetime(day.year, day.month, day.day, 13, tzinfo=ZoneInfo(zone)) + timedelta(
            minutes=int(rng.integers(0, 150))
        )
        service = SERVICES[int(rng.integers(len(SERVICES)))]
        cause, fix_title, cause_kw = CAUSES[int(rng.integers(len(CAUSES)))]
        roles = {"oncall": people[0], "ic": people[2], "fixer": people[1]}
        folder = f"Shared/{dept}"
        template = setup.create_document(
            session, clock, head, folder, TEMPLATE_NAME, TEMPLATE.format(zone=zone, zone_name=zone_name),
            now - timedelta(days=90),
        )  # fmt: skip
        if head != self._id(sql, lead):
            setup.share(sql, int(template["id"]), self._id(sql, lead), "view")
        channel = int(sql.scalar("SELECT id FROM channels WHERE name = 'incidents' ORDER BY id LIMIT 1"))
        for who in (lead, *people):
            setup.ensure_member(sql, channel, self._id(sql, who), now)
        when = {name: start + timedelta(minutes=m) for name, _, m, _, _ in EVENTS}
        key = self._fix_ticket(session, project, roles["fixer"], fix_title, cause, when)
        timeline: list[dict[str, Any]] = []
        root: int | None = None
        for name, role, _, text, pattern in EVENTS:
            if name not in PLAN[difficulty]:
                continue
            message = self._message(name, text).format(service=service, cause=cause, key=key)
            post = self._post(sql, channel, self._id(sql, roles[role]), message, when[name], root)
            root = root or post
            timeline.append(
                {"event": name, "time": hhmm(when[name], zone), "pattern": pattern.format(cause_kw=cause_kw)}
            )
        failed = int(rng.integers(8, 60)) * 25
        minutes = int((when["resolved"] - when["alert"]).total_seconds() // 60)
        order = [people[3], people[0], people[1], people[2]]
        owners = order[: ACTION_COUNT[difficulty]]
        actions = [{"title": ACTIONS[i].format(service=service), "owner": o} for i, o in enumerate(owners)]
        notes = (
            f"Notes for the {service} postmortem. Impact: about {failed:,} requests failed over {minutes} minutes."
            f" {self._notes_cause(cause, key)} Action items:\n"
            + "\n".join(f"- {a['title']} — @{a['owner']}" for a in actions)
        )
        notes_at = when["fixed"] + timedelta(minutes=40)
        notes_id = self._post(sql, channel, self._id(sql, roles["ic"]), notes, notes_at, None)
        for k in range(1, 1 + HANDOVERS[difficulty]):  # the first item always stays with whom the notes named
            moved, new = actions[k], order[(k + 2) % len(order)]
            asked = WHY_NOT_ME[k - 1].format(title=moved["title"]) + f" @{new}, could you?"
            at = notes_at + timedelta(minutes=25 * k)
            self._post(sql, channel, self._id(sql, moved["owner"]), asked, at, notes_id)
            taken = f"Sure, I'll take it: @{new} owns '{moved['title']}' now."
            self._post(sql, channel, self._id(sql, new), taken, at + timedelta(minutes=15), notes_id)
            moved["owner"] = new
        noise: str | None = None
        if difficulty >= 2:
            at = start - timedelta(minutes=int(rng.integers(95, 170)))
            other = SERVICES[(SERVICES.index(service) + 1) % len(SERVICES)]
            self._post(sql, channel, self._id(sql, people[1]), f"[alert] {other}: disk usage above 90% on a build "
                       "runner. Auto-resolved after the nightly cleanup, nothing to do.", at, None)  # fmt: skip
            noise = hhmm(at, zone)
        name = f"Postmortem {day.isoformat()} {service}"
        variants = seeds.rng("scenario/incident-postmortem/prompt")
        prompt = PROMPTS[int(variants.integers(len(PROMPTS)))].format(
            lead_name=lead_name, lead=lead, team=team, service=service, name=name, folder=folder,
            template=f"{folder}/{TEMPLATE_NAME}", project=project,
        )  # fmt: skip
        params = {
            "document": f"{folder}/{name}",
            "project": project,
            "zone": zone,
            "timeline": timeline,
            "impact": {"failed": failed, "minutes": minutes},
            "cause_pattern": cause_kw,
            "fix_key": key,
            "actions": actions,
            "ic": roles["ic"],
            "noise": noise,
        }
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead,
            rubric=self._rubric(params),
            params=params,
            limits=Limits(max_turns=40 + 6 * len(actions), time_budget_s=8 * 3600),
            apps=("chat", "docs", "tickets", "directory"),
            difficulty=difficulty,
        )

    # -- setup helpers ----------------------------------------------------------------------------------

    def _message(self, event: str, text: str) -> str:
        """The template of ``event``'s post in the incident thread (a variant changes what was found)."""
        return text

    def _notes_cause(self, cause: str, key: str) -> str:
        """What the incident commander's notes say about the cause (a variant has none to say)."""
        return f"Root cause: {cause}. Fixed for good in {key}."

    @staticmethod
    def _id(sql: Sql, username: str) -> int:
        return int(sql.scalar("SELECT id FROM employees WHERE username = ?", (username,)))

    @staticmethod
    def _pick(sql: Sql, rng: np.random.Generator) -> tuple[str, str, str, str, str, int, list[str]]:
        """A team lead with an active project of four other active members; its department and head.

        Everyone in the incident is a member of the project, so every action item can be assigned there.
        """
        rows = sql.all(
            "SELECT t.name, p.id, p.key, e.id, e.username, e.first_name || ' ' || e.last_name, d.name, d.head_id"
            " FROM teams t JOIN projects p ON p.team_id = t.id JOIN employees e ON e.id = t.lead_id"
            " JOIN departments d ON d.id = e.department_id WHERE p.status = 'active' AND e.active = ?"
            " AND d.head_id IS NOT NULL ORDER BY t.id, p.id",
            (True,),
        )
        options = []
        for tname, pid, pkey, lead_id, user, name, dept, head in rows:
            mates = sql.all(
                "SELECT e.username FROM project_members m JOIN employees e ON e.id = m.employee_id"
                " WHERE m.project_id = ? AND e.active = ? AND e.id != ? ORDER BY e.id",
                (pid, True, lead_id),
            )
            if len(mates) >= 4:
                options.append((str(tname), str(pkey), str(user), str(name), str(dept), int(head), mates))
        if not options:
            raise ValueError("no team lead with an active project of four other members: world too small")
        team, pkey, user, name, dept, head, mates = options[int(rng.integers(len(options)))]
        picked = [str(mates[int(i)][0]) for i in rng.permutation(len(mates))[:4]]
        return team, pkey, user, name, dept, head, picked

    @staticmethod
    def _zone(sql: Sql) -> tuple[str, str]:
        """The headquarters' IANA zone and how the template names it."""
        row = sql.one(
            "SELECT l.timezone, l.name FROM companies c JOIN locations l ON l.name = c.headquarters ORDER BY c.id"
        )
        if row is None:
            return "UTC", "UTC"
        return str(row[0]), f"{row[1]} time"

    @staticmethod
    def _post(sql: Sql, channel: int, author: int, message: str, at: datetime, root: int | None) -> int:
        return sql.insert(
            "posts",
            {"channel_id": channel, "author_id": author, "root_id": root, "message": message, "created_at": at,
             "edited_at": None, "deleted_at": None, "is_pinned": False},
        )  # fmt: skip

    @staticmethod
    def _fix_ticket(
        session: Session, project: str, fixer: str, title: str, cause: str, when: dict[str, datetime]
    ) -> str:
        """The fix ticket as the engineer filed it when they found the cause, then worked through to done."""
        actor = Actor.load(session, fixer)

        def ctx(at: datetime) -> ToolContext:
            return ToolContext(session=session, actor=actor, clock=FixedClock(at))

        made = tickets.create(
            ctx(when["cause"]), project, title, f"Incident cause: {cause}.", "bug", "critical", fixer, "incident"
        )
        steps = (("todo", 0), ("in_progress", 1), ("in_review", 100), ("done", 130))
        for status, minutes in steps:
            tickets.transition(ctx(when["cause"] + timedelta(minutes=minutes)), made["key"], status)
        return str(made["key"])

    # -- rubric -----------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(p: dict[str, Any]) -> Rubric:
        """A check per timeline event; impact, cause and fix; three per action item; share and post; gates."""
        doc = p["document"]
        checks: list[dict[str, Any]] = []
        for t in p["timeline"]:
            time_rx = rf"(?<![\d:]){re.escape(t['time'])}(?![\d:])"
            checks.append(
                {"id": f"timeline-{t['event']}", "description": f"Timeline: {t['event']} at {t['time']} local time.",
                 "fn": "doc_section_contains", "params": {"document": doc, "heading": "(?i)timeline",
                 "pattern": rf"(?im)^(?=.*{time_rx})(?=.*(?:{t['pattern']})).*$", "only_there": False,
                 "label": f"{t['event']} at {t['time']}"}}
            )  # fmt: skip
        failed = f"{p['impact']['failed']:,}".replace(",", ",?")
        for cid, heading, pattern, label in (
            ("impact-requests", "impact", rf"(?<![\d,]){failed}(?![\d,])", f"{p['impact']['failed']:,} requests"),
            ("impact-minutes", "impact", rf"\b{p['impact']['minutes']}\s*(?:min|minutes)\b", "the minutes"),
            ("root-cause", "root cause", rf"(?i){p['cause_pattern']}", "the root cause"),
            ("fix-key", "resolution", rf"\b{re.escape(p['fix_key'])}\b", p["fix_key"]),
        ):
            checks.append(
                {"id": cid, "description": f"{heading.capitalize()} names {label}.", "fn": "doc_section_contains",
                 "params": {"document": doc, "heading": f"(?i){heading}", "pattern": pattern, "only_there": False,
                            "label": label}}
            )  # fmt: skip
        for k, a in enumerate(p["actions"], 1):
            ref = a["title"].lower()
            checks += [
                {"id": f"action-{k}-listed", "description": f"Action items lists '{a['title']}'.",
                 "fn": "doc_section_contains", "params": {"document": doc, "heading": "(?i)action items",
                 "pattern": rf"(?i){re.escape(a['title'])}", "only_there": False, "label": a["title"]}},
                {"id": f"action-{k}-filed", "description": f"'{a['title']}' is filed once in {p['project']}.",
                 "fn": "ticket_for_reference", "params": {"project": p["project"], "reference": ref}},
                {"id": f"action-{k}-owner", "description": f"'{a['title']}' is assigned to {a['owner']}.",
                 "fn": "ticket_for_reference", "needs": [f"action-{k}-filed"],
                 "params": {"project": p["project"], "reference": ref, "fields": {"assignee": a["owner"]}}},
            ]  # fmt: skip
        checks += [
            {"id": "shared-ic", "description": f"The postmortem is shared with {p['ic']} (comment or more).",
             "fn": "doc_shared_with", "params": {"document": doc, "username": p["ic"], "permission": "comment"}},
            {"id": "posted", "description": "Its path is posted in ~incidents.", "fn": "post_in_channel",
             "params": {"channel": "incidents", "pattern": rf"(?i){re.escape(doc.rsplit('/', 1)[1])}"}},
        ]  # fmt: skip
        if p["noise"] is not None:
            checks.append(
                {"id": "no-unrelated-alert", "description": f"The unrelated {p['noise']} alert is left out.",
                 "fn": "doc_lacks", "params": {"document": doc, "pattern": rf"(?<![\d:]){p['noise']}(?![\d:])",
                 "label": f"the {p['noise']} alert"}}
            )  # fmt: skip
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only the new document, its shares, new tickets and posts.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {
                    "allowed": [
                        *setup.NEW_DOCUMENT_CHANGES,
                        {"table": "projects", "fields": ["next_ticket_number"], "keys": [p["project"]]},
                        {"table": "tickets", "ops": ["insert"]},
                        {"table": "ticket_labels", "ops": ["insert"]},
                        {"table": "ticket_status_changes", "ops": ["insert"]},
                        {"table": "posts", "ops": ["insert"]},
                        {"table": "mentions", "ops": ["insert"]},
                        {"table": "channel_members", "ops": ["insert", "update"]},
                    ]
                },
            }
        )
        return load_rubric(
            {
                "id": "incident-postmortem",
                "version": 1,
                "description": "Yesterday's incident written up from the template: timeline, impact, cause, actions.",
                "checks": checks,
            }
        )

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the template and the incident's thread and notes; write, file, share and post."""
        named = re.search(r"named '(.+?)' in (Shared/\S+), following (Shared/\S+/.+?\.odt)", env.prompt)
        project = re.search(r"tickets go in ([A-Z][A-Z0-9]*)\)", env.prompt)
        service = re.search(r"Yesterday's (.+?) incident", env.prompt)
        assert named and project and service
        name, folder, template = named.groups()
        text = " ".join(" ".join(s["paragraphs"]) for s in env.call("docs_read", document=template)["sections"])
        zone = re.search(r"\(([A-Za-z_]+/[A-Za-z_/]+|UTC)\), our company", text)
        assert zone is not None
        found = env.call("chat_search_posts", text=service.group(1), channel="incidents", limit=30)["posts"]
        # The incident is the latest alert on the service whose thread declared one (an alert that resolved
        # itself, or an older incident of the same service on a world a campaign keeps, is not it).
        alerts = sorted((p for p in found if p["message"].startswith("[alert]")), key=lambda p: -p["id"])
        for alert in alerts:
            thread = env.call("chat_read_thread", post_id=alert["id"])["posts"]
            if any("incident commander" in p["message"] for p in thread):
                break
        notes = max((p for p in found if p["message"].startswith("Notes for") and p["id"] > alert["id"]),
                    key=lambda p: p["id"])  # fmt: skip
        lines = [f"- {self._local(p['at'], zone.group(1))} @{p['author']}: {p['message']}" for p in thread]
        said = notes["message"]
        impact = re.search(r"Impact: (.+?minutes)\.", said)
        assert impact
        cause, resolution = self._cause(said)
        actions = dict((t, o) for t, o in re.findall(r"^- (.+) — @(\S+)$", said, re.M))
        for reply in env.call("chat_read_thread", post_id=notes["id"])["posts"]:
            for owner, title in re.findall(r"@(\S+) owns '(.+?)' now", reply["message"]):
                actions[title] = owner
        keys = {}
        for title, owner in actions.items():
            made = env.call(
                "tickets_create",
                project=project.group(1),
                title=title,
                type="task",
                priority="medium",
                description=f"Action item from the {service.group(1)} postmortem.",
                assignee=owner,
            )
            keys[title] = made["key"]  # fmt: skip
        body = "\n\n".join(
            [
                f"# Summary\n\nThe {service.group(1)} failed yesterday; {impact.group(1)}.",
                f"# Impact\n\n{impact.group(1)}.",
                "# Timeline\n\n" + "\n".join(lines),
                f"# Root cause\n\n{cause}",
                f"# Resolution\n\n{resolution}",
                "# Action items\n\n" + "\n".join(f"- {t} — @{o} ({keys[t]})" for t, o in actions.items()),
            ]
        )
        env.call("docs_create", name=name, folder=folder, text=body)
        path = f"{folder}/{name}"
        env.call("docs_share", document=path, username=str(notes["author"]), permission="comment")
        env.call("chat_post", channel="incidents", message=f"Postmortem of yesterday's {service.group(1)} incident: "
                 f"{path}")  # fmt: skip
        env.call("submit", summary=self._summary(path, len(keys)))

    def _cause(self, notes: str) -> tuple[str, str]:
        """The Root cause and Resolution sections, from the incident commander's notes (a variant's hook)."""
        cause = re.search(r"Root cause: (.+?)\. Fixed for good in (\S+)\.", notes)
        assert cause
        return f"{cause.group(1)}.", f"Rolled back, then fixed for good in {cause.group(2)}."

    def _summary(self, path: str, filed: int) -> str:
        """The submit summary (an impossible variant adds what it could not write)."""
        return f"postmortem written at {path}, {filed} action items filed"

    @staticmethod
    def _local(stamp: str, zone: str) -> str:
        return hhmm(datetime.fromisoformat(stamp.replace("Z", "+00:00")), zone)
