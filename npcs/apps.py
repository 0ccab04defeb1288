"""Decide for app items: answer an invitation, review a merge request, decide an access request.

Each item is re-read at decision time (the agent may have cancelled the event, merged the request or withdrawn
nothing but answered it itself), so a stale stimulus costs nothing. Draws come from the turn's stream in a
fixed order per item, whatever the branch taken, so one item's outcome never shifts another's draws by path.

Probabilities (``p_push`` is the push-back probability of ``npcs.decide``: cooperative 0.5 %, adversarial
81 %):

- decline a free, in-hours invitation: ``p_push * (1 - helpfulness / 2)`` (cooperative 0.3 %, adversarial
  71 %); an invitation outside working hours or clashing with an accepted commitment is always declined, one
  the NPC already agreed to in chat (its memory holds a "yes" for that exact start) is accepted when free;
- take up the review of a team repository's request nobody asked it to review: ``helpfulness * (0.3 + 0.7 *
  proactivity)``; a named reviewer (``@user`` in the title, description or a later note) always looks;
- approve a request whose pipeline passed: ``(1 - p_push) * (1 - 0.15 * expertise * (1 - helpfulness))``
  (experts who do not care to help nitpick); a failed pipeline always gets ``request_changes``; a pipeline
  that has not finished gets one "waiting for CI" comment; an NPC never merges;
- answer an outage thread in ~incidents naming a ticket of the NPC's team (``incident``): ``helpfulness``,
  unless someone besides its author already answered in the thread (one teammate takes it, not the whole
  team); the answer is a reply in the thread saying the NPC is on it;
- refuse an access request: ``p_push`` when the reason is justified (at least four words), else at least
  0.6 (cooperative approves justified requests, adversarial refuses about 81 %).

Reviews go through ``mcp_tools.git.mr.mr_review_at`` (the service's rules, at the commit the NPC saw). An NPC
acts on a merge request only when the note it would write differs from its latest one (same verdict
at the same commit, or a second waiting comment, is skipped): re-triggering by other people's notes is
idempotent, and NPC reviewers cannot talk each other into a loop.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from mcp_tools.calendar.slots import occurrences
from npcs.actions import Plan
from npcs.decide import TurnEnv, p_push
from npcs.perceive import Stimulus, handles
from npcs.text import local_time, say
from worlds.rawsql import Sql, iso

_HORIZON = timedelta(days=62)
_COMMITTED = (
    "SELECT id, start_at, end_at, rrule, until FROM events WHERE cancelled = ? AND id != ? AND start_at < ?"
    " AND (organizer_id = ? OR id IN (SELECT event_id FROM event_attendees WHERE employee_id = ?"
    " AND rsvp IN ('accepted', 'tentative'))) ORDER BY start_at, id"
)
FINISHED_OK = ("passed", "success")
FINISHED_BAD = ("failed", "error", "timeout")


def _ts(value: Any) -> datetime | None:
    out = iso(value)
    return datetime.fromisoformat(out) if out else None


def p_decline_free(env: TurnEnv) -> float:
    """Probability of declining an invitation although the slot is free and inside working hours."""
    return p_push(env) * (1.0 - env.persona.traits.helpfulness / 2)


def p_take_review(env: TurnEnv) -> float:
    """Probability of reviewing a team repository's request when nobody named the NPC."""
    t = env.persona.traits
    return float(t.helpfulness * (0.3 + 0.7 * t.proactivity))


def p_approve(env: TurnEnv) -> float:
    """Probability of approving a request whose pipeline passed."""
    t = env.persona.traits
    return (1.0 - p_push(env)) * (1.0 - 0.15 * t.expertise * (1.0 - t.helpfulness))


def p_refuse(env: TurnEnv, justified: bool) -> float:
    """Probability of refusing an access request."""
    return p_push(env) if justified else max(0.6, p_push(env))


def justified(reason: str) -> bool:
    """Whether a request says why in a sentence (at least four words) rather than a token gesture."""
    return len(reason.split()) >= 4


