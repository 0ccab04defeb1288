"""Issue 13's coverage rules over the registry: how many families, which apps, how long, who must cooperate.

Measured, not declared: each family's apps and whether it needs coworkers come from its instances at difficulty
0 and 3, its length from its oracle's tool calls there (long-horizon: at least 40 calls, or a story of two or
more simulated days played as a campaign). Impossible variants are counted apart (they are tests of the
grader, not more work).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from scenarios.base import story_of
from scenarios.registry import make, registered
from sim.agents import run_agent
from sim.episode import Episode

APPS = ("calendar", "chat", "directory", "docs", "git", "mail", "sheets", "shell", "tickets")


@dataclass(frozen=True)
class Shape:
    apps: frozenset[str]
    needs_npcs: bool
    oracle_calls: int
    story_days: int


@pytest.fixture(scope="module")
def shapes(store) -> dict[str, Shape]:
    out: dict[str, Shape] = {}
    for reg in registered():
        if reg.impossible:
            continue
        apps: set[str] = set()
        npcs, calls = False, 0
        for difficulty in (0, 3):
            with Episode(reg.id, store=store) as ep:
                score = run_agent(ep, "oracle", 1, {"difficulty": difficulty})
                assert score.value == 1.0, (reg.id, difficulty)
                apps |= set(ep.instance.apps)
                npcs |= ep.instance.needs_npcs
                calls = max(calls, sum(1 for s in ep.steps if s.get("tool") != "submit"))
        out[reg.id] = Shape(frozenset(apps), npcs, calls, len(story_of(make(reg.id))))
    return out


def test_coverage__at_least_16_families_of_real_work(shapes):
    assert len(shapes) >= 16, sorted(shapes)


def test_coverage__every_app_is_used_by_two_families_and_eight_are_cross_app(shapes):
    used = Counter(app for s in shapes.values() for app in s.apps)
    assert {app: used[app] for app in APPS if used[app] < 2} == {}
    assert sum(len(s.apps) >= 2 for s in shapes.values()) >= 8


def test_coverage__three_long_horizon_three_cooperative_two_multi_day_stories(shapes):
    long = {f for f, s in shapes.items() if s.oracle_calls >= 40 or s.story_days >= 2}
    assert len(long) >= 3, {f: s.oracle_calls for f, s in shapes.items()}
    assert len({f for f, s in shapes.items() if s.needs_npcs}) >= 3
    stories = {story_of(make(f)) for f, s in shapes.items() if s.story_days >= 2}
    assert len(stories) >= 2, stories
