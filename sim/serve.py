"""Serve one episode to real clients: the Mattermost v4 REST facade (``companysim serve``).

Every chat call a client makes is an ``Episode.step`` of the matching company tool, under one lock (the
episode's world is a single connection), so the trace records it and a replay reproduces it. The server binds
127.0.0.1; binding any other address requires an explicit token (the login password), as DESIGN requires.
"""

from __future__ import annotations

import hmac
import json
import os
import threading
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import AppError
from sim.episode import Episode
from sim.errors import SimError
from worlds.rawsql import Sql


class StepError(AppError):
    """A tool call the episode refused; ``code`` is the step's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class EpisodeBackend:
    """A ``MattermostBackend`` over one live episode: the agent's employee is the only user that can log in.

    Args:
        episode: A reset episode.
        token: The session token and login password; a random one when omitted (printed by the CLI).
    """

    def __init__(self, episode: Episode, token: str | None = None) -> None:
        self.episode = episode
        self.token = token or os.urandom(16).hex()  # allow-nondeterminism: an auth secret, not world state
        self.lock = threading.Lock()

    def authenticate(self, login_id: str, password: str) -> str | None:
        """The token, if ``login_id`` is the agent's username (or email) and ``password`` is the token."""
        ctx = self.episode.tool_context
        actor = ctx.actor
        with self.lock:
            email = Sql.of(ctx.session).scalar("SELECT email FROM employees WHERE id = ?", (actor.employee_id,))
        if login_id in (actor.username, email) and hmac.compare_digest(password, self.token):
            return self.token
        return None

    def context(self, token: str) -> ToolContext | None:
        """The episode's tool context for the right token."""
        if not hmac.compare_digest(token, self.token) or self.episode.episode_id is None:
            return None
        return self.episode.tool_context

    def call(self, token: str, tool: str, arguments: dict[str, Any]) -> Any:
        """One step of the episode; its error becomes a StepError with the same code."""
        with self.lock:
            try:
                obs, _, _, _, info = self.episode.step({"name": tool, "arguments": arguments})
            except SimError as exc:
                raise StepError(exc.code, str(exc)) from None
        if info["error"] is not None:
            raise StepError(info["error"]["code"], info["error"]["message"])
        return json.loads(obs)


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without an explicit token.

    Raises:
        SimError: ``host`` is not 127.0.0.1/localhost/::1 and no token was given.
    """
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise SimError(f"binding {host} exposes the episode beyond this machine; pass --token to allow it")
