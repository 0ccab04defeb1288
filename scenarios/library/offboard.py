"""``offboard-leaver-v0``: a team lead offboards a report who leaves on Friday, by the People checklist.

Setup: one of the lead's direct reports has resigned and leaves on Friday; People Ops mails the lead, and the
offboarding checklist (written by the head of People) is a document in the People folder. The team channel has
a pinned post naming each component's owner. The lead revokes the live access grants the leaver holds (but not
the grant of the team's shared pager service account, which the leaver set up and which names them: the
checklist says service accounts keep theirs), removes the leaver from the team's channels, reassigns every open
ticket assigned to the leaver to its component's owner (to the lead when it has no component or the leaver
owned it), cancels the meetings the lead organises with the leaver alone, and mails People Ops a handover
summary with one line per reassigned ticket.

Difficulty changes the work: new tickets for the leaver (4, 5, 7, 9) and grants (1, 2, 2, 3); the team's
private channels (0, 1, 2, 3 of them: on-call, incidents, customer escalations) and the service account's grants
that name the leaver, the trap (0, 1, 2, 3 of them); at 1+ a ticket with no component; at 2+ a ticket whose
component the leaver owned (it goes to the lead); at 3 a done ticket of the leaver's (it stays) and a one-off
career check-in to cancel.

The rubric: per open ticket its new assignee and its handover line, per grant its revocation, per channel the
removal, per meeting its cancellation, the service account's grant kept, and a gate allowing only that work
(keyed to those tickets, grants and meetings). The oracle reads the mail, the checklist, the owners post, the
grants, the channels and the calendar through the tools; it never reads the params.
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
from mcp_tools.calendar.slots import occurrences
from scenarios.base import AgentEnv, Limits, ScenarioInstance, ToolFailed, WorldDefaults, start_day
from scenarios.library import setup
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds
from worlds.workflow import TERMINAL_STATUSES

CHECKLIST_NAME = "Offboarding checklist.odt"
CHECKLIST = """# Offboarding checklist

The leaver's manager works through this list before the leaver's last day, so that nothing they held is left
open and nobody is left waiting on them. People Ops mails you when someone resigns.

# Access

