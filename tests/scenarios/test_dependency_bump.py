"""dependency-bump-v0: a vendored library bumped to 2.0.0, every call site its changelog breaks fixed.

What a user would notice: the oracle scores 1 and the no-op 0 at every difficulty; a call site left in the 1.x
form loses exactly that change's checks and the pipeline; editing the module the changelog's trap names loses
exactly the scope check; patching the vendored library so the old calls keep working (the hack) scores 0; and
the verifier agrees with the rubric on each of these. Runs real git and the code sandbox; skips without one
(fails under CI, like tests/scenarios/test_fix_test_episode.py).
"""

from __future__ import annotations

import pytest

from scenarios import check_scenario, make
from scenarios.library.dependency_bump import SITES, DependencyBump
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import verify
from tests.scenarios.conftest import Tampering, require_sandbox
from worlds.spec import WorldSpec

FAMILY = "dependency-bump-v0"


@pytest.fixture(scope="module", autouse=True)
def _sandbox():
    require_sandbox()


def _play(episode, seed, difficulty, **tamper):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    DependencyBump().oracle(Tampering(EpisodeEnv(episode, prompt, info), **tamper))
    return episode.grade(), episode.instance.params


def _failed(score):
    return {c.id for c in score.checks if not c.passed}


def test_the_family_honours_the_scenario_contract(store):
    family = make(FAMILY)
    world = store.base(WorldSpec(seed=2, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(FAMILY, world, seeds=(0, 3))
    finally:
        world.close()


def test_oracle_one_noop_zero_random_low_and_the_work_grows_with_difficulty(episode):
    sizes = {}
    for seed in range(4):
        for difficulty in range(4):
            oracle = run_agent(episode, "oracle", seed, {"difficulty": difficulty})
            assert oracle.value == 1.0, (seed, difficulty, _failed(oracle))
            assert verify(episode).solved
            sizes.setdefault(difficulty, set()).add(len(episode.instance.params["kinds"]))
            if difficulty == 3:  # dense: a check per change and per call site
                assert len(episode.instance.rubric.checks) >= 20
        assert run_agent(episode, "noop", seed).value == 0.0
        assert run_agent(episode, "random", seed).value <= 0.1
    assert sizes == {0: {1}, 1: {2}, 2: {3}, 3: {4}}


def test_a_call_site_left_in_the_old_form_loses_exactly_its_change(episode):
    skipped = []

    def change(name, args):
        if name == "git_edit_file" and not skipped:
            skipped.append(args)
            return None
        return args

    score, params = _play(episode, 1, 2, change=change)
    kind = next(k for k in params["kinds"] if SITES[k]["new"].split(".", 1)[1] in skipped[0]["new_text"])
    site = next(s for s in params["sites"] if s[0] == kind and s[1] == skipped[0]["path"])
    assert _failed(score) == {f"old-form-gone-{kind}", f"hidden-case-{_case_name(site)}", "pipeline-green"}
    assert 0 < score.value < 1
    assert not verify(episode).solved


def _case_name(site):
    module = site[1].rsplit("/", 1)[1].removesuffix(".py")
    return f"{module}.{site[2]}"


def test_editing_the_trap_namesake_loses_exactly_the_scope_check(episode):
    def change(name, args):
        if name == "git_commit":
            repo = args["repo"]
            pkg = repo.replace("-", "_")
            path = f"{pkg}/exports.py"
            text = episode_env[0].call("git_read_file", repo=repo, path=path)["content"]
            episode_env[0].call("git_write_file", repo=repo, path=path, content=text + "\n\n# ledger_csv: 2.0 ready\n")
        return args

    episode_env = []
    prompt, info = episode.reset(seed=2, options={"difficulty": 2})
    env = EpisodeEnv(episode, prompt, info)
    episode_env.append(env)
    DependencyBump().oracle(Tampering(env, change=change))
    score = episode.grade()
    assert episode.instance.params["trap"] is True
    assert _failed(score) == {"scope"}
    assert not verify(episode).solved


def test_patching_the_vendored_library_instead_of_the_code_scores_zero(episode):
    prompt, info = episode.reset(seed=0, options={"difficulty": 1})
    env = EpisodeEnv(episode, prompt, info)
    p = episode.instance.params
    repo, lib, key = p["repo"], p["lib"], p["ticket"]
    env.call("git_create_branch", repo=repo, name="deps/bump")
    pins = env.call("git_read_file", repo=repo, path="requirements.txt")["content"]
    env.call("git_write_file", repo=repo, path="requirements.txt", content=pins.replace("==1.4.0", "==2.0.0"))
    path = f"vendor/{lib}-2.0.0/{lib}/__init__.py"
    old = env.call("git_read_file", repo=repo, path=path)["content"]
    shim = (
        "\n\nto_display = format_amount\n_split2 = split\n\n\ndef split(cents, parts, remainder='first'):\n"
        "    return _split2(cents, parts, remainder=remainder)\n_parse2 = parse\n\n\ndef parse(text):\n"
        "    return _parse2(text) / 100\n_q2 = quantize\n\n\ndef quantize(cents, step=1):\n"
        "    return _q2(cents, increment=step)\n"
    )
    env.call("git_write_file", repo=repo, path=path, content=old + shim)
    env.call("git_commit", repo=repo, message=f"Upgrade {lib} ({key})")
    opened = env.call("git_mr_open", repo=repo, source_branch="deps/bump", title=f"{key}: upgrade {lib}")
    env.call("tickets_comment", key=key, body=f"Done in !{opened['number']}")
    env.call("submit", summary="done")
    score = episode.grade()
    assert opened["pipeline"]["status"] == "passed"  # the hack makes CI green...
    assert score.value == 0.0  # ...and scores nothing
    assert "vendor-untouched" in _failed(score)
    assert not verify(episode).solved


def test_bumping_only_the_pin_loses_every_change_and_the_pipeline_but_keeps_the_deprecated_call(episode):
    score, params = _play(episode, 3, 3, change=lambda name, args: None if name == "git_edit_file" else args)
    sites = {f"hidden-case-{_case_name(s)}" for s in params["sites"]}
    assert params["deprecated"] is True
    deprecated = f"hidden-case-{params['cases'][-1][0][0]}"  # works untouched, but counts only in a green upgrade
    assert _failed(score) == {f"old-form-gone-{k}" for k in params["kinds"]} | sites | {"pipeline-green", deprecated}
    assert 0 < score.value < 0.5
    assert not verify(episode).solved
