"""Checks of a code review: the notes an agent left on a merge request (comments and review bodies).

A reviewer is graded by what its notes say: one naming a file, a rule's words and optionally the line or more
words (``merge_request_note_names``), none naming a file with a rule's words (``merge_request_note_spares``),
its verdicts (``merge_request_verdict``) and a verdict's body saying given words (``merge_request_review_says``).
A note's content never changes once written, so each check keeps the first note that decided it (or the
verdicts so far) in ``ctx.lasting``; in the per-step progress score each function settles all of its checks
from the step's inserted notes with one ``on_step`` call, a new note tested only on the checks of the file it
names. Split from ``graders.checks_code`` (which imports this module, so the library registers both at once).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import text

from graders.base import CheckOutcome, GradingContext, check_fn
from graders.changes import ChangeRow
from graders.checks_common import Regex, rx, snippet

_NOTES = text(
    "SELECT n.id, n.kind, n.body FROM merge_request_notes n WHERE n.merge_request_id = :mr AND n.author_id = :actor"
    " ORDER BY n.id"
)
_VERDICTS = ("approve", "request_changes")
_MISSING = object()


def _notes(ctx: GradingContext, mr_id: int) -> list[Any]:
    """The agent's notes (comments and review bodies) on request ``mr_id``, oldest first."""
    key = ("review_notes", mr_id)
    if key not in ctx.memo:
        ctx.memo[key] = list(ctx.db.execute(_NOTES, {"mr": mr_id, "actor": ctx.actor_id}))
    return list(ctx.memo[key])


@functools.lru_cache(maxsize=512)
def _file_rx(path: str) -> tuple[str, re.Pattern[str]]:
    name = path.rsplit("/", 1)[-1]
    return name, re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w])")


@functools.lru_cache(maxsize=512)
def _line_rx(line: int) -> re.Pattern[str]:
    return re.compile(rf"(?:\bline\s*|\bL|\.py:){line}(?!\d)", re.IGNORECASE)


@functools.lru_cache(maxsize=2048)
def _names_file(body: str, path: str) -> bool:
    """Whether ``body`` names the file ``path`` (its full path or its file name; a longer name does not count).

    Cached (a pure function of two strings): a full grade asks every note check of a request about the same
    notes, and a regex search costs microseconds (0.6 to 5 us warm for these patterns on a comment, more cold).
    The per-step groups ask each new note once per file and rule, so in an episode's steps these caches miss
    (a step only fills them, for the final grade); they hit there only when the same note text comes again,
    as when ``bench.progress_steps`` replays the oracle's seeds. Measured in round ten: searching with the
    compiled regexes directly in the steps (no cache) cost about 15 us more a comment step in that bench and
    saved about 3 us on notes never seen; emptying these caches before each update (every note new) puts a
    comment step at about 90 us against about 65, so the regex searches, not the bookkeeping, are what a new
    note costs.
    """
    name, found = _file_rx(path)
    return name in body and found.search(body) is not None


@functools.lru_cache(maxsize=2048)
def _at_line(body: str, line: int) -> bool:
    """Whether ``body`` points at ``line`` (``line 12``, ``L12``, ``file.py:12``); cached as ``_names_file`` is.

    The regex tries three openings at every character of the note; the final grade asks it again of every note
    the steps tested (and ``_names_file`` says what the cache is worth in the steps themselves).
    """
    return _line_rx(line).search(body) is not None


@functools.lru_cache(maxsize=2048)
def _says(body: str, pattern: str) -> bool:
    """Whether ``pattern`` (any case) occurs in ``body``; cached as ``_names_file`` is."""
    return rx(pattern).search(body) is not None


def _fits(
    body: str, file: str, pattern: str, line: int | None, apart: list[tuple[str, str]] | None, also: str | None
) -> bool:
    """Whether one note flags ``file`` by ``pattern`` (at ``line``, saying ``also``), and none of ``apart``."""
    if not (_names_file(body, file) and _says(body, pattern)):
        return False
    if (line is not None and not _at_line(body, line)) or (also is not None and not _says(body, also)):
        return False
    return not any(_names_file(body, f) and _says(body, p) for f, p in apart or ())


