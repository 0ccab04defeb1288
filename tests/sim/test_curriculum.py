"""The curriculum sampler: it moves each family's difficulty into the pass-rate band, and replays exactly."""

from __future__ import annotations

import numpy as np
import pytest

from sim.curriculum import Curriculum, CurriculumError, CurriculumTask

# A policy's chance to pass each difficulty 0-3, per family: easy at first, out of reach at the top.
SKILL = {"triage-tickets-v0": (1.0, 0.97, 0.5, 0.05), "customer-escalation-v0": (1.0, 0.6, 0.3, 0.0)}


def play(
    curriculum: Curriculum, groups: int, *, group_size: int = 8, skill=SKILL, seed: int = 7
) -> list[CurriculumTask]:
    """Draw tasks, roll a group of simulated rewards for each, and feed them back."""
    rng = np.random.default_rng(seed)
    tasks = []
    for _ in range(groups):
        task = curriculum.next()
        p = skill[task.scenario][task.difficulty]
        curriculum.update(task, [float(x) for x in (rng.random(group_size) < p)])
        tasks.append(task)
    return tasks


def test_curriculum__moves_difficulty_until_groups_land_in_the_band():
    curriculum = Curriculum(list(SKILL), seed=1)
    tasks = play(curriculum, 80)
    # every group at difficulty 0 passes all: out of the band, so both families climb to where they are learnable
    assert tasks[0].difficulty == 0 and curriculum.history[0][2] == 1.0
    assert curriculum.level == {"triage-tickets-v0": 2, "customer-escalation-v0": 1}
    fixed = Curriculum(list(SKILL), difficulties=(0,), seed=1)  # the same tasks without a curriculum
    play(fixed, 80)
    assert curriculum.in_band(last=40) >= 0.6 > fixed.in_band(last=40) == 0.0


def test_curriculum__a_family_out_of_reach_is_drawn_less():
    skill = {**SKILL, "fix-failing-test-v0": (0.0, 0.0, 0.0, 0.0)}
    curriculum = Curriculum(list(skill), seed=3)
    play(curriculum, 40, skill=skill)
    later = play(curriculum, 150, skill=skill)
    share = sum(t.scenario == "fix-failing-test-v0" for t in later) / len(later)
    assert curriculum.level["fix-failing-test-v0"] == 0 and share < 0.15  # a third without the down-weighting


def test_curriculum__same_seed_same_rewards_same_tasks_and_state_resumes():
    first, second, other = (Curriculum(list(SKILL), seed=s) for s in (5, 5, 6))
    assert play(first, 30) == play(second, 30)
    assert play(Curriculum(list(SKILL), seed=5), 30) != play(other, 30)
    saved = first.get_state()
    resumed = Curriculum(list(SKILL), seed=99)
    resumed.set_state(saved)
    assert play(resumed, 20, seed=8) == play(first, 20, seed=8)


def test_curriculum__refuses_what_it_cannot_do():
    with pytest.raises(CurriculumError, match="band"):
        Curriculum(["triage-tickets-v0"], band=(0.8, 0.2))
    curriculum = Curriculum(["triage-tickets-v0"])
    with pytest.raises(CurriculumError, match="not in this curriculum"):
        curriculum.update(CurriculumTask(scenario="other-v0", seed=0, difficulty=0), [1.0])
    with pytest.raises(CurriculumError, match="at least one reward"):
        curriculum.update(curriculum.next(), [])
