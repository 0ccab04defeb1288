"""Chat channels and history, mail threads, rooms and meetings, all referencing real people and tickets."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from worlds.generate.chatter import write_posts
from worlds.generate.common import Gen, ascii_name, pick, slug
from worlds.generate.language import Dice
from worlds.generate.mailtext import MailWriter

EMOJI = ("thumbsup", "eyes", "white_check_mark", "tada", "pray", "rocket")
EXTERNAL = (
    ("ops", "customer-northwind"),
    ("it", "customer-globex"),
    ("buyers", "customer-initech"),
    ("billing", "vendor-cloudcorp"),
    ("accounts", "vendor-officeworks"),
    ("support", "vendor-datadash"),
)


def build_chat(g: Gen, tickets_by_team: dict[int, list[tuple[Any, str]]]) -> None:
    """Channels, memberships, posts with threads, mentions and reactions."""
    rng = g.seeds.rng("history/chat")
    emps = g.rows["employees"]
    # Channels predate the history window: a post placed at its author's last working moment before a short
    # window (a weekend, another time zone) may fall a few days before the window opens.
    created = g.history_start - timedelta(days=7)
    g.add("chat_teams", {"name": g.domain.split(".")[0][:60], "display_name": g.company_name})
    everyone = [e["id"] for e in emps]
    channels: list[tuple[int, list[int], list[tuple[Any, str]], float]] = []

    def channel(
        name: str, display: str, kind: str, members: list[int], tickets: list[tuple[Any, str]], weight: float
    ) -> int:
        cid = g.add(
            "channels",
            {
                "team_id": 1,
                "name": name,
                "display_name": display,
                "type": kind,
                "purpose": display,
                "header": "",
                "creator_id": members[0],
                "created_at": created,
            },
        )
        for m in members:
            g.add(
                "channel_members",
                {"channel_id": cid, "employee_id": m, "joined_at": created, "last_viewed_at": None},
            )
        channels.append((cid, members, tickets, weight))
        return cid

    all_tickets = sorted(t for ts in tickets_by_team.values() for t in ts)
    channel("town-square", "Town Square", "O", everyone, [], 1.0)
    channel("off-topic", "Off-Topic", "O", everyone, [], 0.5)
    channel("announcements", "Announcements", "O", everyone, [], 0.3)
    channel("incidents", "Incidents", "O", everyone, all_tickets, 0.6)
    for team in g.rows.get("teams", []):
        members = g.index("employees", "team_id", "id").get(team["id"], [])
        channel(f"team-{team['slug']}", team["name"], "O", members, tickets_by_team.get(team["id"], []), 2.0)
    for project in g.rows.get("projects", []):
        if project["status"] == "active":
            members = g.index("project_members", "project_id", "employee_id").get(project["id"], [])
            channel(
                f"proj-{project['key'].lower()}",
                project["name"],
                "O",
                members,
                tickets_by_team.get(project["team_id"], []),
                1.0,
            )
    execs = [e["id"] for e in emps if e["level"] in ("E1", "E2")]
    channel("leadership", "Leadership", "P", execs, [], 0.5)
    people_dept = next((d["id"] for d in g.rows["departments"] if d["name"] == "People"), None)
    if people_dept is not None:
        channel(
            "people-ops",
            "People Ops",
            "P",
            [e["id"] for e in emps if e["department_id"] == people_dept],
            [],
            0.3,
        )
    for e in emps:
        boss = g.manager_at(e["id"], created)  # direct-message channels predate the window, and any reorg in it
        if boss is not None and rng.random() < 0.3:
            a, b = sorted((e["id"], boss))
            channel(f"{a}__{b}", f"{a}__{b}", "D", [a, b], [], 0.2)

    write_posts(g, channels, rng)


def build_mail(g: Gen, tickets_by_team: dict[int, list[tuple[Any, str]]]) -> None:
    """Mailboxes, folders, threads with replies, recipients and deliveries."""
    rng = g.seeds.rng("history/mail")
    emps = g.rows["employees"]
    boxes: list[int] = []
    for e in emps:
        boxes.append(
            g.add(
                "mailboxes",
                {
                    "address": e["email"],
                    "display_name": f"{e['first_name']} {e['last_name']}",
                    "employee_id": e["id"],
                },
            )
        )
    for local, org in EXTERNAL:
        boxes.append(
            g.add(
                "mailboxes",
                {"address": f"{local}@{org}.example", "display_name": f"{org} {local}", "employee_id": None},
            )
        )
    customer_boxes: list[int] = []
    vendor_boxes: list[int] = []
    for company, given, family in g.customers:
        address = f"{ascii_name(given)}.{ascii_name(family)}@{slug(company)[:40]}.example"
        customer_boxes.append(
            g.add(
                "mailboxes",
                {"address": address, "display_name": f"{given} {family} ({company})", "employee_id": None},
            )
        )
    for company, _, _ in g.vendors:
        address = f"billing@{slug(company)[:40]}.example"
        vendor_boxes.append(
            g.add("mailboxes", {"address": address, "display_name": f"{company} Billing", "employee_id": None})
        )
    boxes.extend(customer_boxes + vendor_boxes)
    folders: dict[tuple[int, str], int] = {}
    for box in boxes:
        for name in ("Inbox", "Sent", "Archive", "Drafts", "Trash"):
            folders[(box, name)] = g.add("mail_folders", {"mailbox_id": box, "name": name})
    writer = MailWriter(g, Dice(g.seeds.rng("history/mail-text")), customer_boxes, vendor_boxes)
    last = g.start_at - timedelta(minutes=1)
    staff = len(emps)
    wanted = max(5, int(g.spec.employees * g.spec.history_days * 0.02))
    written = 0
    for _ in range(3 * wanted):  # a plan whose first mail falls after history ends is dropped; draw another
        if written == wanted:
            break
        plan = writer.plan(g.at(rng))
        # Each turn is sent in its sender's working hours (mailboxes 1..staff are the employees'; outside
        # senders write whenever they like); a turn that would fall after history ends was not written yet.
        times: list[datetime] = []
        at = plan.start
        for turn, (frm, _) in enumerate(plan.turns):
            if turn:
                at = at + timedelta(minutes=int(rng.integers(10, 600)))
            sent = g.when(frm, at) if frm <= staff else at
            if sent is None or sent > last:
                break
            times.append(sent)
            at = sent
        if not times:
            continue  # its ticket was filed too close to the start to be written about before it: no thread
        subject = plan.subject
        written += 1
        thread = g.add("mail_threads", {"subject": subject, "created_at": times[0]})
        prev = None
        for turn, ((frm, body), at) in enumerate(zip(plan.turns, times, strict=False)):
            rcpt = [p for p in plan.parts if p != frm]
            mid = len(g.table("mail_messages")) + 1
            g.add(
                "mail_messages",
                {
                    "thread_id": thread,
                    "message_id": f"<m{mid}.{g.spec.seed}@{g.domain}>",
                    "in_reply_to_id": prev,
                    "sender_mailbox_id": frm,
                    "subject": subject if turn == 0 else f"Re: {subject}",
                    "body": body,
                    "sent_at": at,
                    "attachment_document_ids": [],
                },
            )
            old = (g.start_at - at) > timedelta(days=2)
            for r in rcpt:
                g.add("mail_recipients", {"message_id": mid, "mailbox_id": r, "kind": "to"})
                g.add(
                    "mail_deliveries",
                    {
                        "message_id": mid,
                        "mailbox_id": r,
                        "folder_id": folders[(r, "Inbox")],
                        "is_read": old or rng.random() < 0.4,
                        "is_flagged": rng.random() < 0.05,
                        "read_at": None,
                    },
                )
            g.add(
                "mail_deliveries",
                {
                    "message_id": mid,
                    "mailbox_id": frm,
                    "folder_id": folders[(frm, "Sent")],
                    "is_read": True,
                    "is_flagged": False,
                    "read_at": None,
                },
            )
            prev = mid


def _local(day: Any, minute: int, tz: str) -> datetime:
    local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=ZoneInfo(tz))
    return local.astimezone(UTC)


def build_calendar(g: Gen) -> None:
    """Rooms, recurring team meetings and 1:1s, and one-off meetings within working hours."""
    rng = g.seeds.rng("calendar")
    emps = g.rows["employees"]
    for loc in g.rows["locations"]:
        if loc["name"] != "Remote":
            for i, room in enumerate(("Atlas", "Borealis", "Cobalt")):
                g.add(
                    "rooms",
                    {"name": f"{loc['name']} {room}", "location_id": loc["id"], "capacity": 4 + 4 * i},
                )
    first = g.history_start.date()
    created = g.history_start
    rsvp = ["accepted", "tentative", "declined", "needs_action"]

    def event(
        org: dict[str, Any],
        title: str,
        day: Any,
        minute: int,
        minutes: int,
        rrule: str | None,
        people: list[int],
        until: datetime | None = None,
        since: datetime | None = None,
        tz: str | None = None,
    ) -> None:
        start = _local(day, minute, tz or org["timezone"])
        while rrule and start < (since or g.history_start):
            # A weekly series keeps its weekday; move its first occurrence into the history window (or, for
            # a series a reorg started, to its first day).
            start += timedelta(days=7)
        if rrule and len(set(people)) == 2:
            for p in people:  # a 1:1 with someone who leaves ends on their last day
                if p in g.leave_at and (until is None or until > g.leave_at[p]):
                    until = g.leave_at[p]
            if until is not None and until < start:
                return  # they left before its first meeting: it was never booked
        # A leaver attends nothing after their last day: they are off a series that runs on, and off later meetings.
        last = until if rrule else start
        people = [p for p in people if p not in g.leave_at or (last is not None and max(start, last) <= g.leave_at[p])]
        eid = g.add(
            "events",
            {
                "organizer_id": org["id"],
                "title": title,
                "description": "",
                "start_at": start,
                "end_at": start + timedelta(minutes=minutes),
                "rrule": rrule,
                "until": until,
                "room_id": None,
                "cancelled": False,
                "created_at": min(created if since is None else since - timedelta(days=5), start),
            },
        )
        for p in sorted(set(people)):
            state = "accepted" if p == org["id"] else str(rng.choice(rsvp, p=[0.7, 0.1, 0.05, 0.15]))
            g.add("event_attendees", {"event_id": eid, "employee_id": p, "rsvp": state, "optional": False})

    days = ("MO", "TU", "WE", "TH", "FR")
    cut = g.reorg_at
    for team in g.rows.get("teams", []):
        lead = emps[g.lead_at(team, g.history_start) - 1]
        members = g.index("employees", "team_id", "id").get(team["id"], [])
        wd = int(rng.integers(0, 5))
        day = first + timedelta(days=(wd - first.weekday()) % 7)
        rule = f"FREQ=WEEKLY;BYDAY={days[wd]}"
        minute = lead["work_start_minute"] + 60
        if cut is None or lead["id"] == team["lead_id"]:
            event(lead, f"{team['name']} weekly", day, minute, 45, rule, members)
            continue
        # A reorg gave the team a new lead: the old lead's series ends the day before, the new lead's starts
        # that week in the same slot (the weekly "keeps its slot"); people who joined later were never invited
        # by the old lead.
        before = [m for m in members if emps[m - 1]["hire_date"] < cut.date()]
        event(lead, f"{team['name']} weekly", day, minute, 45, rule, before, until=cut)
        new = emps[team["lead_id"] - 1]
        event(new, f"{team['name']} weekly", day, minute, 45, rule, members, since=cut, tz=lead["timezone"])
    for e in emps:
        if e["manager_id"] is not None:
            boss = emps[g.manager_at(e["id"], g.history_start) - 1]  # type: ignore[operator]
            wd = int(rng.integers(0, 5))
            day = first + timedelta(days=(wd - first.weekday()) % 7)
            minute = boss["work_start_minute"] + 120 + 30 * int(rng.integers(0, 8))
            rule = f"FREQ=WEEKLY;INTERVAL=2;BYDAY={days[wd]}"
            title = f"1:1 {boss['first_name']} / {e['first_name']}"
            if cut is None or boss["id"] == e["manager_id"]:
                event(boss, title, day, minute, 30, rule, [boss["id"], e["id"]])
                continue
            # The reporting line changed in the window: the old series stops, the new manager books their own
            # (two weeks apart, on the same weekday, in the new manager's morning).
            event(boss, title, day, minute, 30, rule, [boss["id"], e["id"]], until=cut)
            new = emps[e["manager_id"] - 1]
            start = cut.date() + timedelta(days=(wd - cut.weekday()) % 7)
            event(
                new, f"1:1 {new['first_name']} / {e['first_name']}", start, new["work_start_minute"] + 120, 30, rule,
                [new["id"], e["id"]], since=cut,
            )  # fmt: skip
    by_dept: dict[int, list[int]] = {}
    for x in emps:
        by_dept.setdefault(x["department_id"], []).append(x["id"])
    for _ in range(max(2, g.spec.employees * max(1, g.spec.history_days) // 60)):
        org = emps[int(rng.integers(len(emps)))]
        peers = by_dept[org["department_id"]]
        day = g.at(rng).date()
        while day.weekday() >= 5:
            # Forward to Monday (never before the window; a meeting may be scheduled after start_at).
            day += timedelta(days=1)
        # Someone who has left by then books nothing: a colleague of the same department does.
        org = emps[g.stand_in(org["id"], datetime.combine(day + timedelta(days=1), time(0), tzinfo=UTC), peers) - 1]
        people = [org["id"], *[int(pick(rng, peers)) for _ in range(int(rng.integers(1, 5)))]]
        event(
            org,
            pick(rng, ("Design review", "Planning", "Customer call prep", "Retro", "Sync")),
            day,
            org["work_start_minute"] + 30 * int(rng.integers(1, 12)),
            30 * int(rng.integers(1, 3)),
            None,
            people,
        )
