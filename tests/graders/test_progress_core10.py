"""The tenth pass at the framework around the evaluators, held to what the general paths give.

Each shortcut here (a logged key of one plain string read without the JSON parser, a held check woken only by
an insert carrying its unique values) is compared with what the path it shortcuts gives, so a shortcut that
reads a key or skips a check otherwise fails.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from graders import changes
from graders.changes import ChangeRow


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
    """The sliced key equals ``json.loads``' (value and type), and a plain string key is not cached."""
    changes._KEYS.clear()
    got = ChangeRow.of(_logged(key)).key
    want = tuple(json.loads(key))
    assert got == want and [type(v) for v in got] == [type(v) for v in want]
    plain = key.startswith('["') and key.count('"') == 2 and "\\" not in key
    assert (key in changes._KEYS) is not plain  # a content hash is written once: not kept


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
