"""ODT (OpenDocument text) writing and reading for the ``TextDoc`` model.

The writer emits ``mimetype`` (stored, first), a manifest, ``styles.xml`` declaring the six heading styles,
and ``content.xml`` with headings as ``text:h`` with an outline level and paragraphs as ``text:p``; each comment
is an ``office:annotation`` (author, date, text) at the start of the block it is anchored to. No ``meta.xml``
(wall-clock dates), so the bytes depend on the content only.

The reader takes ``text:h`` (outline level) and ``text:p`` in document order, including those inside lists,
sections and tables, with spans, links, spaces, tabs and line breaks; annotations become comments anchored at
the block that holds them.
"""

from __future__ import annotations

from xml.etree import ElementTree as ET  # noqa: S405 - parsed through ziputil.parse_xml

from worlds.office.errors import CorruptFile, FileTooLarge
from worlds.office.model import Block, Comment, TextDoc
from worlds.office.ods import manifest
from worlds.office.xmltext import OFFICE_NS, TEXT_NS, esc, odf_read_text, odf_text
from worlds.office.ziputil import SafeZip, parse_xml, write_zip

MIME = "application/vnd.oasis.opendocument.text"
DC = "http://purl.org/dc/elements/1.1/"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_NS = (
    f'xmlns:office="{OFFICE_NS}" xmlns:text="{TEXT_NS}" xmlns:dc="{DC}" xmlns:style="{STYLE}" xmlns:fo="{FO}" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
)
_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def _styles() -> str:
    heads = "".join(
        f'<style:style style:name="Heading_20_{n}" style:display-name="Heading {n}" style:family="paragraph" '
        f'style:parent-style-name="Heading" style:next-style-name="Text_20_body" style:default-outline-level="{n}" '
        f'style:class="text"><style:text-properties fo:font-size="{max(11, 20 - 2 * n)}pt" fo:font-weight="bold"/>'
        "</style:style>"
        for n in range(1, 7)
    )
    return (
        f'{_HEAD}<office:document-styles {_NS} office:version="1.3"><office:styles>'
        '<style:style style:name="Standard" style:family="paragraph" style:class="text"/>'
        '<style:style style:name="Heading" style:family="paragraph" style:parent-style-name="Standard" '
        'style:next-style-name="Text_20_body" style:class="text"/>'
        '<style:style style:name="Text_20_body" style:display-name="Text body" style:family="paragraph" '
        'style:parent-style-name="Standard" style:class="text"/>'
        f"{heads}</office:styles></office:document-styles>"
    )


def _annotation(c: Comment) -> str:
    paras = "".join(f"<text:p>{odf_text(p)}</text:p>" for p in c.text.split("\n\n"))
    return (
        f"<office:annotation><dc:creator>{esc(c.author)}</dc:creator><dc:date>{esc(c.date)}</dc:date>"
        f"{paras}</office:annotation>"
    )


def write_odt(doc: TextDoc) -> bytes:
    """The document as ODT bytes (deterministic)."""
    by_anchor: dict[int, list[Comment]] = {}
    for c in doc.comments:
        by_anchor.setdefault(min(max(c.anchor, 0), max(0, len(doc.blocks) - 1)), []).append(c)
    out = []
    blocks = doc.blocks or ([Block(level=0, text="")] if doc.comments else [])
    for i, block in enumerate(blocks):
        notes = "".join(_annotation(c) for c in by_anchor.get(i, []))
        if block.level:
            out.append(
                f'<text:h text:style-name="Heading_20_{block.level}" text:outline-level="{block.level}">'
                f"{notes}{odf_text(block.text)}</text:h>"
            )
        else:
            out.append(f'<text:p text:style-name="Text_20_body">{notes}{odf_text(block.text)}</text:p>')
    content = (
        f'{_HEAD}<office:document-content {_NS} office:version="1.3"><office:body><office:text>'
        f"{''.join(out)}</office:text></office:body></office:document-content>"
    )
    return write_zip(
        [
            ("mimetype", MIME.encode(), False),
            ("content.xml", content.encode(), True),
            ("styles.xml", _styles().encode(), True),
            ("META-INF/manifest.xml", manifest(MIME, ["content.xml", "styles.xml"]), True),
        ]
    )


def _blocks(parent: ET.Element) -> list[ET.Element]:
    out = []
    for child in parent:
        if child.tag in (f"{{{TEXT_NS}}}h", f"{{{TEXT_NS}}}p"):
            out.append(child)
        elif child.tag.split("}")[-1] in (
            "list", "list-item", "list-header", "section", "table", "table-row", "table-cell",
            "table-header-rows", "table-rows", "table-row-group",
        ):  # fmt: skip
            out += _blocks(child)
    return out


def read_odt(data: bytes, max_chars: int) -> TextDoc:
    """Read ODT bytes into a TextDoc.

    Raises:
        CorruptFile: not an ODT package, or broken parts.
        FileTooLarge: more than ``max_chars`` characters of text.
    """
    z = SafeZip(data)
    mime = (z.read("mimetype", required=False) or MIME.encode()).strip()
    if mime != MIME.encode():
        raise CorruptFile(f"expected an ODT text document; the file says it is {mime[:80]!r}")
    root = parse_xml(z.read("content.xml") or b"", "content.xml")
    body = root.find(f"{{{OFFICE_NS}}}body/{{{OFFICE_NS}}}text")
    if body is None:
        raise CorruptFile("content.xml has no text body")
    doc = TextDoc()
    size = 0
    annotation = f"{{{OFFICE_NS}}}annotation"
    for el in _blocks(body):
        level = int(el.get(f"{{{TEXT_NS}}}outline-level", "1")) if el.tag == f"{{{TEXT_NS}}}h" else 0
        text = odf_read_text(el)
        notes = list(el.iter(annotation))
        if not text.strip() and not level and not notes:
            continue
        size += len(text)
        if size > max_chars:
            raise FileTooLarge(f"the document has more than {max_chars} characters")
        for a in notes:
            creator = a.find(f"{{{DC}}}creator")
            date = a.find(f"{{{DC}}}date")
            doc.comments.append(
                Comment(
                    author=(creator.text or "") if creator is not None else "",
                    date=(date.text or "") if date is not None else "",
                    text="\n\n".join(odf_read_text(p) for p in a.findall(f"{{{TEXT_NS}}}p")),
                    anchor=len(doc.blocks),
                )
            )
        doc.blocks.append(Block(level=max(0, min(level, 6)), text=text))
    return doc
