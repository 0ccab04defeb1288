"""Independent verifiers of the two-day stories (sprint plan/execute, 1:1 ask/book), never the rubric.

A module of its own because ``scenarios.verify`` is near the size limit; ``VERIFIERS`` there names these.
The 1:1 verifiers reuse that module's calendar reading (``_busy``) and its reading of NPC agreement from the
coworkers' own memory rows (``_agreement``), as the schedule family's verifier does.
Day one reads the plan's stored file itself and recomputes nothing it can read (capacity and choice come from
the params the setup computed by the rules); day two reads the ticket rows, the agent's own posts and the
events it created, each in raw SQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from mcp_tools.calendar.slots import Person
from scenarios.verify import (
    _ISO,
    VERIFIERS,
    Evidence,
    Verdict,
    _agreement,
    _busy,
    _dms,
    _file,
    _find_document,
    _live_posts,
    _outside,
    _pk,
    _utc,
)
from worlds.office.model import TextDoc

_DOC_TABLES = ("documents", "document_versions", "document_shares", "blobs", "doc_folders")


def verify_sprint_plan(ev: Evidence) -> Verdict:
    """A new text document at the path: each member's points, the total, each candidate in its one section.

    Each candidate is listed with its story points ("KEY: N points") when the hidden params know them.

    Shared with the manager; nothing but the document (its versions, shares, blobs, folders) changed.
    """
    path = str(ev.params["document"])
    doc = _find_document(ev, path)
    if doc is None or doc.kind != "text" or doc.id not in ev.inserted("documents"):
        return Verdict(False, (f"no new text document {path}",))
    text = _file(ev, doc, doc.sha)
    if not isinstance(text, TextDoc):
        return Verdict(False, (f"{path}: its stored file does not read as a text document",))
    sections = {h.strip().casefold(): t for h, t in text.sections()}
    cap = sections.get("capacity", "")
    reasons = [
        f"@{user}'s capacity is not given as {n} points"
        for user, n in sorted(ev.params["capacity"].items())
        if not re.search(rf"@{re.escape(user)}:\s*{n}\s+points?\b", cap, re.I)
    ]
    if not re.search(rf"total:\s*{ev.params['total']}\s+points?\b", cap, re.I):
        reasons.append(f"the total is not given as {ev.params['total']} points")
    for want in ("committed", "deferred"):
        for key in ev.params[want]:
            listed = {h for h, t in sections.items() if re.search(rf"\b{re.escape(key)}\b", t)}
            if listed != {want}:
                reasons.append(f"{key} belongs under {want.title()} only, found under {sorted(listed) or 'nothing'}")
    tickets = sections.get("committed", "") + "\n" + sections.get("deferred", "")
    for key, n in sorted(ev.params.get("points", {}).items()):  # asked since rubric version 2
        if not re.search(rf"\b{re.escape(key)}:\s*{n}\s+points?\b", tickets, re.I):
            reasons.append(f"{key} is not listed with its {n} story points")
    if not _shared_with(ev, doc.id, str(ev.params["manager"])):
        reasons.append(f"not shared with @{ev.params['manager']}")
    reasons += _outside(ev, lambda c: c["table"] in _DOC_TABLES and c["op"] in ("insert", "update"))[:3]
    return Verdict(not reasons, tuple(reasons))


def _shared_with(ev: Evidence, document: int, username: str) -> bool:
    found = ev.sql.one(
        "SELECT s.permission FROM document_shares s JOIN employees e ON e.id = s.employee_id"
        " WHERE s.document_id = ? AND e.username = ? ORDER BY s.id DESC LIMIT 1",
        (document, username),
    )
    return found is not None and found[0] in ("view", "comment", "edit")


def verify_sprint_execute(ev: Evidence) -> Verdict:
    """Committed tickets in the sprint and todo (started ones in progress), the rest untouched, the kickoff held.

    The post may be one or several of the agent's posts in the channel (together naming every committed key);
    the meeting is an event the agent created, titled "<sprint> kickoff", starting on the day, inviting the team
    and whoever from outside it started a committed ticket overnight (``started`` in the hidden params).
    """
    p = ev.params
    reasons: list[str] = []
    started = {str(k): str(u) for k, u in p.get("started", {}).items() if k in p["committed"]}
    for key in p["committed"]:
        row = ev.sql.one(
            "SELECT s.name, t.status FROM tickets t LEFT JOIN sprints s ON s.id = t.sprint_id WHERE t.key = ?", (key,)
        )
        want = "in_progress" if key in started else "todo"
        if row is None or row[0] != p["sprint"] or row[1] != want:
            reasons.append(f"{key} should be in {p['sprint']} and {want}, is {row and (row[0], row[1])}")
    touched = {_pk(c) for c in ev.mine() if c["table"] == "tickets" and c["op"] == "update"}
    for key in p["deferred"]:
        row = ev.sql.one("SELECT id, sprint_id FROM tickets WHERE key = ?", (key,))
        if row is None or row[1] is not None or int(row[0]) in touched:
            reasons.append(f"{key} was deferred by the plan but was changed")
    said = "\n".join(_live_posts(ev, str(p["channel"])))
    missing = [k for k in p["committed"] if not re.search(rf"\b{re.escape(k)}\b", said)]
    if missing:
        reasons.append(f"the kickoff in ~{p['channel']} does not name {missing}")
    # 30 minutes, as the prompt asks; the cancelled variant's rubric (version 1 of the checks) never judged it
    reasons += _meeting(ev, p, sorted({*p["team"], *started.values()}), None if "cancelled" in p else 30)

    def allowed(c: Mapping[str, Any]) -> bool:
        if c["table"] == "tickets":
            return c["op"] == "update" and set(c["changes"]) <= {"sprint_id", "status", "updated_at"}
        return c["table"] in ("ticket_status_changes", "posts", "mentions", "channel_members", "events",
                              "event_attendees")  # fmt: skip

    reasons += _outside(ev, allowed)[:3]
    return Verdict(not reasons, tuple(reasons))


def _meeting(ev: Evidence, p: Mapping[str, Any], wanted: list[str], minutes: int | None = None) -> list[str]:
    """Why no event the agent created is the kickoff (empty when one is); ``minutes`` its length when asked."""
    lo, hi = (datetime.fromisoformat(x) for x in p["kickoff_day"])
    title = f"{p['sprint']} kickoff".casefold()
    for event in ev.inserted("events"):
        row = ev.sql.one("SELECT title, start_at, cancelled, end_at FROM events WHERE id = ?", (event,))
        if row is None or row[2] or title not in str(row[0]).casefold():
            continue
        at, end = _utc(row[1]), _utc(row[3])
        invited = {
            str(u)
            for (u,) in ev.sql.all(
                "SELECT e.username FROM event_attendees a JOIN employees e ON e.id = a.employee_id"
                " WHERE a.event_id = ? UNION SELECT e.username FROM events v JOIN employees e ON e.id = v.organizer_id"
                " WHERE v.id = ?",
                (event, event),
            )
        }
        lacking = sorted(set(wanted) - invited)
        long = minutes is not None and end - at != timedelta(minutes=minutes)
        if lo <= at < hi and not lacking and not long:
            return []
        return [f"the kickoff #{event} starts {at.isoformat()} (day {lo.date()}), lacks {lacking} or is not"
                f" {minutes} minutes long"]  # fmt: skip
    return [f'no event titled "{p["sprint"]} kickoff" was created']


# -- the 1:1 story ----------------------------------------------------------------------------------------

_PEOPLE = "SELECT id, username, timezone, work_start_minute, work_end_minute, workdays, manager_id FROM employees"
_CHAT = ("posts", "mentions", "channels", "channel_members")


def _newest_question(ev: Evidence, username: str) -> datetime | None:
    """The time in the agent's newest question (an ISO time and a ``?``) to ``username`` by DM this episode."""
    asked = [m for m in _dms(ev, username) if "?" in m and _ISO.search(m)]
    return _utc(_ISO.findall(asked[-1])[-1].replace("Z", "+00:00")) if asked else None


