"""The eighth pass at what every write step pays outside the family checks, held to what the full fold gives.

``no_collateral_changes``' evaluator judges a step's few new rows in one pass when each is one the rules admit
(a ticket's update and its status change under a keyed rule, the project counter a filing bumps), and leaves
every row to its loop, untouched, at the first it cannot. Each test compares the verdict with the loop's own
(the evaluator asked with no rows folds with the loop alone) or with a fresh grade, so a shortcut that
admits a row the loop would not, or notes a rename early, fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import graders.collateral as collateral
from graders.base import GradingContext, read_changes
from graders.collateral import AllowedChange, _collateral, _collateral_on_changes
from graders.progress import Progress
from graders.registry import LATER
from tests.graders.test_progress_core6 import _play, _rubric
from worlds.schema import TicketStatusChange


def _status(world: Any, key: str, status: str) -> None:
    """A transition as the tool writes it: the ticket's status and a status-history row, two rows in one step."""
    ticket = world.ticket(key)
    before, ticket.status = ticket.status, status
    at = world.clock.now()
    world.add(TicketStatusChange(ticket_id=ticket.id, from_status=before, to_status=status, actor_id=1, changed_at=at))


def _steps(world: Any, rules: list[AllowedChange], steps: list[list[Callable[[], Any]]]) -> list[tuple[Any, ...]]:
    """Each step's edits (flushed one by one), folded as progress asks; after each: answer, verdict, the loop's.

    The verdict is the evaluator's after the step, brought up to date by asking it with no rows when it
    answered ``LATER``, as ``Progress.results`` does; the loop's is a second context fed the same rows and asked
    with none, so only the loop judges them (both read the keyed rules' rows ahead before the first step).
    """
    ctx, seq, said = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq, []
    loop, loop_rules = GradingContext(session=world.session, trace=[], actor_id=1), list(rules)
    _collateral(ctx, rules, "actor")  # progress's first grade: reads the keyed rules' rows ahead
    _collateral(loop, loop_rules, "actor")  # (its state is kept by the rules list's id: the same list each time)
    for edits in steps:
        for edit in edits:
            edit()
            world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq
        ctx.extend(rows)
        loop.extend(rows)
        got = _collateral_on_changes(ctx, rows, rules, "actor")
        verdict = got if got is not LATER else _collateral_on_changes(ctx, [], rules, "actor")
        said.append((got, verdict, _collateral_on_changes(loop, [], loop_rules, "actor")))
    return said


def test_a_steps_keyed_rows_are_admitted_together_and_a_stranger_among_them_is_not(world):
    rules = [
        AllowedChange(table="tickets", fields=("status",), keys=("ENG-3", "ENG-4")),  # read ahead by key
        AllowedChange(table="ticket_status_changes", ops=("insert",), keys=("ENG-3", "ENG-4")),  # by its ticket
        AllowedChange(table="tickets", fields=("title",)),
    ]
    steps: list[list[Callable[[], Any]]] = [
        [lambda: _status(world, "ENG-3", "in_progress")],  # learned: the loop judges each shape once
        [lambda: _status(world, "ENG-4", "in_progress")],  # both rows by the rules' keys: one pass, LATER
        [lambda: setattr(world.ticket("ENG-2"), "title", "Two"), lambda: _status(world, "ENG-3", "done")],
        [lambda: _status(world, "ENG-5", "in_progress")],  # a stranger's two rows: violations, from the loop
        [lambda: _status(world, "ENG-4", "done")],  # admitted again; the score stays 0
    ]
    said = _steps(world, rules, steps)
    assert [got is LATER for got, _, _ in said] == [True, True, True, False, True]
    assert [verdict for _, verdict, _ in said] == [loop for _, _, loop in said]
    fresh = _collateral(world.ctx(), rules, "actor")
    assert said[-1][1] == fresh
    assert fresh[0] == 0.0 and fresh[1].startswith("2 of 11 changes")


def test_the_pass_leaves_a_step_to_the_loop_untouched_at_its_first_row_outside_the_rules(world):
    """A rename noted by the pass before it gives up must not reach the loop's judgement of the rows before it."""
    rules = [
        AllowedChange(table="tickets", fields=("priority",), keys=("ENG-3",)),
        AllowedChange(table="tickets", fields=("key",)),  # renames: admitted without keys
    ]
    steps: list[list[Callable[[], Any]]] = [
        [lambda: setattr(world.ticket("ENG-4"), "key", "ENG-44")],  # learned: a rename's shape
        [lambda: setattr(world.ticket("ENG-5"), "priority", "high")],  # learned: the keyed shape (a violation)
        [
            lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # the keyed rule's row, named ahead
            lambda: setattr(world.ticket("ENG-3"), "key", "ENG-33"),  # renamed after: noted for later rows
            lambda: setattr(world.ticket("ENG-2"), "title", "Two"),  # no rule: the pass gives up here
        ],
        [lambda: setattr(world.ticket("ENG-33"), "priority", "low")],  # renamed: not the keyed rule's row now
    ]
    said = _steps(world, rules, steps)
    assert [verdict for _, verdict, _ in said] == [loop for _, _, loop in said]
    assert said[2][1][1].startswith("2 of 5 changes")  # the priority row before the rename is within the rules
    assert said[3][1][1].startswith("3 of 6 changes")  # the one after it is not


def test_a_keyed_rules_row_updated_within_its_columns_is_not_asked_until_a_rename_drops_it(
    world, evaluated, monkeypatch
):
    """``_quiet_rows``: progress skips the evaluator for a named row's update; a rename or delete is asked at once."""
    monkeypatch.setattr(collateral, "_SHAPES", {})  # no shape learned by another test's episode
    allowed = [
        {"table": "tickets", "fields": ["status", "sprint_id"], "keys": ["ENG-1", "ENG-3", "ENG-4"]},
        {"table": "tickets", "fields": ["key"]},  # renames: admitted without keys, yet never quiet
        {"table": "ticket_status_changes", "ops": ["insert"]},
    ]
    rubric = _rubric(("collateral", "no_collateral_changes", {"allowed": allowed}))

    def seen(live: Progress) -> tuple[int, bool]:
        return len(evaluated), 0 in live._lagging

    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-3"), "status", "in_progress"),  # a named row, its columns: not asked
        lambda: _status(world, "ENG-4", "done"),  # with its history row (a shape not learned yet): asked
        lambda: _status(world, "ENG-4", "in_progress"),  # both quiet now: not asked
        lambda: setattr(world.ticket("ENG-3"), "title", "Three"),  # a column no rule allows: asked, a violation
        lambda: setattr(world.ticket("ENG-2"), "key", "ENG-22"),  # a rename's shape, learned: asked
        lambda: setattr(world.ticket("ENG-5"), "key", "ENG-55"),  # a row no rule names: quiet by its shape
        lambda: setattr(world.ticket("ENG-1"), "key", "ENG-11"),  # a named row's rename: asked, and drops it
        lambda: setattr(world.ticket("ENG-11"), "status", "done"),  # no longer named: asked, a violation
        lambda: setattr(world.ticket("ENG-55"), "status", "todo"),  # never named: asked, a violation
    ]
    said = _play(world, rubric, edits, seen, evaluated)
    assert said == [
        (0, True),
        (1, True),
        (0, True),
        (1, False),
        (1, True),
        (0, True),
        (1, True),
        (1, False),
        (1, False),
    ]