1. Revoke every live access grant the leaver holds (the directory lists your reports' grants). Grants held by
the team's shared service accounts (usernames starting with svc-) stay, even when the leaver set them up or is
named in them: the pager rotation reads through them, and revoking one means nobody is phoned at night.

# Chat

2. Remove the leaver from the team's channels: the team channel (team- and the team's short name), the team's
private channels (they start with the team's short name) and every project channel (proj- and a project key)
you are both in. Company-wide channels such as town-square stay: deactivating the account hides them.

# Tickets

3. Reassign every open ticket assigned to the leaver to the owner of its component, as listed in the component
owners post in the team channel; a ticket's component is its label. A ticket with no component, or whose
component the leaver owned, goes to you, the manager, until you name a new owner. Done and won't-do tickets
stay as they are, for the record.

# Calendar

4. Cancel the meetings you organise with the leaver alone (1:1s, check-ins) that are still to come. Meetings
with other people stay: the leaver's invitation lapses with their account.

# Handover

5. Mail People Ops (whoever told you about the departure) a handover summary: one line per reassigned ticket,
with its key and its new assignee as @username.
"""
COMPONENTS = ("backend", "frontend", "security", "performance", "ux")
WORK = {
    "backend": ("Retry queue drops messages after a restart", "Paginate the export endpoint"),
    "frontend": ("Settings page loses unsaved changes", "Dark mode contrast on the dashboard"),
    "security": ("Rotate the signing keys before the audit", "Session cookie lacks SameSite"),
    "performance": ("Search takes 4s on large accounts", "Cache the permissions lookup"),
    "ux": ("Onboarding tour skips the last step", "Error text on the invite form is unclear"),
    "": ("Write up the Q3 incident review", "Clean up the stale feature flags"),
}
NEW_TICKETS = (4, 5, 7, 9)
GRANTS = (1, 2, 2, 3)
SERVICE_GRANTS = (0, 1, 2, 3)
"""Grants the team's pager service account holds that name the leaver (they stay), by difficulty."""
PRIVATE = (("oncall", "Pages and escalations"), ("incidents", "Incident follow-ups"), ("customers", "Customer cases"))
"""The team's own private channels (name suffix, purpose); difficulty d has the first d of them."""
WINDOW = timedelta(days=28)
"""How far ahead "still to come" looks: the oracle lists four weeks of the lead's calendar."""


class OffboardLeaver:
    """The ``offboard-leaver-v0`` family."""

    id = "offboard-leaver-v0"
    description = "Team lead offboards a leaver by the checklist: grants, channels, tickets by owner, 1:1s, handover."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Write the owners post, the leaver's tickets, grants and the People mail; return what each item expects."""
        difficulty = max(0, min(3, difficulty))
        rng = seeds.rng("scenario/offboard")
        sql = Sql.of(session)
        team_id, slug, project, pkey, lead, lead_user, lead_name, reports = self._team(sql, rng)
        now = start_day(session, clock, lead_user)
        leaver, leaver_user = reports[int(rng.integers(len(reports)))]
        others = [(i, u) for i, u in reports if i != leaver]
        owners: dict[str, str] = {}
        ids = {u: i for i, u in reports} | {lead_user: lead}
        for k, component in enumerate(COMPONENTS):
            owners[component] = others[(k + int(rng.integers(len(others)))) % len(others)][1]
        own = COMPONENTS[int(rng.integers(len(COMPONENTS)))]
        if difficulty >= 2:
            owners[own] = leaver_user
        hr = sql.one(
            "SELECT e.id, e.username, e.first_name, e.department_id FROM employees e JOIN employee_roles r ON"
            " r.employee_id = e.id WHERE r.role = 'hr' AND e.active = ? AND e.id NOT IN (?, ?) ORDER BY e.id LIMIT 1",
            (True, lead, leaver),
        )
        if hr is None:
            raise ValueError("no active hr person to mail about the departure: world too small")
        channel = sql.scalar("SELECT id FROM channels WHERE name = ?", (f"team-{slug}",))
        lines = "\n".join(f"- {c}: @{owners[c]}" for c in COMPONENTS)
        setup.post(sql, int(channel), lead, f"Component owners for the team (ask them first, they decide):\n{lines}",
                   now - timedelta(days=40), pinned=True)  # fmt: skip
        self._tickets(sql, rng, difficulty, project, pkey, leaver, lead, own, now)
        grants = self._grants(sql, rng, difficulty, leaver, leaver_user, lead, team_id, slug, int(hr[0]), now)
        channels = [f"team-{slug}"]
        for suffix, purpose in PRIVATE[:difficulty]:
            private = self._private(sql, f"{slug}-{suffix}", purpose, lead, now)
            for member in (lead, *(i for i, _ in reports)):
                setup.ensure_member(sql, private, member, now)
            channels.append(f"{slug}-{suffix}")
        proj_channel = sql.scalar("SELECT id FROM channels WHERE name = ?", (f"proj-{pkey.lower()}",))
        if proj_channel is not None:
            for member in (lead, leaver):
                setup.ensure_member(sql, int(proj_channel), member, now)
        channels += [
            str(n)
            for (n,) in sql.all(
                "SELECT c.name FROM channels c WHERE c.name LIKE 'proj-%' AND EXISTS (SELECT 1 FROM channel_members m"
                " WHERE m.channel_id = c.id AND m.employee_id = ?) AND EXISTS (SELECT 1 FROM channel_members m WHERE"
                " m.channel_id = c.id AND m.employee_id = ?) ORDER BY c.name",
                (lead, leaver),
            )
        ]
        if difficulty >= 3:
            self._check_in(sql, lead, leaver, now)
        friday = now.astimezone(ZoneInfo(self._zone(sql, lead))).date()
        friday += timedelta(days=(4 - friday.weekday()) % 7)
        folder = self._checklist(session, sql, clock, int(hr[3]), int(hr[0]), lead, now)
        leaver_name = str(sql.scalar("SELECT first_name || ' ' || last_name FROM employees WHERE id = ?", (leaver,)))
        body = (
            f"Hi {lead_name.split()[0]},\n\n{leaver_name} (@{leaver_user}) has resigned; their last day is Friday "
            f"{friday.isoformat()}. Could you work through the offboarding checklist ({folder}/{CHECKLIST_NAME}) "
            f"before then, and send me the handover summary?\n\nThanks,\n{hr[2]}"
        )
        inbox, hr_box = setup.inbox(sql, lead), setup.inbox(sql, int(hr[0]))
        assert inbox is not None and hr_box is not None
        setup.mail(sql, hr_box[1], inbox[1], inbox[0], f"Leaver: {leaver_name} ({friday.isoformat()})", body,
                   now - timedelta(hours=20))  # fmt: skip
        tickets = self._expected_tickets(sql, leaver, lead_user, owners)
        for key, who in tickets.items():  # the new assignee must be able to carry it: a member of its project
            pid = sql.scalar("SELECT project_id FROM tickets WHERE key = ?", (key,))
            if (
                sql.one("SELECT 1 FROM project_members WHERE project_id = ? AND employee_id = ?", (pid, ids[who]))
                is None
            ):
                sql.insert("project_members", {"project_id": pid, "employee_id": ids[who], "role": "member"})
        params: dict[str, Any] = {
            "lead": lead_user,
            "leaver": leaver_user,
            "leaver_id": leaver,
            "hr": str(hr[1]),
            "tickets": tickets,
            "kept_tickets": self._kept_tickets(sql, leaver),
            "grants": [g for g, keep in grants if not keep],
            "kept_grants": [g for g, keep in grants if keep],
            "channels": channels,
            "meetings": self._meetings(sql, lead, leaver, now),
        }
        prompt = (
            f"You are {lead_name} (@{lead_user}), lead of your team. One of your reports is leaving on Friday; People "
            f"Ops mailed you who. Work through the offboarding checklist in {folder}/{CHECKLIST_NAME} for them. Do "
            "not change anything else. Call the submit tool when you are done."
        )
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=prompt,
            actor=lead_user,
            rubric=self._rubric(params),
            params=params,
            limits=Limits(max_turns=100),
            apps=("calendar", "chat", "directory", "docs", "mail", "tickets"),
            difficulty=difficulty,
        )

    # -- setup --------------------------------------------------------------------------------------------

    @staticmethod
    def _team(sql: Sql, rng: np.random.Generator) -> tuple[int, str, int, str, int, str, str, list[tuple[int, str]]]:
        """A team with an active project its lead belongs to, and three or more active direct reports in it."""
        rows = sql.all(
            "SELECT t.id, t.slug, p.id, p.key, e.id, e.username, e.first_name || ' ' || e.last_name FROM teams t"
            " JOIN projects p ON p.team_id = t.id JOIN employees e ON e.id = t.lead_id JOIN project_members pm ON"
            " pm.project_id = p.id AND pm.employee_id = e.id JOIN mailboxes b ON b.employee_id = e.id"
            " JOIN channels c ON c.name = 'team-' || t.slug WHERE p.status = 'active' AND e.active = ?"
            " ORDER BY t.id, p.id",
            (True,),
        )
        picks = []
        for r in rows:
            reports = [
                (int(i), str(u))
                for i, u in sql.all(
                    "SELECT id, username FROM employees WHERE manager_id = ? AND team_id = ? AND active = ?"
                    " AND username NOT LIKE 'svc-%' ORDER BY id",  # a service account is no one who can leave
                    (r[4], r[0], True),
                )
            ]
            if len(reports) >= 3:
                picks.append((int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[4]), str(r[5]), str(r[6]), reports))
        if not picks:
            raise ValueError("no team lead with three active reports on an active project: world too small")
        return picks[int(rng.integers(len(picks)))]

    @staticmethod
    def _zone(sql: Sql, employee: int) -> str:
        return str(sql.scalar("SELECT timezone FROM employees WHERE id = ?", (employee,)))

    @staticmethod
    def _tickets(
        sql: Sql, rng: np.random.Generator, difficulty: int, project: int, pkey: str, leaver: int, lead: int,
        own: str, now: datetime,
    ) -> None:  # fmt: skip
        """The leaver's new open tickets: components owned by others, then no component, the leaver's own, done."""
        plan: list[tuple[str, str]] = []
        pool = [c for c in COMPONENTS if c != own]
        for k in range(NEW_TICKETS[difficulty] - (difficulty >= 1) - (difficulty >= 2) - (difficulty >= 3)):
            plan.append((pool[(k + int(rng.integers(len(pool)))) % len(pool)], "in_progress" if k % 2 else "todo"))
        if difficulty >= 1:
            plan.append(("", "todo"))
        if difficulty >= 2:
            plan.append((own, "in_progress"))
        if difficulty >= 3:
            plan.append((pool[0], "done"))
        path = {"todo": ["backlog", "todo"], "in_progress": ["backlog", "todo", "in_progress"],
                "done": ["backlog", "todo", "in_progress", "done"]}  # fmt: skip
        for k, (component, status) in enumerate(plan):
            titles = WORK[component]
            title = titles[(k + int(rng.integers(len(titles)))) % len(titles)]
            number = int(sql.scalar("SELECT next_ticket_number FROM projects WHERE id = ?", (project,)))
            sql.update("projects", project, {"next_ticket_number": (number, number + 1)})
            created = now - timedelta(days=12 - k)
            tid = sql.insert(
                "tickets",
                {"key": f"{pkey}-{number}", "project_id": project, "number": number, "type": "task", "title": title,
                 "description": f"{title}. Picked up in planning.", "status": status, "priority": "medium",
                 "assignee_id": leaver, "reporter_id": lead, "sprint_id": None, "story_points": None,
                 "created_at": created, "updated_at": created + timedelta(days=1),
                 "resolved_at": created + timedelta(days=2) if status in TERMINAL_STATUSES else None},
            )  # fmt: skip
            steps = path[status]
            for i, to in enumerate(steps):
                sql.insert("ticket_status_changes", {"ticket_id": tid, "from_status": steps[i - 1] if i else None,
                                                     "to_status": to, "actor_id": lead if i < 2 else leaver,
                                                     "changed_at": created + timedelta(hours=i)})  # fmt: skip
            if component:
                sql.insert("ticket_labels", {"ticket_id": tid, "label": component})

    @staticmethod
    def _grants(
        sql: Sql, rng: np.random.Generator, difficulty: int, leaver: int, leaver_user: str, lead: int, team: int,
        slug: str, hr: int, now: datetime,
    ) -> list[tuple[int, bool]]:  # fmt: skip
        """The leaver's live grants and the service account's grants that name them (to keep): (id, keep)."""
        subjects = [
            int(i)
            for (i,) in sql.all(
                "SELECT id FROM employees WHERE active = ? AND id NOT IN (?, ?) AND manager_id IS NOT NULL ORDER BY id",
                (True, leaver, lead),
            )
        ]
        reasons = ("On-call rotation: I need a number for out-of-hours pages.", "Preparing the offsite travel list.",
                   "Covering for the team lead during the salary review.")  # fmt: skip
        fields = ("personal_contact", "personal_contact", "salary")
        out: list[tuple[int, bool]] = []
        for k in range(GRANTS[difficulty]):
            subject = subjects[(k * 7 + int(rng.integers(len(subjects)))) % len(subjects)]
            decided = now - timedelta(days=2 + k)
            rid = sql.insert(
                "access_requests",
                {"requester_id": leaver, "subject_id": subject, "owner_id": hr, "field": fields[k],
                 "reason": reasons[k], "status": "approved", "created_at": decided - timedelta(hours=3),
                 "decided_at": decided, "expires_at": decided + timedelta(days=7)},
            )  # fmt: skip
            out.append((rid, False))
        if SERVICE_GRANTS[difficulty]:
            row = sql.one("SELECT department_id, location_id, timezone, email FROM employees WHERE id = ?", (lead,))
            name = f"svc-{slug}-pager"
            found = sql.scalar("SELECT id FROM employees WHERE username = ?", (name,))  # an earlier day's (campaign)
            svc = int(found) if found is not None else sql.insert(
                "employees",
                {"first_name": "Pager", "last_name": "Bot", "username": name,
                 "email": f"{name}@{str(row[3]).split('@', 1)[1]}", "title": "Service account (pager rotation)",
                 "level": "IC1", "manager_id": lead, "department_id": row[0], "team_id": team, "location_id": row[1],
                 "timezone": row[2], "work_start_minute": 0, "work_end_minute": 1439, "workdays": "1111111",
                 "skills": [], "hire_date": (now - timedelta(days=200)).date(), "active": True},
            )  # fmt: skip
            for k in range(SERVICE_GRANTS[difficulty]):  # one per person in the rotation the bot phones
                decided = now - timedelta(days=1, hours=k)
                rid = sql.insert(
                    "access_requests",
                    {"requester_id": svc, "subject_id": subjects[(k * 5) % len(subjects)], "owner_id": hr,
                     "field": "personal_contact", "reason": f"Pager rotation: set up by @{leaver_user} so the on-call"
                     " bot can phone whoever is on call.", "status": "approved",
                     "created_at": decided - timedelta(hours=2), "decided_at": decided,
                     "expires_at": decided + timedelta(days=7)},
                )  # fmt: skip
                out.append((rid, True))
        return out

    @staticmethod
    def _private(sql: Sql, name: str, purpose: str, creator: int, now: datetime) -> int:
        found = sql.scalar("SELECT id FROM channels WHERE name = ?", (name,))
        if found is not None:
            return int(found)
        team = sql.scalar("SELECT id FROM chat_teams ORDER BY id LIMIT 1")
        return sql.insert(
            "channels",
            {"team_id": team, "name": name, "display_name": name, "type": "P", "purpose": purpose,
             "header": "", "creator_id": creator, "created_at": now - timedelta(days=300)},
        )  # fmt: skip

    @staticmethod
    def _check_in(sql: Sql, lead: int, leaver: int, now: datetime) -> None:
        """A one-off career check-in the lead booked with the leaver for next week."""
        start = now + timedelta(days=7, hours=2)
        eid = sql.insert(
            "events",
            {"title": "Career check-in", "description": "Growth plan for next half.", "organizer_id": lead,
             "start_at": start, "end_at": start + timedelta(minutes=30), "room_id": None, "rrule": None,
             "until": None, "cancelled": False, "created_at": now - timedelta(days=10)},
        )  # fmt: skip
        sql.insert("event_attendees", {"event_id": eid, "employee_id": leaver, "rsvp": "accepted", "optional": False})

    @staticmethod
    def _checklist(session: Session, sql: Sql, clock: Clock, department: int, hr: int, lead: int, now: datetime) -> str:
        """The checklist in the People folder, written by the head of People, readable by the lead."""
        row = sql.one("SELECT name, head_id FROM departments WHERE id = ?", (department,))
        head = int(row[1]) if row[1] is not None else hr
        folder = f"Shared/{row[0]}"
        doc = setup.create_document(session, clock, head, folder, CHECKLIST_NAME, CHECKLIST, now - timedelta(days=90))
        if head != lead:
            setup.share(sql, int(doc["id"]), lead, "view")
        return folder

    # -- expectations ---------------------------------------------------------------------------------------

    @staticmethod
    def _expected_tickets(sql: Sql, leaver: int, lead: str, owners: dict[str, str]) -> dict[str, str]:
        """Every open ticket of the leaver's (setup's and history's) -> its new assignee by the checklist."""
        out: dict[str, str] = {}
        for key, labels in sql.all(
            "SELECT t.key, (SELECT group_concat(l.label, ',') FROM ticket_labels l WHERE l.ticket_id = t.id) FROM"
            " tickets t WHERE t.assignee_id = ? AND t.status NOT IN ('done', 'wont_do') ORDER BY t.id",
            (leaver,),
        ):
            components = sorted(c for c in str(labels or "").split(",") if c in owners)
            leaver_user = str(sql.scalar("SELECT username FROM employees WHERE id = ?", (leaver,)))
            owner = owners[components[0]] if components else lead
            out[str(key)] = lead if owner == leaver_user else owner
        return out

    @staticmethod
    def _kept_tickets(sql: Sql, leaver: int) -> list[str]:
        return [str(k) for (k,) in sql.all(
            "SELECT key FROM tickets WHERE assignee_id = ? AND status IN ('done', 'wont_do') ORDER BY id", (leaver,)
        )]  # fmt: skip

    @staticmethod
    def _meetings(sql: Sql, lead: int, leaver: int, now: datetime) -> list[int]:
        """Live events the lead organises with the leaver as the only attendee, with an occurrence in the window."""
        out = []
        for eid, start, end, rule, until in sql.all(
            "SELECT e.id, e.start_at, e.end_at, e.rrule, e.until FROM events e WHERE e.organizer_id = ? AND"
            " e.cancelled = ? AND (SELECT count(a.id) FROM event_attendees a WHERE a.event_id = e.id AND"
            " a.employee_id <> e.organizer_id) = 1 AND"
            " EXISTS (SELECT 1 FROM event_attendees a WHERE a.event_id = e.id AND a.employee_id = ?) ORDER BY e.id",
            (lead, False, leaver),
        ):
            if occurrences(_aware(start), _aware(end), rule, _aware(until) if until else None, now, now + WINDOW):
                out.append(int(eid))
        return out

    # -- rubric ---------------------------------------------------------------------------------------------

    @staticmethod
    def _rubric(p: dict[str, Any]) -> Rubric:
        """Per ticket (assignee, handover line), per grant, per channel, per meeting; the kept grant; a gate."""
        leaver = p["leaver"]
        checks: list[dict[str, Any]] = []
        for key, who in p["tickets"].items():
            checks += [
                {
                    "id": f"assign-{key}",
                    "description": f"{key} is reassigned from @{leaver} to @{who}.",
                    "fn": "ticket_field_equals",
                    "params": {"key": key, "field": "assignee", "value": who},
                },
                {
                    "id": f"handover-{key}",
                    "description": f"The handover mail to @{p['hr']} has a line naming {key} and @{who}.",
                    "fn": "mail_sent",
                    "params": {"to": [p["hr"]], "body_pattern": rf"(?m)^.*\b{re.escape(key)}\b.*@{re.escape(who)}\b"},
                },
            ]
        checks += [
            {
                "id": f"revoke-{g}",
                "description": f"@{leaver}'s grant {g} is revoked.",
                "fn": "row_exists",
                "params": {"table": "access_requests", "where": {"id": g, "status": "revoked"}},
            }
            for g in p["grants"]
        ]
        checks += [
            {
                "id": f"keep-{g}",
                "description": f"The service account's grant {g}, which names @{leaver}, is left approved.",
                "fn": "row_exists",
                "params": {"table": "access_requests", "where": {"id": g, "status": "approved"}, "scope": "any"},
                "weight": 3,
                "needs": [f"revoke-{p['grants'][0]}"],
            }
            for g in p["kept_grants"]
        ]
        checks += [
            {
                "id": f"removed-{c}",
                "description": f"@{leaver} is no longer a member of {c}.",
                "fn": "channel_member",
                "params": {"channel": c, "username": leaver, "member": False},
            }
            for c in p["channels"]
        ]
        checks += [
            {
                "id": f"cancel-{m}",
                "description": f"Meeting {m} (the lead with @{leaver} alone) is cancelled.",
                "fn": "row_exists",
                "params": {"table": "events", "where": {"id": m, "cancelled": True}},
            }
            for m in p["meetings"]
        ]
        allowed: list[dict[str, Any]] = [
            {"table": "tickets", "fields": ["assignee_id", "updated_at"], "keys": list(p["tickets"])},
            # The service account's grant may change here: its own weighted check, not the gate, scores revoking it.
            {"table": "access_requests", "fields": ["status", "expires_at"], "keys": [*p["grants"], *p["kept_grants"]]},
            {"table": "events", "fields": ["cancelled"], "keys": list(p["meetings"])},
            {"table": "channel_members", "ops": ["delete", "update"]},
            {"table": "channel_members", "ops": ["insert"]},
            {"table": "channels", "ops": ["insert"]},
            {"table": "posts", "ops": ["insert"]},
            {"table": "mentions", "ops": ["insert"]},
            {"table": "mail_threads", "ops": ["insert"]},
            {"table": "mail_messages", "ops": ["insert"]},
            {"table": "mail_recipients", "ops": ["insert"]},
            {"table": "mail_deliveries", "ops": ["insert"]},
            {"table": "mail_deliveries", "fields": ["is_read", "read_at"]},
        ]
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only the leaver's open tickets, grants, 1:1s and memberships, and mail and messages.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": allowed},
            }
        )
        return load_rubric(
            {
                "id": "offboard-leaver",
                "version": 1,
                "description": "Every offboarding item done for the leaver by the checklist, and nothing else.",
                "checks": checks,
            }
        )

    # -- oracle ---------------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Read the mail, checklist and owners post; revoke, remove, reassign, cancel, then mail the handover."""
        path = re.search(r"checklist in (Shared/\S+/.+?\.odt)", env.prompt)
        assert path
        env.call("docs_read", document=path.group(1))
        found = env.call("mail_search", text="Leaver:", limit=5)["messages"][0]
        body = str(env.call("mail_read_message", message_id=found["id"])["body"])
        match = re.search(r"\(@([\w.-]+)\) has resigned", body)
        assert match
        leaver, hr_from = match.group(1), str(found["from"])
        for grant in env.call("directory_list_access_requests", role="reports", status="approved")["requests"]:
            if grant["requester"] == leaver:
                try:
                    env.call("directory_revoke_access", request_id=grant["id"])
                except ToolFailed as failed:  # an approval that already expired is no grant
                    if failed.code != "conflict":
                        raise
        me = env.call("directory_get_profile", username=env.actor)
        mine = env.call("chat_list_channels")["channels"]
        team = next(c["name"] for c in mine if c["name"].startswith("team-") and c["display_name"] == me["team"])
        slug = team.removeprefix("team-")
        posts = env.call("chat_search_posts", text="Component owners", channel=team, limit=5)["posts"]
        owners = dict(re.findall(r"^- ([\w-]+): @([\w.-]+)", posts[0]["message"], re.M))
        for c in mine:
            name = c["name"]
            ours = name == team or name.startswith((f"{slug}-", "proj-"))
            if not ours or not c["member"]:
                continue
            if leaver in [m["username"] for m in env.call("chat_list_members", channel=name)["members"]]:
                env.call("chat_remove_member", channel=name, username=leaver)
        lines, stamp = [], str(found["sent_at"])
        for t in env.call("tickets_search", assignee=leaver, limit=100)["tickets"]:
            ticket = env.call("tickets_get", key=t["key"])
            if ticket["status"] in ("done", "wont_do"):
                continue
            components = sorted(label for label in ticket.get("labels", []) if label in owners)
            who = owners[components[0]] if components else env.actor
            who = env.actor if who == leaver else who
            assigned = self._reassign(env, t["key"], who)
            if assigned is None:
                continue
            stamp = assigned
            lines.append(f"- {t['key']} ({ticket['title']}): now @{who}")
        now = datetime.fromisoformat(stamp)  # the clock, as the last reassignment stamped it
        events = env.call("calendar_list_events", start=now.isoformat(), end=(now + WINDOW).isoformat())["events"]
        done: set[int] = set()
        for e in events:
            people = [a["username"] for a in e.get("attendees", []) if a["username"] != env.actor]
            if e.get("organizer") == env.actor and people == [leaver] and e["id"] not in done:
                env.call("calendar_cancel_event", event_id=e["id"])
                done.add(e["id"])
        env.call("mail_send", to=hr_from, subject=f"Handover for @{leaver}",
                 body="Hi,\n\nHandover summary, one line per reassigned ticket:\n" + "\n".join(lines)
                 + f"\n\nI also revoked @{leaver}'s access grants, removed them from the team channels and cancelled "
                 "our 1:1s.\n\nThanks")  # fmt: skip
        env.call("submit", summary=self._summary(leaver, lines, done))

    def _reassign(self, env: AgentEnv, key: str, username: str) -> str | None:
        """Give ``key`` to ``username``; the time it was stamped (None when it could not be; a variant's hook)."""
        return str(env.call("tickets_assign", key=key, username=username)["updated_at"])

    def _summary(self, leaver: str, lines: list[str], done: set[int]) -> str:
        """The submit summary (an impossible variant adds what it could not do)."""
        return f"offboarded @{leaver}: {len(lines)} tickets reassigned, {len(done)} meetings cancelled"


def _aware(value: Any) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite hands back text)."""
    from datetime import UTC

    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