def verify_one_on_ones_ask(ev: Evidence) -> Verdict:
    """Each report asked one time: from their first allowed start, in both hours, free for both, no clashes."""
    p = ev.params
    hi = datetime.fromisoformat(p["day"][1])
    me = ev.sql.one(f"{_PEOPLE} WHERE id = ?", (ev.actor_id,))  # noqa: S608
    asked = {u: _newest_question(ev, u) for u in p["reports"]}
    reasons: list[str] = []
    for u, at in asked.items():
        if at is None:
            reasons.append(f"@{u} was not asked about a time")
            continue
        end = at + timedelta(minutes=30)
        if not datetime.fromisoformat(p["earliest"][u]) <= at < hi:
            reasons.append(f"@{u}: {at.isoformat()} is outside the allowed part of the day")
        for r in (me, ev.sql.one(f"{_PEOPLE} WHERE username = ?", (u,))):  # noqa: S608
            assert r is not None
            if not Person(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5])).works(at, end):
                reasons.append(f"@{u}: {at.isoformat()} is outside @{r[1]}'s hours")
            if _busy(ev, int(r[0]), -1, at, end):
                reasons.append(f"@{u}: @{r[1]} is committed elsewhere at {at.isoformat()}")
        if any(o != u and t is not None and abs((t - at).total_seconds()) < 1800 for o, t in asked.items()):
            reasons.append(f"@{u}: {at.isoformat()} clashes with another proposal")
    reasons += _outside(ev, lambda c: c["table"] in _CHAT)[:3]
    return Verdict(not reasons, tuple(reasons))


