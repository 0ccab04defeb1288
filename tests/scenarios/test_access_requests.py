"""access-requests-v0 rubric version 2: each notice is graded for its decision word and its rule number apart."""

import re

import pytest

from sim.agents import EpisodeEnv
from tests.scenarios.conftest import Tampering

FAMILY = "access-requests-v0"


def test_notices_without_the_rule_number_lose_exactly_the_rule_checks(episode):
    prompt, info = episode.reset(seed=2, options={"difficulty": 1})
    env = EpisodeEnv(episode, prompt, info)

    def no_rule(name, arguments):
        if name == "chat_direct_message" and "under rule" in arguments["message"]:
            return {**arguments, "message": re.sub(r" under rule \d+ of the access policy", "", arguments["message"])}
        return arguments

    episode.family.oracle(Tampering(env, no_rule))
    score = episode.grade()
    failed = {c.id: c.evidence for c in score.checks if not c.passed}
    cases = episode.instance.params["requests"]
    assert set(failed) == {f"rule-{c['id']}" for c in cases}, failed
    assert not score.gated and score.value == pytest.approx(1 - 0.5 * len(cases) / score_weight(score))
    old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
    assert old.rubric_version == 1 and {c.id for c in old.checks if not c.passed} == {
        f"notice-{c['id']}" for c in cases
    }, "version 1 lost the whole notice"


def score_weight(score):
    """The total weight of the scored (not must) checks."""
    return sum(c.weight for c in score.checks if not c.must)
