"""State checks on documents: a fact in a section (or none), a share; and how a check finds its document.

Documents are named by path as the tools name them (``Shared/Finance/Budget Q2 2026.xlsx``); a document the
agent created without an extension matches a path that has one (the tools store the name as typed and pick
ODF). The checks read the document's cached model (``documents.content``, tagged with the hash of the bytes it
came from) and parse the bytes only when the tag is stale, so a check costs one indexed lookup and one JSON
parse per document per grade (memoised in ``ctx.memo``). The spreadsheet checks are in ``graders.checks_sheets``.

Each check declares ``reads`` (documents and their shares) and ``rows`` (the one document row, once it
exists), so the per-step progress score re-runs it only after a step that changed that document.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing, usernames
from graders.share_step import share_checks
from graders.text_match import (
    Sections,
    Verdict,
    _plain_sections,
    absent_verdict,
    contains_verdict,
    lacks_verdict,
)
from graders.text_match import _matching as _matching  # what the tests of the prefilter import from here
from graders.text_match import _may_match as _may_match
from graders.text_match import _needles as _needles
from graders.text_match import _prefix as _prefix
from graders.text_step import shares_decided, text_step
from worlds.blobs import read_blob
from worlds.office import files
from worlds.office.model import (
    text_from_json,
)
from worlds.rawsql import Sql

_EXTENSIONS = (".odt", ".docx", ".ods", ".xlsx")
_DOC_ROW = (
    "SELECT id, name, kind, mime_type, content, blob_sha256, version, owner_id FROM documents WHERE folder_id = ?"
)
_PERMISSION_RANK = {"view": 1, "comment": 2, "edit": 3}


def _folder_id(sql: Sql, parts: list[str]) -> int | None:
    current: int | None = None
    for name in parts:
        cond = "parent_id IS NULL" if current is None else "parent_id = ?"
        args: tuple[Any, ...] = () if current is None else (current,)
        rows = sql.all(f"SELECT id, name FROM doc_folders WHERE {cond} ORDER BY id", args)  # noqa: S608
        found = [r[0] for r in rows if str(r[1]).casefold() == name.casefold()]
        if not found:
            return None
        current = int(found[0])
    return current


def _stem(name: str) -> str:
    low = name.casefold()
    return next((low[: -len(e)] for e in _EXTENSIONS if low.endswith(e)), low)


def _rank(name: Any, wanted: str) -> int:
    """How a document named ``name`` answers a path ending in ``wanted``: 0 exactly, 1 without its extension, 2 not."""
    text = str(name)
    if text.casefold() == wanted.casefold():
        return 0
    return 1 if _stem(text) == _stem(wanted) else 2


_COLUMN_AT = {
    "id": 0,
    "name": 1,
    "kind": 2,
    "mime_type": 3,
    "content": 4,
    "blob_sha256": 5,
    "version": 6,
    "owner_id": 7,
}
"""Where each column of ``_DOC_ROW`` sits in a document row tuple (what a logged insert or update is folded into)."""
_COLUMNS = frozenset(_COLUMN_AT)
_ROW_OF = operator.itemgetter(*_COLUMN_AT)
"""A logged insert's image as a document row tuple, in ``_DOC_ROW``'s order (one C call: a new document's fold)."""


def _document(ctx: GradingContext, path: str, *, query: bool = True) -> tuple[Any, ...] | None:
    """The document row at ``path`` (exact name first, then the same name without an extension), or None.

    Looked up once per episode: the answer is kept in ``ctx.lasting`` with how much of the change log it has
    seen, and each later call folds in the newer ``documents`` rows (a document created in the folder, a write
    to the one found) from their after-images, so a step that writes or shares the document costs no query. A
    change the fold cannot settle (a rename or move, a deletion of the row found, a new folder) looks it up
    again (``query=False``: returns ``_UNKNOWN`` instead, for an evaluator that must not query).
    """
    key = ("document", path)
    if key in ctx.memo:
        found: tuple[Any, ...] | None = ctx.memo[key]
        return found
    docs, folders = ctx.changed_rows("documents"), ctx.changed_rows("doc_folders")
    state: Any = ctx.lasting.get(("doc_lookup", path))
    row: Any = _UNKNOWN
    if state is not None and state[3] == len(folders):
        row = _fold_document(state, docs)
    if row is _UNKNOWN:
        if not query:
            return row  # type: ignore[no-any-return]
        parts = [p.strip() for p in path.strip("/").split("/")]
        sql = Sql.of(ctx.session)
        folder = _folder_id(sql, parts[:-1]) if len(parts) > 1 else None
        row = None
        if folder is not None:
            best = 2  # the first row by id named exactly, else the first named so without its extension
            for r in sql.all(f"{_DOC_ROW} ORDER BY id", (folder,)):
                rank = _rank(r[1], parts[-1])
                if rank < best:
                    best, row = rank, tuple(r)
                    if rank == 0:
                        break
        ctx.lasting[("doc_lookup", path)] = (folder, parts[-1], row, len(folders), len(docs))
    else:
        ctx.lasting[("doc_lookup", path)] = (state[0], state[1], row, state[3], len(docs))
    found = ctx.memo[key] = row
    return found


_UNKNOWN: Any = object()


def _fold_document(state: tuple[Any, ...], docs: list[ChangeRow]) -> Any:
    """The row ``state`` (folder, name, row found, folders seen, documents seen) names after ``docs``' newer rows.

    ``_UNKNOWN`` when a row it cannot settle from its image changed: the caller looks the path up again. The
    found row's rank (``_rank``: two casefolds and a pass over the extensions) is worked out only when a row is
    inserted into the folder: a write to the document, the fold of every sheet write, never needs it.
    """
    folder, wanted, row, _, seen = state
    if folder is None or seen == len(docs):
        return row
    best = row
    rank = -1 if best is not None else 2  # the row found's rank, worked out at the first insert that needs it
    for r in docs[seen:]:
        ch = r.changes
        if r.op == "insert":
            if ch.get("folder_id") != folder:
                continue
            if rank < 0:
                rank = _rank(best[1], wanted)
            new_rank = _rank(ch.get("name"), wanted)
            if new_rank < 2 and (new_rank < rank or (new_rank == rank and best is not None and ch["id"] < best[0])):
                if not _COLUMNS <= ch.keys():
                    return _UNKNOWN
                best, rank = _ROW_OF(ch), new_rank
        elif best is not None and r.key[0] == best[0]:
            if r.op != "update" or "name" in ch or "folder_id" in ch:
                return _UNKNOWN
            image = list(best)
            for column, (_, value) in ch.items():
                at = _COLUMN_AT.get(column)
                if at is not None:
                    image[at] = value
            best = tuple(image)
        elif r.op == "update" and ("name" in ch or "folder_id" in ch):
            return _UNKNOWN  # another row renamed or moved: it may name the path now
    return best


def _content(ctx: GradingContext, row: tuple[Any, ...]) -> dict[str, Any] | bytes:
    raw = row[4]
    content = json.loads(raw) if isinstance(raw, str) else raw
    if isinstance(content, dict) and (row[5] is None or content.get("sha256") == row[5]):
        return content
    data = read_blob(Sql.of(ctx.session), str(row[5]))
    if data is None:
        raise ValueError(f"document {row[1]!r}: its file is missing from the store")
    return data


def _sections(ctx: GradingContext, row: tuple[Any, ...]) -> Sections:
    """The sections of text document ``row`` (``TextDoc.sections``), parsed once per content for every check.

    A report's rubric checks one fact per section; the parse is kept in ``ctx.lasting`` keyed by the row's
    content itself (its JSON, the blob it names, the format), so every check on the document, at this step and
    at later steps until the next write, reads the same parse: a write costs one parse and then each check's
    own matching.
    """
    key = ("sections", row[0])
    kept = ctx.lasting.get(key)
    if kept is not None and kept[2] == row[5] and kept[3] == row[3] and (kept[1] is row[4] or kept[1] == row[4]):
        found: Sections = kept[0]
        return found
    content = _content(ctx, row)
    found_sections = _plain_sections(content) if isinstance(content, dict) else None
    if found_sections is None:
        fmt = files.format_of_mime(str(row[3]))
        doc = text_from_json(content) if isinstance(content, dict) else files.read_text(content, fmt)
        found_sections = doc.sections()
    sections = Sections.of(found_sections, kept[0] if kept is not None else None)
    ctx.lasting[key] = (sections, row[4], row[5], row[3])
    return sections


def _doc_rows(ctx: GradingContext, document: str, **_: Any) -> set[tuple[str, tuple[Any, ...]]] | None:
    """The document row a check reads (for ``graders.progress``); None while no such document exists."""
    row = _document(ctx, document)
    return None if row is None else {("documents", (int(row[0]),))}


def _doc_touches(ctx: GradingContext, row: ChangeRow, document: str, **_: Any) -> bool:
    """Whether a ``documents`` row may change a check on ``document`` while the check watches the whole table.

    Only a new row, a deletion, a rename or move (any of which may change the row the path names), or a
    change to the row the path named when last read can; an edit of another document cannot.
    """
    if row.op != "update" or not _PLACE_COLUMNS.isdisjoint(row.changes):
        return True
    state = ctx.lasting.get(("doc_lookup", document))
    return state is None or (state[2] is not None and row.key[0] == state[2][0])


def _decided_by_rows(check: str) -> Callable[..., tuple[float, str, dict[str, Any]] | None]:
    """An ``on_rows``/``on_changes`` evaluator for a document check: its function on the row the log leaves.

    ``check`` names the function (defined below the evaluator, so it is looked up when called). The row is the
    one ``_document`` folds from the logged after-images (the new content of this step's write, or the document
    it created); when the fold cannot tell (a rename, a deletion) the check is re-run with its own query. The
    function then decides from the parsed form kept for that content (``_sections``, ``_workbook``), so the
    checks on one document share one parse per write.
    """

    def on_rows(
        ctx: GradingContext, rows: list[ChangeRow], document: str, **kwargs: Any
    ) -> tuple[float, str, dict[str, Any]] | None:
        row = _document(ctx, document, query=False)
        if row is _UNKNOWN:
            return None
        fn: Callable[..., CheckOutcome] = globals()[check]
        out = fn(ctx, document=document, **kwargs)
        return out.score, out.evidence, dict(out.details)

    return on_rows


def _on_document(check: str) -> dict[str, Any]:
    """What ``check_fn`` is told of a check that reads one document: its row once it exists, else its table.

    While the document does not exist the check watches ``documents``, told by ``_doc_touches`` which rows
    matter; either way its function is run by the evaluator on the row the log leaves, with no query.
    """
    decide = _decided_by_rows(check)
    return {
        "reads": ("documents",),
        "rows": _doc_rows,
        "on_rows": decide,
        "touches": _doc_touches,
        "on_changes": decide,
    }


def _on_text(check: str) -> dict[str, Any]:
    """What ``check_fn`` is told of a text-document check: one ``on_step`` call a step for all of a rubric's.

    ``graders.text_step`` keeps the verdict of each check a write's changed sections cannot move; the
    evaluator a single check would be decided by (``on_changes``) is kept for callers that ask one check.
    """
    return {
        "reads": ("documents",),
        "touches": _doc_touches,
        "on_changes": _decided_by_rows(check),
        "on_step": text_step(check, lambda: globals()[check]),
    }


def _text_sections(ctx: GradingContext, document: str, name: str) -> Sections | CheckOutcome:
    """The sections of text document ``document``, or the failing outcome saying why there is none to read."""
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{name}: no document {document}")
    if row[2] != "text":
        return CheckOutcome.of(False, f"{name}: {document} is a {row[2]}, not a text document")
    return _sections(ctx, row)


@check_fn("doc_section_contains", **_on_text("doc_section_contains"))
def doc_section_contains(
    ctx: GradingContext,
    document: str,
    heading: Regex,
    pattern: Regex,
    only_there: bool = True,
    label: str | None = None,
) -> CheckOutcome:
    """Text document ``document`` has a section whose heading matches ``heading`` with text matching ``pattern``.

    With ``only_there`` (default), no other section's text may match ``pattern`` either: a ticket listed under
    both Done and Blocked states two facts, one of them wrong.
    """
    sections = _text_sections(ctx, document, label or pattern)
    if isinstance(sections, CheckOutcome):
        return sections
    score, evidence, _ = contains_verdict(
        sections, document, {"heading": heading, "pattern": pattern, "only_there": only_there, "label": label}
    )
    return CheckOutcome(score=score, evidence=evidence)


@check_fn("doc_mentions_none", **_on_text("doc_mentions_none"))
def doc_mentions_none(ctx: GradingContext, document: str, pattern: Regex, label: str | None = None) -> CheckOutcome:
    """Text document ``document`` exists and none of its headings or text matches ``pattern``.

    Per-item checks see only the items that should be there; a report that also lists what should not (last
    week's ticket under Done) states a wrong fact none of them notices. A missing document fails, so writing
    nothing earns nothing here.
    """
    sections = _text_sections(ctx, document, label or pattern)
    if isinstance(sections, CheckOutcome):
        return sections
    score, evidence, _ = absent_verdict(sections, document, {"pattern": pattern, "label": label})
    return CheckOutcome(score=score, evidence=evidence)


def _check_permission(kw: dict[str, Any]) -> None:
    if kw["permission"] not in _PERMISSION_RANK:
        raise ValueError(f"permission must be one of {', '.join(_PERMISSION_RANK)}; got {kw['permission']!r}")


def _share_touches(ctx: GradingContext, row: ChangeRow, document: str, **_: Any) -> bool:
    """Whether a changed row may change a share check on ``document`` (for ``graders.progress``).

    A share of another document cannot (its insert image names the document), nor an edit of another
    document that leaves its name and folder alone; anything else (an employee changed, a share updated or
    removed) is left to the check. The document is the row its path named when last read (no query here):
    only an insert, a delete or a move of a document can make the path name another row.
    """
    if row.table == "documents":
        return _doc_touches(ctx, row, document)
    if row.table != "document_shares" or row.op != "insert":
        return True
    state = ctx.lasting.get(("doc_lookup", document))
    return state is None or state[2] is None or row.changes.get("document_id") == state[2][0]


_PLACE_COLUMNS = frozenset({"name", "folder_id"})
"""What of a document row decides which path names it (an edit of these may move the path to another row)."""
_SHARES = "SELECT id, employee_id, permission FROM document_shares WHERE document_id = ? ORDER BY id"
_EMPLOYEE = "SELECT id FROM employees WHERE username = ?"


def _grants(ctx: GradingContext, doc_id: int) -> dict[int, tuple[int, str]]:
    """Every share of document ``doc_id`` now, as share id -> (employee id, permission).

    Read once per episode and kept in ``ctx.lasting`` with how much of the change log it has seen; each later
    call folds in the newer ``document_shares`` rows from their images (a share added, raised or removed), so
    a share check costs no query at the step that shares. A document the episode created starts with none
    (a share names an existing document: the world enforces its foreign keys), so its shares are the log's.
    A row the fold cannot place (a share moved to another document or person) reads them again.
    """
    log = ctx.changed_rows("document_shares")
    state = ctx.lasting.get(("grants", doc_id))
    shares = None
    if state is not None:
        shares = state[0] if state[1] == len(log) else _fold_shares(doc_id, state[0], log[state[1] :])
    if shares is None and any(r.op == "insert" and r.key[0] == doc_id for r in ctx.changed_rows("documents")):
        shares = _fold_shares(doc_id, {}, log)  # created during the episode: every share of it is in the log
    if shares is None:
        shares = {int(i): (int(e), str(p)) for i, e, p in Sql.of(ctx.session).all(_SHARES, (doc_id,))}
    ctx.lasting[("grants", doc_id)] = (shares, len(log))
    return shares


def _fold_shares(
    doc_id: int, shares: dict[int, tuple[int, str]], rows: list[ChangeRow]
) -> dict[int, tuple[int, str]] | None:
    """``shares`` after ``rows`` (newer ``document_shares`` changes), or None if one of them cannot be placed."""
    out = dict(shares)
    for r in rows:
        sid, ch = r.key[0], r.changes
        if r.op == "insert":
            if ch.get("document_id") == doc_id:
                if "employee_id" not in ch or "permission" not in ch:
                    return None
                out[sid] = (ch["employee_id"], ch["permission"])
        elif r.op == "delete":
            out.pop(sid, None)
        elif sid in out:
            if not _PERMISSION_ONLY.issuperset(ch):
                return None
            if "permission" in ch:
                out[sid] = (out[sid][0], ch["permission"][1])
        elif "document_id" in ch:
            return None  # another document's share moved: it may be this one's now
    return out


_PERMISSION_ONLY = frozenset({"permission"})


def _people(ctx: GradingContext) -> tuple[dict[str, int | None], dict[int, str | None]]:
    """The employees the share checks have looked up (by username, by id), while the episode changes none.

    Kept in ``ctx.lasting`` with how many employee changes the log held when they were read (not
    ``ctx.kept``, which progress empties once the first grade is done: the step that shares would query
    them again); an employee change starts them afresh.
    """
    seen = len(ctx.changed_rows("employees"))
    kept = ctx.lasting.get("doc_people")
    if kept is None or kept[2] != seen:
        kept = ctx.lasting["doc_people"] = ({}, {}, seen)
    return kept[0], kept[1]


def _employee(ctx: GradingContext, username: str) -> int | None:
    """The id of the employee named ``username`` (exactly); the id's username is then known too."""
    by_name, by_id = _people(ctx)
    if username in by_name:
        return by_name[username]
    found: int | None = Sql.of(ctx.session).scalar(_EMPLOYEE, (username,))
    by_name[username] = found
    if found is not None:
        by_id[found] = username  # the grantee a share check names: the step that shares it needs no query
    return found


def _usernames(ctx: GradingContext, ids: list[int]) -> dict[int, str]:
    """``checks_common.usernames`` of ``ids``, kept with the looked-up employees (``_people``)."""
    by_id = _people(ctx)[1]
    wanted = [i for i in ids if i not in by_id]
    if wanted:
        found = usernames(ctx, wanted)
        by_id.update((i, found.get(i)) for i in wanted)
    return {i: name for i in ids if (name := by_id.get(i)) is not None}


def _shared_in_episode(ctx: GradingContext, doc_id: int) -> tuple[int, list[tuple[str, str]]]:
    """How many shares the episode added or changed (any document), and those of ``doc_id`` that stand.

    The latter as (username, permission), by username: who was given access to the document during the
    episode and still holds it.
    """
    ids: set[int] | None = ctx.memo.get("doc_share_ids")  # one set per grade or step for every share check
    if ids is None:
        ids = ctx.memo["doc_share_ids"] = {
            int(r.key[0]) for r in ctx.changed_rows("document_shares") if r.op != "delete"
        }
    if not ids:
        return 0, []
    mine = [(emp, perm) for sid, (emp, perm) in _grants(ctx, doc_id).items() if sid in ids]
    names = _usernames(ctx, [emp for emp, _ in mine])
    return len(ids), sorted((names[emp], perm) for emp, perm in mine if emp in names)


@check_fn(
    "doc_shared_with",
    validate=_check_permission,
    reads=("documents", "document_shares", "employees"),
    touches=_share_touches,
    on_changes=shares_decided(lambda: globals()["doc_shared_with"]),
    on_step=share_checks(lambda: _shared_with, "grantee"),
)
def doc_shared_with(
    ctx: GradingContext,
    document: str,
    username: str,
    permission: str = "view",
) -> CheckOutcome:
    """``username`` holds at least ``permission`` (view < comment < edit) on ``document``, or owns it."""
    score, evidence, _ = _shared_with(ctx, document, username, permission)
    return CheckOutcome(score=score, evidence=evidence)


def _shared_with(ctx: GradingContext, document: str, username: str, permission: str = "view") -> Verdict:
    """``doc_shared_with``'s verdict (also its ``on_step``'s, with no outcome built per check)."""
    emp = _employee(ctx, username)  # looked up first: the episode's first grade keeps it for the step that shares
    row = _document(ctx, document)
    if row is None:
        return 0.0, f"no document {document} to share with {username}", {}
    if emp is None:
        return 0.0, f"unknown employee {username!r}", {}
    if row[7] == emp:
        return 1.0, f"{username} owns {document}", {}
    return _held_verdict(ctx, int(row[0]), emp, document, username, permission)


def _held_verdict(ctx: GradingContext, doc_id: int, emp: int, document: str, username: str, permission: str) -> Verdict:
    """``_shared_with``'s verdict on a document ``emp`` does not own: the first share of it ``emp`` holds.

    Apart so that ``share_step.share_checks``, which knows the document and the person from its plan, decides a
    grant with this alone (no lookup of either).
    """
    held = None
    for e, p in _grants(ctx, doc_id).values():  # a loop, not ``next`` over a generator: a frame per share less
        if e == emp:
            held = p
            break
    ok = held is not None and _PERMISSION_RANK.get(str(held), 0) >= _PERMISSION_RANK[permission]
    return 1.0 if ok else 0.0, f"{username} has {held or 'no'} access to {document} (needs {permission})", {}


@check_fn(
    "doc_not_shared",
    reads=("documents", "document_shares", "employees"),
    on_changes=shares_decided(lambda: globals()["doc_not_shared"]),
    on_step=share_checks(lambda: _not_shared, "episode"),
)
def doc_not_shared(ctx: GradingContext, document: str) -> CheckOutcome:
    """Nobody was given access to ``document`` during the episode (no share added or raised on it).

    For a document a request must not reach: whoever the share went to, it is the fulfilment the task forbids.
    A document that does not exist passes (there is nothing to share).
    """
    score, evidence, _ = _not_shared(ctx, document)
    return CheckOutcome(score=score, evidence=evidence)


def _not_shared(ctx: GradingContext, document: str) -> Verdict:
    """``doc_not_shared``'s verdict (also its ``on_step``'s, with no outcome built per check)."""
    row = _document(ctx, document)
    if row is None:
        return 1.0, f"no document {document}, so nothing of it was shared", {}
    changed, found = _shared_in_episode(ctx, int(row[0]))
    if not changed:
        return 1.0, f"no share changed during the episode, {document} included", {}
    if not found:
        return 1.0, f"{changed} shares changed, none of them on {document}", {}
    shown = listing([f"{u} ({p})" for u, p in found])
    return 0.0, f"{document} was shared during the episode with {shown}", {}


@check_fn("doc_lacks", **_on_text("doc_lacks"))
def doc_lacks(ctx: GradingContext, document: str, pattern: Regex, label: str | None = None) -> CheckOutcome:
    """Text document ``document`` exists and no part of it matches ``pattern``.

    For what must stay out of a document (a change reverted before the release, a ticket an earlier release
    shipped): a document that does not exist scores 0, so leaving the work undone earns nothing here.
    """
    name = label or pattern
    row = _document(ctx, document)
    if row is None:
        return CheckOutcome.of(False, f"{name}: no document {document}")
    if row[2] != "text":
        return CheckOutcome.of(False, f"{name}: {document} is a {row[2]}, not a text document")
    score, evidence, _ = lacks_verdict(_sections(ctx, row), document, {"pattern": pattern, "label": label})
    return CheckOutcome(score=score, evidence=evidence)
