"""The grader contract: rubric validation and loading, score arithmetic, gating, errors, read-only grading."""

from __future__ import annotations

import hashlib
import json

import pytest
from pydantic import ValidationError
from sqlalchemy import func, insert, select, text

from graders import (
    ChangeRow,
    Check,
    CheckOutcome,
    ContextError,
    DuplicateCheckFn,
    Rubric,
    RubricError,
    UnknownCheck,
    check_fn,
    dump_rubric,
    grade,
    load_rubric,
)
from graders.base import GradingContext
from worlds.schema import ChangeLog, TicketLabel


@check_fn("test.fixed")
def _fixed(ctx: GradingContext, score: float, note: str = "fixed") -> CheckOutcome:
    return CheckOutcome(score=score, evidence=f"{note} {score}")


@check_fn("test.boom")
def _boom(ctx: GradingContext) -> CheckOutcome:
    raise RuntimeError("boom\nsecond line is dropped")


@check_fn("test.pair")
def _pair(ctx: GradingContext, ok: bool) -> tuple[bool, str]:
    return ok, f"ok={ok}"


@check_fn("test.out_of_range")
def _out_of_range(ctx: GradingContext) -> tuple[float, str]:
    return 1.5, "too good"


@check_fn("test.bad_details")
def _bad_details(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="fine", details={"handle": object()})


@check_fn("test.writer")
def _writer(ctx: GradingContext) -> CheckOutcome:
    ctx.session.execute(insert(TicketLabel).values(ticket_id=2, label="sneaky"))
    return CheckOutcome.of(True, "wrote")


def check(cid: str, fn: str = "test.fixed", weight: float = 1.0, must: bool = False, **params: object) -> Check:
    return Check(id=cid, description=f"{cid} holds", fn=fn, weight=weight, must=must, params=dict(params))


def rubric(*checks: Check) -> Rubric:
    return Rubric(id="unit", version=1, description="unit rubric", checks=checks)


def state_digest(world) -> str:
    """A digest of the rows the tests touch plus the change-log length (test-only; graders never hash)."""
    parts = [str(world.log_count())]
    for table in ("tickets", "ticket_labels", "posts"):
        rows = world.session.execute(text(f"SELECT * FROM {table} ORDER BY id")).all()
        parts.append(repr(rows))
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


YAML_OK = """
id: triage-tickets
version: 2
description: Triage the new bugs
provenance: v1 over-rewarded label-only edits
checks:
  - id: eng3-priority
    description: ENG-3 raised to high
    fn: ticket_field_equals
    params: {key: ENG-3, field: priority, value: high}
    weight: 2
    must: true
  - id: announced
    description: agent told #eng
    fn: post_in_channel
    params: {channel: eng, pattern: "ENG-3"}
  - id: submitted
    description: ended with submit
    fn: submitted
"""


def test_grade__value_is_weighted_mean_of_partial_scores(world):
    r = rubric(check("a", score=1.0, weight=1), check("b", score=0.5, weight=2), check("c", score=0.0, weight=1))
    score = grade(r, world.ctx())
    assert score.value == pytest.approx((1.0 + 2 * 0.5 + 0.0) / 4)
    assert [c.passed for c in score.checks] == [True, False, False]
    assert score.checks[1].evidence == "fixed 0.5" and not score.gated


def test_grade__failed_must_check_gates_reward_to_zero(world):
    score = grade(rubric(check("a", score=1.0, weight=9), check("gate", score=0.9, must=True)), world.ctx())
    assert score.value == 0.0 and score.gated
    assert score.checks[1].must and not score.checks[1].passed


def test_grade__passed_must_check_does_not_gate(world):
    score = grade(rubric(check("a", score=0.5), check("gate", score=1.0, must=True)), world.ctx())
    assert score.value == pytest.approx(0.5) and not score.gated  # a passed gate adds nothing


def test_grade__only_must_checks_score_one_when_all_pass(world):
    score = grade(rubric(check("g1", score=1.0, must=True), check("g2", score=1.0, must=True)), world.ctx())
    assert score.value == 1.0 and not score.gated