def _new_notes(ctx: GradingContext, rows: list[ChangeRow], mr_id: int) -> list[tuple[int, str, str]] | None:
    """(id, kind, body) of the agent's notes on ``mr_id`` a step inserted, from the log; None if a note changed.

    Notes are only ever inserted (the forge has no edit or delete); an update or delete of one is left to the
    check's query, so the after-image path never has to reason about it.
    """
    out = []
    for r in rows:
        if r.op != "insert":
            return None
        c = r.changes
        if c.get("merge_request_id") == mr_id and c.get("author_id") == ctx.actor_id:
            out.append((int(r.key[0]), str(c.get("kind")), str(c.get("body") or "")))
    return out


def _mine(ctx: GradingContext, row: ChangeRow, mr_id: int) -> Any:
    """The inserted row's values if it is the agent's note on ``mr_id``; True when it is not an insert (re-run)."""
    if row.op != "insert":
        return True
    c = row.changes
    return c if c.get("merge_request_id") == mr_id and c.get("author_id") == ctx.actor_id else None


# What the note checks keep in ``ctx.lasting`` between steps: the first note that decided them (or None), or
# the verdicts given so far, set by every run of the check (the database's answer) and moved on by the
# ``on_changes`` evaluators from the inserted notes alone. A note's content never changes once written, so the
# first matching note stays the first; keys carry the identity of list params (``apart``, ``patterns``), which
# ``graders.progress`` passes as the same objects on every call. A note or spare check's state is a cell
# ``[owner, first note]``: a run or evaluator puts a new one (and drops the groups, ``_ran``), while the
# ``on_step`` path sets the note in the cell its group entry holds, so a decided check costs no key hashed.


def _state(ctx: GradingContext, key: tuple[Any, ...], owner: Any) -> Any:
    found = ctx.lasting.get(key, _MISSING)
    return found[1] if found is not _MISSING and found[0] is owner else _MISSING


_AGENT_NOTES = ("agent_notes",)

StepNotes = tuple[list[ChangeRow], dict[int, list[tuple[int, str, str]]] | None, bool]
"""What ``_agent_notes`` keeps for a step: its rows, the agent's new notes by request, and whether one is a verdict."""


def _agent_notes(ctx: GradingContext, rows: list[ChangeRow]) -> StepNotes:
    """The agent's notes a step inserted, by request, as (id, body, kind); None if a note was updated or deleted.

    Read once a step for every note function's ``on_step`` (``ctx.memo`` is cleared before each, and the entry
    names the very rows it read: each step function looks it up itself, a frame less than a helper), with
    whether one of them is a verdict beside it. A note's tuple starts as a kept first note does, (id, body), so
    a settle function keeps the note itself.
    """
    out: dict[int, list[tuple[int, str, str]]] = {}
    verdict = False
    actor = ctx.actor_id
    for r in rows:
        if r.op != "insert":
            found: StepNotes = (rows, None, False)
            ctx.memo[_AGENT_NOTES] = found
            return found
        c = r.changes
        if c.get("author_id") == actor and type(mr := c.get("merge_request_id")) is int:
            kind = str(c.get("kind"))
            verdict = verdict or kind in _VERDICTS
            note = (int(r.key[0]), str(c.get("body") or ""), kind)
            notes = out.get(mr)
            if notes is None:
                out[mr] = [note]
            else:
                notes.append(note)
    found = ctx.memo[_AGENT_NOTES] = (rows, out, verdict)
    return found


def _groups(
    ctx: GradingContext, params: list[dict[str, Any]], plan: Callable[..., Any], key: str, any_file: bool
) -> dict[int, list[Any]]:
    """A function's checks still waiting for a note, by request, then by file and pattern, as ``plan`` lays them out.

    ``plan(pos, kw, lasting)`` gives the entry a settle function reads: its position, state key, whether the
    check has run (one that has not is re-run when a note could move it), and what the rest of its test and
    its verdict's words need, worked out once here (the check's regexes, the evidence's fixed middle) rather
    than at every note. A group is ``[file, its name, pattern, entries]``: every check of one finding (its
    flag, line, function, fix) tests the note for the same file and rule once, the name as a substring before
    the file's regex (a note names one file of the request, if any); with ``any_file`` an empty file's name is
    None (every note names it). Built from the kept states (a check a note decided is left out) and pruned as
    notes decide checks, so a settle function reads no state per check; kept under ``key`` (one per function)
    with the params it was made for, and dropped by any run of a note check or ``on_changes`` evaluator that set
    a state (``_ran``) and when a note is updated or deleted, since every check then re-runs.
    """
    by_test: dict[tuple[int, str, str], list[Any]] = {}
    for pos, kw in enumerate(params):
        entry = plan(pos, kw, ctx.lasting)
        if entry is None:
            continue  # decided by a note already: no later note changes it
        file, pattern = kw.get("file", ""), kw["pattern"]
        group = by_test.get((kw["mr_id"], file, pattern))
        if group is None:
            name = _file_rx(file)[0] if file else (None if any_file else "")
            rx(pattern)  # compiled now (``rx``'s cache), not by the first note a step tests on it
            group = by_test[(kw["mr_id"], file, pattern)] = [file, name, pattern, []]
        group[3].append(entry)
    groups: dict[int, list[Any]] = {}
    for (mr_id, _, _), group in by_test.items():
        groups.setdefault(mr_id, []).append(group)
    ctx.lasting[key] = (params, groups)
    return groups


