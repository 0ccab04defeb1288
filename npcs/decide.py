"""Decide: from what an NPC perceived and who it is, the service calls it will make this turn.

Every draw comes from the turn's own stream (``npc/<id>/<turn>``) in a fixed order, so the choice is a pure
function of (world seed, NPC, turn number, world state). Probabilities are simple monotone functions of the
traits, chosen so the presets land where the issue's properties need them:

- push back or refuse: ``0.95 * (1 - cooperativeness) ** 1.5`` (cooperative 0.5 %, adversarial 81 %);
- otherwise no reply at all: ``(1 - helpfulness) / 2`` (difficult people answer back rather than go quiet);
- a fact is right: ``1 - (1 - accuracy) * (1.5 - expertise)``;
- a proactive turn is a disruption with weight ``8 * chaos ** 3`` against the other options (idle weighs 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mcp_tools.base import ToolContext
from mcp_tools.errors import AppError
from mcp_tools.tickets import service as tickets
from npcs.actions import Plan, Turn
from npcs.intents import Fact, Intent, recognise, truth, wrong
from npcs.perceive import Stimulus
from npcs.persona import Persona
from npcs.text import CHANGES, TOPICS, local_time, say
from worlds.rawsql import Sql
from worlds.workflow import TERMINAL_STATUSES

FACT_INTENTS = ("status", "owner", "availability", "agreement")
FORWARD = {"backlog": "todo", "todo": "in_progress", "in_progress": "in_review", "in_review": "done"}
FORWARD["blocked"] = "in_progress"
_RANK = "CASE t.priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END"


@dataclass
class TurnEnv:
    """What one turn works with: the NPC's tool context, persona, turn, stream and who else is an NPC."""

    ctx: ToolContext
    persona: Persona
    turn: Turn
    number: int
    rng: np.random.Generator
    npc_ids: frozenset[int]
    booked: list[tuple[Any, Any]] = field(default_factory=list)  # slots accepted earlier in this turn's decide


def p_ignore(env: TurnEnv) -> float:
    """Probability a question gets no reply at all."""
    return float((1.0 - env.persona.traits.helpfulness) / 2)


def p_push(env: TurnEnv) -> float:
    """Probability of pushing back or refusing instead of answering."""
    return float(0.95 * (1.0 - env.persona.traits.cooperativeness) ** 1.5)


def p_correct(env: TurnEnv) -> float:
    """Probability an answered fact is the truth."""
    t = env.persona.traits
    return float(min(1.0, max(0.0, 1.0 - (1.0 - t.accuracy) * (1.5 - t.expertise))))


def _say(env: TurnEnv, kind: str, to: str = "", key: str = "", value: str = "") -> str:
    p = env.persona
    return say(kind, p.traits, env.rng, to=to, me=p.first_name, key=key, value=value)


def _first_name(env: TurnEnv, s: Stimulus) -> str:
    if s.sender_id is None:
        return ""
    name = Sql.of(env.ctx.session).scalar("SELECT first_name FROM employees WHERE id = ?", (s.sender_id,))
    return str(name or s.sender)


def answer(env: TurnEnv, s: Stimulus, intent: Intent) -> tuple[str, str, dict[str, Any] | None] | None:
    """(text, reaction, fact) replying to a question, or None when the NPC stays silent."""
    rng = env.rng
    u_push, u_refuse, u_ignore, u_correct = (float(x) for x in rng.random(4))
    to = _first_name(env, s)
    if u_push < p_push(env):
        kind = "refuse" if u_refuse < 0.4 else "pushback"
        return _say(env, kind, to), kind, None
    if u_ignore < p_ignore(env):
        return None
    if intent.kind not in FACT_INTENTS:
        return _say(env, "ack_question", to), "ack", None
    true = truth(env.ctx, intent)
    if true is None:
        return _say(env, "unknown_fact", to, key=intent.key or "that"), "answer", None
    said = true if u_correct < p_correct(env) else wrong(env.ctx, intent, true, rng)
    fact = Fact(intent.kind, intent.key or (intent.when.isoformat() if intent.when else ""), true, said)
    zone = env.persona.hours.timezone
    if intent.kind in ("status", "owner"):
        text = _say(env, f"answer_{intent.kind}", to, key=intent.key or "", value=said)
    elif intent.kind == "availability":
        text = (
            _say(env, "no_availability", to)
            if said in ("none", "unknown")
            else _say(env, "answer_availability", to, value=local_time(said, zone))
        )
    else:
        when = local_time(intent.when.isoformat(), zone) if intent.when else "then"
        text = _say(env, "agree_yes" if said == "yes" else "agree_no", to, value=when)
    return text, "answer", {"intent": fact.intent, "subject": fact.subject, "truth": true, "said": said}


