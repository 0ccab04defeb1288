"""DOCX (Office Open XML word-processing) writing and reading for the ``TextDoc`` model.

The writer emits content types, relationships, ``word/document.xml`` (headings as paragraphs styled
``Heading1``-``Heading6``, line breaks as ``<w:br/>``, tabs as ``<w:tab/>``), a style sheet declaring those
heading styles with their outline level (so Word and LibreOffice show them as headings in the navigator), and
``word/comments.xml`` with each comment anchored to a paragraph by a comment range. No document properties
(wall-clock dates), so the bytes depend on the content only.

The reader maps paragraph styles to heading levels through ``styles.xml`` (style names ``heading N``, an
``outlineLvl``, or the ids ``HeadingN``/``Title``), takes runs, hyperlinks and insertions, skips deletions, and
reads tables' paragraphs in order.
"""

from __future__ import annotations

import re
from xml.etree import ElementTree as ET  # noqa: S405 - parsed through ziputil.parse_xml

from worlds.office.errors import CorruptFile, FileTooLarge, UnsupportedFormat
from worlds.office.model import Block, Comment, TextDoc
from worlds.office.xmltext import attr, esc
from worlds.office.ziputil import SafeZip, parse_xml, write_zip

MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
STRICT = "http://purl.oclc.org/ooxml/wordprocessingml/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


def _runs(text: str) -> str:
    out = []
    for i, line in enumerate(text.split("\n")):
        if i:
            out.append("<w:br/>")
        for j, chunk in enumerate(line.split("\t")):
            if j:
                out.append("<w:tab/>")
            if chunk:
                out.append(f'<w:t xml:space="preserve">{esc(chunk)}</w:t>')
    return f"<w:r>{''.join(out)}</w:r>" if out else ""


def _styles() -> str:
    heads = "".join(
        f'<w:style w:type="paragraph" w:styleId="Heading{n}"><w:name w:val="heading {n}"/>'
        f'<w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/><w:pPr><w:keepNext/>'
        f'<w:outlineLvl w:val="{n - 1}"/></w:pPr><w:rPr><w:b/><w:sz w:val="{max(22, 36 - 3 * n)}"/></w:rPr>'
        "</w:style>"
        for n in range(1, 7)
    )
    return (
        f'{_HEAD}<w:styles xmlns:w="{W}"><w:style w:type="paragraph" w:default="1" w:styleId="Normal">'
        f'<w:name w:val="Normal"/><w:qFormat/></w:style>{heads}</w:styles>'
    )


def write_docx(doc: TextDoc) -> bytes:
    """The document as DOCX bytes (deterministic)."""
    by_anchor: dict[int, list[int]] = {}
    for i, c in enumerate(doc.comments):
        by_anchor.setdefault(c.anchor, []).append(i)
    paras = []
    for i, block in enumerate(doc.blocks):
        style = f'<w:pPr><w:pStyle w:val="Heading{block.level}"/></w:pPr>' if block.level else ""
        ids = by_anchor.get(i, [])
        start = "".join(f'<w:commentRangeStart w:id="{k}"/>' for k in ids)
        end = "".join(f'<w:commentRangeEnd w:id="{k}"/><w:r><w:commentReference w:id="{k}"/></w:r>' for k in ids)
        paras.append(f"<w:p>{style}{start}{_runs(block.text)}{end}</w:p>")
    orphans = [k for a, ks in by_anchor.items() if not 0 <= a < len(doc.blocks) for k in ks]
    if orphans:  # comments anchored nowhere (an empty document): on an empty paragraph
        refs = "".join(f'<w:r><w:commentReference w:id="{k}"/></w:r>' for k in orphans)
        paras.append(f"<w:p>{refs}</w:p>")
    document = (
        f'{_HEAD}<w:document xmlns:w="{W}" xmlns:r="{REL}"><w:body>{"".join(paras)}'
        '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" '
        'w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>'
    )
    comments = "".join(
        f'<w:comment w:id="{k}" w:author="{attr(c.author)}" w:date="{attr(c.date)}" w:initials="{attr(c.initials)}">'
        + "".join(f"<w:p>{_runs(line)}</w:p>" for line in c.text.split("\n\n"))
        + "</w:comment>"
        for k, c in enumerate(doc.comments)
    )
    ct_comments = (
        '<Override PartName="/word/comments.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.comments+xml"/>'
    )
    content_types = (
        f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        '<Override PartName="/word/styles.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>'
        f"{ct_comments if doc.comments else ''}</Types>"
    )
    rels = f'<Relationship Id="rId1" Type="{REL}/styles" Target="styles.xml"/>'
    if doc.comments:
        rels += f'<Relationship Id="rId2" Type="{REL}/comments" Target="comments.xml"/>'
    members: list[tuple[str, bytes, bool]] = [
        ("[Content_Types].xml", content_types.encode(), True),
        (
            "_rels/.rels",
            (
                f'{_HEAD}<Relationships xmlns="{PKG_REL}"><Relationship Id="rId1" Type="{REL}/officeDocument" '
                'Target="word/document.xml"/></Relationships>'
            ).encode(),
            True,
        ),
        ("word/document.xml", document.encode(), True),
        (
            "word/_rels/document.xml.rels",
            f'{_HEAD}<Relationships xmlns="{PKG_REL}">{rels}</Relationships>'.encode(),
            True,
        ),
        ("word/styles.xml", _styles().encode(), True),
    ]
    if doc.comments:
        members.append(
            ("word/comments.xml", f'{_HEAD}<w:comments xmlns:w="{W}">{comments}</w:comments>'.encode(), True)
        )
    return write_zip(members)