_NAMES_GROUPS, _SPARES_GROUPS = "note_groups:names", "note_groups:spares"


def _ran(ctx: GradingContext) -> None:
    """Drop the note checks' groups after a run that set a kept state, so they are made again from the states."""
    lasting = ctx.lasting
    lasting.pop(_NAMES_GROUPS, None)
    lasting.pop(_SPARES_GROUPS, None)


_NO_DETAILS: dict[str, Any] = {}
"""The details of every note verdict (none), shared: ``graders.progress`` keeps a verdict as it is handed back and
copies details into a result (``outcome_result``), so nothing mutates it, and a step allocates one dict less
per decided check."""


Verdicts = dict[int, tuple[float, str, dict[str, Any]] | None]

_NOTHING: Verdicts = {}
"""The answer of a step that moves none of a function's checks, shared: ``graders.progress`` only reads it."""


@functools.lru_cache(maxsize=256)
def _snippet(body: str) -> str:
    """``snippet(body)``, cached: the checks one note decides quote it alike.

    Only the body's head is flattened when it already gives more than the quote's 60 characters (the words
    after it only lengthen what is cut): a review's body can be long, and the quote shows its first line.
    """
    head = body[:240]
    if len(head) < len(body) and len(" ".join(head.split())) > 60:
        return snippet(head)
    return snippet(body)


def _names_verdict(
    hit: tuple[int, str] | None, where: str, pattern: str, also: str | None
) -> tuple[float, str, dict[str, Any]]:
    said = f"/{pattern}/" if also is None else f"/{pattern}/ with /{also}/"
    if hit is not None:
        return 1.0, f"note {hit[0]} names {where} and {said}: {_snippet(hit[1])}", {}
    return 0.0, f"no note by the agent names {where} and {said}", {}


def _where(file: str, line: int | None, apart: list[tuple[str, str]] | None) -> str:
    return (file if line is None else f"{file} line {line}") + (" alone" if apart else "")


def _names_touches(
    ctx: GradingContext,
    row: ChangeRow,
    mr_id: int,
    file: str,
    pattern: str,
    line: int | None = None,
    apart: list[tuple[str, str]] | None = None,
    also: str | None = None,
) -> bool:
    """Only a note of the agent's on the request that fits can move the verdict (the evidence names no count)."""
    c = _mine(ctx, row, mr_id)
    return c is True or (c is not None and _fits(str(c.get("body") or ""), file, pattern, line, apart, also))


def _names_on_changes(
    ctx: GradingContext,
    rows: list[ChangeRow],
    mr_id: int,
    file: str,
    pattern: str,
    line: int | None = None,
    apart: list[tuple[str, str]] | None = None,
    also: str | None = None,
) -> tuple[float, str, dict[str, Any]] | None:
    """``merge_request_note_names``' verdict from the inserted notes: the first fitting note, kept."""
    key = _names_key(mr_id, file, pattern, line, apart, also)
    hit = _state(ctx, key, apart)
    new = _new_notes(ctx, rows, mr_id)
    if hit is _MISSING or new is None:
        return None
    if hit is None:
        hit = next(((i, b) for i, _, b in new if _fits(b, file, pattern, line, apart, also)), None)
        ctx.lasting[key] = [apart, hit]
        _ran(ctx)
    return _names_verdict(hit, _where(file, line, apart), pattern, also)


def _names_key(
    mr_id: int, file: str, pattern: str, line: int | None, apart: list[tuple[str, str]] | None, also: str | None
) -> tuple[Any, ...]:
    return ("note_names", mr_id, file, pattern, line, also, id(apart))


