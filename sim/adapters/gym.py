"""A ``gymnasium.Env`` over an Episode, with text observation and action spaces.

The action is a JSON string ``{"name": ..., "arguments": {...}}`` (or an OpenAI tool call); the observation
is the tool result as canonical JSON, or ``error [code]: message``. ``reset`` returns the task prompt, and
its info carries the tool schemas and the episode id.
"""

from __future__ import annotations

import string
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from sim.episode import Episode
from worlds.store import WorldStore

MAX_TEXT = 1_000_000


class CompanySimEnv(gym.Env[str, str]):
    """Gymnasium environment for one scenario.

    Args:
        scenario: A registered scenario id.
        store: Optional world store (defaults to the user cache).
        options: Default reset options (world_seed, employees, history_days, difficulty).
    """

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's class attribute

    def __init__(
        self,
        scenario: str = "triage-tickets-v0",
        store: WorldStore | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.episode = Episode(scenario, store=store)
        self.default_options = dict(options or {})
        charset = string.printable
        self.observation_space = spaces.Text(max_length=MAX_TEXT, charset=charset)
        self.action_space = spaces.Text(max_length=MAX_TEXT, charset=charset)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; the seed selects the task (and, by default, the company)."""
        super().reset(seed=seed)
        merged = {**self.default_options, **(options or {})}
        return self.episode.reset(seed=seed, options=merged)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one tool call given as JSON text."""
        return self.episode.step(action)

    def close(self) -> None:
        """Free the episode's world."""
        self.episode.close()
