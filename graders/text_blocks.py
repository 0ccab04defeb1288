"""A text document's stored blocks read into its sections, as the office reader reads them, for the text checks.

``text_from_json(content).sections()`` builds a ``Block`` per paragraph; a write's parse is most of what a
report's checks cost at that step, so ``graders.checks_docs`` reads the plain stored form here first
(``_plain_sections``) and leaves anything else to that reader. Apart from ``graders.text_match`` (which
imports these) to keep each module short. Pure data: no database, no context.
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter
from typing import Any


def _plain_sections(content: dict[str, Any]) -> list[tuple[str, str]] | None:
    """``text_from_json(content).sections()`` read straight from the blocks, or None to take that path.

    A write's parse is most of what a report's checks cost at that step, and a ``Block`` per paragraph is
    most of the parse. Only the plain stored form is read here (blocks, each a ``[level, text]`` list, no
    comments); anything else goes through ``text_from_json`` (which says what is wrong). The blocks are read
    by C calls over the list (their types and lengths, levels and texts, which levels open a section), and a
    Python step is taken per section, not per block: a roadmap is 30 to 40 blocks in eight sections.
    """
    blocks = content.get("blocks")
    if type(blocks) is not list or content.get("comments"):
        return None
    if not _LIST.issuperset(map(type, blocks)) or not _PAIR.issuperset(map(len, blocks)):
        return None  # a block that is not a [level, text] list: the full reader says what is wrong
    levels = list(map(_HEAD, blocks))
    texts = list(map(_TEXT, blocks))
    if not _INT.issuperset(map(type, levels)) or not _STR.issuperset(map(type, texts)):
        return _read_blocks(blocks)  # an int level and a str text are read as they are; else as int/str read them
    out: list[tuple[str, str]] = []
    heading, start = "", 0
    for at in compress(range(len(levels)), map(_OPENS, levels)):  # the blocks that open a section
        out.append((heading, "\n".join(texts[start:at])))
        heading, start = texts[at].strip(), at + 1
    out.append((heading, "\n".join(texts[start:])))
    return out


_LIST, _PAIR, _INT, _STR = frozenset({list}), frozenset({2}), frozenset({int}), frozenset({str})
_OPENS = (0).__lt__
"""Whether a block's (int) level opens a section: a heading's is above 0."""
_HEAD, _TEXT = itemgetter(0), itemgetter(1)
"""A block's level and text (a section's heading and text): read by ``map`` in C."""


def _read_blocks(blocks: list[Any]) -> list[tuple[str, str]] | None:
    """``_plain_sections`` of blocks whose level or text is not an int or a str: each converted as it is read."""
    out: list[tuple[str, list[str]]] = [("", [])]
    try:
        for level, text in blocks:
            if int(level) > 0:
                out.append((str(text).strip(), []))
            else:
                out[-1][1].append(str(text))
    except Exception:  # a malformed block: the full reader raises what the check reports
        return None
    return [(h, "\n".join(body)) for h, body in out]