StepFn = Callable[[GradingContext, list[ChangeRow], list[dict[str, Any]]], Verdicts]
Settle = Callable[[GradingContext, tuple[int, str, str], list[Any], Verdicts], list[Any] | None]


def _file_step(plan: Callable[..., Any], settle: Settle, key: str, any_file: bool = False) -> StepFn:
    """The ``on_step`` evaluator of a note function: every check of it at once, grouped by request, file and rule.

    A step's new notes are taken in order, each read against every group of its request: it is handed to
    ``settle`` only with the groups whose file it names (with ``any_file``, an empty file takes every note) and
    whose pattern it says, one note at a time; a check ``settle`` decided leaves its group (it hands back
    the entries left, or None if it decided none), so later steps skip it, and the checks it does not decide
    are not answered (their kept verdicts stand as they are). Made by a factory rather than as a function that
    calls a shared one: a comment step asks two such functions, and each call through a helper is a frame.
    """

    def step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> Verdicts:
        found = ctx.memo.get(_AGENT_NOTES)  # ``_agent_notes``, read once a step for every note function
        if found is None or found[0] is not rows:
            found = _agent_notes(ctx, rows)
        new = found[1]
        if new is None:  # a note changed: every check re-runs, and the groups are made again after
            ctx.lasting.pop(key, None)
            return dict.fromkeys(range(len(params)))
        kept = ctx.lasting.get(key)
        if kept is not None and kept[0] is params:
            groups = kept[1]
        else:  # built at the call with no rows ``graders.progress`` makes first, and after a run set a state
            groups = _groups(ctx, params, plan, key, any_file)
        out: Verdicts = _NOTHING
        for mr_id, notes in new.items():
            files = groups.get(mr_id)
            if not files:
                continue
            emptied = None  # the groups a note emptied, taken out after the loop (no list made again, no frame)
            for note in notes:  # the outer loop (a step has one note): its text read once for every group
                body = note[1]
                for group in files:
                    file, name, pattern, entries = group
                    if (name is None or (name in body and _names_file(body, file))) and _says(body, pattern):
                        if out is _NOTHING:
                            out = {}
                        left = settle(ctx, note, entries, out)
                        if left is not None:  # the checks it decided leave the group
                            group[3] = left
                            if not left:
                                if emptied is None:
                                    emptied = [group]
                                else:
                                    emptied.append(group)
            if emptied is not None:
                for group in emptied:
                    files.remove(group)
        return out

    return step


def _names_plan(pos: int, kw: dict[str, Any], lasting: dict[Any, Any]) -> tuple[Any, ...] | None:
    """A ``merge_request_note_names`` check's group entry (None once a note decided it).

    Position, its kept state (None if it never ran: then it is re-run when a note could move it), ``apart``'s
    tests as (file name, file, pattern), the line, ``also``, and its evidence's middle.
    """
    file, pattern, line, apart, also = kw["file"], kw["pattern"], kw["line"], kw["apart"], kw["also"]
    kept = lasting.get(_names_key(kw["mr_id"], file, pattern, line, apart, also))
    if kept is None or kept[0] is not apart:
        kept = None
    elif kept[1] is not None:
        return None
    said = f"/{pattern}/" if also is None else f"/{pattern}/ with /{also}/"
    tail = f" names {_where(file, line, apart)} and {said}: "  # as ``_names_verdict`` words a hit
    others = tuple((_file_rx(f)[0], f, p) for f, p in apart or ())
    # the regexes a note is tested with, compiled now (``rx``'s and ``_line_rx``'s caches): a task's first note
    # otherwise compiled them inside its step (~200 us a pattern), work of the task rather than of the step
    for _, _, p in others:
        rx(p)
    if line is not None:
        _line_rx(line)
    if also is not None:
        rx(also)
    return pos, kept, others, line, also, tail


