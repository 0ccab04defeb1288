"""The tenth pass at the framework around the evaluators, held to what the general paths give.

Each shortcut here (a logged key of one plain string read without the JSON parser, a held check woken only by
an insert carrying its unique values) is compared with what the path it shortcuts gives, so a shortcut that
reads a key or skips a check otherwise fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from graders import changes
from graders.base import Check, CheckOutcome, GradingContext, Rubric, grade, read_changes
from graders.changes import ChangeRow
from graders.progress import Progress, _all_quiet
from graders.registry import check_fn
from tests.graders.conftest import _ticket
from worlds.rawsql import Sql
from worlds.schema import Ticket


def _logged(key: str) -> dict[str, Any]:
    """A step's row in ``sim.tasks.log_since``'s shape with row key ``key`` (JSON text)."""
    return {"seq": 3, "table": "blobs", "key": key, "op": "insert", "changes": {}, "actor": 1, "at": None, "tag": None}


@pytest.mark.parametrize(
    "key",
    [
        '["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]',
        '["ENG-3"]',
        '["a b:c/d"]',
        '[""]',
        '["tab\\there"]',  # an escape: the parser reads it
        '["say \\"hi\\""]',
        '["caf\\u00e9"]',
        '["a","b"]',  # two strings: the quote inside sends it to the parser
        "[17]",
        '[4,"a"]',
        '["17"]',  # a string of digits stays a string
    ],
)
def test_a_one_string_key_reads_as_the_parser_reads_it(key):
    """The sliced key equals ``json.loads``' (value and type), read once and then kept as it was read."""
    changes._KEYS.clear()
    got = ChangeRow.of(_logged(key)).key
    want = tuple(json.loads(key))
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    assert changes._KEYS[key] is got and ChangeRow.of(_logged(key)).key is got


@pytest.mark.parametrize("key", ['["]', '["\x01"]', '["\u00e9"]'])
def test_a_key_the_slice_must_not_take_goes_to_the_parser(key):
    """Text the parser rejects (too short, a raw control character) fails as it does; raw non-ASCII reads alike."""
    changes._KEYS.clear()
    try:
        want: Any = tuple(json.loads(key))
    except ValueError as exc:
        want = type(exc)
    try:
        got: Any = ChangeRow.of(_logged(key)).key
    except ValueError as exc:
        got = type(exc)
    assert got == want


