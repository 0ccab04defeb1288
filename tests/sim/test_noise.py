"""Seeded fault injection: a pure schedule, every fault type, state untouched, replay exact, bad input refused."""

import json

import pytest

from sim.agents import run_agent
from sim.episode import Episode
from sim.errors import BadNoise
from sim.noise import FAULTS, PROFILES, TOOL_FAULTS, NoiseProfile, decide, npc_no_show
from sim.replay import replay
from sim.trace import TraceWriter, read_trace

SCENARIO = "triage-tickets-v0"


def only(fault: str, tool: str) -> dict:
    """A profile in which every call of ``tool`` faults with ``fault`` and nothing else ever does."""
    return {"profile": "none", "tools": {tool: 1.0}, "weights": {fault: 1.0}}


def test_decide__is_a_pure_function_of_seed_tool_and_call_index():
    p = PROFILES["harsh"]
    a = [decide(p, 7, "tickets_get", "tickets", i, read=True) for i in range(2000)]
    b = [decide(p, 7, "tickets_get", "tickets", i, read=True) for i in range(2000)]
    assert a == b
    assert a != [decide(p, 8, "tickets_get", "tickets", i, read=True) for i in range(2000)]


@pytest.mark.parametrize(("name", "low", "high"), [("none", 0, 0), ("realistic", 0.04, 0.06), ("harsh", 0.09, 0.11)])
def test_decide__profiles_fault_at_their_rate(name, low, high):
    p = PROFILES[name]
    n = 20_000
    hits = sum(decide(p, s, "chat_post", "chat", i, read=False) is not None for s in range(4) for i in range(n // 4))
    assert low <= hits / n <= high


def test_decide__overrides_and_read_only_faults():
    p = NoiseProfile.parse({"profile": "harsh", "apps": {"mail": 1.0}, "tools": {"chat_post": 0.0}})
    assert all(decide(p, 1, "mail_send", "mail", i, read=False) for i in range(200))
    assert not any(decide(p, 1, "chat_post", "chat", i, read=False) for i in range(2000))
    writes = [decide(p, 1, "mail_send", "mail", i, read=False) for i in range(2000)]
    assert {d.fault for d in writes if d} == set(TOOL_FAULTS) - {"partial_result", "stale_read"}
    assert decide(p, 1, "submit", "", 0, read=False) is None


def test_npc_no_show__fires_at_the_profile_rate_and_never_without_noise():
    shows = [npc_no_show(PROFILES["realistic"], 3, "npc/7", t) for t in range(4000)]
    assert 0.03 < sum(shows) / len(shows) < 0.07
    assert not any(npc_no_show(PROFILES["none"], 3, "npc/7", t) for t in range(500))
    assert "npc_no_show" in FAULTS


@pytest.fixture
def episode(store):
    ep = Episode(SCENARIO, store=store)
    yield ep
    ep.close()


@pytest.mark.parametrize(
    ("fault", "code"),
    [("timeout", "timeout"), ("rate_limited", "rate_limited"), ("server_error", "server_error")]
    + [("permission_flake", "forbidden")],
)
def test_failing_faults__give_a_realistic_error_and_change_nothing(episode, fault, code):
    episode.reset(seed=1, options={"noise": only(fault, "tickets_update")})
    key = next(iter(episode.instance.params["expected"]))
    before = episode.world.state_hash()
    obs, _, _, _, info = episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": "low"}})
    assert info["error"]["code"] == code and info["fault"]["type"] == fault
    assert obs.startswith(f"error [{code}]") and "req-" in obs
    assert episode.world.state_hash() == before
    assert episode.faults == [{"step": 0, **info["fault"]}]
    _, _, _, _, ok = episode.step({"name": "tickets_get", "arguments": {"key": key}})
    assert ok["error"] is None and ok["fault"] is None  # other tools are untouched


def test_partial_result__halves_the_longest_list_and_says_so(episode):
    episode.reset(seed=1, options={"noise": only("partial_result", "tickets_search")})
    obs, _, _, _, info = episode.step({"name": "tickets_search", "arguments": {"limit": 10}})
    got = json.loads(obs)
    assert info["fault"]["type"] == "partial_result" and got["partial"] is True
    assert len(got["tickets"]) == 5 and "retry" in got["warning"]


def test_stale_read__returns_the_previous_result_for_the_same_call(episode):
    episode.reset(seed=1, options={"noise": only("stale_read", "tickets_get")})
    key = next(iter(episode.instance.params["expected"]))
    first, _, _, _, info = episode.step({"name": "tickets_get", "arguments": {"key": key}})
    assert info["fault"] is None  # nothing older to serve yet
    episode.step({"name": "tickets_update", "arguments": {"key": key, "priority": "low"}})
    second, _, _, _, info = episode.step({"name": "tickets_get", "arguments": {"key": key}})
    assert info["fault"]["type"] == "stale_read" and second == first
    assert json.loads(second)["priority"] != "low"


@pytest.mark.parametrize("profile", ["realistic", "harsh"])
def test_noise__the_oracle_copes_and_a_noisy_trace_replays_exactly(store, tmp_path, profile):
    path = tmp_path / "noisy.jsonl"
    writer = TraceWriter(path)
    ep = Episode(SCENARIO, store=store, trace=writer, noise=profile)
    try:
        scores = [run_agent(ep, "oracle", seed).value for seed in range(6)]
    finally:
        ep.close()
        writer.close()
    assert scores == [1.0] * 6
    episodes = list(read_trace(path))
    assert all(e[0]["options"]["noise"] == profile for e in episodes)
    faults = [f for e in episodes for f in e[-1]["faults"]]
    assert faults, "six noisy episodes injected no fault"
    steps = {(s["index"], s["fault"]["type"]) for e in episodes for s in e[1:-1] if s["fault"]}
    assert len(steps) >= len({(f["step"], f["type"]) for f in faults}) > 0
    assert replay(path, store=store).ok


@pytest.mark.parametrize(
    ("noise", "named"),
    [
        ("chaos", "'chaos'"),
        ({"profile": "harsh", "weights": {"meteor": 1.0}}, "'meteor'"),
        ({"profile": "harsh", "rate": 1.5}, "1.5"),
        ({"profile": "harsh", "apps": {"mail": -0.1}}, "-0.1"),
        ({"profile": "harsh", "colour": "red"}, "colour"),
    ],
)
def test_bad_noise__is_refused_naming_the_value_and_the_episode_is_untouched(episode, noise, named):
    episode.reset(seed=2)
    episode.step({"name": "tickets_search", "arguments": {"limit": 3}})
    with pytest.raises(BadNoise) as info:
        episode.reset(seed=3, options={"noise": noise})
    assert info.value.code == "bad_noise" and named in str(info.value)
    assert len(episode.steps) == 1 and not episode.done  # the running episode goes on
    with pytest.raises(BadNoise):
        Episode(SCENARIO, noise=noise)
