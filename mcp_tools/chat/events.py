"""WebSocket events of the Mattermost facade: ``posted`` for every new post in the agent's channels.

Mattermost pushes a ``posted`` event to every member of a channel when a post lands there, the sender
included; bots and clients (mattermostdriver's ``init_websocket``) act on those instead of polling. Here a post
can come from the agent's own request or from a coworker whose turn ran during it (NPCs act as the simulated
clock passes), so after every request the hub looks for posts newer than what each socket has been told about
and queues one event per post, in id order. Reading for events is not a tool call: which sockets are open is
not part of the episode, so it must not reach the trace.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from mcp_tools.base import ToolContext
from mcp_tools.chat import service
from worlds.rawsql import Sql

_NEW = (
    "SELECT p.id FROM posts p JOIN channel_members m ON m.channel_id = p.channel_id AND m.employee_id = ?"
    " WHERE p.id > ? AND p.deleted_at IS NULL ORDER BY p.id"
)


@dataclass(eq=False)
class Listener:
    """One authenticated socket: what it has been told up to, and its outgoing queue."""

    session: Session
    after: int
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    seq: int = 0

    def send(self, message: dict[str, Any]) -> None:
        """Queue an event with the socket's next sequence number."""
        self.seq += 1
        self.queue.put_nowait({**message, "seq": self.seq})


class Hub:
    """The open sockets of one facade and the ``posted`` events owed to them."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def join(self, ctx: ToolContext) -> Listener:
        """A listener told about nothing yet: it hears of posts newer than the newest one now."""
        newest = Sql.of(ctx.session).scalar("SELECT max(id) FROM posts")
        listener = Listener(session=ctx.session, after=int(newest or 0))
        self.listeners.append(listener)
        return listener

    def leave(self, listener: Listener) -> None:
        """Forget a closed socket."""
        if listener in self.listeners:
            self.listeners.remove(listener)

    def publish(self, ctx: ToolContext, baseline: int, shape: Any) -> None:
        """Queue a ``posted`` event per new post for every listener.

        Args:
            ctx: The current episode's context.
            baseline: The newest post id when the current episode began: a listener that knew another episode's
                world starts from there, so a reset does not replay the new world's history as news.
            shape: Renders a tool-shaped post as Mattermost's post object (the facade's ``_post``).
        """
        if not self.listeners:
            return
        sql = Sql.of(ctx.session)
        for listener in self.listeners:
            if listener.session is not ctx.session:
                listener.session, listener.after = ctx.session, baseline
        after = min(listener.after for listener in self.listeners)
        new = sql.column(_NEW, (ctx.actor.employee_id, after))
        if not new:
            return
        team = str(sql.scalar("SELECT name FROM chat_teams ORDER BY id LIMIT 1") or "")
        for post_id in new:
            event = _posted(ctx, sql, int(post_id), team, shape)
            for listener in self.listeners:
                if post_id > listener.after:
                    listener.send(event)
        for listener in self.listeners:
            listener.after = max(listener.after, int(new[-1]))


def _posted(ctx: ToolContext, sql: Sql, post_id: int, team: str, shape: Any) -> dict[str, Any]:
    """Mattermost's ``posted`` event for one post (``data.post`` is a JSON string, as the server sends it)."""
    post = shape(service.get_post(ctx, post_id), sql)
    name, display, kind = sql.one(
        "SELECT c.name, c.display_name, c.type FROM channels c JOIN posts p ON p.channel_id = c.id WHERE p.id = ?",
        (post_id,),
    )
    data: dict[str, Any] = {
        "channel_display_name": display,
        "channel_name": name,
        "channel_type": kind,
        "post": json.dumps(post, sort_keys=True),
        "sender_name": f"@{_username(sql, int(post['user_id']))}",
        "team_id": team,
    }
    if sql.one("SELECT 1 FROM mentions WHERE post_id = ? AND employee_id = ?", (post_id, ctx.actor.employee_id)):
        data["mentions"] = json.dumps([str(ctx.actor.employee_id)])
    broadcast = {"omit_users": None, "user_id": "", "channel_id": post["channel_id"], "team_id": ""}
    return {"event": "posted", "data": data, "broadcast": broadcast}


def _username(sql: Sql, employee_id: int) -> str:
    return str(sql.scalar("SELECT username FROM employees WHERE id = ?", (employee_id,)))


async def pump(ws: Any, listener: Listener) -> None:
    """Send a listener's queued messages over its socket until cancelled or the socket fails."""
    while True:
        message = await listener.queue.get()
        await ws.send_json(message)
