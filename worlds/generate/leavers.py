"""Leavers inside the history: a few people hand in their notice and have a last day before today.

Why (issue 12 items 1 and 4): a real company's history has departures, and everything in it agrees about them.
About 1.5% of the people leave over 90 days (none in companies under ``MIN_PEOPLE``): only individual
contributors who were there before the window, never a department head, a team lead, anyone who manages someone,
anyone with a role beyond ``employee`` (HR, finance, IT and legal are picked by scenario families), or anyone the
reorg moved. Each leaver is inactive with a ``leave_date``; ``Gen.leave_at`` holds the end of that day, and the
stages after this one never place anything a leaver does past it (``Gen.when``/``placed``) and swap a leaver
drawn as an author for a colleague (``Gen.stand_in``). ``settle_leavers`` runs once chat and mail exist: the
leaver says goodbye in the team channel, the manager tells the team by mail, open tickets go to a teammate with a
comment saying why, and the leaver's channel memberships are removed. The generator makes no access grants, so
there are none to revoke. ``worlds.coherence`` (check ``leavers``) verifies all of it.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from worlds.generate.common import Gen
from worlds.generate.language import Dice, letter, one_of
from worlds.generate.reorg import mail_folders, send_mail
from worlds.workflow import TERMINAL_STATUSES

MIN_PEOPLE = 10
"""Smallest company with leavers: below it one departure is a tenth of the company, not background churn."""
MIN_DAYS = 14
"""Shortest history with leavers: a last day needs a week before it and a week after it inside the window."""
RATE_PER_90_DAYS = 0.015
"""Share of the people who leave over 90 days of history (the expected count; the rest is a coin flip)."""
_ICS = ("IC1", "IC2", "IC3", "IC4", "IC5")


def _name(e: dict[str, Any]) -> str:
    return f"{e['first_name']} {e['last_name']}"


def build_leavers(g: Gen) -> None:
    """Pick who leaves and their last day; mark them inactive. Runs right after the reorg, before any activity."""
    emps = g.rows["employees"]
    for e in emps:
        e["leave_date"] = None
    if len(emps) < MIN_PEOPLE or g.spec.history_days < MIN_DAYS or not g.rows.get("teams"):
        return
    keep: set[int] = {d["head_id"] for d in g.rows["departments"] if d["head_id"] is not None}
    keep |= {t["lead_id"] for t in g.rows["teams"]} | set(g.lead_before.values())
    keep |= {e["manager_id"] for e in emps if e["manager_id"] is not None}
    keep |= {r["employee_id"] for r in g.rows.get("reporting_changes", [])}
    keep |= {r["employee_id"] for r in g.rows.get("employee_roles", []) if r["role"] != "employee"}
    first = g.history_start.date()
    candidates = [
        e["id"]
        for e in emps
        if e["id"] not in keep and e["team_id"] is not None and e["level"] in _ICS and e["hire_date"] < first
    ]
    rng = g.seeds.rng("history/leavers")
    expected = len(emps) * RATE_PER_90_DAYS * g.spec.history_days / 90
    count = min(len(candidates), int(expected + float(rng.random())))
    if count == 0:
        return
    chosen = sorted(int(i) for i in rng.choice(candidates, size=count, replace=False))
    span = g.start_at - g.history_start
    for emp in chosen:
        raw = g.at(rng, g.history_start + span * 0.15, g.start_at - timedelta(days=7))
        hours = g.hours(emp)
        day = hours.last_open(raw).astimezone(ZoneInfo(hours.timezone)).date()
        # The last moment of the last working day: the end of work that local day (or of the one before it).
        end_of_day = datetime.combine(day + timedelta(days=1), time(0), tzinfo=ZoneInfo(hours.timezone))
        last = hours.last_open(end_of_day.astimezone(UTC) - timedelta(seconds=1))
        e = emps[emp - 1]
        e["active"], e["leave_date"] = False, last.astimezone(ZoneInfo(hours.timezone)).date()
        g.leave_at[emp] = last


def settle_leavers(g: Gen) -> None:
    """On each last day: the goodbye post, the manager's mail, open tickets handed over, channels left."""
    if not g.leave_at:
        return
    emps = g.rows["employees"]
    dice = Dice(g.seeds.rng("history/leavers-text"))
    members = g.index("employees", "team_id", "id")
    channels = {c["name"]: c["id"] for c in g.rows.get("channels", [])}
    users = {e["id"]: e["username"] for e in emps}
    held: dict[int, list[dict[str, Any]]] = {}  # leaver -> their open tickets (one pass over the tracker)
    for t in g.rows.get("tickets", []):
        if t["assignee_id"] in g.leave_at and t["status"] not in TERMINAL_STATUSES:
            held.setdefault(t["assignee_id"], []).append(t)
    # In order of leaving: a ticket handed to someone who leaves later is handed on again on their last day.
    for last, emp in sorted((last, emp) for emp, last in g.leave_at.items()):
        e = emps[emp - 1]
        team = g.rows["teams"][e["team_id"] - 1]
        mates = [m for m in members.get(team["id"], []) if m != emp]
        boss_id = g.manager_at(emp, last)
        boss = emps[(boss_id or team["lead_id"]) - 1]
        cid = channels.get(f"team-{team['slug']}")
        if g.has("chat") and cid is not None:
            said = g.placed(emp, last - timedelta(hours=2))
            text = one_of(
                dice,
                f"Today is my last day here. Thank you all, it was a pleasure working with you on {team['name']}. "
                "Handover notes are on my tickets; you know where to find me.",
                "Quick one before I log off: it's my last day. Thanks for everything, and good luck with "
                "everything ahead!",
                f"Last day for me today. I've left notes on everything open. Thanks {team['name']}, I'll miss "
                "this team.",
            )
            g.add(
                "posts",
                {
                    "channel_id": cid,
                    "author_id": emp,
                    "root_id": None,
                    "message": text,
                    "created_at": said,
                    "edited_at": None,
                    "deleted_at": None,
                    "is_pinned": False,
                },
            )
        if g.has("mail"):
            sent = g.placed(boss["id"], last - timedelta(hours=4))
            readers = sorted(m for m in mates if m != boss["id"] and emps[m - 1]["hire_date"] <= sent.date())
            if readers:
                day = e["leave_date"]
                paragraphs = [
                    one_of(
                        dice,
                        f"As some of you already know, today is {_name(e)}'s last day with us.",
                        f"{_name(e)} is leaving the company; today, {day:%A, %B} {day.day}, is {e['first_name']}'s "
                        "last day.",
                    ),
                    f"{e['first_name']}'s open tickets move to the team today; you'll see a note on each one. "
                    "Please reach out to me if something falls through the cracks.",
                    one_of(
                        dice,
                        f"Thank you, {e['first_name']}, for all your work on {team['name']}. We'll miss you.",
                        f"Please join me in wishing {e['first_name']} all the best.",
                    ),
                ]
                body = letter(dice, g.styles[boss["id"] - 1], "team", _name(boss), paragraphs)
                send_mail(g, mail_folders(g), boss["id"], readers, f"Farewell {e['first_name']}", body, sent)
        _hand_over(g, dice, emp, last, mates or [team["lead_id"]], boss["id"], users, held)
    gone = set(g.leave_at)
    kept = [m for m in g.rows.get("channel_members", []) if m["employee_id"] not in gone]
    if len(kept) != len(g.rows.get("channel_members", [])):
        g.rows["channel_members"] = kept


