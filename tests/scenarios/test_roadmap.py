"""roadmap-update-v0: the roadmap document brought up to date with the decisions taken in ~product.

What a user would notice: the oracle scores 1 and the no-op 0 at every difficulty, under realistic faults, with
coworkers on and with the task sent by the manager; an edit that ignores the head of product's reversal loses
exactly that item's check; a proposal only a peer agreed to, applied, loses exactly its check; adding the other
project's item here loses exactly that check; touching the other project's roadmap gates the reward to 0; the
summary must name each change; the verifier agrees with the rubric on each of these.
"""

from __future__ import annotations

import re

import pytest

from scenarios import check_scenario, make
from scenarios.library.roadmap import RoadmapUpdate
from scenarios.verify import VERIFIERS
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import PARTIALS, calibrate, verify
from sim.episode import Episode
from sim.replay import replay
from sim.trace import TraceWriter
from tests.scenarios.conftest import Tampering
from worlds.spec import WorldSpec

FAMILY = "roadmap-update-v0"


def _play(episode, seed, difficulty, **tamper):
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    RoadmapUpdate().oracle(Tampering(EpisodeEnv(episode, prompt, info), **tamper))
    return episode.grade(), episode.instance.params


def _failed(score):
    return {c.id: c.evidence for c in score.checks if not c.passed}


def _trap_id(params, kind):
    suffix = "other-project" if kind == "other" else kind
    return next(f"t{k}-{suffix}" for k, t in enumerate(params["traps"], 1) if t["trap"] == kind)


def test_the_family_honours_the_scenario_contract(store):
    family = make(FAMILY)
    world = store.base(WorldSpec(seed=2, employees=family.world.employees, history_days=family.world.history_days))
    try:
        check_scenario(FAMILY, world, seeds=(0, 3))
    finally:
        world.close()


def test_oracle_one_noop_zero_random_at_most_a_tenth_and_dense(episode):
    sizes, phrasings = {}, set()
    for seed in range(8):
        options = {"difficulty": seed % 4}
        oracle = run_agent(episode, "oracle", seed, options)
        assert oracle.value == 1.0, (seed, _failed(oracle))
        assert VERIFIERS[FAMILY] and verify(episode).solved
        p = episode.instance.params
        assert len(p["decisions"]) == (2, 3, 4, 5)[seed % 4]
        sizes[seed % 4] = len(oracle.checks)
        assert run_agent(episode, "noop", seed, options).value == 0.0
        assert not verify(episode).solved
        assert run_agent(episode, "random", seed, options).value <= 0.1
        phrasings.add("who keeps the" in episode.instance.prompt)
    assert len(phrasings) == 2, "the oracle reads every phrasing of the task"
    assert sizes[3] >= 20 and sizes[0] >= 13, sizes


@pytest.mark.parametrize(
    "options", [{"noise": "realistic"}, {"npcs": "sampled"}, {"npcs": "adversarial"}, {"prompt_via": "manager"}]
)
def test_oracle_scores_one_under_faults_coworkers_and_the_managers_message(episode, options):
    for seed in (1, 3):
        score = run_agent(episode, "oracle", seed, {"difficulty": seed, **options})
        assert score.value == 1.0, _failed(score)


def test_replay_under_realistic_noise_is_bit_exact(store, tmp_path):
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path)
    with Episode(FAMILY, store=store, trace=writer) as ep:
        run_agent(ep, "oracle", 3, {"difficulty": 3, "noise": "realistic"})
        first = [s["state_hash"] for s in ep.steps]
        run_agent(ep, "oracle", 3, {"difficulty": 3, "noise": "realistic"})
        assert [s["state_hash"] for s in ep.steps] == first
    writer.close()
    report = replay(path, store=store)
    assert report.ok and report.episodes == 2, report.mismatches


def test_an_edit_ignoring_the_reversal_loses_exactly_that_check(episode):
    def no_reversal(name, out):
        if name == "chat_read_thread":
            return {**out, "posts": [p for p in out["posts"] if not p["message"].startswith("Scratch that")]}
        return out

    for seed in (0, 4):
        score, params = _play(episode, seed, 2, seen=no_reversal)
        reversed_id = _trap_id(params, "reversed")
        assert set(_failed(score)) == {reversed_id}, _failed(score)
        item = next(t["item"] for t in params["traps"] if t["trap"] == "reversed")
        assert item in _failed(score)[reversed_id]
        assert not verify(episode).solved