def _names_settle(
    ctx: GradingContext, hit: tuple[int, str, str], entries: list[Any], out: Verdicts
) -> list[Any] | None:
    """``merge_request_note_names`` checks of one finding, given a new note that names its file and rule.

    What is left of ``_fits`` is tested per check (its line, ``also``, no other finding) and the note decides
    each check it passes (``_file_step`` hands over a step's notes in order, each with the checks the ones
    before it left waiting, so the first fitting note stays the first); its note is set in the check's kept
    cell (no state key hashed), and its "note <id>" and quote are made once, at the first check it decides.
    The entries still waiting, or None if none was decided.
    """
    left: list[Any] | None = None  # made once a check is decided: the entries before it all wait still
    body, ident, quote = hit[1], "", ""
    for n, entry in enumerate(entries):
        pos, kept, others, line, also, tail = entry
        if kept is not None and (line is None or _at_line(body, line)) and (also is None or _says(body, also)):
            for o, f, p in others:  # the note names another finding too (a loop: a generator is a frame)
                if o in body and _names_file(body, f) and _says(body, p):
                    break
            else:
                kept[1] = hit
                if not ident:
                    ident, quote = f"note {hit[0]}", _snippet(body)
                out[pos] = (1.0, f"{ident}{tail}{quote}", _NO_DETAILS)
                if left is None:
                    left = entries[:n]
                continue
        elif kept is None:  # never run: re-run it
            out[pos] = None
        if left is not None:
            left.append(entry)
    return left


_names_step = _file_step(_names_plan, _names_settle, _NAMES_GROUPS)
"""Every ``merge_request_note_names`` check at once: only a new note naming a check's file is tested on it.

A check some note decided leaves its group (the first fitting note stays the first), so a step tests a new note
only on the checks of its file still waiting for one.
"""


@check_fn(
    "merge_request_note_names",
    reads=("merge_request_notes",),
    touches=_names_touches,
    on_changes=_names_on_changes,
    on_step=_names_step,
)
def merge_request_note_names(
    ctx: GradingContext,
    mr_id: int,
    file: str,
    pattern: Regex,
    line: Annotated[int, Field(ge=1)] | None = None,
    apart: list[tuple[str, Regex]] | None = None,
    also: Regex | None = None,
) -> CheckOutcome:
    """A note the agent left on request ``mr_id`` (a comment or a review's body) names ``file`` and ``pattern``.

    How a reviewer flags one broken rule: the comment says where (the file, and with ``line`` that line as
    ``line 12``, ``L12`` or ``file.py:12``) and what (the rule's words). With ``apart`` (other findings as
    (file, pattern)), the note must name none of them: one comment per finding, as review threads are
    resolved one at a time. With ``also``, the same note must say that too (the function at fault, or the fix
    the checklist asks for): what turns a flag into a comment the author can act on.
    """
    hit = next(
        ((n.id, n.body or "") for n in _notes(ctx, mr_id) if _fits(n.body or "", file, pattern, line, apart, also)),
        None,
    )
    ctx.lasting[_names_key(mr_id, file, pattern, line, apart, also)] = [apart, hit]
    _ran(ctx)
    score, evidence, _ = _names_verdict(hit, _where(file, line, apart), pattern, also)
    return CheckOutcome.of(score == 1.0, evidence)


def _flags(body: str, file: str, pattern: str) -> bool:
    return (not file or _names_file(body, file)) and _says(body, pattern)


def _spares_verdict(hit: tuple[int, str] | None, file: str, pattern: str) -> tuple[float, str, dict[str, Any]]:
    if hit is not None:
        return 0.0, f"note {hit[0]} flags {file or 'the change'} (/{pattern}/): {_snippet(hit[1])}", {}
    return 1.0, f"no note by the agent flags {file or 'the change'} (/{pattern}/)", {}


def _spares_touches(ctx: GradingContext, row: ChangeRow, mr_id: int, file: str, pattern: str) -> bool:
    """Only a note of the agent's on the request that flags ``file`` by ``pattern`` can move the verdict."""
    c = _mine(ctx, row, mr_id)
    return c is True or (c is not None and _flags(str(c.get("body") or ""), file, pattern))


def _spares_on_changes(
    ctx: GradingContext, rows: list[ChangeRow], mr_id: int, file: str, pattern: str
) -> tuple[float, str, dict[str, Any]] | None:
    """``merge_request_note_spares``' verdict from the inserted notes: the first false flag, kept."""
    key = ("note_spares", mr_id, file, pattern)
    hit = _state(ctx, key, None)
    new = _new_notes(ctx, rows, mr_id)
    if hit is _MISSING or new is None:
        return None
    if hit is None:
        hit = next(((i, b) for i, _, b in new if _flags(b, file, pattern)), None)
        ctx.lasting[key] = [None, hit]
        _ran(ctx)
    return _spares_verdict(hit, file, pattern)


