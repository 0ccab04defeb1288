"""Rescoring: grade recorded episodes again under another rubric, without touching their traces.

Each episode of a trace is replayed to its final state (``sim.replay.replayed``: every step must give the
recorded bytes, or the episode is reported diverged and not graded, since its state is not the recorded one)
and graded under the rubric asked for:

- ``Rubric``, a rubric file or ``ID@VERSION`` from a ``RubricStore``: that rubric as it is. Rubrics carry the
  task's hidden expectations, so this suits rollouts of one task (a GRPO group and the buffer's versions).
- ``family_version=N``: the scenario family's own rubric at version N, rebuilt for each episode from its
  hidden params (``ScenarioFamily.rubric_at``), so traces of many seeds can be rescored at once.

The results are ``rescore`` records (the new score, plus what the trace recorded) for a file beside the trace;
a trace is never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graders.base import Rubric, Score
from scenarios.base import rubric_at
from sim.errors import SimError
from sim.replay import replayed
from worlds.store import WorldStore


class RescoreError(SimError):
    """A rubric that does not fit the recorded episodes, or no rubric at all."""

    code = "bad_rescore"


@dataclass(frozen=True, kw_only=True)
class Rescored:
    """One recorded episode graded again."""

    trace: str
    episode: int
    episode_id: str
    scenario: str
    seed: int
    was: dict[str, Any]
    score: Score | None  # None: the replay diverged, so the episode was not graded

    def record(self) -> dict[str, Any]:
        """The ``rescore`` record: where the episode is, what it scored before, and its new score."""
        head = {
            "trace": self.trace,
            "episode": self.episode,
            "episode_id": self.episode_id,
            "scenario": self.scenario,
            "seed": self.seed,
            "was": self.was,
        }
        if self.score is None:
            return {"type": "rescore", **head, "diverged": True}
        return {**self.score.to_json(), **head, "type": "rescore"}


def _was(score: dict[str, Any]) -> dict[str, Any]:
    return {k: score.get(k) for k in ("value", "rubric_id", "rubric_version", "rubric_fingerprint")}


def rescore(
    paths: Iterable[str | Path],
    *,
    rubric: Rubric | None = None,
    family_version: int | None = None,
    store: WorldStore | None = None,
    judge: Any = None,
) -> Iterator[Rescored]:
    """Grade every episode of the traces at ``paths`` again; exactly one of ``rubric``/``family_version``.

    Raises:
        RescoreError: neither or both given, or a rubric for another family.
        RubricNotFound: a family version the family never had.
        TraceError: a trace is corrupt or truncated.
    """
    if (rubric is None) == (family_version is None):
        raise RescoreError("give exactly one of a rubric (file or ID@VERSION) and a family rubric version")
    for path in paths:
        for done in replayed(path, store=store, stop_at_first=False):
            header = done.header
            recorded = str((header.get("rubric") or {}).get("id", ""))
            if rubric is not None:
                chosen = rubric
                if rubric.id != recorded:
                    raise RescoreError(
                        f"rubric {rubric.id!r} does not grade {header.get('scenario')} (its episodes use {recorded!r})"
                    )
            else:
                assert family_version is not None
                chosen = rubric_at(done.episode.family, done.episode.instance, family_version)
            yield Rescored(
                trace=str(path),
                episode=done.number,
                episode_id=str(header.get("episode_id", "")),
                scenario=str(header.get("scenario")),
                seed=int(header.get("seed", 0)),
                was=_was(done.score),
                score=None if done.diverged else done.episode.regrade(chosen, judge),
            )