def verify_one_on_ones_book(ev: Evidence) -> Verdict:
    """Per report one live "1:1 with @u" the agent created, inviting them, agreed by them, in hours, clash-free."""
    reasons: list[str] = []
    mine = ev.inserted("events")
    me = ev.sql.one(f"{_PEOPLE} WHERE id = ?", (ev.actor_id,))  # noqa: S608
    for u in ev.params["reports"]:
        rows = [
            r
            for r in (
                ev.sql.one("SELECT id, start_at, end_at, created_at, cancelled, title FROM events WHERE id = ?", (e,))
                for e in mine
            )  # fmt: skip
            if r is not None and not r[4] and str(r[5]) == f"1:1 with @{u}"
        ]
        if len(rows) != 1:
            reasons.append(f"@{u}: {len(rows)} live 1:1 events, expected one")
            continue
        event, start, end, created = int(rows[0][0]), _utc(rows[0][1]), _utc(rows[0][2]), _utc(rows[0][3])
        if "on_leave" not in ev.params and end - start != timedelta(minutes=30):  # the variant's rubric is v1
            reasons.append(f"@{u}: the 1:1 lasts {end - start}, not the 30 minutes asked")
        row = ev.sql.one(f"{_PEOPLE} WHERE username = ?", (u,))  # noqa: S608
        assert row is not None and me is not None
        if ev.sql.one("SELECT 1 FROM event_attendees WHERE event_id = ? AND employee_id = ?", (event, row[0])) is None:
            reasons.append(f"@{u} is not invited to their 1:1")
        for r in (me, row):
            if not Person(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), str(r[5])).works(start, end):
                reasons.append(f"@{u}: the 1:1 is outside @{r[1]}'s hours")
            if _busy(ev, int(r[0]), event, start, end):
                reasons.append(f"@{u}: @{r[1]} is committed elsewhere then")
        reasons += _agreement(ev, [u], {u: row}, start, created)
    reasons += _outside(ev, lambda c: c["table"] in (*_CHAT, "events", "event_attendees"))[:3]
    return Verdict(not reasons, tuple(reasons))


VERIFIERS["sprint-plan-v0"] = verify_sprint_plan
VERIFIERS["sprint-execute-v0"] = verify_sprint_execute
VERIFIERS["one-on-ones-ask-v0"] = verify_one_on_ones_ask
VERIFIERS["one-on-ones-book-v0"] = verify_one_on_ones_book
