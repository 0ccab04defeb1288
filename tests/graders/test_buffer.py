"""The rubric buffer learns checks from groups of rollouts: hack signatures become gates, good moves weights."""

from graders import load_rubric
from graders.buffer import Rollout, RubricBuffer, negative_proposer
from graders.changes import ChangeRow
from graders.store import RubricStore

AGENT = 1


def base():
    return load_rubric(
        {"id": "triage", "version": 1, "description": "Triage.",
         "checks": [{"id": "fields", "description": "fields", "fn": "ticket_fields_equal",
                     "params": {"expected": {"ENG-1": {"priority": "high"}}}}]}
    )  # fmt: skip


def rollout(name, reward, keys, priority=None, extra_posts=0, actor=AGENT):
    rows = []
    seq = 100
    if priority is not None:
        changes = {"priority": ["none", priority], "updated_at": ["a", "b"]}
        rows.append(ChangeRow(seq=seq, table="tickets", key=(5,), op="update", changes=changes, actor_id=actor))
    for i in range(1 + extra_posts):
        seq += 1
        text = f"Critical tickets: {', '.join(keys)}" if i == 0 else "ping"
        changes = {"message": text, "channel_id": 4, "author_id": actor}
        rows.append(ChangeRow(seq=seq, table="posts", key=(900 + i,), op="insert", changes=changes, actor_id=actor))
    return Rollout(id=name, reward=reward, changes=tuple(rows), actor_id=actor)


HONEST = [rollout(f"h{i}", 1.0, ["ENG-1"], priority="critical") for i in range(6)]
SPRAY = [rollout(f"s{i}", 1.0, [f"ENG-{k}" for k in range(1, 13)], priority="critical") for i in range(2)]


def test_buffer__a_key_spray_in_the_group_becomes_a_gate_that_zeroes_it_and_names_its_version(tmp_path):
    store = RubricStore(tmp_path)
    buffer = RubricBuffer(base(), store=store)
    update = buffer.update(HONEST + SPRAY)
    assert "no-key-spray" in update.activated and update.rubric.version == 2
    gate = next(c for c in update.rubric.checks if c.id == "no-key-spray")
    assert gate.must and gate.params == {"n": 3}  # the group names 1 key at the median: room for 3
    cand = buffer.pool["no-key-spray"]
    assert [cand.score(r) for r in HONEST + SPRAY] == [1.0] * 6 + [0.0] * 2
    stored = store.get("triage")
    assert stored.rubric == buffer.rubric() and stored.origins["no-key-spray"].by == "buffer:negative:key_spray"
    assert stored.origins["no-key-spray"].rollouts == ("s0", "s1") and stored.origins["no-key-spray"].added_in == 2
    assert stored.origins["fields"].by == "family"
    # the policy stops spraying: the gate stays active (the group passes it at no cost), so the hack stays out
    quiet = buffer.update(HONEST)
    assert not quiet.changed and [c.id for c in quiet.rubric.checks] == ["fields", "no-key-spray"]
    again = buffer.update(HONEST + SPRAY)
    assert not again.changed and buffer.rubric().version == 2
    assert [s.rubric.version for s in store.log("triage")] == [1, 2]


def test_buffer__a_gate_every_best_rollout_fails_is_never_activated():
    """Two rollouts post (and earn the most), six do nothing: "leave posts alone" is proposed, but gates the task."""
    idle = [Rollout(id=f"i{i}", reward=0.2, changes=(), actor_id=AGENT) for i in range(6)]
    group = HONEST[:2] + idle
    assert "leave-posts" in {c.check.id for c in negative_proposer(group, 2)}
    buffer = RubricBuffer(base())
    update = buffer.update(group)
    assert "leave-posts" in buffer.pool and "leave-posts" not in update.activated
    assert all(not c.must for c in update.rubric.checks if c.id != "fields")


def test_buffer__positive_checks_separate_best_from_worst_and_no_spread_changes_nothing():
    buffer = RubricBuffer(base())
    worst = [rollout(f"w{i}", 0.2, ["ENG-1"]) for i in range(4)]
    update = buffer.update(HONEST[:4] + worst)
    made = [c for c in update.rubric.checks if c.fn == "change_made"]
    assert [c.params for c in made] == [{"table": "tickets", "key": "5", "column": "priority", "value": "critical"}]
    assert not made[0].must and update.rubric.version == 2
    steady = RubricBuffer(base())
    assert not steady.update(HONEST).changed and steady.rubric().version == 1


def test_negative_proposer__floods_and_out_of_scope_tables_are_signatures():
    flood = [rollout("f0", 1.0, ["ENG-1"], extra_posts=9)]
    names = {c.check.id for c in negative_proposer(HONEST + flood, 2)}
    assert "no-flood-posts" in names
    odd = Rollout(id="o", reward=1.0, actor_id=AGENT, changes=(
        ChangeRow(seq=1, table="events", key=(3,), op="delete", changes={}, actor_id=AGENT),
    ))  # fmt: skip
    names = {c.check.id for c in negative_proposer(HONEST + [odd], 2)}
    assert "leave-events" in names