def _reply_plan(s: Stimulus, text: str, reaction: str, intent: str, fact: dict[str, Any] | None) -> Plan:
    if s.kind == "dm":
        return Plan(
            "chat_direct_message", {"username": s.sender, "message": text}, reaction, s.sender, text, intent, fact
        )
    if s.kind == "mention":
        return Plan("chat_reply", {"post_id": s.ref, "message": text}, reaction, f"post:{s.ref}", text, intent, fact)
    if s.kind == "mail":
        return Plan("mail_reply", {"message_id": s.ref, "body": text}, reaction, f"mail:{s.ref}", text, intent, fact)
    key = s.ticket or ""
    return Plan("tickets_comment", {"key": key, "body": text}, reaction, key, text, intent, fact)


def react(env: TurnEnv, s: Stimulus) -> list[Plan]:
    """The replies to one inbound item (possibly none)."""
    rng = env.rng
    if s.kind == "assigned":
        key = s.ticket or ""
        if float(rng.random()) < p_push(env):
            text = _say(env, "assigned_pushback", key=key)
            return [Plan("tickets_comment", {"key": key, "body": text}, "pushback", key, text)]
        text = _say(env, "assigned_ack", key=key)
        plans = [Plan("tickets_comment", {"key": key, "body": text}, "ack", key, text)]
        status = Sql.of(env.ctx.session).scalar("SELECT status FROM tickets WHERE key = ?", (key,))
        nxt = FORWARD.get(str(status))
        if nxt in ("todo", "in_progress") and float(rng.random()) < 0.5 + env.persona.traits.proactivity / 2:
            plans.append(Plan("tickets_transition", {"key": key, "status": nxt}, "progress", key))
        return plans
    intent = recognise(s.text, env.persona.hours.timezone, s.when)
    if intent.kind == "statement":
        from_agent = s.sender_id is not None and s.sender_id not in env.npc_ids
        if from_agent and float(rng.random()) < env.persona.traits.helpfulness / 2:
            kind = "comment_ack" if s.kind == "ticket_comment" else "ack_statement"
            text = _say(env, kind, _first_name(env, s))
            return [_reply_plan(s, text, "ack", intent.kind, None)]
        return []
    out = answer(env, s, intent)
    if out is None:
        return []
    text, reaction, fact = out
    return [_reply_plan(s, text, reaction, intent.kind, fact)]


# -- proactive ------------------------------------------------------------------------------------------


def _own_open(sql: Sql, employee_id: int) -> list[tuple[str, str]]:
    marks = ", ".join("?" * len(TERMINAL_STATUSES))
    return [
        (k, s)
        for k, s in sql.all(
            f"SELECT t.key, t.status FROM tickets t WHERE t.assignee_id = ? AND t.status NOT IN ({marks})"  # noqa: S608
            f" ORDER BY {_RANK}, t.id LIMIT 20",
            (employee_id, *sorted(TERMINAL_STATUSES)),
        )
    ]


def _channel(sql: Sql, employee_id: int) -> str | None:
    name = sql.scalar(
        "SELECT c.name FROM channels c JOIN channel_members m ON m.channel_id = c.id"
        " WHERE c.type = 'O' AND m.employee_id = ? ORDER BY c.id LIMIT 1",
        (employee_id,),
    )
    return str(name) if name else None


