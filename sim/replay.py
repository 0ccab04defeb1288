"""Replay a trace on fresh forks and name the first step that differs.

Every episode in the trace is reset with its recorded scenario, seed and options; its actions are re-run in
order and each step's result, error, clock, state hash and injected fault must match the record, as must the
final score. A campaign episode (``options.campaign.index`` > 0) starts from the state the previous replayed
episode ended in, at the recorded start time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

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


def _compare(where: str, recorded: dict[str, Any], replayed: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if canonical(recorded.get(key)) != canonical(replayed.get(key)):
            was, now = canonical(recorded.get(key))[:200], canonical(replayed.get(key))[:200]
            return f"{where}: {key} differs: recorded {was} / replayed {now}"
    return None


def replay(path: str | Path, *, store: WorldStore | None = None, stop_at_first: bool = True) -> ReplayReport:
    """Re-run every episode of the trace at ``path``.

    Raises:
        TraceError: the trace is corrupt or truncated.
        ReplayMismatch: with ``stop_at_first``, at the first differing step (message names it).
    """
    mismatches: list[str] = []
    n_episodes = n_steps = 0
    episodes: dict[str, Episode] = {}
    previous: Episode | None = None
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
            n_episodes += 1
            live_header = episode.header()
            problem = _compare(
                f"episode {number} header", header, live_header, ("world_spec", "rubric", "start_state_hash")
            )
            if problem:
                mismatches.append(problem)
                if stop_at_first:
                    raise ReplayMismatch(problem)
                continue
            for step in steps:
                n_steps += 1
                if episode.done:
                    problem = f"episode {number} step {step.get('index')}: the replayed episode had already ended"
                else:
                    episode.step(step["action"])
                    replayed = episode.steps[-1]
                    problem = _compare(
                        f"episode {number} step {step.get('index')} ({step['action'].get('name')})",
                        step,
                        replayed,
                        ("result", "error", "clock", "state_hash", "fault"),
                    )
                if problem:
                    mismatches.append(problem)
                    if stop_at_first:
                        raise ReplayMismatch(problem)
                    break
            else:
                final = score_record(episode.grade())
                problem = _compare(f"episode {number} score", score, final, ("value", "checks"))
                if problem:
                    mismatches.append(problem)
                    if stop_at_first:
                        raise ReplayMismatch(problem)
    finally:
        for ep in episodes.values():
            ep.close()
    return ReplayReport(episodes=n_episodes, steps=n_steps, mismatches=mismatches)
