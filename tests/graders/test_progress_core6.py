"""The sixth pass at what every write step pays outside the family checks, held to a full grade (issue 14).

A failing ``row_exists`` that counts the changed rows is held like a passing one (its score waits for its own
row), its count caught up only when the results are asked for; ``no_collateral_changes`` is not asked at all
after rows its rules admit without keys (``check_fn(quiet=)``), and asked through its one-row path for a keyed
rule's row; the ``on_step`` groups are asked by the tables a step wrote. Each test compares every verdict
with a fresh grade, so none passes when a shortcut drifts, and says that the shortcut was taken.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import graders.collateral as collateral
from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.changes import ChangeRow
from graders.collateral import AllowedChange, _collateral, _collateral_on_changes
from graders.progress import Progress
from graders.registry import LATER
from tests.graders.test_checks import post, send


def _rubric(*checks: tuple[str, str, dict[str, Any]]) -> Rubric:
    return Rubric(
        id="core6",
        version=1,
        description="core6 unit rubric",
        checks=tuple(Check(id=c, description="d", fn=fn, params=params) for c, fn, params in checks),
    )


def _play(
    world: Any, rubric: Rubric, edits: list[Callable[[], Any]], seen: Callable[[Progress], Any], calls: list[Any]
) -> list[Any]:
    """Each edit as one step: ``seen(progress)`` right after its update, then every verdict against a grade.

    ``calls`` (what a spy records) is emptied before each update: what ``results`` asked is not the step's.
    """
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update([])
    seq, said = world.start_seq, []
    for n, edit in enumerate(edits):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        calls.clear()
        value = live.update(rows)  # type: ignore[arg-type]
        said.append(seen(live))
        full = grade(rubric, world.ctx())
        assert value == full.value, n
        assert live.results() == full.checks, n
    return said


def test_a_failing_row_check_counting_changed_rows_is_held_and_caught_up_for_the_results(world, evaluated):
    rubric = _rubric(
        ("low", "row_exists", {"table": "tickets", "where": {"id": 2, "priority": "low"}}),
        ("high", "row_exists", {"table": "tickets", "where": {"key": "ENG-3", "priority": "high"}}),
    )

    def seen(live: Progress) -> tuple[list[str], bool]:
        return sorted(cid for cid, _, _ in evaluated), 0 in live._lagging

    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-4"), "title", "Four"),  # another row: neither asked, "low" lags
        lambda: setattr(world.ticket("ENG-5"), "title", "Five"),  # again: its count moves, its score does not
        lambda: setattr(world.ticket("ENG-2"), "priority", "low"),  # its own row: asked, and it passes
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # the keyed one's row
    ]
    said = _play(world, rubric, edits, seen, evaluated)
    assert said == [([], True), ([], True), (["low"], False), (["high"], False)]


RULES = [
    AllowedChange(table="merge_requests", fields=("title",), keys=(5, 6)),  # keyed, no natural key
    AllowedChange(table="posts", ops=("insert",)),
]


def _row(seq: int, table: str, op: str, changes: dict[str, Any], key: int) -> ChangeRow:
    return ChangeRow.of({"seq": seq, "table": table, "key": [key], "op": op, "changes": changes, "actor": 7})


def test_a_keyed_rules_row_is_admitted_by_the_one_row_path_and_a_stranger_is_not():
    ctx = GradingContext(session=None, actor_id=7)  # type: ignore[arg-type]  # no natural keys: no query
    rules = list(RULES)
    before = _collateral(ctx, rules, "actor")
    steps = [
        (_row(1, "merge_requests", "update", {"title": "a"}, 5), True),  # a keyed rule names it: LATER
        (_row(2, "merge_requests", "update", {"title": "b"}, 6), True),
        (_row(3, "merge_requests", "update", {"title": "c"}, 9), False),  # not one of its keys: a violation
        (_row(4, "merge_requests", "update", {"title": "d"}, 5), True),  # admitted again, the score stays 0
    ]
    for n, (row, admitted) in enumerate(steps):
        ctx.extend([row])
        got = _collateral_on_changes(ctx, [row], rules, "actor")
        fresh = _collateral(GradingContext(session=None, changes=list(ctx.log), actor_id=7), list(RULES), "actor")  # type: ignore[arg-type]
        assert (got is LATER) == admitted, n
        if got is LATER:
            assert before[0] == fresh[0], f"step {n}: LATER though the score moved"
            got = _collateral_on_changes(ctx, [], rules, "actor")
        assert got == fresh, n
        before = got
    assert before[0] == 0.0 and "1 of 4 changes" in before[1]


@pytest.fixture
def collateral_rubric() -> Rubric:
    allowed = [{"table": "tickets", "fields": ["priority"]}, {"table": "posts", "ops": ["insert"]}]
    return _rubric(("collateral", "no_collateral_changes", {"allowed": allowed}))


def test_collateral_is_not_asked_after_rows_its_rules_admit_and_its_count_stays_exact(
    world, collateral_rubric, evaluated, monkeypatch
):
    monkeypatch.setattr(collateral, "_SHAPES", {})  # no shape learned by another test's episode

    def seen(live: Progress) -> tuple[int, bool]:
        return len(evaluated), 0 in live._lagging

    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # a new shape: the evaluator learns it
        lambda: setattr(world.ticket("ENG-4"), "priority", "low"),  # the same shape: not asked
        lambda: post(world, 1, "hello"),  # an insert it learns, then
        lambda: post(world, 2, "again"),  # not asked
        lambda: post(world, 2, "bob's", author="bob"),  # a coworker's: asked, hands back the verdict it has
        lambda: setattr(world.ticket("ENG-3"), "title", "renamed"),  # a violation: asked, the verdict at once
        lambda: setattr(world.ticket("ENG-5"), "priority", "high"),  # admitted: not asked, the score stays 0
    ]
    said = _play(world, collateral_rubric, edits, seen, evaluated)
    assert said == [(1, True), (0, True), (1, True), (0, True), (1, False), (1, False), (0, True)]


def test_on_step_groups_are_asked_by_the_tables_a_step_wrote_with_only_their_rows(world):
    rubric = _rubric(
        ("posted", "post_in_channel", {"channel": "general", "pattern": "shipped"}),
        ("mailed", "mail_sent", {"to": ["bob"], "subject_pattern": "shipped"}),
    )
    asked: list[tuple[str, list[str]]] = []

    def spy_on(live: Progress) -> None:
        for key, (fn, checks, params) in list(live._grouped.items()):

            def spy(ctx: Any, rows: Any, params: Any, fn: Any = fn, name: str = key[0]) -> Any:
                if rows:
                    asked.append((name, sorted({r.table for r in rows})))
                    assert [r.seq for r in rows] == sorted(r.seq for r in rows)
                return fn(ctx, rows, params)

            live._grouped[key] = (spy, checks, params)

    def seen(live: Progress) -> list[tuple[str, list[str]]]:
        if not asked and not getattr(live, "_spied", False):
            spy_on(live)
            live._spied = True  # type: ignore[attr-defined]
        return list(asked)

    edits: list[Callable[[], Any]] = [
        lambda: None,  # (the spies go in after the first step)
        lambda: post(world, 1, "we shipped"),  # one table: the post group alone
        lambda: send(world, "shipped", "it is out", [2]),  # the mail tables: the mail group alone
        lambda: (post(world, 1, "shipped again"), send(world, "shipped 2", "again", [2])),  # both, in order
    ]
    said = _play(world, rubric, edits, seen, asked)
    mail_tables = ["mail_messages", "mail_recipients", "mail_threads"]
    assert said[1] == [("post_in_channel", ["posts"])]
    assert said[2] == [("mail_sent", [t for t in mail_tables if t != "mail_threads"])]
    assert said[3] == [("post_in_channel", ["posts"]), ("mail_sent", ["mail_messages", "mail_recipients"])]


def test_collateral_skips_rows_that_rename_a_keyed_rules_row_and_judges_the_row_after_them_as_at_once(
    world, evaluated, monkeypatch
):
    monkeypatch.setattr(collateral, "_SHAPES", {})
    allowed = [
        {"table": "tickets", "fields": ["priority"], "keys": ["ENG-3", "ENG-4"]},  # read ahead by natural key
        {"table": "tickets", "fields": ["key"]},  # renames: counted, and noted for the keyed rule's later rows
        {"table": "tickets", "fields": ["title"]},
    ]
    rubric = _rubric(("collateral", "no_collateral_changes", {"allowed": allowed}))

    def seen(live: Progress) -> tuple[int, bool]:
        return len(evaluated), 0 in live._lagging

    def rename(key: str, new: str) -> Callable[[], Any]:
        return lambda: setattr(world.ticket(key), "key", new)

    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-5"), "title", "Five"),  # learned
        rename("ENG-3", "ENG-33"),  # learned: renames a row the keyed rule named
        lambda: setattr(world.ticket("ENG-2"), "title", "Two"),  # not asked
        rename("ENG-1", "ENG-3"),  # not asked: gives another row the keyed rule's name
        lambda: setattr(world.ticket("ENG-4"), "priority", "high"),  # keyed, named ahead: not asked (core8)
        lambda: setattr(world.ticket("ENG-33"), "priority", "high"),  # asked: its old name no longer admits it
        lambda: setattr(world.ticket("ENG-3"), "priority", "low"),  # asked: the renamed row 1 is admitted
    ]
    said = _play(world, rubric, edits, seen, evaluated)
    assert said == [(1, True), (1, True), (0, True), (0, True), (0, True), (1, False), (1, False)]


def test_the_one_row_path_leaves_a_renaming_row_to_the_loop_when_rows_were_read_ahead(world):
    rules = [
        AllowedChange(table="tickets", fields=("priority",), keys=("ENG-3",)),
        AllowedChange(table="tickets", fields=("key",)),
    ]
    ctx, seq = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq
    _collateral(ctx, rules, "actor")  # progress's first grade: reads the keyed rule's rows ahead
    for n, (key, field, value) in enumerate(
        [("ENG-3", "key", "ENG-33"), ("ENG-1", "key", "ENG-3"), ("ENG-3", "priority", "low")]
    ):
        setattr(world.ticket(key), field, value)
        world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq
        ctx.extend(rows)
        got = _collateral_on_changes(ctx, rows, rules, "actor")  # each a one-row step: the one-row path first
        if got is LATER:
            got = _collateral_on_changes(ctx, [], rules, "actor")
        fresh = _collateral(GradingContext(session=world.session, changes=list(ctx.log), actor_id=1), rules, "actor")
        assert got == fresh, n
    assert got[0] == 1.0, "row 1, renamed ENG-3 after the episode began, is the one the keyed rule admits"


def test_a_change_row_reads_each_spelling_of_a_logged_row_alike():
    """``ChangeRow.of`` reads a step's dict key by key once; each spelling the log and the ORM use gives one row."""
    want = ChangeRow(seq=5, table="posts", key=(1, "a"), op="insert", changes={}, actor_id=4, at="t", tag=None)
    spellings = [
        {"seq": 5, "table": "posts", "key": '[1, "a"]', "op": "insert", "actor": 4, "at": "t"},
        {"seq": "5", "table_name": "posts", "row_key": '[1, "a"]', "op": "insert", "actor_id": 4, "at": "t"},
        {"seq": 5, "table": "posts", "key": [1, "a"], "op": "insert", "changes": None, "actor_id": 4, "at": "t"},
        {"seq": 5, "table": "posts", "row_key": (1, "a"), "op": "insert", "actor": 4, "at": "t", "tag": None},
    ]
    for n, logged in enumerate(spellings):
        assert ChangeRow.of(logged) == want, n
    one = {"seq": 6, "table": "posts", "key": "[7]", "op": "delete", "actor_id": None, "actor": 4}
    assert ChangeRow.of(one).key == (7,) and ChangeRow.of(one).actor_id is None, "actor_id given (None) wins"
    assert ChangeRow.of({"seq": 7, "op": "delete", "key": 9}).key == (9,)
