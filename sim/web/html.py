"""HTML for the intranet: escaping, the page layout, forms with labels, and JSON values as tables.

Why hand-built strings and not a template engine: every page is a few tables and forms, and a handful of small
functions that escape every value they are given (``html.escape`` with quotes) keep the whole surface in one
file a reviewer can read. Nothing is ever inserted unescaped except HTML these functions built.

Accessibility is part of the contract, since agents read pages as an accessibility tree: landmarks (banner,
navigation, main, contentinfo), one ``h1`` per page, tables with captions and header cells, and every form
control with a ``<label for>`` (so its accessible name is its label). No script, no external asset, no
animation: the CSS is inline and static.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1b1b;background:#fff;line-height:1.4}
header,main,footer{padding:0 1.5rem}
header{border-bottom:2px solid #1f5fa8;display:flex;justify-content:space-between;align-items:baseline}
header p{margin:.6rem 0}
nav{background:#f0f3f7;padding:.3rem 1.5rem}nav ul{list-style:none;margin:0;padding:0;display:flex;gap:1.2rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:1.5rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{border:1px solid #c8c8c8;padding:.2rem .4rem;vertical-align:top;text-align:left}
th{background:#f0f3f7}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}dt{font-weight:600}dd{margin:0}
form{margin:.5rem 0 1rem;padding:.5rem;border:1px solid #ddd;max-width:48rem}
form.inline{display:inline-block;margin:.2rem .5rem .2rem 0}
label{font-weight:600;margin-right:.3rem}
input,select,textarea{font:inherit;margin:.15rem .6rem .15rem 0}textarea{width:95%;min-height:4rem}
.msg{margin:.2rem 0 .4rem}.msg p{margin:0 0 .3rem}
article{border-bottom:1px solid #eee;padding:.3rem 0}
.alert{border:2px solid #b3261e;background:#fdecea;padding:.4rem .8rem;max-width:48rem}
.ok{border:2px solid #176b2c;background:#e8f5e9;padding:.4rem .8rem;max-width:48rem}
pre{white-space:pre-wrap;word-break:break-word;max-width:60rem;font-size:.85rem;background:#f7f7f7;padding:.4rem}
"""

NAV: tuple[tuple[str, str, str], ...] = (
    ("Home", "/", ""),
    ("Chat", "/chat", "chat"),
    ("Tickets", "/tickets", "tickets"),
    ("Mail", "/mail", "mail"),
    ("Calendar", "/calendar", "calendar"),
    ("People", "/people", "directory"),
    ("Documents", "/docs", "docs"),
    ("Repositories", "/repos", "git"),
)
"""(label, path, app): the navigation; an app the episode does not give the agent is left out."""