# -- reading ----------------------------------------------------------------------------------------------------


def _w(tag: str) -> str:
    return f"{{{W}}}{tag}"


def _heading_styles(z: SafeZip) -> dict[str, int]:
    levels: dict[str, int] = {}
    data = z.read("word/styles.xml", required=False)
    if data is None:
        return levels
    for style in parse_xml(data, "styles.xml").findall(_w("style")):
        sid = style.get(_w("styleId"), "")
        name_el = style.find(_w("name"))
        name = (name_el.get(_w("val"), "") if name_el is not None else "").lower()
        outline = style.find(f"{_w('pPr')}/{_w('outlineLvl')}")
        m = re.fullmatch(r"heading ([1-9])", name)
        if m:
            levels[sid] = int(m.group(1))
        elif name == "title":
            levels[sid] = 1
        elif outline is not None and (outline.get(_w("val")) or "9").isdigit() and int(outline.get(_w("val"), "9")) < 9:
            levels[sid] = int(outline.get(_w("val"), "0")) + 1
    return levels


def _para_text(p: ET.Element) -> str:
    parts: list[str] = []

    def walk(e: ET.Element) -> None:
        for child in e:
            tag = child.tag
            if tag == _w("t"):
                parts.append(child.text or "")
            elif tag == _w("tab"):
                parts.append("\t")
            elif tag in (_w("br"), _w("cr")):
                parts.append("\n")
            elif tag in (_w("del"), _w("pPr"), _w("rPr"), _w("commentReference")):
                continue
            else:
                walk(child)

    walk(p)
    return "".join(parts)


def _paragraphs(body: ET.Element) -> list[ET.Element]:
    out = []
    for child in body:
        if child.tag == _w("p"):
            out.append(child)
        elif child.tag in (_w("tbl"), _w("tr"), _w("tc"), _w("sdt"), _w("sdtContent")):
            out += _paragraphs(child)
    return out


def read_docx(data: bytes, max_chars: int) -> TextDoc:
    """Read DOCX bytes into a TextDoc.

    Raises:
        CorruptFile: not a DOCX package, or broken parts.
        UnsupportedFormat: Strict OOXML.
        FileTooLarge: more than ``max_chars`` characters of text.
    """
    z = SafeZip(data)
    root = parse_xml(z.read("word/document.xml") or b"", "word/document.xml")
    if root.tag == f"{{{STRICT}}}document":
        raise UnsupportedFormat("Strict Office Open XML documents are not supported; save as Word 2007-365")
    body = root.find(_w("body"))
    if root.tag != _w("document") or body is None:
        raise CorruptFile(f"expected a DOCX document body; found {root.tag[:80]!r}")
    levels = _heading_styles(z)
    doc = TextDoc()
    anchors: dict[str, int] = {}
    size = 0
    for p in _paragraphs(body):
        style = p.find(f"{_w('pPr')}/{_w('pStyle')}")
        sid = style.get(_w("val"), "") if style is not None else ""
        outline = p.find(f"{_w('pPr')}/{_w('outlineLvl')}")
        level = levels.get(sid) or (int(m.group(1)) if (m := re.fullmatch(r"Heading([1-9])", sid)) else 0)
        if not level and outline is not None and (outline.get(_w("val")) or "").isdigit():
            level = int(outline.get(_w("val"), "9")) + 1 if int(outline.get(_w("val"), "9")) < 9 else 0
        text = _para_text(p)
        index = len(doc.blocks)
        for marker in (*p.iter(_w("commentRangeStart")), *p.iter(_w("commentReference"))):
            anchors.setdefault(marker.get(_w("id"), ""), index)
        has_comment = any(True for _ in p.iter(_w("commentReference")))
        if not text.strip() and not level and not has_comment:
            continue
        size += len(text)
        if size > max_chars:
            raise FileTooLarge(f"the document has more than {max_chars} characters")
        doc.blocks.append(Block(level=min(level, 6), text=text))
    cdata = z.read("word/comments.xml", required=False)
    if cdata is not None:
        for c in parse_xml(cdata, "word/comments.xml").findall(_w("comment")):
            cid = c.get(_w("id"), "")
            text = "\n\n".join(_para_text(p) for p in c.findall(_w("p")))
            anchor = anchors.get(cid, 0)
            doc.comments.append(
                Comment(
                    author=c.get(_w("author"), ""),
                    date=c.get(_w("date"), ""),
                    text=text,
                    anchor=min(anchor, max(0, len(doc.blocks) - 1)),
                    initials=c.get(_w("initials"), ""),
                )
            )
    return doc
