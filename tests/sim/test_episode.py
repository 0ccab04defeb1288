import json

import pytest

from sim.agents import run_agent
from sim.episode import Episode
from sim.errors import EpisodeOver, NotReset, ReplayMismatch
from sim.replay import replay
from sim.trace import TraceWriter, read_trace

SCENARIO = "triage-tickets-v0"


@pytest.fixture
def episode(store):
    ep = Episode(SCENARIO, store=store)
    yield ep
    ep.close()


def test_reset__returns_prompt_actor_tools_and_episode_id(episode):
    prompt, info = episode.reset(seed=1)
    assert "backlog" in prompt and info["prompt"] == prompt
    names = [t["function"]["name"] for t in info["tools"]]
    assert "submit" in names and "tickets_search" in names and "chat_post" in names
    for tool in info["tools"]:
        params = tool["function"]["parameters"]
        assert params["type"] == "object"
        for prop in params["properties"].values():
            assert "anyOf" not in prop and prop.get("type") != "object"
    assert info["episode_id"].startswith(SCENARIO)
    assert info["actor"]["username"] == episode.instance.actor


def test_step__before_reset_and_after_end_are_stable_errors(episode):
    with pytest.raises(NotReset) as info:
        episode.step({"name": "submit", "arguments": {}})
    assert info.value.code == "not_reset"
    episode.reset(seed=2)
    episode.step({"name": "submit", "arguments": {}})
    with pytest.raises(EpisodeOver) as info:
        episode.step({"name": "tickets_search", "arguments": {}})
    assert info.value.code == "episode_over"


@pytest.mark.parametrize(
    ("action", "code"),
    [
        ({"name": "no_such_tool", "arguments": {}}, "unknown_tool"),
        ({"name": "tickets_get", "arguments": {"key": 5}}, "invalid_argument"),
        ({"name": "tickets_get", "arguments": {}}, "invalid_argument"),
        ({"name": "tickets_get", "arguments": {"key": "X-1", "extra": 1}}, "invalid_argument"),
        ({"name": "tickets_update", "arguments": {"key": "NOPE-1", "priority": "high"}}, "not_found"),
        ({"name": "chat_post", "arguments": {"channel": "incidents", "message": ""}}, "invalid_argument"),
        ({"arguments": {}}, "bad_action"),
        ("{not json", "bad_action"),
    ],
)
def test_step__bad_calls_give_a_code_leave_state_unchanged_and_continue(episode, action, code):
    episode.reset(seed=4)
    before = episode.world.state_hash()
    obs, reward, terminated, truncated, info = episode.step(action)
    assert info["error"]["code"] == code
    assert obs.startswith(f"error [{code}]")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert episode.world.state_hash() == before
    obs, *_ = episode.step({"name": "tickets_search", "arguments": {"limit": 1}})
    assert not obs.startswith("error")


def test_step__turn_limit_truncates_and_grades(episode):
    episode.reset(seed=5)
    limit = episode.instance.limits.max_turns
    for _ in range(limit - 1):
        _, _, terminated, truncated, _ = episode.step({"name": "tickets_search", "arguments": {"limit": 1}})
        assert not (terminated or truncated)
    _, reward, terminated, truncated, info = episode.step({"name": "tickets_search", "arguments": {"limit": 1}})
    assert truncated and not terminated and reward == 0.0


def test_step__clock_advances_and_writes_change_the_state_hash(episode):
    _, info0 = episode.reset(seed=6)
    _, _, _, _, read = episode.step({"name": "tickets_search", "arguments": {"limit": 1}})
    assert read["clock"] > info0["clock"]
    key = next(iter(episode.instance.params["expected"]))
    _, _, _, _, write = episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": "low"}})
    assert write["error"] is None and write["state_hash"] != read["state_hash"]


def test_trace__records_header_steps_and_score_and_replays(store, tmp_path):
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    ep = Episode(SCENARIO, store=store, trace=writer)
    for seed in range(50):
        run_agent(ep, ("oracle", "noop", "random")[seed % 3], seed)
    ep.close()
    writer.close()
    episodes = list(read_trace(path))
    assert len(episodes) == 50
    header, *steps, score = episodes[0]
    assert header["scenario"] == SCENARIO and header["rubric"]["id"] == "triage-tickets"
    assert steps and all(s["type"] == "step" for s in steps)
    assert score["type"] == "score" and score["value"] == 1.0
    report = replay(path, store=store)
    assert report.ok and report.episodes == 50


def test_replay__names_the_first_step_that_differs(store, tmp_path):
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    ep = Episode(SCENARIO, store=store, trace=writer)
    run_agent(ep, "oracle", 0)
    ep.close()
    writer.close()
    lines = path.read_text().splitlines()
    record = json.loads(lines[3])
    record["result"] = {"tampered": True}
    lines[3] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayMismatch, match="step 2"):
        replay(path, store=store)


def test_gym_adapter__passes_check_env(store):
    from gymnasium.utils.env_checker import check_env

    from sim.adapters.gym import CompanySimEnv

    env = CompanySimEnv(SCENARIO, store=store)
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step('{"name": "submit", "arguments": {}}')
    assert terminated and reward == 0.0
    env.close()


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_reset__a_cached_setup_gives_the_same_episode_as_a_fresh_one(store, agent):
    """Resetting to a recent task forks its post-setup state; every step, hash and score must match a fresh run."""
    runs = []
    for cache in (False, True):
        ep = Episode(SCENARIO, store=store, setup_cache=cache)
        first = run_agent(ep, agent, 3)
        steps_first = ep.steps
        again = run_agent(ep, agent, 3)  # served from the setup cache when cache > 0
        runs.append((first.to_json(), steps_first, again.to_json(), ep.steps))
        ep.close()
    fresh, cached = runs
    assert fresh == cached
    assert fresh[0] == fresh[2] and fresh[1] == fresh[3]


class _FewTurns:
    """The triage task with a turn limit its oracle cannot finish within."""

    def __init__(self, inner):
        self.inner, self.id, self.world = inner, inner.id, inner.world

    def build(self, session, seeds, clock, difficulty):
        from dataclasses import replace

        from scenarios.base import Limits

        instance = self.inner.build(session, seeds, clock, difficulty)
        return replace(instance, limits=Limits(max_turns=3, time_budget_s=instance.limits.time_budget_s))

    def oracle(self, env):
        self.inner.oracle(env)


def test_run_agent__an_agent_that_outlives_the_turn_limit_is_graded_not_crashed(store):
    ep = Episode(SCENARIO, store=store, setup_cache=False)  # the cache holds this seed's normal-limits setup
    ep.family = _FewTurns(ep.family)
    score = run_agent(ep, "oracle", 4)
    assert ep.done
    assert 0.0 <= score.value < 1.0
    ep.close()
