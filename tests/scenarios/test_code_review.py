"""code-review-v0 (issue 13 item 2): review a teammate's merge request by the team's written checklist.

Baselines and the contract at every difficulty, the branch the request comes from (built on top of the task's
repository), and the mistakes a user would notice: a missed violation, a flagged trap, an approval, a merge.
"""

from __future__ import annotations

import re

import pytest

from scenarios import check_scenario, make
from scenarios.library.code_review import PROMPTS, RULES
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import calibrate, verify
from sim.episode import Episode
from worlds.spec import WorldSpec

SCENARIO = "code-review-v0"
RULE_NUMBER = {"docstring": 1, "print": 2, "todo": 3, "cents": 4, "except": 5}
"""The checklist's number of each rule, as the oracle's comments cite it."""


@pytest.fixture(scope="module")
def episode(store):
    with Episode(SCENARIO, store=store) as ep:
        yield ep


class _Env:
    """The oracle's env with its comments passed through ``edit`` (None drops one) and ``after`` run at the end."""

    def __init__(self, env, edit=None, after=None):
        self.env, self.prompt, self.actor = env, env.prompt, env.actor
        self.edit, self.after = edit, after

    @property
    def done(self):
        return self.env.done

    def call(self, name, /, **arguments):
        if name == "git_mr_comment" and self.edit is not None:
            body = self.edit(arguments["body"])
            if body is None:
                return {}
            arguments = {**arguments, "body": body}
        if name == "submit" and self.after is not None:
            self.after(self.env)
        return self.env.call(name, **arguments)


def _play(episode, seed, difficulty, **wrap):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    episode.family.oracle(_Env(EpisodeEnv(episode, prompt, info), **wrap))
    return episode.grade()


def _failed(score):
    return sorted(c.id for c in score.checks if not c.passed)


@pytest.mark.parametrize("difficulty", range(4))
def test_oracle_one_noop_and_random_zero_and_the_verifier_agrees(episode, difficulty):
    options = {"difficulty": difficulty}
    assert run_agent(episode, "oracle", difficulty, options).value == 1.0
    assert verify(episode).solved
    p = episode.instance.params
    assert len(p["violations"]) == difficulty + 1 and len(p["traps"]) == difficulty + 2
    ids = [c.id for c in episode.instance.rubric.checks]
    kept = [i for i in ids if i.startswith("keeps-")]
    assert len(ids) == 4 + 5 * len(p["violations"]) + len(p["traps"]) + len(kept)
    assert run_agent(episode, "noop", difficulty, options).value == 0.0
    assert not verify(episode).solved
    assert run_agent(episode, "random", difficulty, options).value <= 0.1


def test_the_request_is_the_authors_branch_and_the_legacy_file_is_not_in_it(episode):
    prompt, info = episode.reset(seed=3, options={"difficulty": 3})
    env, p = EpisodeEnv(episode, prompt, info), episode.instance.params
    mr = env.call("git_mr_get", mr_id=p["mr_id"])
    assert (mr["author"], mr["source_branch"], mr["state"]) == (p["author"], p["branch"], "open")
    assert len(mr["commits"]) == 1 and mr["current_source_head"] == mr["commits"][0].split()[0]
    diff = env.call("git_diff", repo=p["repo"], base=mr["target_branch"], head=mr["source_branch"])
    changed = [f["path"] for f in diff["files"]]
    assert changed[0].endswith("/cli.py") and {v["file"] for v in p["violations"]} <= set(changed)
    legacy = next(t["file"] for t in p["traps"] if t["trap"] == "pre-existing")
    assert legacy not in changed
    assert "except:" in env.call("git_read_file", repo=p["repo"], path=legacy, ref=mr["target_branch"])["content"]
    rules = env.call("git_read_file", repo=p["repo"], path="CONTRIBUTING.md", ref=mr["target_branch"])["content"]
    assert rules.count("Why:") == len(RULES) and rules.count("Exception:") == 4


def test_a_review_missing_one_violation_loses_exactly_that_check(episode):
    episode.reset(seed=5, options={"difficulty": 2})
    missed = episode.instance.params["violations"][1]
    name = missed["file"].rsplit("/", 1)[-1]

    def drop(body):
        return None if name in body and re.search(RULES[missed["rule"]], body, re.I) else body

    score = _play(episode, 5, 2, edit=drop)
    kinds = ("alone", "fix", "flags", "function", "points")
    assert _failed(score) == [f"{c}-{missed['rule']}-{name}" for c in kinds]
    assert 0.8 < score.value < 1.0 and not verify(episode).solved


def test_flagging_an_allowed_print_in_the_cli_loses_exactly_that_trap(episode):
    episode.reset(seed=6, options={"difficulty": 1})
    cli = next(t["file"] for t in episode.instance.params["traps"] if t["trap"] == "print-cli")

    def flag(env):
        env.call("git_mr_comment", mr_id=episode.instance.params["mr_id"], body=f"{cli}: print() should be a log call")

    score = _play(episode, 6, 1, after=flag)
    assert _failed(score) == ["spares-print-cli"] and not verify(episode).solved