def _rubric(*checks: tuple[str, str, dict[str, Any]]) -> Rubric:
    return Rubric(
        id="core10",
        version=1,
        description="core10 unit rubric",
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


def test_an_insert_wakes_only_the_unique_checks_whose_values_it_carries(world, evaluated):
    """A ticket filed under another key asks neither keyed check (each lags); one under its key asks only it."""
    rubric = _rubric(
        ("eight", "row_exists", {"table": "tickets", "where": {"key": "ENG-8", "priority": "high"}}),
        ("nine", "row_exists", {"table": "tickets", "where": {"key": "ENG-9", "priority": "high"}}),
    )

    def seen(live: Progress) -> tuple[list[str], list[int], dict[Any, set[int]]]:
        asked = sorted(cid for cid, _, _ in evaluated)
        return asked, sorted(live._lagging), {k: set(v) for k, v in live._wake_values.items() if v}

    def add(n: int, priority: str) -> Callable[[], Any]:
        return lambda: world.add(Ticket(**_ticket(n, "todo", priority, None)))

    edits: list[Callable[[], Any]] = [
        add(7, "high"),  # another key: neither asked, both lag (their count of changed rows moved)
        add(8, "high"),  # its key: only "eight" asked, and it passes
        add(9, "low"),  # its key, the wrong priority: only "nine" asked, still failing, held by its row now
        lambda: setattr(world.ticket("ENG-9"), "priority", "high"),  # its row: asked, it passes
    ]
    said = _play(world, rubric, edits, seen, evaluated)
    keyed = {("tickets", ("key",), ("ENG-8",)): {0}, ("tickets", ("key",), ("ENG-9",)): {1}}
    assert said[0] == ([], [0, 1], keyed)
    assert said[1][0] == ["eight"] and said[1][2] == keyed
    assert said[2][0] == ["nine"] and said[3][0] == ["nine"]


def _fixed(ctx: GradingContext, rows: list[ChangeRow], **_: Any) -> tuple[float, str, dict[str, Any]]:
    return (1.0, "fixed", {})


def _keyed(ctx: GradingContext, **_: Any) -> tuple[list[Any], list[Any], list[Any]]:
    return [], [("tickets", ("key", "title"), ("ENG-9", "Nine"))], []


@check_fn("test.core10_keyed", reads=("tickets",), on_changes=_fixed, holds=_keyed)
def _keyed_check(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="fixed")


@pytest.mark.parametrize(
    ("changes", "wakes"),
    [
        ({"key": "ENG-7", "title": "Nine"}, False),
        ({"key": "ENG-9", "title": "Nine"}, True),
        ({"key": "ENG-9"}, False),  # a column the insert did not log reads as None, as ``changes.get`` gives
        ({"key": "ENG-9", "title": "Nine", "priority": "low"}, True),
        ({"key": ["ENG-9"], "title": "Nine"}, True),  # a value that cannot be a dict key: every keyed check wakes
        ({"key": "ENG-9", "title": {"a": 1}}, True),
    ],
)
def test_an_insert_is_looked_up_by_the_values_of_the_columns_a_hold_names(world, changes, wakes):
    """The keyed index wakes a held check for exactly the inserts carrying its values (or any unhashable one)."""
    rubric = _rubric(("keyed", "test.core10_keyed", {}))
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    live.update(())
    assert live._held.keys() == {0}
    row = {"seq": 10**6, "table": "tickets", "key": "[901]", "op": "insert", "changes": changes, "actor": 1}
    assert live._wake([ChangeRow.of(row | {"at": None, "tag": None})]) == ({0} if wakes else set())
    update = row | {"op": "update", "changes": {"key": ["ENG-1", "ENG-9"], "title": ["a", "Nine"]}}
    assert not live._wake([ChangeRow.of(update | {"at": None, "tag": None})])  # an update is not an insert


def test_a_woken_check_asked_under_the_same_hold_keeps_its_index_entries(world):
    """Its own row updated in a column ``where`` does not name: asked, still failing, held as it was (same entries)."""
    rubric = _rubric(("low", "row_exists", {"table": "tickets", "where": {"id": 2, "priority": "low"}}))
    entries: list[Any] = []

    def seen(live: Progress) -> bool:
        entries.append(live._indexed[0])
        return 0 in live._held

    edits = [lambda t=title: setattr(world.ticket("ENG-2"), "title", t) for title in ("Two", "Deux")]
    said = _play(world, rubric, edits, seen, [])
    assert said == [True, True] and entries[0] is entries[1]


_GIVEN: dict[str, list[list[int]]] = {"pair": [], "solo": [], "all": []}
"""The seqs of the rows each test group's ``on_step`` was given, a list a call."""


def _recorder(name: str) -> Callable[..., dict[int, Any]]:
    def on_step(ctx: GradingContext, rows: list[ChangeRow], params: list[Any]) -> dict[int, Any]:
        if rows:
            _GIVEN[name].append([r.seq for r in rows])
        return {}  # nothing moved: the verdicts stand (each check's function is constant)

    return on_step


def _constant(ctx: GradingContext) -> CheckOutcome:
    return CheckOutcome(score=1.0, evidence="constant")


check_fn("test.core10_pair", reads=("tickets", "posts"), on_step=_recorder("pair"))(_constant)
check_fn("test.core10_solo", reads=("ticket_comments",), on_step=_recorder("solo"))(_constant)
check_fn("test.core10_all", reads=("tickets", "posts", "ticket_comments"), on_step=_recorder("all"))(_constant)


def _step_row(seq: int, table: str) -> dict[str, Any]:
    return {"seq": seq, "table": table, "key": f"[{seq}]", "op": "insert", "changes": {}, "actor": 1, "at": None}


def test_each_group_gets_the_rows_of_the_tables_it_reads_in_seq_order_and_plans_are_shared(world):
    """A step of three tables: each group gets its tables' rows in seq order (the log's), from one shared plan."""
    rubric = _rubric(*((name, f"test.core10_{name}", {}) for name in ("pair", "solo", "all")))
    lives = [Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1)) for _ in range(2)]
    step = [_step_row(seq, table) for seq, table in enumerate(("tickets", "ticket_comments", "posts", "tickets"), 1)]
    for live in lives:
        for given in _GIVEN.values():
            given.clear()
        live.update(())
        live.update([row | {"tag": None} for row in step])
        assert _GIVEN == {"pair": [[1, 3, 4]], "solo": [[2]], "all": [[1, 2, 3, 4]]}
    assert lives[0]._plans is lives[1]._plans  # the second episode found the plan made
    assert list(lives[0]._plans) == [("tickets", "ticket_comments", "posts")]


