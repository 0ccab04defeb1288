"""sim.calls: actions are parsed strictly, and a failing write leaves the world exactly as it was."""

import json

import pytest

from sim.calls import WRITE_COST_S, dispatch, parse_action
from sim.episode import Episode
from sim.errors import BadAction
from sim.noise import FaultGate, NoiseProfile


@pytest.fixture(scope="module")
def episode(store):
    ep = Episode("triage-tickets-v0", store=store)
    yield ep
    ep.close()


@pytest.mark.parametrize(
    "action",
    [
        {"name": "tickets_get", "arguments": {"key": "A-1"}},
        {"name": "tickets_get", "arguments": '{"key": "A-1"}'},
        {"function": {"name": "tickets_get", "arguments": '{"key": "A-1"}'}},
        '{"name": "tickets_get", "arguments": {"key": "A-1"}}',
    ],
)
def test_parse_action__accepts_the_shapes_clients_send(action):
    assert parse_action(action) == ("tickets_get", {"key": "A-1"})


@pytest.mark.parametrize(
    ("action", "words"),
    [("nope", "not JSON"), (["x"], "must be an object"), ({"arguments": {}}, "no tool name"),
     ({"name": "x", "arguments": "{bad"}, "not valid JSON"), ({"name": "x", "arguments": [1]}, "JSON object")],
)  # fmt: skip
def test_parse_action__refuses_malformed_actions_with_a_code(action, words):
    with pytest.raises(BadAction, match=words) as err:
        parse_action(action)
    assert err.value.code == "bad_action"


def test_dispatch__a_refused_write_rolls_back_and_submit_and_wait_cost_what_they_say(episode):
    episode.reset(seed=2)
    live = episode._live
    key = next(iter(episode.instance.params["expected"]))
    before = episode.world.state_hash()
    kw = {"tools": live.tools, "ctx": live.ctx, "change": live.change, "gate": None, "code": None}
    bad = dispatch("tickets_transition", {"key": key, "status": "done"}, index=0, **kw)
    assert bad.error is not None and bad.write and episode.world.state_hash() == before
    ok = dispatch("tickets_update", {"key": key, "priority": "high"}, index=1, **kw)
    assert ok.error is None and ok.cost == WRITE_COST_S and episode.world.state_hash() != before
    assert dispatch("submit", {}, index=2, **kw).submitted
    assert dispatch("wait", {"minutes": 30}, index=3, **kw).cost == 1800
    assert dispatch("wait", {"minutes": 0}, index=4, **kw).error["code"] == "invalid_argument"
    assert dispatch("no_such_tool", {}, index=5, **kw).error["code"] == "unknown_tool"


def test_dispatch__a_failing_fault_never_reaches_the_service(episode):
    episode.reset(seed=2)
    live = episode._live
    gate = FaultGate(NoiseProfile.parse({"rate": 1.0, "weights": {"timeout": 1.0}}), seed=2)
    before = episode.world.state_hash()
    key = next(iter(episode.instance.params["expected"]))
    out = dispatch(
        "tickets_update", {"key": key, "priority": "high"}, index=0, tools=live.tools, ctx=live.ctx,
        change=live.change, gate=gate, code=None,
    )  # fmt: skip
    assert out.error["code"] == "timeout" and not out.write and out.fault["type"] == "timeout"
    assert episode.world.state_hash() == before and gate.faults == [{"step": 0, **out.fault}]
    assert json.dumps(out.fault)
