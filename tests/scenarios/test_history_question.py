"""history-question-v0: questions mined from the generated history, answered exactly (issue 13 item 3)."""

from __future__ import annotations

from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import calibrate
from sim.episode import Episode
from sim.mine import mine_questions

FAMILY = "history-question-v0"


def test_oracle_answers_every_kind_and_noop_and_random_score_nothing(store):
    with Episode(FAMILY, store=store) as episode:
        for difficulty in range(4):
            for seed in (0, 1):
                assert run_agent(episode, "oracle", seed, {"difficulty": difficulty}).value == 1.0
                assert run_agent(episode, "noop", seed, {"difficulty": difficulty}).value == 0.0
                assert run_agent(episode, "random", seed, {"difficulty": difficulty}).value <= 0.1


def test_listing_every_candidate_or_a_wrong_person_earns_nothing(store):
    with Episode(FAMILY, store=store) as episode:
        prompt, info = episode.reset(seed=3, options={"difficulty": 2})
        right = episode.instance.params["answer"]["user"]
        EpisodeEnv(episode, prompt, info).call("submit", summary=f"@{right} or maybe @someone.else")
        score = episode.grade()
    assert score.value == 0.0


def test_calibration_agrees_with_the_verifier_and_partials_sit_below_the_oracle(store):
    report = calibrate([FAMILY], seeds=range(4), difficulties=(0, 2), episode_factory=lambda f: Episode(f, store=store))
    assert report.agreement(FAMILY) == 1.0, report.disagreements[:3]
    assert report.cells[(FAMILY, 0, "partial-assignee")].mean < 1.0
    assert report.cells[(FAMILY, 2, "partial-first-page")].mean < 1.0


def test_the_miner_lists_distinct_validated_questions(store):
    mined = mine_questions(0, employees=10, history_days=14, store=store)
    assert len(mined.valid) >= 10 and not mined.rejected
    assert len({(v["seed"], v["difficulty"]) for v in mined.valid.values()}) == len(mined.valid)