def test_a_proposal_only_a_peer_agreed_to_loses_exactly_its_check(episode):
    takes = PARTIALS[FAMILY]["partial-takes-proposals"].misread["docs_read"]
    score, params = _play(episode, 5, 1, seen=lambda n, out: takes(out) if n == "docs_read" else out)
    assert set(_failed(score)) == {_trap_id(params, "proposal")}


def test_the_other_projects_decision_stays_out_of_this_roadmap(episode):
    def ours(name, out):  # reads every proposal as if it were about this roadmap
        if name == "chat_read_channel":
            p = episode.instance.params
            other = next(t["project"] for t in p["traps"] if t["trap"] == "other")
            posts = [{**m, "message": m["message"].replace(f"{other} roadmap", f"{p['project']} roadmap")}
                     for m in out["posts"]]  # fmt: skip
            return {**out, "posts": posts}
        return out

    score, params = _play(episode, 6, 3, seen=ours)
    assert set(_failed(score)) == {_trap_id(params, "other")}
    assert not verify(episode).solved


def test_editing_the_other_projects_roadmap_gates_the_reward(episode):
    def also_theirs(name, arguments):  # the right edits, then the other project's roadmap "updated" too
        if name == "submit":
            p = episode.instance.params
            other = next(t["project"] for t in p["traps"] if t["trap"] == "other")
            theirs = f"Shared/Product/{other} roadmap.odt"
            heading = episode_env["env"].call("docs_read", document=theirs)["sections"][2]["heading"]
            episode_env["env"].call("docs_replace_section", document=theirs, heading=heading, text="Moved to Q4.")
        return arguments

    prompt, info = episode.reset(seed=2, options={"difficulty": 2})
    episode_env = {"env": EpisodeEnv(episode, prompt, info)}
    RoadmapUpdate().oracle(Tampering(episode_env["env"], change=also_theirs))
    score = episode.grade()
    assert score.value == 0.0 and set(_failed(score)) == {"only-the-roadmap"}, _failed(score)
    assert not verify(episode).solved


def test_the_summary_must_name_each_change(episode):
    def vague(name, arguments):
        said = "Roadmap updated from last week's decisions."
        return {**arguments, "message": said} if name == "chat_post" else arguments

    score, params = _play(episode, 1, 1, change=vague)
    assert set(_failed(score)) == {f"d{k}-summary" for k in range(1, len(params["decisions"]) + 1)}
    assert not verify(episode).solved


def test_the_mailed_decision_counts_at_difficulty_three(episode):
    score, params = _play(episode, 7, 3, seen=lambda n, out: {"messages": []} if n == "mail_search" else out)
    mailed = next(k for k, d in enumerate(params["decisions"], 1) if d["via"] == "mail")
    assert {i for i in _failed(score) if i.startswith(f"d{mailed}-")} and all(
        i.startswith(f"d{mailed}-") for i in _failed(score)
    ), _failed(score)


def test_calibration_agrees_with_the_verifier_and_partials_sit_between(store):
    report = calibrate([FAMILY], seeds=range(3), difficulties=(1, 3), episode_factory=lambda f: Episode(f, store=store))
    assert report.agreement(FAMILY) == 1.0, report.disagreements[:3]
    means = {}
    for difficulty in (1, 3):
        partial = [report.cells[(FAMILY, difficulty, p)].mean for p in PARTIALS[FAMILY]]
        assert report.cells[(FAMILY, difficulty, "noop")].mean < min(partial)
        assert max(partial) < report.cells[(FAMILY, difficulty, "oracle")].mean == 1.0
        means[difficulty] = sum(partial) / len(partial)
    assert means[1] > means[3], means


def test_a_comment_or_an_edit_that_changes_nothing_earns_nothing(episode):
    for seed, difficulty in ((0, 0), (3, 3)):
        prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
        env = EpisodeEnv(episode, prompt, info)
        path = re.search(r"roadmap document (Shared/.+?\.odt)", prompt).group(1)
        quarter = env.call("docs_read", document=path)["sections"][2]
        env.call("docs_comment", document=path, text="Looks good to me.", heading=quarter["heading"])
        env.call("docs_replace_section", document=path, heading=quarter["heading"],
                 text="\n\n".join(quarter["paragraphs"]))  # fmt: skip
        env.call("chat_post", channel="product", message="Roadmap reviewed, nothing to change.")
        env.call("submit", summary="reviewed")
        score = episode.grade()
        assert score.value == 0.0, {c.id: c.evidence for c in score.checks if c.passed}
