"""The one error root of the NPC layer, with stable codes callers (scenarios, the CLI) can match on.

Tree::

    NpcError            code
    ├── BadTrait        bad_trait        a trait dimension is unknown, or its value is not a number in [0, 1]
    ├── UnknownPreset   unknown_preset   no trait preset of that name
    ├── UnknownNpc      unknown_npc      an override names an employee who is not in the NPC population
    └── RealiserMiss    realiser_miss    replay-only realiser asked for text it never recorded
"""

from __future__ import annotations


class NpcError(Exception):
    """Root of every error the NPC layer raises on purpose; ``code`` is stable, ``message`` is one line."""

    code = "npc_error"

    def __init__(self, message: str) -> None:
        super().__init__(f"{self.code}: {message}")
        self.message = message


class BadTrait(NpcError):
    """A trait dimension is unknown or its value is out of range; the message names both."""

    code = "bad_trait"


class UnknownPreset(NpcError):
    """No preset of the given name; the message lists the known ones."""

    code = "unknown_preset"


class UnknownNpc(NpcError):
    """An override names someone who is not an NPC of this world (unknown, inactive, or the agent)."""

    code = "unknown_npc"


class RealiserMiss(NpcError):
    """A replay-only realiser found no recorded completion for a prompt (replays must never call a model)."""

    code = "realiser_miss"