def test_approving_loses_the_verdict_and_the_traps_and_merging_scores_zero(episode):
    def approve(env):
        env.call("git_mr_review", mr_id=episode.instance.params["mr_id"], verdict="approve", body="LGTM after all")

    score = _play(episode, 7, 0, after=approve)
    ids = [c.id for c in episode.instance.rubric.checks]
    assert _failed(score) == sorted(["verdict", "summary", *(i for i in ids if i.startswith(("spares-", "keeps-")))])
    assert any(i.startswith("flags-") for i in ids) and 0.0 < score.value < 0.5

    def merge(env):
        approve(env)
        env.call("git_mr_merge", mr_id=episode.instance.params["mr_id"])

    score = _play(episode, 7, 0, after=merge)
    assert score.value == 0.0 and "still-open" in _failed(score) and not verify(episode).solved


def test_calibration_orders_partials_falling_with_difficulty_and_agrees_with_the_verifier(store):
    report = calibrate(
        [SCENARIO], seeds=range(2), difficulties=(1, 2, 3), episode_factory=lambda f: Episode(f, store=store)
    )
    assert report.agreement(SCENARIO) == 1.0, report.disagreements[:3]
    means = []
    for difficulty in (1, 2, 3):
        cells = {a: c.mean for (f, d, a), c in report.cells.items() if d == difficulty}
        partials = [m for a, m in cells.items() if a.startswith("partial-")]
        assert len(partials) == 2 and cells["noop"] < min(partials) and max(partials) < cells["oracle"] == 1.0
        assert all(m <= 0.1 for a, m in cells.items() if a.startswith("cheat-"))
        means.append(sum(partials) / len(partials))
    assert means[0] > means[1] > means[2]


def test_honours_the_scenario_contract(store):
    family = make(SCENARIO)
    world = store.base(WorldSpec(seed=1, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(SCENARIO, world, seeds=(0, 1))
    finally:
        world.close()


def test_every_prompt_wording_appears_and_the_oracle_reads_each(episode):
    heads = [w[:30] for w in PROMPTS]
    seen: dict[int, int] = {}
    for seed in range(12):
        prompt, _ = episode.reset(seed=seed, options={"difficulty": 0})
        seen.setdefault(next(i for i, h in enumerate(heads) if prompt.startswith(h.split("{")[0])), seed)
    assert sorted(seen) == [0, 1, 2]
    for seed in seen.values():
        assert run_agent(episode, "oracle", seed, {"difficulty": 0}).value == 1.0


def test_a_note_without_the_line_loses_only_the_pointer_and_a_false_claim_loses_its_rule(episode):
    episode.reset(seed=8, options={"difficulty": 0})
    p = episode.instance.params
    v = p["violations"][0]
    name = v["file"].rsplit("/", 1)[-1]
    score = _play(episode, 8, 0, edit=lambda body: re.sub(r" line \d+", "", body) if name in body else body)
    assert _failed(score) == [f"points-{v['rule']}-{name}"] and not verify(episode).solved
    kept = [c.id.removeprefix("keeps-") for c in episode.instance.rubric.checks if c.id.startswith("keeps-")]
    assert kept, "at difficulty 0 some rules are neither broken nor trapped"
    claim = {"docstring": "a docstring is missing", "todo": "a TODO has no key", "cents": "a float amount"}
    claim |= {"except": "a bare except", "print": "a print() call"}

    def false_claim(env):
        env.call("git_mr_comment", mr_id=p["mr_id"], body=f"{v['file']}: {claim[kept[0]]} somewhere here")

    score = _play(episode, 8, 0, after=false_claim)
    assert _failed(score) == [f"keeps-{kept[0]}"] and not verify(episode).solved


def test_one_comment_listing_every_violation_loses_only_the_one_per_violation_checks(episode):
    episode.reset(seed=9, options={"difficulty": 1})
    found: list[str] = []

    def hold(body):
        found.append(body)
        return None

    def lump(env):
        env.call("git_mr_comment", mr_id=episode.instance.params["mr_id"], body="\n".join(found))

    score = _play(episode, 9, 1, edit=hold, after=lump)
    alone = sorted(c.id for c in episode.instance.rubric.checks if c.id.startswith("alone-"))
    assert len(alone) == 2 and _failed(score) == alone and not verify(episode).solved


def test_a_terse_review_loses_only_the_function_fix_and_summary_and_version_1_still_scores_it_whole(episode):
    """Comments that name the file, rule and line but not the function or the fix, and a bare verdict."""

    def terse(body):
        path, rest = body.split(" line ", 1)
        line = rest.split(":", 1)[0]
        rule = next(r for r in ("docstring", "print", "todo", "cents", "except") if f"(rule {RULE_NUMBER[r]})" in body)
        return f"{path} line {line}: breaks the {rule} rule"

    class Terse(_Env):
        def call(self, name, /, **arguments):
            if name == "git_mr_review":
                arguments = {**arguments, "body": "Requesting changes, see my comments."}
            return super().call(name, **arguments)

    prompt, info = episode.reset(seed=10, options={"difficulty": 2})
    p = episode.instance.params
    episode.family.oracle(Terse(EpisodeEnv(episode, prompt, info), edit=terse))
    score = episode.grade()
    names = [v["file"].rsplit("/", 1)[-1] for v in p["violations"]]
    rules = [v["rule"] for v in p["violations"]]
    want = sorted([f"{k}-{r}-{n}" for r, n in zip(rules, names, strict=True) for k in ("fix", "function")])
    assert _failed(score) == sorted([*want, "summary"]) and score.rubric_version == 2
    assert verify(episode).solved is False
    old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
    assert old.rubric_version == 1 and old.value == 1.0 and len(old.checks) < len(score.checks)