def test_grade__raising_check_scores_zero_with_error_evidence(world):
    score = grade(rubric(check("ok", score=1.0), check("bad", fn="test.boom")), world.ctx())
    bad = score.checks[1]
    assert (bad.score, bad.passed, bad.evidence) == (0.0, False, "check error: RuntimeError: boom")
    assert score.value == pytest.approx(0.5)


def test_grade__tuple_outcomes_and_out_of_range_scores(world):
    score = grade(rubric(check("t", fn="test.pair", ok=True), check("r", fn="test.out_of_range")), world.ctx())
    assert score.checks[0].passed and score.checks[0].evidence == "ok=True"
    assert score.checks[1].score == 0.0
    assert score.checks[1].evidence.startswith("check error: ValueError: check score must be in [0, 1]")


def test_grade__non_json_details_become_a_check_error(world):
    result = grade(rubric(check("d", fn="test.bad_details")), world.ctx()).checks[0]
    assert result.score == 0.0 and result.evidence.startswith("check error: ValidationError")


def test_grade__does_not_write_and_write_attempts_fail(world):
    world.ticket("ENG-3").priority = "high"
    ctx = world.ctx()
    before = state_digest(world)
    score = grade(load_rubric(YAML_OK), ctx)
    bad = grade(rubric(check("w", fn="test.writer")), ctx).checks[0]
    assert state_digest(world) == before
    assert bad.score == 0.0 and "OperationalError" in bad.evidence and "readonly" in bad.evidence
    assert score.checks[0].passed
    # query_only is switched off again: the episode can keep writing after grading
    world.ticket("ENG-4").priority = "low"
    world.session.flush()
    assert world.session.execute(text("PRAGMA query_only")).scalar() == 0


def test_grade__refuses_unflushed_session(world):
    ctx = world.ctx()
    world.ticket("ENG-3").priority = "high"  # not flushed
    with pytest.raises(ContextError, match="unflushed"):
        grade(rubric(check("a", score=1.0)), ctx)


def test_grade__is_deterministic_and_serialisable(world):
    world.ticket("ENG-3").priority = "high"
    r = load_rubric(YAML_OK)
    first, second = grade(r, world.ctx()).to_json(), grade(r, world.ctx()).to_json()
    assert first == second
    assert first["type"] == "score" and first["rubric_id"] == "triage-tickets" and first["rubric_version"] == 2
    assert first["rubric_fingerprint"] == r.fingerprint
    assert {"id", "kind", "passed", "score", "weight", "must", "evidence", "details"} <= set(first["checks"][0])
    json.dumps(first, sort_keys=True)


def test_load_rubric__yaml_fills_kind_and_validates(tmp_path):
    r = load_rubric(YAML_OK)
    assert [c.kind for c in r.checks] == ["state", "state", "trace"]
    assert r.checks[0].weight == 2 and r.checks[0].must and r.provenance
    path = tmp_path / "rubric.yaml"
    path.write_text(YAML_OK)
    assert load_rubric(path) == r == load_rubric(str(path))


