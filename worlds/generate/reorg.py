"""A reorg inside the history: one team's lead hands the team over to its most senior engineer.

Why (issue 12 item 1): a company's history is not one frozen org chart. Half-way through the window a team lead
steps back into hands-on work and a senior member of the team takes over; everyone on the team now reports to
the new lead, the new lead to the old lead's manager, and the old lead to the new one. The directory holds the
lines of today; ``reporting_changes`` records each move with its first day; the department head announces it by
mail a week before, and the new lead says hello in the team's channel on the first day. Later stages ask
``Gen.manager_at``/``Gen.lead_at`` so a 1:1 series, a weekly, its notes and a manager mail written before the
change name the manager of that time (``worlds.coherence`` checks it).

When there is none: the window is shorter than ``MIN_DAYS`` (an announcement a week ahead and some weeks under
the new lead would not fit), or no department has two teams. A department of one team (every company under ~25
people) has everyone reporting to its head or one lead; moving that line is a new hire or a departure, not a
reorg anyone announces.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from worlds.generate.common import Gen
from worlds.generate.language import Dice, letter, one_of
from worlds.generate.org import DEPARTMENTS, IC_PREFIX

MIN_DAYS = 28
"""Shortest history with a reorg: announced a week ahead, effective on a Monday, then a few weeks under it."""
NOTICE_DAYS = 6
"""How long before the first day the head announces it (the Tuesday of the week before)."""
_SENIORITY = {"IC5": 5, "IC4": 4, "IC3": 3, "IC2": 2, "IC1": 1}


def _name(e: dict[str, Any]) -> str:
    return f"{e['first_name']} {e['last_name']}"


def build_reorg(g: Gen) -> None:
    """Pick the team, the day and the new lead; move the directory to today's lines and record every move."""
    if g.spec.history_days < MIN_DAYS or not g.rows.get("teams"):
        return
    emps = g.rows["employees"]
    teams = g.rows["teams"]
    per_dept: dict[int, int] = {}
    for t in teams:
        per_dept[t["department_id"]] = per_dept.get(t["department_id"], 0) + 1
    members = g.index("employees", "team_id", "id")
    first = g.history_start.date()
    candidates: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for team in teams:
        lead = emps[team["lead_id"] - 1]
        seniors = [
            emps[i - 1]
            for i in members.get(team["id"], [])
            if i != lead["id"] and emps[i - 1]["hire_date"] < first and emps[i - 1]["level"] in _SENIORITY
        ]
        if per_dept[team["department_id"]] >= 2 and lead["hire_date"] < first and seniors:
            # The most senior engineer who was there before the window (longest tenure breaks a tie).
            successor = min(seniors, key=lambda e: (-_SENIORITY[e["level"]], e["hire_date"], e["id"]))
            candidates.append((team, successor))
    if not candidates:
        return
    rng = g.seeds.rng("history/reorg")
    team, new = candidates[int(rng.integers(len(candidates)))]
    span = g.start_at - g.history_start
    day = g.at(rng, g.history_start + span * 0.4, g.history_start + span * 0.75).date()
    day += timedelta(days=(7 - day.weekday()) % 7)  # a reorg starts on a Monday
    while datetime.combine(day, time(0), tzinfo=UTC) > g.start_at - timedelta(days=3):
        day -= timedelta(days=7)
    effective = datetime.combine(day, time(0), tzinfo=UTC)
    old = emps[team["lead_id"] - 1]
    boss = old["manager_id"]
    dept = g.rows["departments"][team["department_id"] - 1]
    reason = f"{team['name']} lead handover: {_name(new)} takes over from {_name(old)}"
    g.reorg_at = effective
    g.lead_before[team["id"]] = old["id"]
    moves: list[tuple[dict[str, Any], int | None, int | None, str, str]] = []
    staff_title = IC_PREFIX["IC4"] + DEPARTMENTS[dept["name"]][2]
    moves.append((old, boss, new["id"], old["title"], staff_title))
    moves.append((new, old["id"], boss, new["title"], old["title"]))
    for i in members.get(team["id"], []):
        e = emps[i - 1]
        if i in (old["id"], new["id"]):
            continue
        if e["hire_date"] < day:  # joined before the change: reported to the old lead until then
            moves.append((e, old["id"], new["id"], e["title"], e["title"]))
        e["manager_id"] = new["id"]
    for e, was, now, title_was, title_now in sorted(moves, key=lambda m: m[0]["id"]):
        g.manager_before[e["id"]] = was
        e["manager_id"], e["title"] = now, title_now
        g.add(
            "reporting_changes",
            {
                "employee_id": e["id"],
                "effective_on": day,
                "old_manager_id": was,
                "new_manager_id": now,
                "old_team_id": team["id"],
                "new_team_id": team["id"],
                "old_title": title_was,
                "new_title": title_now,
                "reason": reason,
            },
        )
    old["level"], new["level"] = "IC4", "M1"
    team["lead_id"] = new["id"]
    for role in g.rows["employee_roles"]:  # the old lead has no reports any more; the new one has the team
        if role["employee_id"] == old["id"] and role["role"] == "manager":
            role["employee_id"] = new["id"]