def _spares_key(mr_id: int, file: str, pattern: str) -> tuple[Any, ...]:
    return ("note_spares", mr_id, file, pattern)


def _spares_plan(pos: int, kw: dict[str, Any], lasting: dict[Any, Any]) -> tuple[Any, ...] | None:
    """A ``merge_request_note_spares`` check's group entry (None once a note flagged it).

    Position, its kept state (None if it never ran), and its evidence's middle.
    """
    file, pattern = kw["file"], kw["pattern"]
    kept = lasting.get(_spares_key(kw["mr_id"], file, pattern))
    if kept is None or kept[0] is not None:
        kept = None
    elif kept[1] is not None:
        return None
    return pos, kept, f" flags {file or 'the change'} (/{pattern}/): "


def _spares_settle(
    ctx: GradingContext, hit: tuple[int, str, str], entries: list[Any], out: Verdicts
) -> list[Any] | None:
    """``merge_request_note_spares`` checks of one file and rule, given a new note that flags it: it decides them.

    ``_file_step`` hands over a step's notes in order, so the first that flags them decides them (a later one
    sees only the checks that never ran). The entries still waiting (those), or None if none was decided.
    """
    left: list[Any] | None = None
    for n, entry in enumerate(entries):
        pos, kept, tail = entry
        if kept is None:  # never run: re-run it
            out[pos] = None
            if left is not None:
                left.append(entry)
            continue
        kept[1] = hit
        out[pos] = (0.0, f"note {hit[0]}{tail}{_snippet(hit[1])}", _NO_DETAILS)
        if left is None:
            left = entries[:n]
    return left


_spares_step = _file_step(_spares_plan, _spares_settle, _SPARES_GROUPS, any_file=True)
"""Every ``merge_request_note_spares`` check at once: only a new note naming a check's file is tested on it."""


@check_fn(
    "merge_request_note_spares",
    reads=("merge_request_notes",),
    touches=_spares_touches,
    on_changes=_spares_on_changes,
    on_step=_spares_step,
)
def merge_request_note_spares(ctx: GradingContext, mr_id: int, file: str, pattern: Regex) -> CheckOutcome:
    """No note the agent left on request ``mr_id`` names ``file`` (any, when empty) with ``pattern``: a false flag."""
    hit = next(((n.id, n.body or "") for n in _notes(ctx, mr_id) if _flags(n.body or "", file, pattern)), None)
    ctx.lasting[_spares_key(mr_id, file, pattern)] = [None, hit]
    _ran(ctx)
    score, evidence, _ = _spares_verdict(hit, file, pattern)
    return CheckOutcome.of(score == 1.0, evidence)


def _verdicts_verdict(mr_id: int, verdict: str, given: tuple[str, ...]) -> tuple[float, str, dict[str, Any]]:
    if not given:
        return 0.0, f"the agent gave no verdict on request {mr_id}", {}
    ok = given.count(verdict) == len(given)  # every one is the wanted verdict (no generator: a frame less)
    return float(ok), f"the agent's verdicts on request {mr_id}: {', '.join(given)} (wanted {verdict})", {}


def _verdict_touches(ctx: GradingContext, row: ChangeRow, mr_id: int, verdict: str) -> bool:
    """Only a verdict of the agent's on the request (approve or request changes) can move the check."""
    c = _mine(ctx, row, mr_id)
    return c is True or (c is not None and c.get("kind") in _VERDICTS)


def _verdict_on_changes(
    ctx: GradingContext, rows: list[ChangeRow], mr_id: int, verdict: str
) -> tuple[float, str, dict[str, Any]] | None:
    """``merge_request_verdict``'s verdict from the inserted notes: the verdicts so far, extended in id order."""
    key = ("note_verdicts", mr_id)
    state = _state(ctx, key, None)
    new = _new_notes(ctx, rows, mr_id)
    if state is _MISSING or new is None:
        return None
    last, given = state
    for i, kind, _ in new:
        if i > last:  # several checks of one request share the state: a note is counted once
            last, given = i, (*given, kind) if kind in _VERDICTS else given
    ctx.lasting[key] = (None, (last, given))
    return _verdicts_verdict(mr_id, verdict, given)


