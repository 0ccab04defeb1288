"""``history-followup-v0``: an open loop the history left (a chat request nobody answered); close it.

The third kind of mined task (issue 13 item 3). The generated chat holds root posts that ask something about a
ticket and never got a reply. Nothing is set up or cut: the loop is open in the history as it is. The build
picks one, hands it to the person who should have answered, and grades the exact outcome that closes it.

Kinds, by difficulty (the kind alternates; from difficulty 2 the answer asks for more):

- 0, 2 ``review-request``: someone asked @X to review K and X never answered. X answers in the thread,
  mentioning the asker and naming K; difficulty 2 also leaves the review as a comment on K.
- 1, 3 ``status-question``: someone asked in a channel whether anyone is on ticket K, or for its ETA. Whoever
  holds K (its assignee, else its project's lead) answers in the thread with K and its status as the tracker
  shows it now; difficulty 3 also names who is on it (or says nobody is).

Difficulty alternates the kind (a review request at 0 and 2, a status question at 1 and 3) and from 2 asks for
more (the review comment; who is on it). Why this order: a review reply only names K and mentions its asker; a
status answer must read the tracker's current state exactly, and the ticket has almost always moved since it was
filed (18 of 20 sampled cases in the 40-person default world), sometimes to an ``in_progress``-style word.
Difficulty 2 adds an action (the review comment) and difficulty 3 a fact (who is on it, rarely the reporter), so
reading the ticket as filed, writing it as people say it, or skipping the comment costs more as difficulty
rises.

What the history holds (one 100-person, 30-day world): about 40 unanswered status questions and a few
unanswered review requests. Mail always gets its answer in the generated history (``history-redo-v0`` mines
those), and meeting notes' action items name tickets that already exist, so neither leaves an open loop to
mine. A world without a case of the difficulty's kind gets one of the other kind. The seed picks the case as
``seed % n`` in post order, so seeds 0..n-1 enumerate them (``sim.mine``); the params keep the provenance
(the post, its channel and its author).

The oracle finds the post through the chat tools and reads the ticket; it never reads the params.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from graders.base import Rubric
from graders.rubric import load_rubric
from scenarios.base import AgentEnv, Limits, ScenarioInstance, WorldDefaults, start_day
from scenarios.library.history_question import pick
from scenarios.library.history_redo import (
    FORMAT,
    KEY,
    assignee_pattern,
    key_pattern,
    only_key,
    only_status,
    status_pattern,
    ticket_state,
)
from worlds.clock import Clock
from worlds.rawsql import Sql
from worlds.seeding import Seeds

KINDS = ("review-request", "status-question", "review-request", "status-question")
_K = r"([A-Z][A-Z0-9]*-\d+)"
ASKS = {
    "status-question": re.compile(rf"(?i:is anyone on|what's the ETA for) {_K}"),
    "review-request": re.compile(
        rf"@([a-z0-9][a-z0-9._-]*[a-z0-9]) (?i:could you review|could you take a look at) {_K}"
        rf"|{_K} needs a reviewer, @([a-z0-9][a-z0-9._-]*[a-z0-9])"
    ),
}

OPEN = (
    "Nobody answered. Close the loop: reply in that thread with",
    "It is still unanswered. Reply in that thread with",
    "Nobody got back to them. Answer in that thread with",
)
"""Prompt variants of the status request, one drawn per task."""


@dataclass(frozen=True)
class Loop:
    """One unanswered request: the post, where and by whom, who should answer, and the ticket it is about."""

    kind: str
    post: int
    channel: str
    channel_id: int
    author: str
    message: str
    day: str
    actor: int
    key: str
    status: str
    assignee: str | None

    @property
    def source(self) -> str:
        """Where the task came from in the history (its provenance, and what its split hashes)."""
        return f"chat/post/{self.post}"


def loops(sql: Sql, kind: str) -> list[Loop]:
    """Every unanswered request of ``kind`` whose answerer the agent can play, in post order."""
    rows = sql.all(
        "SELECT p.id, c.id, c.name, a.username, p.message, p.created_at FROM posts p"
        " JOIN channels c ON c.id = p.channel_id JOIN employees a ON a.id = p.author_id"
        " WHERE p.root_id IS NULL AND p.deleted_at IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM posts r WHERE r.root_id = p.id) ORDER BY p.id"
    )
    out: list[Loop] = []
    for post, channel_id, channel, author, message, at in rows:
        m = ASKS[kind].search(str(message))
        if m is None:
            continue
        if kind == "review-request":
            who, key = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            actor = sql.scalar("SELECT id FROM employees WHERE username = ? AND active = ?", (who, True))
        else:
            key = m.group(1)
            actor = sql.scalar(
                "SELECT coalesce(ea.id, el.id) FROM tickets t JOIN projects p ON p.id = t.project_id"
                " LEFT JOIN employees ea ON ea.id = t.assignee_id AND ea.active = ?"
                " LEFT JOIN employees el ON el.id = p.lead_id AND el.active = ?"
                " WHERE p.key || '-' || t.number = ?",
                (True, True, key),
            )
        state = ticket_state(sql, key)
        if actor is None or state is None:
            continue
        member = sql.scalar(
            "SELECT count(*) FROM channel_members WHERE channel_id = ? AND employee_id = ?", (channel_id, actor)
        )
        mine = sql.scalar("SELECT username FROM employees WHERE id = ?", (actor,))
        if not member or mine == author:
            continue  # the answerer must see the channel, and nobody answers their own question
        out.append(
            Loop(kind, int(post), str(channel), int(channel_id), str(author), str(message), str(at)[:10],
                 int(actor), key, state[1], state[2])
        )  # fmt: skip
    return out


class HistoryFollowup:
    """The ``history-followup-v0`` family."""

    id = "history-followup-v0"
    description = "Close an open loop the chat history left: answer the status question or review request."
    world = WorldDefaults(employees=40, history_days=30)

    def build(self, session: Session, seeds: Seeds, clock: Clock, difficulty: int) -> ScenarioInstance:
        """Pick loop ``seed % n`` of the difficulty's kind and hand it to whoever should have answered."""
        difficulty = max(0, min(3, difficulty))
        sql = Sql.of(session)
        first = KINDS[difficulty]
        order = (first, *(k for k in dict.fromkeys(KINDS) if k != first))
        loop, index, count = pick(
            order, lambda k: loops(sql, k), seeds.seed, "the history leaves no open loop: world too small"
        )
        user, name = sql.one(
            "SELECT username, first_name || ' ' || last_name FROM employees WHERE id = ?", (loop.actor,)
        )
        start_day(session, clock, loop.actor)
        full = difficulty >= 2
        variant = int(seeds.rng("scenario/history-followup").integers(len(OPEN)))
        params = {
            "task": f"{loop.kind}{'+' * full}:{loop.source}",
            "kind": loop.kind,
            "source": loop.source,
            "provenance": {"post": loop.post, "channel": loop.channel, "author": loop.author},
            "key": loop.key,
            "status": loop.status if loop.kind == "status-question" else None,
            "assignee": loop.assignee,
            "full": full,
            "index": index,
            "of": count,
        }
        return ScenarioInstance(
            scenario_id=self.id,
            prompt=self._prompt(loop, str(user), str(name), full, OPEN[variant]),
            actor=str(user),
            rubric=self._rubric(loop, full),
            params=params,
            limits=Limits(max_turns=20, time_budget_s=2 * 3600),
            apps=("chat", "tickets", "directory"),
            difficulty=difficulty,
        )

    @staticmethod
    def _prompt(loop: Loop, user: str, name: str, full: bool, opening: str) -> str:
        said = f'On {loop.day}, @{loop.author} asked in ~{loop.channel} about {loop.key}: "{loop.message}"'
        if loop.kind == "status-question":
            more = " and who is on it (or that nobody is)" if full else ""
            ask = f"{opening} the ticket's key and its status{more}."
            tail = FORMAT
        else:
            more = f", and leave your review as a comment on {loop.key}" if full else ""
            ask = (
                f"You never answered. Close the loop: review it and reply in that thread, mentioning "
                f"@{loop.author}, that you reviewed {loop.key}{more}."
            )
            tail = "Name people by @username."
        return f"You are {name} (@{user}). {said} {ask} {tail} Change nothing else. Call the submit tool when done."

    @staticmethod
    def _rubric(loop: Loop, full: bool) -> Rubric:
        posted = {"fn": "post_in_channel"}
        channel, key = loop.channel, loop.key
        checks: list[dict[str, Any]] = [
            {
                "id": "replied-in-thread",
                "description": f"The agent replied in the thread of the request (post {loop.post}).",
                "must": True,
                "fn": "row_exists",
                "params": {"table": "posts", "where": {"root_id": loop.post, "author_id": loop.actor}},
            },
            {**posted, "id": "names-key", "description": f"The reply names {key}.",
             "params": {"channel": channel, "pattern": key_pattern(key)}},
            {**posted, "id": "only-key", "description": f"The reply names no ticket but {key}.",
             "params": {"channel": channel, "pattern": only_key(key)}, "needs": ["names-key"]},
        ]  # fmt: skip
        allowed: list[dict[str, Any]] = [
            {"table": "posts", "ops": ["insert"]},
            {"table": "mentions", "ops": ["insert"]},
        ]
        if loop.kind == "status-question":
            checks += [
                {**posted, "id": "states-status", "description": f"The reply states {key}'s status, {loop.status}.",
                 "params": {"channel": channel, "pattern": status_pattern(loop.status)}},
                {**posted, "id": "only-status", "description": f"The reply states no status but {loop.status}.",
                 "params": {"channel": channel, "pattern": only_status(loop.status)}, "needs": ["states-status"]},
            ]  # fmt: skip
            if full:
                who = loop.assignee
                checks.append(
                    {**posted, "id": "names-assignee",
                     "description": f"The reply says who is on {key}: {'@' + who if who else 'nobody'}.",
                     "params": {"channel": channel, "pattern": assignee_pattern(who)}}
                )  # fmt: skip
        else:
            checks.append(
                {**posted, "id": "mentions-asker", "description": f"The reply mentions @{loop.author}.",
                 "params": {"channel": channel, "pattern": r"\S", "mention": loop.author}}
            )  # fmt: skip
            if full:
                checks.append(
                    {"id": "review-comment", "description": f"The review is a new comment on {key} by the agent.",
                     "fn": "ticket_comment_matches", "params": {"key": key, "pattern": r"\S", "author": "actor"}}
                )  # fmt: skip
                allowed += [
                    {"table": "ticket_comments", "ops": ["insert"]},
                    {"table": "tickets", "fields": ["updated_at"], "keys": [key]},
                ]
        checks.append(
            {
                "id": "no-collateral",
                "description": "Only the reply (and, when asked, the review comment): nothing else changed.",
                "must": True,
                "fn": "no_collateral_changes",
                "params": {"allowed": allowed},
            }
        )
        return load_rubric({"id": "history-followup", "version": 1, "description": f"Close the loop on {key}",
                            "checks": checks})  # fmt: skip

    # -- oracle -----------------------------------------------------------------------------------------

    def oracle(self, env: AgentEnv) -> None:
        """Find the unanswered post, read the ticket, reply in its thread (and comment on the ticket)."""
        m = re.search(r"On (\d{4}-\d\d-\d\d), @([\w.-]+) asked in ~([\w-]+) about ([A-Z][A-Z0-9]*-\d+)", env.prompt)
        assert m is not None, "the prompt names no request"
        day, author, channel, key = m.groups()
        found = env.call("chat_search_posts", text=key, channel=channel, author=author, limit=100)["posts"]
        post = next(p for p in found if p["root_id"] is None and p["at"][:10] == day and p["reply_count"] == 0)
        author = post["author"]  # who to answer: the post's author, as the thread shows them
        ticket = env.call("tickets_get", key=key)
        name = ticket["key"]
        if "its status" in env.prompt:
            parts = [f"{name} is {ticket['status']}"]
            if "who is on it" in env.prompt:
                who = ticket.get("assignee")
                parts.append(f"@{who} is on it" if who else "it is unassigned")
            text = ", ".join(parts) + "."
        else:
            text = f"@{author} sorry for the silence: I reviewed {name}, it looks good."
            if "as a comment on" in env.prompt:
                env.call("tickets_comment", key=key, body="Reviewed: looks good to me.")
        env.call("chat_reply", post_id=post["id"], message=text)
        env.call("submit", summary=f"closed the loop on {key}")


__all__ = ["KEY", "HistoryFollowup"]
