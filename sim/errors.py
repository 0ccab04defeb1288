"""The one error root of the sim layer.

Tree::

    SimError                 code: a stable string a caller can switch on
    ├── EpisodeOver          "episode_over": step() after submit, the turn limit or the time budget
    ├── NotReset             "not_reset": step() or grade() before reset()
    ├── BadAction            "bad_action": the action is not {"name", "arguments"} or an OpenAI tool call
    ├── UnknownScenario      "unknown_scenario": no scenario registered under that id
    ├── BadNoise             "bad_noise": an unknown noise profile or fault type, or a rate outside [0, 1]
    ├── BadOption            "bad_option": a reset option outside its allowed values
    ├── RolloutError         "bad_rollout": a rollout run that cannot start (unknown agent, no Ray cluster)
    └── TraceError           "bad_trace": a trace file is corrupt, truncated or from another version
        └── ReplayMismatch   "replay_mismatch": a replayed step differs from the recorded one
"""

from __future__ import annotations


class SimError(Exception):
    """Root of every error the sim layer raises on purpose; ``code`` is stable across releases."""

    code = "sim_error"


class EpisodeOver(SimError):
    """The episode has ended; reset() starts a new one."""

    code = "episode_over"


class NotReset(SimError):
    """The episode has not been reset yet."""

    code = "not_reset"


class BadAction(SimError):
    """The action does not have the shape of a tool call."""

    code = "bad_action"


class UnknownScenario(SimError):
    """No scenario is registered under the requested id."""

    code = "unknown_scenario"


class TraceError(SimError):
    """A trace cannot be read or does not match this companysim."""

    code = "bad_trace"


class ReplayMismatch(TraceError):
    """A replayed step produced a different result, error, clock or state hash."""

    code = "replay_mismatch"


class BadNoise(SimError):
    """An unknown noise profile or fault type, or a rate outside [0, 1]."""

    code = "bad_noise"


class BadOption(SimError):
    """A reset option outside its allowed values (the message names the option and what it allows)."""

    code = "bad_option"


class RolloutError(SimError):
    """A rollout run cannot start as asked: an agent that cannot play the scenario, a backend that is not there."""

    code = "bad_rollout"
