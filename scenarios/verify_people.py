"""Independent verifiers of the People families (onboarding, offboarding), in their own raw SQL.

They live beside ``scenarios.verify`` (which registers them in ``VERIFIERS``) to keep each file readable; they
reuse its evidence type and small helpers, never the rubric or ``graders``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcp_tools.calendar.slots import Person
from scenarios.verify import VERIFIERS, Evidence, Verdict, _busy, _ids, _outside, _pk, _sent_mail, _utc

_ONBOARD_INSERTS = frozenset(
    {"channel_members", "channels", "posts", "mentions", "events", "event_attendees", "access_requests"}
    | {"mail_threads", "mail_messages", "mail_recipients", "mail_deliveries"}
)


def _member(ev: Evidence, channel: str, employee: int) -> bool:
    return (
        ev.sql.one(
            "SELECT 1 FROM channel_members m JOIN channels c ON c.id = m.channel_id WHERE c.name = ?"
            " AND m.employee_id = ?",
            (channel, employee),
        )
        is not None
    )


def _person(row: Any) -> Person:
    return Person(int(row[0]), str(row[1]), str(row[2]), int(row[3]), int(row[4]), str(row[5]))


_WHO = "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays FROM employees"


def _meeting(ev: Evidence, title: str, who: list[str], week: tuple[Any, Any]) -> list[str]:
    """Why the agent's one live meeting titled ``title`` is wrong (empty when it is right)."""
    ids = ev.inserted("events")
    rows = ev.sql.all(
        _ids("SELECT id, title, start_at, end_at FROM events WHERE id IN (?*) AND cancelled = ? ORDER BY id", ids),
        [*ids, False],
    ) if ids else []  # fmt: skip
    mine = [r for r in rows if title.lower() in str(r[1]).lower()]
    if len(mine) != 1:
        return [f"{len(mine)} live meetings titled {title!r}"]
    event_id, _, s, e = mine[0]
    start, end = _utc(s), _utc(e)
    reasons = [f"{title!r} starts {start.isoformat()}, outside the first week"] * (not week[0] <= start < week[1])
    invited = {str(r[1]): r for r in ev.sql.all(
        f"{_WHO} WHERE id IN (SELECT employee_id FROM event_attendees WHERE event_id = ?) ORDER BY id",  # noqa: S608
        (event_id,),
    )}  # fmt: skip
    reasons += [f"@{u} not invited to {title!r}" for u in who if u not in invited]
    for row in [ev.sql.one(f"{_WHO} WHERE id = ?", (ev.actor_id,)), *invited.values()]:  # noqa: S608
        if not _person(row).works(start, end):
            reasons.append(f"{title!r} is outside @{row[1]}'s hours")
        if _busy(ev, int(row[0]), int(event_id), start, end):
            reasons.append(f"@{row[1]} is committed elsewhere during {title!r}")
    return reasons


def verify_onboard(ev: Evidence) -> Verdict:
    """Channels (and not the managers'), three meetings right, the pending request, the welcome facts, nothing else."""
    p = ev.params
    hire, name = int(p["hire_id"]), str(p["hire"])
    reasons = [f"@{name} not in {c}" for c in p["channels"] if not _member(ev, c, hire)]
    reasons += [f"@{name} added to {c}" for c in p["forbidden"] if _member(ev, c, hire)]
    week = (_utc(p["week"][0]), _utc(p["week"][1]))
    for title, who in sorted(p["meetings"].items()):
        reasons += _meeting(ev, title, list(who), week)
    requests = ev.inserted("access_requests")
    filed = ev.sql.all(
        _ids("SELECT field, status FROM access_requests WHERE id IN (?*) AND subject_id = ? ORDER BY id", requests),
        [*requests, hire],
    ) if requests else []  # fmt: skip
    if ("personal_contact", "pending") not in [(str(f), str(s)) for f, s in filed]:
        reasons.append("no pending personal_contact request for the hire")
    bodies = [b for _, user, b in _sent_mail(ev) if user == name.lower()]
    facts = {"start date": p["start"], "buddy": f"@{p['buddy']}", "team channel": p["team_channel"]}
    for fact, text in facts.items():
        if not any(re.search(rf"{re.escape(text)}(?![\w-])", b) for b in bodies):
            reasons.append(f"no welcome mail to @{name} states the {fact}")

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["op"] == "update":
            return c["table"] in ("mail_deliveries", "channel_members")
        return c["op"] == "insert" and c["table"] in _ONBOARD_INSERTS

    reasons += [f"changes {c}" for c in _outside(ev, allowed)]
    return Verdict(not reasons, tuple(reasons))


_OFFBOARD_INSERTS = frozenset(
    {"channel_members", "channels", "posts", "mentions", "mail_threads", "mail_messages", "mail_recipients"}
    | {"mail_deliveries"}
)


def verify_offboard(ev: Evidence) -> Verdict:
    """Grants revoked (the service account's kept), channels left, tickets by owner, 1:1s cancelled, handover."""
    p = ev.params
    leaver, name = int(p["leaver_id"]), str(p["leaver"])
    reasons: list[str] = []
    for g in p["grants"]:
        status = ev.sql.scalar("SELECT status FROM access_requests WHERE id = ?", (g,))
        if status != "revoked":
            reasons.append(f"grant {g} is {status}, not revoked")
    for g in p["kept_grants"]:
        status = ev.sql.scalar("SELECT status FROM access_requests WHERE id = ?", (g,))
        if status != "approved":
            reasons.append(f"the service account's grant {g} is {status}")
    reasons += [f"@{name} still in {c}" for c in p["channels"] if _member(ev, c, leaver)]
    lines = [line for _, user, body in _sent_mail(ev) if user == str(p["hr"]).lower() for line in body.splitlines()]
    for key, who in sorted(p["tickets"].items()):
        got = ev.sql.scalar(
            "SELECT e.username FROM tickets t LEFT JOIN employees e ON e.id = t.assignee_id WHERE t.key = ?", (key,)
        )
        if got != who:
            reasons.append(f"{key} is with @{got}, not @{who}")
        said = re.compile(rf"(?<![\w-]){re.escape(key)}(?!\d).*@{re.escape(who)}(?![\w.-]*\w)")
        if not any(said.search(line) for line in lines):
            reasons.append(f"no handover line to @{p['hr']} gives {key} to @{who}")
    for m in p["meetings"]:
        if not ev.sql.scalar("SELECT cancelled FROM events WHERE id = ?", (m,)):
            reasons.append(f"meeting {m} is not cancelled")
    keys = {str(k) for k in p["tickets"]}
    grants, meetings = {int(g) for g in [*p["grants"], *p["kept_grants"]]}, {int(m) for m in p["meetings"]}

    def allowed(c: Mapping[str, Any]) -> bool:
        table, op = c["table"], c["op"]
        if table == "tickets":
            key = ev.sql.scalar("SELECT key FROM tickets WHERE id = ?", (_pk(c),))
            return op == "update" and key in keys
        if table == "access_requests":
            return op == "update" and _pk(c) in grants
        if table == "events":
            return op == "update" and _pk(c) in meetings
        if op == "update":
            return table in ("mail_deliveries", "channel_members")
        if op == "delete":
            return bool(table == "channel_members")
        return table in _OFFBOARD_INSERTS

    reasons += [f"changes {c}" for c in _outside(ev, allowed)]
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["onboard-new-hire-v0"] = verify_onboard
VERIFIERS["offboard-leaver-v0"] = verify_offboard