def _pick(rng: np.random.Generator, items: list[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def proactive(env: TurnEnv) -> list[Plan]:
    """Unprompted work, one option drawn by trait weights.

    Options: a status post, progress on its ticket, a new ticket, an escalation to its manager, a question to
    a peer NPC, or (chaotic NPCs) a disruption such as a changed requirement.
    """
    sql, p, rng, t = Sql.of(env.ctx.session), env.persona, env.rng, env.persona.traits
    me = p.employee_id
    own = _own_open(sql, me)
    channel = _channel(sql, me)
    projects = sql.column(
        "SELECT p.key FROM projects p JOIN project_members m ON m.project_id = p.id"
        " WHERE m.employee_id = ? AND p.status = 'active' ORDER BY p.id",
        (me,),
    )
    marks = ", ".join("?" * len(TERMINAL_STATUSES))
    project_tickets: list[str] = []
    if projects:
        pm = ", ".join("?" * len(projects))
        project_tickets = sql.column(
            f"SELECT t.key FROM tickets t JOIN projects p ON p.id = t.project_id WHERE p.key IN ({pm})"  # noqa: S608
            f" AND t.status NOT IN ({marks}) ORDER BY t.id LIMIT 50",
            (*projects, *sorted(TERMINAL_STATUSES)),
        )
    peers = sorted(env.npc_ids - {me})
    peer_tickets: list[tuple[str, str]] = []
    if peers:
        qm = ", ".join("?" * len(peers))
        peer_tickets = [
            (k, u)
            for k, u in sql.all(
                f"SELECT t.key, e.username FROM tickets t JOIN employees e ON e.id = t.assignee_id"  # noqa: S608
                f" WHERE t.assignee_id IN ({qm}) AND t.status NOT IN ({marks}) ORDER BY t.id LIMIT 50",
                (*peers, *sorted(TERMINAL_STATUSES)),
            )
        ]
    blocked = [k for k, s in own if s == "blocked"]
    options: list[tuple[str, float]] = [
        ("status_post", 1.0 if channel and own else 0.0),
        ("progress", 1.5 * t.proactivity * t.helpfulness if own else 0.0),
        ("new_ticket", 0.3 + t.chaos if projects else 0.0),
        ("escalate", ((1 - t.cooperativeness) + (1.5 if blocked else 0.0)) if p.manager and own else 0.0),
        ("peer_question", 0.6 * t.proactivity if peer_tickets else 0.0),
        ("disruption", 8 * t.chaos**3 if project_tickets or channel else 0.0),
        ("idle", 1.0),  # looked around, nothing worth doing: keeps rare options rare when others are missing
    ]
    weights = np.array([w for _, w in options])
    if weights.sum() <= 0:
        return []
    choice = options[int(rng.choice(len(options), p=weights / weights.sum()))][0]
    if choice == "status_post" and channel:
        key, status = own[0]
        text = _say(env, "status_post", key=key, value=status)
        return [Plan("chat_post", {"channel": channel, "message": text}, "status", channel, text)]
    if choice == "progress":
        key, status = _pick(rng, own)
        nxt = FORWARD.get(status)
        if nxt is None:
            return []
        text = _say(env, "progress_comment", key=key, value=nxt)
        return [
            Plan("tickets_transition", {"key": key, "status": nxt}, "progress", key),
            Plan("tickets_comment", {"key": key, "body": text}, "progress", key, text),
        ]
    if choice == "new_ticket":
        title = say("new_ticket", t, rng, value=_pick(rng, list(TOPICS)), wrap=False)
        prio = "high" if float(rng.random()) < t.chaos else "medium"
        args = {"project": _pick(rng, projects), "title": title, "description": title + ".", "type": "task"}
        return [Plan("tickets_create", {**args, "priority": prio}, "new_ticket", args["project"], title)]
    if choice == "escalate" and p.manager:
        key = blocked[0] if blocked else own[0][0]
        status = dict(own)[key]
        text = _say(env, "escalation", to=p.manager, key=key, value=status)
        return [Plan("chat_direct_message", {"username": p.manager, "message": text}, "escalation", p.manager, text)]
    if choice == "peer_question":
        key, user = _pick(rng, peer_tickets)
        text = _say(env, "peer_question", key=key)
        return [Plan("chat_direct_message", {"username": user, "message": text}, "peer_question", user, text)]
    if choice == "disruption":
        return _disrupt(env, project_tickets, channel)
    return []


def _disrupt(env: TurnEnv, project_tickets: list[str], channel: str | None) -> list[Plan]:
    """A changed requirement: rewrite a ticket's description (and maybe priority), then announce it."""
    rng, t = env.rng, env.persona.traits
    change = _pick(rng, list(CHANGES))
    plans: list[Plan] = []
    key = _pick(rng, project_tickets) if project_tickets else "the project"
    if project_tickets:
        try:
            old = str(tickets.get(env.ctx, key)["description"])
        except AppError:
            old = ""
        note = say("requirement_change", t, rng, key=key, value=change, wrap=False)
        prio = str(_pick(rng, ["critical", "high", "low"]))
        args = {"key": key, "description": f"{old}\n\n{note}".strip(), "priority": prio}
        plans.append(Plan("tickets_update", args, "disruption", key, note))
    if channel:
        text = _say(env, "change_announce", key=key, value=change)
        plans.append(Plan("chat_post", {"channel": channel, "message": text}, "disruption", channel, text))
    return plans
