"""XML text helpers shared by the writers and readers: escaping, and ODF's whitespace elements.

ODF collapses runs of spaces and drops tabs and newlines in text, so they are written as ``<text:s text:c=.../>``,
``<text:tab/>`` and ``<text:line-break/>``, and read back the same way.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET  # noqa: S405 - only walks trees parsed by ziputil.parse_xml

TEXT_NS = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE_NS = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean(text: str) -> str:
    """``text`` without characters XML 1.0 cannot carry."""
    return _BAD.sub("", text)


def esc(text: str) -> str:
    """Escape for element content."""
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def attr(text: str) -> str:
    """Escape for a double-quoted attribute value (newlines and tabs kept as character references)."""
    return esc(text).replace('"', "&quot;").replace("\n", "&#10;").replace("\t", "&#9;").replace("\r", "&#13;")


def odf_text(text: str) -> str:
    """Inline ODF content for ``text``: spaces beyond the first become ``text:s``; tabs and newlines elements."""
    out: list[str] = []
    for part in re.split(r"(\n|\t| {2,}|^ | $)", clean(text)):
        if not part:
            continue
        if part == "\n":
            out.append("<text:line-break/>")
        elif part == "\t":
            out.append("<text:tab/>")
        elif set(part) == {" "}:  # only the space groups of the split are all spaces
            out.append(f'<text:s text:c="{len(part)}"/>')
        else:
            out.append(esc(part))
    return "".join(out)


def odf_read_text(elem: ET.Element, *, skip: tuple[str, ...] = ()) -> str:
    """The text of an ODF paragraph element: spans, links, ``text:s``, tabs and line breaks; ``skip`` tags dropped."""
    parts: list[str] = []

    def walk(e: ET.Element) -> None:
        if e.text:
            parts.append(e.text)
        for child in e:
            tag = child.tag
            if tag in skip:
                pass
            elif tag == f"{{{TEXT_NS}}}s":
                parts.append(" " * max(1, min(1000, int(child.get(f"{{{TEXT_NS}}}c", "1") or 1))))
            elif tag == f"{{{TEXT_NS}}}tab":
                parts.append("\t")
            elif tag == f"{{{TEXT_NS}}}line-break":
                parts.append("\n")
            elif tag == f"{{{OFFICE_NS}}}annotation" or tag == f"{{{OFFICE_NS}}}annotation-end":
                pass
            else:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(elem)
    return "".join(parts)
