from datetime import UTC, datetime, timedelta

import pytest

from sim.clock import SimClock
from sim.episode import parse_action
from sim.errors import BadAction, TraceError
from sim.trace import TraceWriter, chain_hash, read_trace

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def test_sim_clock__runs_due_events_in_time_then_insertion_order():
    clock = SimClock(T0)
    seen: list[str] = []
    clock.schedule(T0 + timedelta(seconds=30), lambda: seen.append("b"), "b")
    clock.schedule(T0 + timedelta(seconds=10), lambda: seen.append("a"), "a")
    clock.schedule(T0 + timedelta(seconds=30), lambda: seen.append("c"), "c")
    clock.schedule(T0 + timedelta(seconds=90), lambda: seen.append("late"), "late")
    assert clock.advance(45) == ["a", "b", "c"]
    assert seen == ["a", "b", "c"]
    assert clock.now() == T0 + timedelta(seconds=45)
    assert clock.pending() == 1


def test_sim_clock__refuses_naive_start_and_going_backwards():
    with pytest.raises(ValueError, match="timezone-aware"):
        SimClock(datetime(2026, 1, 1))  # noqa: DTZ001
    with pytest.raises(ValueError, match="backwards"):
        SimClock(T0).advance(-1)


@pytest.mark.parametrize(
    "action",
    [
        {"name": "chat_post", "arguments": {"channel": "x"}},
        {"name": "chat_post", "arguments": '{"channel": "x"}'},
        {"type": "function", "function": {"name": "chat_post", "arguments": '{"channel": "x"}'}},
        '{"name": "chat_post", "arguments": {"channel": "x"}}',
    ],
)
def test_parse_action__accepts_plain_and_openai_shapes(action):
    assert parse_action(action) == ("chat_post", {"channel": "x"})


@pytest.mark.parametrize(
    "action",
    [
        None,
        3,
        [],
        "not json",
        {"arguments": {}},
        {"name": ""},
        {"name": "x", "arguments": "{bad"},
        {"name": "x", "arguments": [1]},
    ],
)
def test_parse_action__rejects_malformed_with_bad_action_code(action):
    with pytest.raises(BadAction) as info:
        parse_action(action)
    assert info.value.code == "bad_action"


def test_chain_hash__is_stable_and_changes_only_with_rows():
    h0 = "0" * 64
    assert chain_hash(h0, []) == h0
    h1 = chain_hash(h0, [{"table": "tickets", "op": "update"}])
    assert h1 == chain_hash(h0, [{"op": "update", "table": "tickets"}])
    assert h1 != chain_hash(h0, [{"table": "tickets", "op": "insert"}])


def test_read_trace__round_trips_and_rejects_damage(tmp_path):
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path)
    w.write({"type": "header", "format": 1, "scenario": "s"})
    w.write({"type": "step", "index": 0})
    w.write({"type": "score", "value": 1.0, "checks": []})
    w.close()
    episodes = list(read_trace(path))
    assert [[r["type"] for r in ep] for ep in episodes] == [["header", "step", "score"]]

    truncated = tmp_path / "cut.jsonl"
    truncated.write_text("\n".join(path.read_text().splitlines()[:2]) + "\n")
    with pytest.raises(TraceError, match="no score record"):
        list(read_trace(truncated))
    garbage = tmp_path / "bad.jsonl"
    garbage.write_text('{"type": "header", "format": 1}\n{oops\n')
    with pytest.raises(TraceError, match="not a JSON record"):
        list(read_trace(garbage))
    future = tmp_path / "future.jsonl"
    future.write_text('{"type": "header", "format": 99}\n')
    with pytest.raises(TraceError, match="format 99"):
        list(read_trace(future))
    with pytest.raises(TraceError, match="no trace file"):
        list(read_trace(tmp_path / "missing.jsonl"))
