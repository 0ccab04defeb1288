"""Replay a trace on fresh forks and name the first step that differs.

Every episode in the trace is reset with its recorded scenario, seed and options; its actions are re-run in
order and each step's result, error, clock, state hash and injected fault must match the record, as must the
final score. A campaign episode (``options.campaign.index`` > 0) starts from the state the previous replayed
episode ended in, at the recorded start time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from sim.episode import Episode, score_record
from sim.errors import ReplayMismatch, TraceError
from sim.trace import canonical, read_trace
from worlds.store import WorldStore


@dataclass(frozen=True, kw_only=True)
class ReplayReport:
    """What a replay checked."""

    episodes: int
    steps: int
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every step and score matched."""
        return not self.mismatches


class Replayed(NamedTuple):
    """One replayed episode at its final state (its world stays open until the next one is yielded)."""

    number: int
    header: dict[str, Any]
    score: dict[str, Any]
    episode: Episode
    steps: int
    diverged: bool


def _compare(where: str, recorded: dict[str, Any], replayed: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if canonical(recorded.get(key)) != canonical(replayed.get(key)):
            was, now = canonical(recorded.get(key))[:200], canonical(replayed.get(key))[:200]
            return f"{where}: {key} differs: recorded {was} / replayed {now}"
    return None


def replayed(
    path: str | Path, *, store: WorldStore | None = None, stop_at_first: bool = True, report: list[str] | None = None
) -> Iterator[Replayed]:
    """Re-run every episode of the trace at ``path``, yielding each one at its final state, before grading.

    A mismatch is appended to ``report`` (and raised with ``stop_at_first``); an episode whose replay diverged
    is not yielded, since its final state is not the recorded one.

    Raises:
        TraceError: the trace is corrupt or truncated.
        ReplayMismatch: with ``stop_at_first``, at the first differing step (message names it).
    """
    mismatches = report if report is not None else []
    episodes: dict[str, Episode] = {}
    previous: Episode | None = None

    def mismatch(problem: str) -> None:
        mismatches.append(problem)
        if stop_at_first:
            raise ReplayMismatch(problem)

    try:
        for number, records in enumerate(read_trace(path)):
            header, steps, score = records[0], records[1:-1], records[-1]
            scenario = header.get("scenario")
            if not isinstance(scenario, str):
                raise TraceError(f"episode {number}: header has no scenario id")
            episode = episodes.get(scenario)
            if episode is None:
                episode = episodes[scenario] = Episode(scenario, store=store)
            options = header.get("options") or {}
            start = None
            campaign = options.get("campaign")
            if isinstance(campaign, dict) and campaign.get("index"):
                # A campaign episode continues the state the previous replayed episode ended in.
                if previous is None or not campaign.get("start"):
                    raise TraceError(f"episode {number}: a campaign continuation without its previous episode")
                start = previous.final_state(datetime.fromisoformat(str(campaign["start"])))
            episode.reset(seed=header["seed"], options=options, start=start)
            previous = episode
            problem = _compare(
                f"episode {number} header", header, episode.header(), ("world_spec", "rubric", "start_state_hash")
            )
            if problem:
                mismatch(problem)
                yield Replayed(number, header, score, episode, 0, diverged=True)
                continue
            diverged, ran = False, 0
            for step in steps:
                ran += 1
                if episode.done:
                    problem = f"episode {number} step {step.get('index')}: the replayed episode had already ended"
                else:
                    episode.step(step["action"])
                    problem = _compare(
                        f"episode {number} step {step.get('index')} ({step['action'].get('name')})",
                        step,
                        episode.steps[-1],
                        ("result", "error", "clock", "state_hash", "fault"),
                    )
                if problem:
                    mismatch(problem)
                    diverged = True
                    break
            yield Replayed(number, header, score, episode, ran, diverged=diverged)
    finally:
        for ep in episodes.values():
            ep.close()


def replay(path: str | Path, *, store: WorldStore | None = None, stop_at_first: bool = True) -> ReplayReport:
    """Re-run every episode of the trace at ``path`` and compare every step and the final score.

    Raises:
        TraceError: the trace is corrupt or truncated.
        ReplayMismatch: with ``stop_at_first``, at the first differing step (message names it).
    """
    mismatches: list[str] = []
    n_episodes = n_steps = 0
    for done in replayed(path, store=store, stop_at_first=stop_at_first, report=mismatches):
        n_episodes += 1
        n_steps += done.steps
        if done.diverged:
            continue
        problem = _compare(
            f"episode {done.number} score", done.score, score_record(done.episode.grade()), ("value", "checks")
        )
        if problem:
            mismatches.append(problem)
            if stop_at_first:
                raise ReplayMismatch(problem)
    return ReplayReport(episodes=n_episodes, steps=n_steps, mismatches=mismatches)