def _verdict_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> Verdicts:
    """Every ``merge_request_verdict`` check at once: only a step with a new verdict on its request moves one.

    The new notes are the step's, read once (``_agent_notes``); the kept verdicts so far are extended in id
    order as ``_verdict_on_changes`` does, a note counted once however many checks share the request.
    """
    found = ctx.memo.get(_AGENT_NOTES)  # ``_agent_notes``, read once a step for every note function
    if found is None or found[0] is not rows:
        found = _agent_notes(ctx, rows)
    _, new, verdict = found
    if new is None:
        return dict.fromkeys(range(len(params)))
    if not verdict:  # a step of comments: no verdict moves, and nothing is read
        return _NOTHING
    out: Verdicts = {}
    lasting = ctx.lasting
    for pos, kw in enumerate(params):
        mr_id = kw["mr_id"]
        notes = new.get(mr_id)
        if not notes:
            continue
        for _, _, kind in notes:
            if kind in _VERDICTS:
                break
        else:
            continue
        key = ("note_verdicts", mr_id)
        found = lasting.get(key)
        if found is None or found[0] is not None:  # never run: re-run it
            out[pos] = None
            continue
        last, given = found[1]
        for i, _, kind in notes:
            if i > last:
                last, given = i, (*given, kind) if kind in _VERDICTS else given
        lasting[key] = (None, (last, given))
        if not given:
            out[pos] = _verdicts_verdict(mr_id, kw["verdict"], given)
            continue
        want = kw["verdict"]  # worded as ``_verdicts_verdict`` words it, without its frame on the review step
        said = f"the agent's verdicts on request {mr_id}: {', '.join(given)} (wanted {want})"
        out[pos] = (1.0 if given.count(want) == len(given) else 0.0, said, _NO_DETAILS)
    return out


@check_fn(
    "merge_request_verdict",
    reads=("merge_request_notes",),
    touches=_verdict_touches,
    on_changes=_verdict_on_changes,
    on_step=_verdict_step,
)
def merge_request_verdict(
    ctx: GradingContext, mr_id: int, verdict: Literal["approve", "request_changes"]
) -> CheckOutcome:
    """The agent reviewed request ``mr_id`` and every verdict it gave is ``verdict`` (a wrong one is never undone)."""
    notes = _notes(ctx, mr_id)
    given = tuple(str(n.kind) for n in notes if n.kind in _VERDICTS)
    ctx.lasting[("note_verdicts", mr_id)] = (None, (max((int(n.id) for n in notes), default=0), given))
    score, evidence, _ = _verdicts_verdict(mr_id, verdict, given)
    return CheckOutcome.of(score == 1.0, evidence)


def _says_all(body: str, patterns: list[str]) -> bool:
    for p in patterns:  # a loop: ``all`` over a generator costs a frame, on a step that runs once an episode
        if not _says(body, p):
            return False
    return True


def _review_verdict(
    hit: tuple[int, str] | tuple[int, str, str] | None, verdict: str, patterns: list[str]
) -> tuple[float, str, dict[str, Any]]:
    said = "/" + "/, /".join(patterns) + "/" if patterns else ""  # each as /pattern/, comma-separated
    if hit is not None:
        return 1.0, f"the agent's {verdict} review (note {hit[0]}) says {said}: {_snippet(hit[1])}", {}
    return 0.0, f"no {verdict} review by the agent says all of {said}", {}


def _review_touches(ctx: GradingContext, row: ChangeRow, mr_id: int, verdict: str, patterns: list[str]) -> bool:
    """Only a review of the agent's with that verdict saying every pattern can move the check."""
    c = _mine(ctx, row, mr_id)
    return c is True or (c is not None and c.get("kind") == verdict and _says_all(str(c.get("body") or ""), patterns))


def _review_on_changes(
    ctx: GradingContext, rows: list[ChangeRow], mr_id: int, verdict: str, patterns: list[str]
) -> tuple[float, str, dict[str, Any]] | None:
    """``merge_request_review_says``' verdict from the inserted notes: the first fitting review, kept."""
    key = ("review_says", mr_id, verdict, id(patterns))
    hit = _state(ctx, key, patterns)
    new = _new_notes(ctx, rows, mr_id)
    if hit is _MISSING or new is None:
        return None
    if hit is None:
        hit = next(((i, b) for i, k, b in new if k == verdict and _says_all(b, patterns)), None)
        ctx.lasting[key] = (patterns, hit)
    return _review_verdict(hit, verdict, patterns)


_REVIEW_PLAN = "review_says:plan"