def react_app(env: TurnEnv, s: Stimulus) -> list[Plan]:
    """The plans for one app item (possibly none)."""
    if s.kind == "invite":
        return _invite(env, s)
    if s.kind in ("merge_request", "mr_note"):
        return _review(env, s)
    if s.kind == "access_request":
        return _access(env, s)
    if s.kind == "incident":
        return _incident(env, s)
    return []


# -- invitations ---------------------------------------------------------------------------------------------


def _agreed(sql: Sql, employee_id: int, start: datetime) -> bool:
    """Whether the NPC said yes in chat to exactly ``start`` (its last 200 actions are enough to remember)."""
    for (data,) in sql.all(
        "SELECT data FROM npc_memory WHERE employee_id = ? AND kind = 'did' ORDER BY id DESC LIMIT 200",
        (employee_id,),
    ):
        fact = (json.loads(data) if isinstance(data, str) else data or {}).get("fact") or {}
        if fact.get("intent") != "agreement" or not fact.get("subject"):
            continue
        try:
            said = datetime.fromisoformat(str(fact["subject"]))
        except ValueError:
            continue
        if said.tzinfo is not None and said == start:
            return fact.get("said") == "yes"
    return False


def _clash(sql: Sql, me: int, event_id: int, s: datetime, e: datetime) -> bool:
    """Whether the NPC organizes or accepted another live event overlapping [s, e)."""
    for _, a, b, rule, until in sql.all(_COMMITTED, (False, event_id, sql.bind(e), me, me)):
        for os_, oe in occurrences(_ts(a), _ts(b), rule, _ts(until), s, e):  # type: ignore[arg-type]
            if os_ < e and s < oe:
                return True
    return False


def _invite(env: TurnEnv, s: Stimulus) -> list[Plan]:
    sql, p, rng = Sql.of(env.ctx.session), env.persona, env.rng
    u_free, u_note = (float(x) for x in rng.random(2))
    me, now = p.employee_id, env.ctx.clock.now()
    row = sql.one(
        "SELECT v.id, v.title, v.start_at, v.end_at, v.rrule, v.until, v.cancelled, a.rsvp FROM events v"
        " JOIN event_attendees a ON a.event_id = v.id AND a.employee_id = ? WHERE v.id = ?",
        (me, s.item),
    )
    if row is None or row[6] or row[7] != "needs_action":
        return []  # cancelled, uninvited, or already answered
    event_id, title = int(row[0]), str(row[1])
    start, end = _ts(row[2]), _ts(row[3])
    assert start is not None and end is not None
    upcoming = [(a, b) for a, b in occurrences(start, end, row[4], _ts(row[5]), now, now + _HORIZON) if b > now]
    if not upcoming:
        return []  # over already: nothing to answer
    os_, oe = upcoming[0]
    in_hours = p.hours.is_open(os_) and p.hours.minutes_between(os_, oe) >= (oe - os_).total_seconds() / 60 - 1e-6
    if not in_hours:
        why = "hours"
    elif _clash(sql, me, event_id, os_, oe) or any(a < oe and os_ < b for a, b in env.booked):
        why = "busy"
    elif _agreed(sql, me, os_) or u_free >= p_decline_free(env):
        why = ""
    else:
        why = "free"
    response = "declined" if why else "accepted"
    if not why:
        env.booked.append((os_, oe))  # plans run after every decision: later invites must see this one
    plans = [Plan("calendar_rsvp", {"event_id": event_id, "response": response}, response, f"event:{event_id}")]
    if why and s.sender and u_note < p.traits.helpfulness:
        to = str(sql.scalar("SELECT first_name FROM employees WHERE id = ?", (s.sender_id,)) or s.sender)
        when = local_time(os_.isoformat(), p.hours.timezone)
        text = say(f"decline_{why}", p.traits, rng, to=to, me=p.first_name, key=repr(title[:60]), value=when)
        args = {"username": s.sender, "message": text}
        plans.append(Plan("chat_direct_message", args, "decline_note", s.sender, text))
    return plans


# -- merge requests ------------------------------------------------------------------------------------------


