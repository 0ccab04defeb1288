"""reproduce-bug-v0 and reproduce-bug-fixed-v0: a customer's mailed bug pinned by a failing test, filed, answered.

The scenario contract (check_scenario) runs for both ids in tests/scenarios/test_check.py. What a user would
notice: the oracle scores 1 and the no-op 0, and the verifier agrees; a bare ``assert False``
(fails on the bug and on the fix) loses exactly the checks of a test that pins the right behaviour; a test that
passes on the bug scores 0; a reply without the key loses exactly the key checks; on the impossible variant
the parent's work (a "reproduction" that passes on the current code, and a reply claiming it) scores 0 while
the explanation naming the fixing release scores 1. Runs real git and the code sandbox; skips without one
(fails under CI, like tests/scenarios/test_fix_test_episode.py).
"""

from __future__ import annotations

import pytest

from scenarios.library.reproduce_bug import ReproduceBug, parse_report, report
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import verify
from sim.episode import Episode
from tests.scenarios.conftest import Tampering, require_sandbox
from worlds.seeding import Seeds

FAMILY, FIXED = "reproduce-bug-v0", "reproduce-bug-fixed-v0"


@pytest.fixture(scope="module", autouse=True)
def _sandbox():
    require_sandbox()


def _play(episode, seed, difficulty, family=None, **tamper):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    (family or ReproduceBug()).oracle(Tampering(EpisodeEnv(episode, prompt, info), **tamper))
    return episode.grade()


def _failed(score):
    return {c.id for c in score.checks if not c.passed}


def test_oracle_one_noop_zero_at_every_difficulty_and_the_verifier_agrees(episode):
    kinds = set()
    for difficulty in range(4):
        oracle = run_agent(episode, "oracle", difficulty, {"difficulty": difficulty})
        assert oracle.value == 1.0, (difficulty, _failed(oracle))
        assert verify(episode).solved
        kinds.add(episode.instance.params["family"])
        assert run_agent(episode, "noop", difficulty, {"difficulty": difficulty}).value == 0.0
        assert not verify(episode).solved
    assert len(kinds) >= 3  # the bug family rotates with the difficulty


def test_a_bare_failing_assertion_loses_exactly_the_checks_of_a_real_reproduction(episode):
    def trivial(name, args):
        if name == "git_write_file":
            return {**args, "content": "def test_customer_report():\n    assert False\n"}
        return args

    score = _play(episode, 1, 0, change=trivial)
    assert not score.gated and 0 < score.value < 1
    assert _failed(score) == {"test-passes-on-fix"} | {c.id for c in score.checks if c.id.startswith("test-input-")}
    assert not verify(episode).solved


def test_a_test_that_passes_on_the_bug_scores_zero(episode):
    def passing(name, args):
        if name == "git_write_file":
            return {**args, "content": "def test_customer_report():\n    assert True\n"}
        return args

    score = _play(episode, 2, 1, change=passing)
    assert score.value == 0.0 and "test-fails-on-bug" in _failed(score)


def test_a_reply_without_the_key_loses_exactly_the_key_checks(episode):
    def no_key(name, args):
        if name == "mail_reply":
            return {**args, "body": "Thanks, we are looking into it."}
        return args

    score = _play(episode, 0, 1, change=no_key)
    assert _failed(score) == {"reply-names-key", "reply-answers-details"}


def test_formatted_figures_map_to_the_module_arguments():
    rng = Seeds(7).rng("test/reproduce-bug")
    said = report("discount", rng, formatted=True, design=False)
    assert "," in said.text and "percent" in said.text  # "$1,248.20", "fifteen percent"
    args, wanted, _ = parse_report("discount", said.text)
    assert args == said.args and wanted == said.expected
    page = report("page", rng, formatted=True, design=False)
    assert parse_report("page", page.text)[:2] == (page.args, page.expected)


def test_impossible__the_explanation_scores_one_a_claimed_reproduction_zero(store):
    with Episode(FIXED, store=store) as ep:
        assert run_agent(ep, "oracle", 0, {"difficulty": 1}).value == 1.0
        assert verify(ep).solved
        # The parent's work on the fixed code: its test passes there, and its reply says "we reproduced".
        score = _play(ep, 0, 1, family=ReproduceBug())
        assert score.value == 0.0
        assert not verify(ep).solved


def test_a_by_design_report_answered_without_saying_so_loses_exactly_that_check(episode):
    def vague(name, args):
        if name == "mail_reply" and "intended" in args["body"]:
            return {**args, "body": "Thanks for writing, we will have a look."}
        return args

    score = _play(episode, 0, 3, change=vague)
    assert _failed(score) == {"by-design-explained"}
    assert not verify(episode).solved