def _review_plan(ctx: GradingContext, params: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each ``merge_request_review_says`` check as its step reads it, worked out once an episode.

    Position, request, verdict, patterns, state key and the evidence's list of patterns: none of it moves
    during an episode (the state behind the key does, and is read at each review), so the review step builds no
    key and joins no patterns. Kept under one key with the params it was made for.
    """
    plan = []
    for pos, kw in enumerate(params):
        mr_id, verdict, patterns = kw["mr_id"], kw["verdict"], kw["patterns"]
        said = "/" + "/, /".join(patterns) + "/" if patterns else ""  # as ``_review_verdict`` lists them
        for p in patterns:  # compiled now (``rx``'s cache), not by the first review a step tests on them
            rx(p)
        plan.append((pos, mr_id, verdict, patterns, ("review_says", mr_id, verdict, id(patterns)), said))
    ctx.lasting[_REVIEW_PLAN] = (params, plan)
    return plan


def _review_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> Verdicts:
    """Every ``merge_request_review_says`` check at once: only a new review with its verdict is tested on it.

    A check whose first fitting review is kept stands; one still waiting is answered only when a new review
    fits (until then its "no review says" verdict stands as it is). The checks are read from their plan
    (``_review_plan``, made at the call with no rows ``graders.progress`` makes first), and a fitting review's
    verdict is worded here as ``_review_verdict`` words it, without its frame or the patterns joined again.
    """
    found = ctx.memo.get(_AGENT_NOTES)  # ``_agent_notes``, read once a step for every note function
    if found is None or found[0] is not rows:
        found = _agent_notes(ctx, rows)
    _, new, reviewed = found
    if new is None:
        return dict.fromkeys(range(len(params)))
    if not reviewed:  # a step of comments: no review moves, and nothing is read
        if not rows:  # the call with no rows that progress starts with: the plan is made now
            _review_plan(ctx, params)
        return _NOTHING
    lasting = ctx.lasting
    kept = lasting.get(_REVIEW_PLAN)
    plan = kept[1] if kept is not None and kept[0] is params else _review_plan(ctx, params)
    out: Verdicts = {}
    fitted: dict[Any, Any] | None = None  # the states a review of this step fitted: checks of one params share one
    for pos, mr_id, verdict, patterns, key, said in plan:
        notes = new.get(mr_id)
        if not notes:
            continue
        state = lasting.get(key)
        if state is None or state[0] is not patterns:  # never run: re-run it
            out[pos] = None
            continue
        if state[1] is not None:  # the first fitting review stays the first
            if fitted is not None and key in fitted:  # an earlier check of the same params just passed on it
                out[pos] = fitted[key]
            continue
        for hit in notes:
            if hit[2] != verdict:
                continue
            body = hit[1]
            for p in patterns:  # ``_says_all``, inlined (a frame on the step that runs once an episode)
                if not _says(body, p):
                    break
            else:
                lasting[key] = (patterns, hit)
                verdict_of: tuple[float, str, dict[str, Any]] = (
                    1.0,
                    f"the agent's {verdict} review (note {hit[0]}) says {said}: {_snippet(body)}",
                    _NO_DETAILS,
                )
                out[pos] = verdict_of
                if fitted is None:
                    fitted = {key: verdict_of}
                else:
                    fitted[key] = verdict_of
                break
    return out


@check_fn(
    "merge_request_review_says",
    reads=("merge_request_notes",),
    touches=_review_touches,
    on_changes=_review_on_changes,
    on_step=_review_step,
)
def merge_request_review_says(
    ctx: GradingContext,
    mr_id: int,
    verdict: Literal["approve", "request_changes"],
    patterns: Annotated[list[Regex], Field(min_length=1)],
) -> CheckOutcome:
    """A ``verdict`` review the agent gave on request ``mr_id`` says every one of ``patterns`` (any case).

    A review's body is the summary the author reads first: a "request changes" that says which rules broke
    tells them what to fix before they open a single comment.
    """
    hit = next(
        ((n.id, n.body or "") for n in _notes(ctx, mr_id) if n.kind == verdict and _says_all(n.body or "", patterns)),
        None,
    )
    ctx.lasting[("review_says", mr_id, verdict, id(patterns))] = (patterns, hit)
    score, evidence, _ = _review_verdict(hit, verdict, patterns)
    return CheckOutcome.of(score == 1.0, evidence)