def test_dump_rubric__round_trips_yaml_and_json():
    r = load_rubric(YAML_OK)
    for fmt in ("yaml", "json"):
        again = load_rubric(dump_rubric(r, fmt))
        assert again == r and again.fingerprint == r.fingerprint
    assert dump_rubric(r, "json") == dump_rubric(load_rubric(dump_rubric(r, "json")), "json")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "fn: ticket_field_equals",
            "fn: ticket_feild_equals",
            "check 'eng3-priority': field 'fn' is 'ticket_feild_equals'",
        ),
        (
            "field: priority",
            "field: colour",
            "check 'eng3-priority' (fn 'ticket_field_equals'): param 'field'",
        ),
        ("value: high}", "value: high, extra: 1}", "unknown param 'extra'"),
        ("{key: ENG-3, ", "{", "missing param 'key'"),
        ("value: high}", "value: urgent}", "priority value 'urgent' is not one of"),
        ("weight: 2", "weight: 0", "check 'eng3-priority': field 'weight' must be > 0"),
        ("weight: 2", "weight: heavy", "check 'eng3-priority': field 'weight'"),
        ("id: announced", "id: eng3-priority", "duplicate check id 'eng3-priority'"),
        ('pattern: "ENG-3"', 'pattern: "ENG-(3"', "invalid regular expression"),
        (
            "fn: submitted",
            "fn: submitted\n    kind: state",
            "field 'kind' is 'state' but fn 'submitted' is a trace check",
        ),
        ("version: 2", "version: 0", "field 'version'"),
    ],
)
def test_load_rubric__bad_data_raises_rubric_error_naming_it(old, new, message):
    assert old in YAML_OK
    with pytest.raises(RubricError) as info:
        load_rubric(YAML_OK.replace(old, new, 1))
    assert message in str(info.value)


def test_load_rubric__unknown_fn_is_unknown_check_and_bad_yaml_is_rubric_error():
    with pytest.raises(UnknownCheck, match="known: .*ticket_field_equals"):
        load_rubric(YAML_OK.replace("fn: submitted", "fn: nope"))
    with pytest.raises(RubricError, match="not valid YAML"):
        load_rubric("id: [unclosed")
    with pytest.raises(RubricError, match="must be a mapping"):
        load_rubric("- just\n- a list\n")


def test_rubric__is_frozen_fingerprinted_and_evolves_into_a_new_version():
    r = load_rubric(YAML_OK)
    with pytest.raises(ValidationError):
        r.version = 3  # type: ignore[misc]
    assert len(r.fingerprint) == 64 and r.fingerprint == load_rubric(YAML_OK).fingerprint
    v3 = r.evolve(provenance="drop the chat requirement", checks=[r.checks[0], r.checks[2]])
    assert (v3.version, len(v3.checks), v3.provenance) == (3, 2, "drop the chat requirement")
    assert (r.version, len(r.checks)) == (2, 3) and v3.fingerprint != r.fingerprint


def test_check_fn__duplicate_name_raises_and_bad_signatures_are_refused():
    with pytest.raises(DuplicateCheckFn, match="test.fixed"):
        check_fn("test.fixed")(_fixed)
    with pytest.raises(TypeError, match="named keyword parameter"):

        @check_fn("test.varargs")
        def _varargs(ctx: GradingContext, *args: int) -> CheckOutcome:
            raise AssertionError


def test_change_row__accepts_orm_rows_and_both_dict_shapes(world):
    world.ticket("ENG-3").priority = "high"
    world.session.flush()
    orm = world.session.execute(select(ChangeLog).order_by(ChangeLog.seq)).scalars().all()
    ctx = GradingContext(session=world.session, changes=orm, actor_id=1)
    row = ctx.changed_rows("tickets")[0]
    assert (row.key, row.op, row.changes["priority"], row.actor_id) == ((3,), "update", ["low", "high"], 1)
    sim_shape = {
        "seq": 7,
        "table": "tickets",
        "key": "[3]",
        "op": "update",
        "changes": {},
        "actor": 1,
        "at": None,
    }
    assert ChangeRow.of(sim_shape).key == (3,) and ChangeRow.of(sim_shape).actor_id == 1
    log_shape = {"seq": 8, "table_name": "posts", "row_key": [4], "op": "insert", "changes": {}}
    assert ChangeRow.of(log_shape).table == "posts"


def test_grading_context__orders_changes_by_seq(world):
    rows = [{"seq": s, "table": "tickets", "key": [1], "op": "update", "changes": {}} for s in (5, 2, 9)]
    ctx = GradingContext(session=world.session, changes=rows, actor_id=1)
    assert [r.seq for r in ctx.log] == [2, 5, 9]
    assert world.session.execute(select(func.count()).select_from(ChangeLog)).scalar_one() == 0
