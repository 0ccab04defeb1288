"""Serve episodes to real clients: the Mattermost v4 REST facade plus episode control (``companysim serve``).

Every chat call a client makes is an ``Episode.step`` of the matching company tool, under one lock (the
episode's world is a single connection), so the trace records it and a replay reproduces it. Served episodes
reset with ``turns: writes``: clients poll, so reads spend neither turns nor simulated time; only writes,
``wait`` and ``submit`` do. When an episode ends (submit, turn limit, time budget), a call answers 503
``episode_over`` naming the way on, ``POST /api/v4/companysim/reset``; with ``auto_next`` the next seed's
episode starts by itself instead. Every served episode plays in the first one's company (``world_seed``), so
the ids a client has learnt (channels, users) stay valid from one episode to the next. Episode control
lives under ``/api/v4/companysim/``: ``episode`` (GET: id, seed, actor, prompt, steps, clock, whether it is
over and its reward; never the rubric), ``wait``, ``submit`` and ``reset`` (POST, optional ``seed``).

The server binds 127.0.0.1; binding any other address requires an explicit token (the login password), as
DESIGN requires. Tokens are compared as UTF-8 bytes in constant time, so any text a client sends is a 401,
never a server error.
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
from sim.errors import EpisodeOver, SimError
from worlds.rawsql import Sql

RESET_HOW = "POST /api/v4/companysim/reset starts the next episode"


class StepError(AppError):
    """A tool call the episode refused; ``code`` is the step's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def same_secret(given: str, secret: str) -> bool:
    """Constant-time comparison of two texts of any characters (``hmac`` refuses non-ASCII ``str``)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), secret.encode("utf-8", "surrogatepass"))


class EpisodeBackend:
    """A ``MattermostBackend`` over served episodes: the agent's employee is the only user that can log in.

    Args:
        episode: The episode to serve (``start`` resets it).
        token: The session token and login password; a random one when omitted (printed by the CLI).
        options: Reset options for every served episode (``turns`` defaults to ``writes``).
        auto_next: Start the next seed's episode when a call arrives after one ended.
    """

    def __init__(
        self,
        episode: Episode,
        token: str | None = None,
        *,
        options: dict[str, Any] | None = None,
        auto_next: bool = False,
    ) -> None:
        self.episode = episode
        self.token = token or os.urandom(16).hex()  # allow-nondeterminism: an auth secret, not world state
        self.lock = threading.Lock()
        self.options = {"turns": "writes", **(options or {})}
        self.auto_next = auto_next
        self.seed = 0
        self.baseline = 0
        self.reward: float | None = None
        self.info: dict[str, Any] = {}
        """What the current episode's reset returned beside the prompt (its tools, actor, limits)."""

    def start(self, seed: int | None = None) -> dict[str, Any]:
        """Reset to a new episode (default: the next seed) and return its ``status``."""
        with self.lock:
            self._start(self.seed + 1 if seed is None else seed)
            return self._status()

    def _start(self, seed: int) -> None:
        self.options.setdefault("world_seed", seed)
        _, self.info = self.episode.reset(seed=seed, options=dict(self.options))
        self.seed, self.reward = seed, None
        self.baseline = int(Sql.of(self.episode.tool_context.session).scalar("SELECT max(id) FROM posts") or 0)

    def status(self) -> dict[str, Any]:
        """The served episode: id, seed, actor, prompt, turns used, clock, whether it is over, its reward."""
        with self.lock:
            return self._status()

    def _status(self) -> dict[str, Any]:
        header, steps = self.episode.header(), self.episode.steps
        return {
            "episode_id": self.episode.episode_id,
            "scenario": header["scenario"],
            "seed": self.seed,
            "actor": header["actor"],
            "prompt": self.episode.instance.prompt,
            "steps": len(steps),
            "clock": self.episode.tool_context.clock.now().isoformat(),
            "over": self.episode.done,
            "reward": self.reward,
        }

    # -- MattermostBackend ----------------------------------------------------------------------------------

    def authenticate(self, login_id: str, password: str) -> str | None:
        """The token, if ``login_id`` is the agent's username (or email) and ``password`` is the token."""
        with self.lock:
            ctx = self.episode.tool_context
            email = Sql.of(ctx.session).scalar("SELECT email FROM employees WHERE id = ?", (ctx.actor.employee_id,))
        if login_id in (ctx.actor.username, email) and same_secret(password, self.token):
            return self.token
        return None

    def context(self, token: str) -> ToolContext | None:
        """The episode's tool context for the right token."""
        if not same_secret(token, self.token) or self.episode.episode_id is None:
            return None
        with self.lock:  # every request starts here: the next episode begins before a route reads the world
            if self.episode.done and self.auto_next:
                self._start(self.seed + 1)
            return self.episode.tool_context

    def feed(self) -> tuple[ToolContext, int] | None:
        """The current episode's context and the newest post id when it began."""
        if self.episode.episode_id is None:
            return None
        return self.episode.tool_context, self.baseline

    def call(self, token: str, tool: str, arguments: dict[str, Any]) -> Any:
        """One step of the episode; its error becomes a StepError with the same code."""
        obs, _ = self.step(tool, arguments)
        return json.loads(obs)

    def step(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Run one call; returns (observation, whether the episode is now over).

        Raises:
            StepError: the call failed (its code), or the episode has ended (``episode_over``, saying how on).
        """
        with self.lock:
            try:
                obs, reward, terminated, truncated, info = self.episode.step({"name": tool, "arguments": arguments})
            except EpisodeOver as exc:
                raise StepError(exc.code, f"{exc}; {RESET_HOW}") from None
            except SimError as exc:
                raise StepError(exc.code, str(exc)) from None
            if terminated or truncated:
                self.reward = reward
        if info["error"] is not None:
            raise StepError(info["error"]["code"], info["error"]["message"])
        return obs, terminated or truncated


def build_app(backend: EpisodeBackend) -> Any:
    """The Mattermost facade over ``backend`` with the ``/api/v4/companysim`` episode-control routes."""
    from sim.serve_routes import add_control_routes  # the web stack loads only when something is served

    return add_control_routes(backend)


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without an explicit token.

    Raises:
        SimError: ``host`` is not 127.0.0.1/localhost/::1 and no token was given.
    """
    if host not in ("127.0.0.1", "localhost", "::1") and not token:
        raise SimError(f"binding {host} exposes the episode beyond this machine; pass --token to allow it")