def announce_reorg(g: Gen) -> None:
    """The head's mail to the department a week ahead, and the new lead's first post in the team's channel."""
    changes = g.rows.get("reporting_changes", [])
    if g.reorg_at is None or not changes:
        return
    emps = g.rows["employees"]
    team = g.rows["teams"][changes[0]["new_team_id"] - 1]
    old = emps[g.lead_before[team["id"]] - 1]
    new = emps[team["lead_id"] - 1]
    dept = g.rows["departments"][team["department_id"] - 1]
    head = emps[dept["head_id"] - 1]
    boss = emps[new["manager_id"] - 1]
    dice = Dice(g.seeds.rng("history/reorg-text"))
    day = g.reorg_at.date()
    when = f"{day:%A, %B} {day.day}"
    if g.has("mail"):
        sent = g.placed(head["id"], g.reorg_at - timedelta(days=NOTICE_DAYS))
        subject = one_of(
            dice, f"Changes in {team['name']}", f"{team['name']}: new team lead", f"Org update: {team['name']}"
        )
        paragraphs = [
            one_of(
                dice,
                f"Starting {when}, {_name(new)} will lead {team['name']}.",
                f"A change in {team['name']} I want you to hear from me first: from {when}, {_name(new)} takes "
                "over as team lead.",
            ),
            one_of(
                dice,
                f"{_name(old)} asked to get back to hands-on work and stays on the team as {old['title']}, "
                f"reporting to {new['first_name']}.",
                f"{old['first_name']} moves into a {old['title']} role on the same team, so we keep everything "
                f"{old['first_name']} knows about the team's systems close by, and will report to {new['first_name']}.",
            ),
            f"From that day everyone on {team['name']} reports to {new['first_name']}, and {new['first_name']} "
            + ("to me. " if boss["id"] == head["id"] else f"to {_name(boss)}. ")
            + one_of(
                dice,
                f"Your 1:1s move to {new['first_name']}'s calendar that week; the team weekly keeps its slot.",
                f"{new['first_name']} will set up 1:1s with each of you; the weekly stays where it is.",
            ),
            one_of(
                dice,
                f"Thank you, {old['first_name']}, for leading the team this far, and congratulations, "
                f"{new['first_name']}.",
                f"Please join me in congratulating {new['first_name']}. Questions are welcome, by mail or in person.",
            ),
        ]
        body = letter(dice, g.styles[head["id"] - 1], "all", _name(head), paragraphs)
        readers = sorted(
            e["id"]
            for e in emps
            if e["department_id"] == dept["id"] and e["id"] != head["id"] and e["hire_date"] <= sent.date()
        )
        send_mail(g, mail_folders(g), head["id"], readers, subject, body, sent)
    if g.has("chat"):
        posted = g.when(new["id"], g.reorg_at)
        channel = next((c for c in g.rows.get("channels", []) if c["name"] == f"team-{team['slug']}"), None)
        if posted is None or channel is None:
            return
        text = one_of(
            dice,
            f"Morning all! As of today I'm leading {team['name']}. @{old['username']} stays on the team as "
            f"{old['title']}, thanks for everything so far. I'll book 1:1s with each of you this week.",
            f"Hi team, first day in the new role. Same weekly slot, same board; I'm setting up 1:1s this week. "
            f"@{old['username']}, thanks for the handover.",
        )
        pid = g.add(
            "posts",
            {
                "channel_id": channel["id"],
                "author_id": new["id"],
                "root_id": None,
                "message": text,
                "created_at": posted,
                "edited_at": None,
                "deleted_at": None,
                "is_pinned": False,
            },
        )
        g.add("mentions", {"post_id": pid, "employee_id": old["id"]})


def mail_folders(g: Gen) -> dict[tuple[int, str], int]:
    """(mailbox, folder name) -> folder id, for the Inbox and Sent folders the generated mail lands in."""
    return {(f["mailbox_id"], f["name"]): f["id"] for f in g.rows["mail_folders"] if f["name"] in ("Inbox", "Sent")}


def send_mail(
    g: Gen,
    folders: dict[tuple[int, str], int],
    sender: int,
    to: list[int],
    subject: str,
    body: str,
    at: datetime,
    *,
    read: bool | None = None,
) -> int:
    """One generated mail from employee ``sender`` to employees ``to`` (mailbox id == employee id), delivered.

    Mail older than two days has been read; ``read`` overrides that (finance has booked every receipt).
    """
    thread = g.add("mail_threads", {"subject": subject, "created_at": at})
    mid = len(g.table("mail_messages")) + 1
    g.add(
        "mail_messages",
        {
            "thread_id": thread,
            "message_id": f"<m{mid}.{g.spec.seed}@{g.domain}>",
            "in_reply_to_id": None,
            "sender_mailbox_id": sender,
            "subject": subject,
            "body": body,
            "sent_at": at,
            "attachment_document_ids": [],
        },
    )
    if read is None:
        read = (g.start_at - at) > timedelta(days=2)
    for r in to:
        g.add("mail_recipients", {"message_id": mid, "mailbox_id": r, "kind": "to"})
        g.add(
            "mail_deliveries",
            {
                "message_id": mid,
                "mailbox_id": r,
                "folder_id": folders[(r, "Inbox")],
                "is_read": read,
                "is_flagged": False,
                "read_at": None,
            },
        )
    g.add(
        "mail_deliveries",
        {
            "message_id": mid,
            "mailbox_id": sender,
            "folder_id": folders[(sender, "Sent")],
            "is_read": True,
            "is_flagged": False,
            "read_at": None,
        },
    )
    return mid
