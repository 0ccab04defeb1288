"""A curriculum sampler: keep the group pass rate of the tasks it hands out inside a band.

Why a band: GRPO-style trainers learn from the spread of rewards inside a group of rollouts of one task. A group
that all pass or all fail has no spread and teaches nothing, so the useful tasks are those the policy passes
sometimes: by default a pass rate between 0.2 and 0.8.

How: every family has a current difficulty. The trainer plays a group of rollouts of the task ``next()`` gave
and feeds their rewards back (``update``); a reward of at least ``threshold`` is a pass. A group above the band
moves its family one difficulty up, a group below it one down. Each (family, difficulty) keeps a moving
estimate of its pass rate, and a family is drawn with weight 1 while its estimate is in the band (or unknown),
and ``out_of_band_weight`` once it sits outside the band at the end of its difficulty range (too easy at the
hardest level, too hard at the easiest), so effort goes where the policy can still learn. The seed of a task
is drawn from the family's seed pool.

Deterministic: every draw comes from ``Seeds(seed).rng("curriculum")`` in the order of calls, so the same seed
and the same rewards give the same tasks. ``get_state``/``set_state`` carry everything across a checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.errors import SimError
from worlds.seeding import Seeds

__all__ = ["Curriculum", "CurriculumError", "CurriculumTask"]


class CurriculumError(SimError):
    """A curriculum asked for something it cannot do (an empty family list, a bad band, an unknown task)."""

    code = "bad_curriculum"


@dataclass(frozen=True, kw_only=True)
class CurriculumTask:
    """What to play next: a scenario, its task seed and difficulty (reset with ``seed`` and ``difficulty``)."""

    scenario: str
    seed: int
    difficulty: int


class Curriculum:
    """Hands out tasks and moves each family's difficulty to keep group pass rates inside ``band``.

    Args:
        families: Scenario ids to draw from.
        seeds: The task seeds each family draws from (e.g. one split's seeds).
        difficulties: The difficulty levels, easiest first.
        band: The pass-rate band (low, high) a group should land in.
        threshold: The reward at or above which a rollout passes (default: a full score).
        start: The difficulty every family starts at (default: the easiest).
        smoothing: Weight of the newest group in each (family, difficulty) pass-rate estimate.
        out_of_band_weight: Draw weight of a family stuck outside the band at the end of its range.
        seed: The sampler's seed.
    """

    def __init__(
        self,
        families: Sequence[str],
        *,
        seeds: Sequence[int] = tuple(range(100)),
        difficulties: Sequence[int] = (0, 1, 2, 3),
        band: tuple[float, float] = (0.2, 0.8),
        threshold: float = 0.999,
        start: int | None = None,
        smoothing: float = 0.5,
        out_of_band_weight: float = 0.1,
        seed: int = 0,
    ) -> None:
        low, high = band
        if not families or not seeds or not difficulties:
            raise CurriculumError("a curriculum needs at least one family, one seed and one difficulty")
        if not 0.0 <= low < high <= 1.0:
            raise CurriculumError(f"band must be 0 <= low < high <= 1; got {band}")
        if start is not None and start not in difficulties:
            raise CurriculumError(f"start difficulty {start} is not one of {list(difficulties)}")
        self.families = tuple(dict.fromkeys(families))
        self.seeds = tuple(seeds)
        self.difficulties = tuple(difficulties)
        self.band = (float(low), float(high))
        self.threshold = threshold
        self.smoothing = smoothing
        self.out_of_band_weight = out_of_band_weight
        first = self.difficulties.index(start) if start is not None else 0
        self.level: dict[str, int] = dict.fromkeys(self.families, first)
        """Each family's current position in ``difficulties``."""
        self.pass_rate: dict[tuple[str, int], float] = {}
        """The moving pass-rate estimate of each (family, difficulty) that has been played."""
        self.history: list[tuple[str, int, float]] = []
        """Every group fed back: (family, difficulty, pass rate)."""
        self.seed = seed
        self._rng: np.random.Generator = Seeds(seed).rng("curriculum")

    # -- sampling ----------------------------------------------------------------------------------------

    def _weight(self, family: str) -> float:
        level = self.level[family]
        rate = self.pass_rate.get((family, self.difficulties[level]))
        low, high = self.band
        stuck = rate is not None and (
            (rate > high and level == len(self.difficulties) - 1) or (rate < low and level == 0)
        )
        return self.out_of_band_weight if stuck else 1.0

    def next(self) -> CurriculumTask:
        """The next task to play a group of rollouts on."""
        weights = np.array([self._weight(f) for f in self.families], dtype=float)
        family = self.families[int(self._rng.choice(len(self.families), p=weights / weights.sum()))]
        seed = self.seeds[int(self._rng.integers(len(self.seeds)))]
        return CurriculumTask(scenario=family, seed=seed, difficulty=self.difficulties[self.level[family]])

    def update(self, task: CurriculumTask, rewards: Sequence[float]) -> float:
        """Feed back the rewards of a group of rollouts of ``task``; returns the group's pass rate.

        Raises:
            CurriculumError: ``task`` is not from this curriculum, or ``rewards`` is empty.
        """
        if task.scenario not in self.level or task.difficulty not in self.difficulties:
            raise CurriculumError(f"{task.scenario} at difficulty {task.difficulty} is not in this curriculum")
        if not rewards:
            raise CurriculumError("a group needs at least one reward")
        rate = sum(r >= self.threshold for r in rewards) / len(rewards)
        key = (task.scenario, task.difficulty)
        old = self.pass_rate.get(key)
        self.pass_rate[key] = rate if old is None else (1 - self.smoothing) * old + self.smoothing * rate
        self.history.append((task.scenario, task.difficulty, rate))
        level = self.difficulties.index(task.difficulty)
        if level == self.level[task.scenario]:  # a stale group (played before a move) does not move it again
            low, high = self.band
            if rate > high and level < len(self.difficulties) - 1:
                self.level[task.scenario] = level + 1
            elif rate < low and level > 0:
                self.level[task.scenario] = level - 1
        return rate

    def in_band(self, last: int | None = None) -> float:
        """The share of fed groups (the ``last`` ones, or all) whose pass rate was inside the band."""
        groups = self.history[-last:] if last else self.history
        low, high = self.band
        return sum(low <= r <= high for _, _, r in groups) / len(groups) if groups else 0.0

    # -- state -------------------------------------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """Everything the sampler holds, as JSON-able data (its random stream included)."""
        return {
            "level": dict(self.level),
            "pass_rate": [[f, d, r] for (f, d), r in sorted(self.pass_rate.items())],
            "history": [list(h) for h in self.history],
            "rng": self._rng.bit_generator.state,
        }

    def config(self) -> dict[str, Any]:
        """The constructor's arguments as JSON-able data (``from_config`` builds the same sampler from them)."""
        return {
            "families": list(self.families),
            "seeds": list(self.seeds),
            "difficulties": list(self.difficulties),
            "band": list(self.band),
            "threshold": self.threshold,
            "smoothing": self.smoothing,
            "out_of_band_weight": self.out_of_band_weight,
            "seed": self.seed,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Curriculum:
        """A fresh sampler from what ``config`` returned (restore its progress with ``set_state``)."""
        low, high = config["band"]
        return cls(
            [str(f) for f in config["families"]],
            seeds=[int(s) for s in config["seeds"]],
            difficulties=[int(d) for d in config["difficulties"]],
            band=(float(low), float(high)),
            threshold=float(config["threshold"]),
            smoothing=float(config["smoothing"]),
            out_of_band_weight=float(config["out_of_band_weight"]),
            seed=int(config["seed"]),
        )

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what ``get_state`` returned (same families and difficulties).

        Raises:
            CurriculumError: the state names other families.
        """
        if set(state["level"]) != set(self.families):
            raise CurriculumError("the saved curriculum plays other families")
        self.level = {str(f): int(v) for f, v in state["level"].items()}
        self.pass_rate = {(str(f), int(d)): float(r) for f, d, r in state["pass_rate"]}
        self.history = [(str(f), int(d), float(r)) for f, d, r in state["history"]]
        self._rng.bit_generator.state = dict(state["rng"])
