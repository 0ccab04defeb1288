"""A text document's stored blocks read into its sections, as the office reader reads them, for the text checks.

``text_from_json(content).sections()`` builds a ``Block`` per paragraph; a write's parse is most of what a
report's checks cost at that step, so ``graders.checks_docs`` reads the plain stored form here first
(``_plain_sections``) and leaves anything else to that reader. Moved out of ``graders.text_match`` (which
imports it back) to keep that module under the line limit. Pure data: no database, no context.
"""

from __future__ import annotations

from typing import Any


def _plain_sections(content: dict[str, Any]) -> list[tuple[str, str]] | None:
    """``text_from_json(content).sections()`` read straight from the blocks, or None to take that path.

    A write's parse is most of what a report's checks cost at that step, and a ``Block`` per paragraph is
    most of the parse. Only the plain stored form is read here (blocks, no comments); anything else, or a
    block that does not read as (level, text), goes through ``text_from_json`` (which says what is wrong).
    """
    blocks = content.get("blocks")
    if type(blocks) is not list or content.get("comments"):
        return None
    out: list[tuple[str, list[str]]] = [("", [])]
    body = out[0][1]
    try:
        for level, text in blocks:
            # an int level and a str text, as the office writes them, read as they are; else as ``int``/``str``
            # read them (a float level, a number for text)
            if type(level) is not int or type(text) is not str:
                return _read_blocks(blocks)
            if level > 0:
                body = []
                out.append((text.strip(), body))
            else:
                body.append(text)
    except Exception:  # a malformed block: the full reader raises what the check reports
        return None
    return [(h, "\n".join(body)) for h, body in out]


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