_HOOK: Any = (
    {"posts": {("posts", "insert")}, "tickets": {("tickets", "update", "title")}},
    1,
    {("tickets", (5,)): (frozenset({"title", "priority"}),)},
)


def _one_quiet(hook: Any, r: ChangeRow) -> bool:
    """The rule for one row as ``_quiet_row`` had it before rows were asked together."""
    shapes, actor, quiet_rows = hook
    if actor is not None and r.actor_id != actor:
        return False
    if quiet_rows:
        fits = quiet_rows.get((r.table, r.key))
        if fits is not None:
            return r.op == "update" and any(columns.issuperset(r.changes) for columns in fits)
    of_table = shapes.get(r.table)
    return of_table is not None and (((r.table, r.op, *r.changes) if r.op == "update" else (r.table, r.op)) in of_table)


def test_a_steps_rows_are_quiet_together_exactly_when_each_is():
    """``_all_quiet`` over a step's rows is every row's one-row rule (shapes, actor, a keyed rule's row)."""
    kinds = [
        ("posts", 1, "insert", {}, 1),
        ("posts", 2, "insert", {}, 2),  # another actor
        ("tickets", 3, "update", {"title": ["a", "b"]}, 1),
        ("tickets", 4, "update", {"title": ["a", "b"], "status": ["x", "y"]}, 1),  # a column no shape names
        ("tickets", 5, "update", {"priority": ["low", "high"]}, 1),  # the keyed row, within its columns
        ("tickets", 5, "update", {"status": ["x", "y"]}, 1),  # the keyed row, outside them
        ("tickets", 5, "delete", {}, 1),
        ("mail_deliveries", 6, "update", {"read_at": [None, "x"]}, 1),
    ]
    rows = [
        ChangeRow.of({"seq": n, "table": t, "key": [k], "op": op, "changes": ch, "actor": a})
        for n, (t, k, op, ch, a) in enumerate(kinds)
    ]
    for first in rows:
        for second in rows:
            pair = [first, second]
            assert _all_quiet(_HOOK, pair) == all(_one_quiet(_HOOK, r) for r in pair), pair
    assert _all_quiet(_HOOK, [rows[0], rows[2], rows[4]]) and not _all_quiet(_HOOK, rows)


def test_a_row_the_episode_inserted_is_judged_from_its_insert_without_a_query(world, monkeypatch):
    """A keyed check woken by its row's insert folds the insert in; one on a row that existed reads it once."""
    rubric = _rubric(
        ("new", "row_exists", {"table": "tickets", "where": {"key": "ENG-9", "priority": "high"}}),
        ("old", "row_exists", {"table": "tickets", "where": {"key": "ENG-3", "priority": "high"}}),
    )
    statements: list[str] = []
    one = Sql.one

    def spied(self: Sql, sql: str, params: Any = ()) -> Any:
        statements.append(sql)
        return one(self, sql, params)

    monkeypatch.setattr(Sql, "one", spied)

    def seen(live: Progress) -> list[str]:
        return [s for s in statements if s.startswith("SELECT key, priority FROM tickets WHERE id")]

    edits: list[Callable[[], Any]] = [
        lambda: world.add(Ticket(**_ticket(9, "todo", "high", None))),  # its insert: folded, no query
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # a row from before: read when progress began
        lambda: setattr(world.ticket("ENG-9"), "priority", "low"),  # folded on from what it holds
        lambda: setattr(world.ticket("ENG-3"), "priority", "low"),
    ]
    said = _play(world, rubric, edits, seen, statements)
    assert said == [[], [], [], []]  # ENG-3 was read ahead as progress started (a row from before the episode)