def _review(env: TurnEnv, s: Stimulus) -> list[Plan]:
    sql, p, rng = Sql.of(env.ctx.session), env.persona, env.rng
    u_take, u_verdict = (float(x) for x in rng.random(2))
    me = p.employee_id
    row = sql.one(
        "SELECT state, author_id, pipeline, source_head, title, description FROM merge_requests WHERE id = ?",
        (s.item,),
    )
    if row is None or row[0] != "open" or row[1] == me:
        return []
    mr_id = int(s.item or 0)
    asked = p.username in handles(f"{row[4]}\n{row[5]}") or (s.kind == "mr_note" and p.username in handles(s.text))
    mine = sql.one(
        "SELECT kind, commit_sha FROM merge_request_notes WHERE merge_request_id = ? AND author_id = ?"
        " ORDER BY id DESC LIMIT 1",
        (mr_id, me),
    )
    if not asked and mine is None and (s.kind == "mr_note" or u_take >= p_take_review(env)):
        return []  # not my review: someone else on the team will pick it up
    pipeline = json.loads(row[2]) if isinstance(row[2], str) else dict(row[2] or {})
    status = str(pipeline.get("status", "not_run"))
    head = str(pipeline.get("commit") or row[3])
    target = f"mr:{mr_id}"
    if status in FINISHED_OK:
        verdict = "approve" if u_verdict < p_approve(env) else "request_changes"
        kind = "mr_approve" if verdict == "approve" else "mr_nitpick"
    elif status in FINISHED_BAD:
        verdict, kind = "request_changes", "mr_failed"
    else:
        if mine is not None:
            return []  # already said something; a finished pipeline plus a note will bring it back
        text = say("mr_wait", p.traits, rng, me=p.first_name)
        return [Plan("git_mr_comment", {"mr_id": mr_id, "body": text}, "comment", target, text)]
    if mine is not None and (mine[0], mine[1]) == (verdict, head):
        return []  # same verdict on the same commit: nothing new to say
    text = say(kind, p.traits, rng, me=p.first_name, value=status)
    reaction = verdict if kind != "mr_nitpick" else "pushback"
    args = {"mr_id": mr_id, "verdict": verdict, "body": text, "commit": head}
    return [Plan("git_mr_review", args, reaction, target, text)]


# -- incidents -----------------------------------------------------------------------------------------------


def _incident(env: TurnEnv, s: Stimulus) -> list[Plan]:
    sql, p, rng = Sql.of(env.ctx.session), env.persona, env.rng
    u = float(rng.random())
    row = sql.one("SELECT author_id, deleted_at FROM posts WHERE id = ?", (s.ref,))
    if row is None or row[1] is not None:
        return []
    taken = sql.scalar(
        "SELECT count(*) FROM posts WHERE root_id = ? AND author_id != ? AND deleted_at IS NULL", (s.ref, row[0])
    )
    if int(taken or 0) > 0 or u >= p.traits.helpfulness:
        return []  # a teammate is on it already, or this one does not pick it up
    project = (s.ticket or "").rsplit("-", 1)[0]
    mine = sql.one(
        "SELECT 1 FROM projects r JOIN employees e ON e.team_id = r.team_id WHERE r.key = ? AND e.id = ?",
        (project, p.employee_id),
    )
    kind = "incident_ack" if mine is not None else "incident_cover"
    text = say(kind, p.traits, rng, me=p.first_name, key=s.ticket or "this")
    return [Plan("chat_reply", {"post_id": s.ref, "message": text}, "incident_ack", f"post:{s.ref}", text)]


# -- access requests -----------------------------------------------------------------------------------------


def _access(env: TurnEnv, s: Stimulus) -> list[Plan]:
    sql, rng = Sql.of(env.ctx.session), env.rng
    u = float(rng.random())
    row = sql.one("SELECT status, owner_id, reason FROM access_requests WHERE id = ?", (s.item,))
    if row is None or row[0] != "pending" or row[1] != env.persona.employee_id:
        return []
    approve = u >= p_refuse(env, justified(str(row[2])))
    args = {"request_id": int(s.item or 0), "approve": approve}
    return [Plan("directory_decide_access_request", args, "approve" if approve else "refuse", f"access:{s.item}")]
