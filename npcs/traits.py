"""Trait vectors: who an NPC is, as nine named numbers in [0, 1].

Why a flat vector and not a personality prose: behaviour is a pure function of (world seed, NPC, turn) and
these numbers, so a scenario can pin a coworker exactly (``{"base": "adversarial", "chaos": 0.6}``), a
property test can sweep one dimension, and a trace can record the whole personality in a few bytes.

Dimensions and what they drive:

- ``responsiveness``: how fast a reply comes (median latency shrinks as it grows; 0 = never reacts).
- ``helpfulness``: whether a question gets any reply at all.
- ``accuracy`` and ``expertise``: whether an answered fact is right.
- ``verbosity`` and ``formality``: the shape of the text (see ``npcs.text``).
- ``cooperativeness``: low values push back or refuse.
- ``chaos``: changed requirements, surprise tickets, churn.
- ``proactivity``: how often the NPC acts unprompted (0 = never).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from npcs.errors import BadTrait, UnknownPreset
from worlds.seeding import Seeds

DIMENSIONS: tuple[str, ...] = (
    "responsiveness",
    "helpfulness",
    "accuracy",
    "verbosity",
    "formality",
    "cooperativeness",
    "chaos",
    "proactivity",
    "expertise",
)


@dataclass(frozen=True, kw_only=True)
class TraitVector:
    """An NPC's personality; every dimension is a float in [0, 1] (checked on construction).

    Raises:
        BadTrait: a value is not a finite number in [0, 1] (the message names the dimension and the value).
    """

    responsiveness: float = 0.6
    helpfulness: float = 0.65
    accuracy: float = 0.85
    verbosity: float = 0.5
    formality: float = 0.5
    cooperativeness: float = 0.65
    chaos: float = 0.1
    proactivity: float = 0.35
    expertise: float = 0.6

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            object.__setattr__(self, f.name, _check(f.name, value))

    @property
    def absent(self) -> bool:
        """Never acts: neither reacts nor acts unprompted (the ``absent`` preset, or any such vector)."""
        return self.responsiveness <= 0.0 and self.proactivity <= 0.0

    def as_dict(self) -> dict[str, float]:
        """The dimensions as a plain dict (JSON-able, in declaration order)."""
        return asdict(self)

    def with_overrides(self, overrides: Mapping[str, Any]) -> TraitVector:
        """A copy with some dimensions replaced.

        Raises:
            BadTrait: an unknown dimension or a bad value.
        """
        unknown = sorted(set(overrides) - set(DIMENSIONS))
        if unknown:
            raise BadTrait(f"unknown trait dimension {unknown[0]!r}; expected one of {', '.join(DIMENSIONS)}")
        return replace(self, **{k: _check(k, v) for k, v in overrides.items()})

    @classmethod
    def parse(cls, spec: TraitVector | str | Mapping[str, Any] | None) -> TraitVector:
        """A vector from a preset name, a dict of overrides, or ``{"base": preset, **overrides}``.

        A dict without ``base`` overrides the neutral centre; ``None`` is the neutral centre itself.

        Raises:
            UnknownPreset: the preset name (alone or as ``base``) is not one of ``PRESETS``.
            BadTrait: an unknown dimension or a value outside [0, 1].
        """
        if spec is None:
            return NEUTRAL
        if isinstance(spec, TraitVector):
            return spec
        if isinstance(spec, str):
            return preset(spec)
        if not isinstance(spec, Mapping):
            raise BadTrait(f"expected a preset name or a dict of traits; got {type(spec).__name__}")
        rest = dict(spec)
        base = rest.pop("base", None)
        start = NEUTRAL if base is None else cls.parse(base) if isinstance(base, str | Mapping) else None
        if start is None:
            raise BadTrait(f"base must be a preset name or a dict; got {type(base).__name__}")
        return start.with_overrides(rest)


def _check(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadTrait(f"trait {name} must be a number in [0, 1]; got {value!r:.40}")
    if not 0.0 <= value <= 1.0:
        raise BadTrait(f"trait {name} must be in [0, 1]; got {value!r}")
    return float(value)


NEUTRAL = TraitVector()
PRESETS: dict[str, TraitVector] = {
    "neutral": NEUTRAL,
    "cooperative": TraitVector(
        responsiveness=0.9,
        helpfulness=0.97,
        accuracy=0.99,
        verbosity=0.5,
        formality=0.5,
        cooperativeness=0.97,
        chaos=0.02,
        proactivity=0.4,
        expertise=0.9,
    ),
    "adversarial": TraitVector(
        responsiveness=0.6,
        helpfulness=0.25,
        accuracy=0.7,
        verbosity=0.3,
        formality=0.4,
        cooperativeness=0.1,
        chaos=0.2,
        proactivity=0.3,
        expertise=0.6,
    ),
    "chaotic": TraitVector(
        responsiveness=0.7,
        helpfulness=0.6,
        accuracy=0.55,
        verbosity=0.7,
        formality=0.3,
        cooperativeness=0.5,
        chaos=0.9,
        proactivity=0.75,
        expertise=0.5,
    ),
    "absent": TraitVector(
        responsiveness=0.0,
        helpfulness=0.0,
        accuracy=0.5,
        verbosity=0.2,
        formality=0.5,
        cooperativeness=0.5,
        chaos=0.0,
        proactivity=0.0,
        expertise=0.5,
    ),
}


def preset(name: str) -> TraitVector:
    """The preset called ``name``.

    Raises:
        UnknownPreset: naming the preset and the known ones.
    """
    found = PRESETS.get(name)
    if found is None:
        raise UnknownPreset(f"no trait preset {name!r}; expected one of {', '.join(sorted(PRESETS))}")
    return found


SPREAD = 0.12
"""Standard deviation of sampled traits around the neutral centre: varied coworkers, few extremes."""


def sample_traits(world_seed: int, employee_id: int) -> TraitVector:
    """A coworker's default personality: the neutral centre plus clipped normal noise.

    Drawn from the stream ``npc/<id>/traits`` only, so it depends on (seed, employee) and nothing else: adding
    people, presets or other streams never changes who an existing coworker is. Sampled vectors are never
    absent (responsiveness is floored at 0.05) because absence is a scenario decision, not an accident.
    """
    rng: np.random.Generator = Seeds(world_seed).rng(f"npc/{employee_id}/traits")
    noise = rng.normal(0.0, SPREAD, size=len(DIMENSIONS))
    centre = NEUTRAL.as_dict()
    values = {d: round(float(np.clip(centre[d] + n, 0.0, 1.0)), 4) for d, n in zip(DIMENSIONS, noise, strict=True)}
    values["responsiveness"] = max(values["responsiveness"], 0.05)
    return TraitVector(**values)