def _hand_over(
    g: Gen,
    dice: Dice,
    emp: int,
    last: datetime,
    mates: list[int],
    boss: int,
    users: dict[int, str],
    held: dict[int, list[dict[str, Any]]],
) -> None:
    """Every ticket still open and assigned to ``emp`` goes to a teammate still here, with the manager's note."""
    first_name = g.rows["employees"][emp - 1]["first_name"]
    after = last + timedelta(seconds=1)
    for t in sorted(held.pop(emp, []), key=lambda t: t["id"]):
        start = int(dice.integers(len(mates)))
        pool = mates[start:] + mates[:start]
        heir = next((m for m in pool if g.active_at(m, after)), boss)
        at = g.when(boss, max(after, t["updated_at"]))
        if at is None:  # the manager's next working moment is after history ends: hand it over at the last one
            at = g.placed(boss, max(after, t["updated_at"]))
        body = one_of(
            dice,
            f"Reassigning to @{users[heir]}: {first_name} has left the company.",
            f"{first_name} has moved on, so @{users[heir]} takes this over from here.",
            f"Handing this to @{users[heir]} now that {first_name} has left.",
        )
        g.add("ticket_comments", {"ticket_id": t["id"], "author_id": boss, "body": body, "created_at": at})
        t["assignee_id"], t["updated_at"] = heir, max(t["updated_at"], at)
        if heir in g.leave_at:  # they leave later: hand it on again on their last day
            held.setdefault(heir, []).append(t)