def e(value: Any) -> str:
    """``value`` as text safe in element content and in quoted attributes."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, /, **query: Any) -> str:
    """``path`` with the non-None ``query`` items, values percent-encoded (escape again when put in HTML)."""
    items = {k: "" if v is None else str(v) for k, v in query.items() if v is not None}
    return f"{path}?{urlencode(items)}" if items else path


def seg(value: Any) -> str:
    """One path segment, percent-encoded (slashes too)."""
    return quote(str(value), safe="")


def link(href: str, text: Any) -> str:
    """An anchor; ``href`` is built by ``url``/``seg`` and escaped here."""
    return f'<a href="{e(href)}">{e(text)}</a>'


def message(text: Any) -> str:
    """A chat, mail or ticket text: escaped, one paragraph per line (an accessibility tree keeps lines apart)."""
    lines = [line for line in ("" if text is None else str(text)).splitlines() if line.strip()]
    return '<div class="msg">' + "".join(f"<p>{e(line)}</p>" for line in lines) + "</div>"


def dl(items: Mapping[str, Any]) -> str:
    """A definition list of label -> already-built HTML."""
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in items.items()) + "</dl>"


def table(caption: str, head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table with a caption (its accessible name) and column headers; cells are already-built HTML."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cols = "".join(f'<th scope="col">{e(h)}</th>' for h in head)
    return f"<table><caption>{e(caption)}</caption><thead><tr>{cols}</tr></thead><tbody>{body}</tbody></table>"


def value(v: Any) -> str:
    """Any JSON value as HTML: objects as definition lists, lists of objects as tables, the rest as text."""
    if isinstance(v, Mapping):
        return dl({str(k): value(x) for k, x in v.items()}) if v else "<span>(none)</span>"
    if isinstance(v, list):
        if v and all(isinstance(x, Mapping) for x in v):
            keys = sorted({str(k) for x in v for k in x})
            return table(f"{len(v)} items", keys, [[value(x.get(k)) for k in keys] for x in v])
        return e(", ".join(_scalar(x) for x in v)) if v else "<span>(none)</span>"
    return e(_scalar(v))


def _scalar(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (Mapping, list)):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)
    return str(v)


@dataclass(frozen=True, kw_only=True)
class Field:
    """One labelled control of a form.

    ``kind`` is ``text``, ``textarea``, ``select``, ``number``, ``checkbox`` or ``hidden``; ``options`` are
    (value, label) pairs of a select.
    """

    name: str
    label: str = ""
    kind: str = "text"
    value: Any = None
    options: tuple[tuple[str, str], ...] = ()
    required: bool = False


@dataclass(frozen=True, kw_only=True)
class Form:
    """A form: POST to ``/do/<tool>`` (a step of the episode), or GET to a page (a search).

    ``ident`` prefixes the control ids, so several forms on one page keep their ids (and labels) unique.
    """

    ident: str
    button: str
    fields: tuple[Field, ...] = ()
    tool: str | None = None
    action: str = ""
    back: str = "/"
    label: str = ""
    inline: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    def html(self) -> str:
        """The form's HTML: ``method=post`` with the tool and return path for a step, ``get`` for a search."""
        if self.tool is not None:
            head = f'<form method="post" action="{e("/do/" + self.tool)}"'
            hidden = f'<input type="hidden" name="_next" value="{e(self.back)}">'
        else:
            head, hidden = f'<form method="get" action="{e(self.action)}"', ""
        name = self.label or self.button
        head += f' aria-label="{e(name)}"' + (' class="inline"' if self.inline else "") + ">"
        return (
            head
            + hidden
            + "".join(self._control(f) for f in self.fields)
            + f'<button type="submit">{e(self.button)}</button></form>'
        )

    def _control(self, f: Field) -> str:
        ident = f"{self.ident}-{f.name}"
        need = " required" if f.required else ""
        if f.kind == "hidden":
            return f'<input type="hidden" name="{e(f.name)}" value="{e(f.value)}">'
        lab = f'<label for="{e(ident)}">{e(f.label)}</label>'
        attrs = f'id="{e(ident)}" name="{e(f.name)}"{need}'
        if f.kind == "textarea":
            return f"{lab}<br><textarea {attrs}>{e(f.value)}</textarea><br>"
        if f.kind == "select":
            opts = "".join(
                f'<option value="{e(v)}"{" selected" if str(f.value) == v else ""}>{e(text)}</option>'
                for v, text in f.options
            )
            return f"{lab}<select {attrs}>{opts}</select>"
        if f.kind == "checkbox":
            checked = " checked" if f.value else ""
            return f'<input type="checkbox" {attrs} value="true"{checked}>{lab}'
        kind = "number" if f.kind == "number" else "text"
        return f'{lab}<input type="{kind}" {attrs} value="{e(f.value)}">'


def choices(values: Iterable[str], *, anything: str | None = None) -> tuple[tuple[str, str], ...]:
    """Select options whose labels are their values, optionally led by an empty "any" choice."""
    head = (("", anything),) if anything is not None else ()
    return head + tuple((v, v) for v in values)


def page(
    title: str,
    body: str,
    *,
    user: str,
    apps: frozenset[str],
    status: str,
    alert: str | None = None,
    ok: str | None = None,
) -> str:
    """A whole page: banner (who is signed in), app navigation, main content, footer (the simulated clock)."""
    nav = "".join(f"<li>{link(path, label)}</li>" for label, path, app in NAV if not app or app in apps)
    note = ""
    if alert:
        note = f'<div class="alert" role="alert">{e(alert)}</div>'
    elif ok:
        note = f'<div class="ok" role="status">{e(ok)}</div>'
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)} - companysim intranet</title><style>{CSS}</style></head><body>"
        f"<header><p><strong>companysim intranet</strong></p><p>Signed in as @{e(user)}</p></header>"
        f'<nav aria-label="Apps"><ul>{nav}</ul></nav>'
        f"<main><h1>{e(title)}</h1>{note}{body}</main>"
        f"<footer><p>{e(status)}</p></footer></body></html>"
    )
