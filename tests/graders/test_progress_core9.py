"""The ninth pass at the framework around the evaluators, held to what the general paths give.

Each shortcut taken on the per-step path (a step's rows read in the one shape the episode writes them, the
``on_step`` groups a step asks, a verdict stored or a held check's hold kept) is compared here with what the
path it shortcuts gives, so a shortcut that reads a row, a group or a verdict otherwise fails.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from graders.changes import ChangeRow


def _logged(**over: Any) -> dict[str, Any]:
    """A step's row in ``sim.tasks.log_since``'s shape: exactly its eight keys."""
    row: dict[str, Any] = {
        "seq": 7,
        "table": "tickets",
        "key": "[17]",
        "op": "update",
        "changes": {"status": ["open", "done"]},
        "actor": 3,
        "at": "2026-01-05T09:00:00",
        "tag": "tool",
    }
    return row | over


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"key": '["ENG-3"]'},
        {"key": [4, "a"]},
        {"key": (5,)},
        {"key": 9},
        {"seq": "12"},
        {"changes": None},
        {"actor": None, "tag": None, "at": None},
        {"at": dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)},
    ],
)
def test_a_logged_rows_subscript_path_reads_what_the_general_path_reads(over):
    """``log_since``'s eight keys read by subscript give the row the general path gives (a ninth key takes it)."""
    row = _logged(**over)
    fast, general = ChangeRow.of(row), ChangeRow.of(row | {"why": "a ninth key: the general path"})
    assert fast == general and [type(v) for v in fast] == [type(v) for v in general]
    assert [type(v) for v in fast.key] == [type(v) for v in general.key]


def test_eight_keys_of_another_shape_are_read_as_any_dict_is():
    """``actor_id`` and ``table_name`` in place of two of the eight: not the subscript path, and read right."""
    row = _logged()
    del row["actor"], row["table"]
    row |= {"actor_id": 5, "table_name": "posts"}
    got = ChangeRow.of(row)
    assert (got.table, got.actor_id, got.key) == ("posts", 5, (17,))
