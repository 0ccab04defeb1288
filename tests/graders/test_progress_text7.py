"""The text checks' paths of branch text7, each held to the code it stands in for.

A document's parse read in C (``text_match._plain_sections``' block-list path) must give the sections the
office reader gives; the other paths are held to the check functions' own verdicts on the same parse.
"""

from __future__ import annotations

from typing import Any

import pytest

from graders.text_match import _plain_sections
from worlds.office.model import text_from_json

BLOCKS: list[list[list[Any]]] = [
    [],
    [[0, "only a body"], [0, "two lines"]],
    [[1, "  Title  "], [0, "a"], [2, "Sub"], [0, "b"], [0, "c"]],
    [[0, "before"], [1, "A"], [1, "B"], [0, "under B"], [1, "Last"]],
    [[3, "Deep"], [0, ""], [0, "x"]],
    [[True, "a bool level"], [0, "x"]],  # not an int: the block loop's reading
    [[1.0, "a float level"], [0, "x"]],
    [["1", "a string level"], [0, "x"]],
    [[-1, "negative"], [1, "H"], [0, "x"]],
    [[1, "A"], [0, "x"], [1.0, "B"], [0, 5]],  # a float level and a number for text after plain blocks
]


@pytest.mark.parametrize("blocks", BLOCKS, ids=range(len(BLOCKS)))
def test_plain_sections__reads_blocks_as_the_office_reader_does(blocks):
    plain = _plain_sections({"blocks": blocks})
    assert plain == text_from_json({"blocks": blocks}).sections()


@pytest.mark.parametrize("blocks", [[[1, "A", "extra"]], [[1]], [[1, "A"], [0]], [[0, "x"], [1.0, "B"], ["x", "y"]]])
def test_plain_sections__leaves_a_block_it_cannot_read_to_the_office_reader(blocks):
    assert _plain_sections({"blocks": blocks}) is None
