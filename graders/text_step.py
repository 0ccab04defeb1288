"""One call a step for all of a rubric's document checks of one function (``check_fn(on_step=)``).

A status report's rubric asks a fact per section: a dozen or more ``doc_section_contains`` checks on one
document, and a write changes one section of it. Asking each check after each write (a ``touches`` call per
row, an evaluator that runs the whole function) cost 15 to 20 µs a check, most of it re-deciding what the
write could not move. Here the checks of a function are grouped by document, and a step costs:

- per document no row of the step concerns (``checks_docs._doc_touches``): nothing;
- per document whose content did not change (the same parse, ``checks_docs._sections``): nothing;
- per check on a document a write changed: the pattern is matched against the changed sections only (the
  others keep their answer, ``Sections.matching``), and the check is decided again only when one of those
  answers moved (a check whose evidence alone quotes a changed section is answered ``LATER``: its score
  stands, and the framework asks its function for the evidence when results are). A check left out keeps its
  verdict;
- per check on a document a step created or rewrote into another number of sections (no diff): its verdict on
  the new parse.

A check decided again takes its function's verdict on the parse from ``text_match.VERDICTS``, the code the
function itself returns, without the function's frames, its lookups of the document and its ``CheckOutcome``
(the checks on a new document cost 15 to 25 of them a step). The share checks have their own evaluator,
``share_step``: a share moves only its document's checks.

Exactness rests on one rule: a verdict is kept only when the parse it was taken on is the one the new parse
was diffed against (``Sections.prev``), so a write this hook did not see (a check re-run by the framework
after a rename, say) decides every check of the document again on the new parse, as for a new document.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from itertools import compress
from typing import Any

from graders.base import GradingContext
from graders.changes import ChangeRow
from graders.registry import LATER
from graders.text_match import BATCHES, VERDICTS, Verdict, _needles

_MISSING = ("no document",)
_DOCS: list[Any] = []


def _docs() -> Any:
    """``graders.checks_docs``, imported on first use (a meeting rubric does not load the office readers).

    Kept here: an import statement in an evaluator costs a microsecond or two at every step.
    """
    if not _DOCS:
        import graders.checks_docs as docs

        _DOCS.append(docs)
    return _DOCS[0]


"""The state of a document no row names: its checks' verdicts say so and stand until a row does."""

_UNTOUCHED: Any = object()
"""``read``'s answer for a document none of the step's rows may change: its checks' verdicts stand."""
_UNSETTLED: Any = object()
"""``read``'s answer for a document the logged rows cannot settle (``checks_docs._UNKNOWN``): its checks re-run."""


def read(ctx: GradingContext, rows: list[ChangeRow], document: str) -> Any:
    """What every text function's ``on_step`` reads of ``document`` at this step, worked out by the first to ask.

    ``_UNTOUCHED`` when no row of ``rows`` may change it (``checks_docs._doc_touches``), ``_UNSETTLED`` when the
    fold cannot tell which row it is now, ``_MISSING`` when there is none, its parse (``checks_docs._sections``)
    for a text document, None for another kind (a spreadsheet: its checks fail fast and are asked again). A
    report's rubric has three or four text functions, each an ``on_step`` group handed the same rows: the row
    loop, the document's fold and the parse's lookup ran once per function (their frames cold after the tool
    call), where now the first call keeps the answer in ``ctx.memo`` (emptied by every step that changed a row)
    and the others read it there, for as long as they are handed the same list of rows.
    """
    key = ("text_read", document)
    kept = ctx.memo.get(key)
    if kept is not None and kept[0] is rows:
        return kept[1]
    docs = _docs()  # lazy: office readers
    for r in rows:
        if docs._doc_touches(ctx, r, document):
            break
    else:
        ctx.memo[key] = (rows, _UNTOUCHED)
        return _UNTOUCHED
    row = docs._document(ctx, document, query=False)
    if row is docs._UNKNOWN:
        state: Any = _UNSETTLED
    elif row is None:
        state = _MISSING
    elif row[2] == "text":
        state = docs._sections(ctx, row)
    else:
        state = None
    ctx.memo[key] = (rows, state)
    return state


def _unmoved_contains(sections: Any, kw: dict[str, Any]) -> Any:
    """Whether ``doc_section_contains``' verdict on ``sections.prev`` stands on ``sections``: True, ``LATER``, False.

    It reads which sections the heading names, which match the pattern, and, only when no named section
    matches, the text of the named ones (the evidence quotes it): with the same headings and the same answer
    on each changed section, nothing it reads moved unless it quotes a changed section. Then its score, which
    reads only the first two, stands and its evidence alone moved: ``LATER`` (the framework asks the function
    for it when results are asked), rather than a verdict built for a text nobody reads during the episode.
    """
    under = sections.under.get(kw["heading"]) if sections.same_heads else None
    if under is None:
        return False
    pattern = kw["pattern"]
    old = sections.prev.found.get((pattern, False))  # as ``_same_answers``, inlined: most checks come here
    if old is None:
        return False
    new = sections.matching(pattern)
    quoted = False
    for i in sections.changed:
        if old[i] != new[i]:
            return False
        quoted = quoted or under[i]
    if not quoted or any(compress(under, old)):  # a named section matched: no text quoted
        return True
    return LATER


def _unmoved_absent(sections: Any, kw: dict[str, Any]) -> bool:
    """Whether ``doc_mentions_none``'s verdict stands: no changed section matched before or matches now."""
    return _same_answers(sections, kw["pattern"], True, lambda old, new: not old and not new)


def _unmoved_lacks(sections: Any, kw: dict[str, Any]) -> bool:
    """Whether ``doc_lacks``' verdict stands: each changed section's answer is the same, a hit under its old heading."""
    prev = sections.prev
    return _same_answers(sections, kw["pattern"], True, lambda old, new: old == new) and all(
        not sections.found[(kw["pattern"], True)][i] or sections[i][0] == prev[i][0] for i in sections.changed
    )


def _unmoved_once(sections: Any, kw: dict[str, Any]) -> bool:
    """Whether ``doc_mentions_once``' verdict stands: the same headings, no changed text mentioning it then or now."""
    return sections.same_heads and _same_answers(sections, kw["pattern"], False, lambda old, new: not old and not new)


def _same_answers(sections: Any, pattern: str, joined: bool, same: Callable[[bool, bool], bool]) -> bool:
    """Whether ``same(old, new)`` holds for the pattern's answer on each changed section.

    The old answers are those the checks asked of the previous parse (every check on the document was decided
    on it); a pattern never asked there (its check failed before matching) is not known, and the check re-runs.
    """
    old = sections.prev.found.get((pattern, joined))
    if old is None:
        return False
    new = sections.matching(pattern, joined)
    return all(same(old[i], new[i]) for i in sections.changed)


UNMOVED: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "doc_section_contains": _unmoved_contains,
    "doc_mentions_none": _unmoved_absent,
    "doc_lacks": _unmoved_lacks,
    "doc_mentions_once": _unmoved_once,
}
QUIET: dict[str, tuple[bool, bool, bool]] = {
    "doc_section_contains": (False, True, True),
    "doc_mentions_none": (True, False, False),
    "doc_lacks": (True, False, False),
    "doc_mentions_once": (False, True, False),
}
"""Per function, for the quick test: whether it reads the ``joined`` forms, needs the same headings (it reads
them) and quotes the text of the sections its ``heading`` names (so a changed one there is never quiet)."""


def text_step(check: str, function: Callable[[], Callable[..., Any]]) -> Callable[..., dict[int, Verdict | None]]:
    """The ``on_step`` evaluator of text check ``check`` (``function()`` gives the check function, when called).

    ``function`` is a thunk because the check is defined after the evaluator is registered with it, and
    ``checks_items`` loads the office readers only when a rubric uses them. On a changed document, first the
    quick test (no changed section holds the pattern's literal text, before or after the write: a substring
    search per distinct needle of the function's checks, ``decide``), then, per check it leaves, ``UNMOVED``'s
    (the pattern matched on the changed sections), and only then the function.
    """
    unmoved = UNMOVED[check]
    joined, heads, quotes = QUIET[check]
    verdict = VERDICTS[check]
    batch = BATCHES.get(check)

    def on_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> dict[int, Verdict | None]:
        key = ("text_step", check, id(params))
        plan = ctx.lasting.get(key)
        if plan is None or plan[0] is not params:
            by_doc: dict[str, list[int]] = {}
            for pos, kw in enumerate(params):
                by_doc.setdefault(kw["document"], []).append(pos)
            # per document, its checks as ``decide`` reads them
            needles = {d: quiet_plan(at, params, joined, quotes) for d, at in by_doc.items()}
            # each document's checks as ``BATCHES`` reads them: built here, in the step that grades everything
            planned = {d: batch[0](at, params) for d, at in by_doc.items()} if batch is not None else {}
            plan = ctx.lasting[key] = (params, by_doc, {}, needles, planned)
        states: dict[str, Any] = plan[2]
        out: dict[int, Verdict | None] = {}
        for document, positions in plan[1].items():
            state = read(ctx, rows, document)  # one read a step for every text function of the rubric
            if state is _UNTOUCHED:
                continue
            if state is _UNSETTLED:
                states.pop(document, None)
                out.update(dict.fromkeys(positions))
                continue
            was = states.get(document)
            if was is state and state is not None:  # the same parse (or still no document): its verdicts stand
                continue
            # the verdicts stand on the parse before this one: this hook's last (``was``), or, when it never saw
            # the document change (``was`` None), the one the checks were all run on when progress started or
            # after the fold could not tell (the framework re-runs them on the document's current parse)
            diffed = (
                state is not None
                and state is not _MISSING
                and state.changed is not None
                and (was is state.prev or (was is None and state.prev is not None))
            )
            if diffed:
                decide(state, document, plan[3][document], out, unmoved, verdict, joined, heads)
            elif state is not None and state is not _MISSING:  # a new parse: each check's verdict on it
                if batch is not None:  # in one frame, each check's params read once per episode
                    batch[1](state, plan[4][document], out)
                else:
                    for pos in positions:
                        out[pos] = verdict(state, document, params[pos])
            else:
                fn = function()
                for pos in positions:
                    found = fn(ctx, **params[pos])
                    out[pos] = (found.score, found.evidence, dict(found.details))
            states[document] = state
        return out

    return on_step


Checked = tuple[int, dict[str, Any], tuple[str, bool]]
"""A check as ``decide`` reads it: its position in its function's params, its params, its answers' key."""

QuietPlan = tuple[
    list[Checked], tuple[str, ...], dict[str, list[int]], list[int], dict[str, list[int]], frozenset[tuple[str, bool]]
]
"""One document's checks of one function as ``decide`` reads them, worked out once per episode (``quiet_plan``)."""


def quiet_plan(positions: list[int], params: list[dict[str, Any]], joined: bool, quotes: bool) -> QuietPlan:
    """``decide``'s reading of the checks at ``positions``: each check, and its checks by needle and by heading.

    The checks (position, params, answers' key); the distinct needles of their patterns (``text_match._needles``)
    and, by needle, the checks (indexes into the first list) a changed section holding it may move; the checks
    whose pattern has no needle a search could use (never quiet); by heading, when the function quotes the text
    of the sections its heading names (``quotes``), the checks naming it; the answers' keys of the checks that
    may be quiet (carried over from the parse before while they are).
    """
    checks: list[Checked] = []
    by_needle: dict[str, list[int]] = {}
    loud: list[int] = []
    by_heading: dict[str, list[int]] = {}
    keys: set[tuple[str, bool]] = set()
    for k, pos in enumerate(positions):
        kw = params[pos]
        answers = (kw["pattern"], joined)
        checks.append((pos, kw, answers))
        needles = _needles(kw["pattern"])
        if needles is None or any("\0" in n for n in needles):  # a NUL joins the changed texts below
            loud.append(k)
        else:
            keys.add(answers)
            for n in needles:
                by_needle.setdefault(n, []).append(k)
        if quotes:
            by_heading.setdefault(kw["heading"], []).append(k)
    return checks, tuple(by_needle), by_needle, loud, by_heading, frozenset(keys)


def decide(
    state: Any,
    document: str,
    plan: QuietPlan,
    out: dict[int, Verdict | None],
    unmoved: Callable[[Any, dict[str, Any]], Any],
    verdict: Callable[[Any, str, dict[str, Any]], Verdict],
    joined: bool,
    heads: bool,
) -> None:
    """Settle one function's checks of one document a write changed: kept when quiet or unmoved, else decided.

    A check is quiet when no changed section held or holds one of its pattern's ``needles``, so the pattern
    matched there neither time (the literal prefilter's rule, ``text_match._needles``: on ASCII text every match
    contains a needle; a text whose lowered form could hide a match, None in ``text_match._lowered``, makes
    nothing quiet, nor do moved headings for a function that reads them). Which needles a write moved is asked
    once per needle, of the changed sections' old and new lowered forms joined by NUL (in C, by ``map``), not
    once per check and section; a quiet check keeps its verdict, and its answers carry over to the new parse (the
    next write diffs them), unless the function quotes the text of a changed section its heading names. The
    others are tested by ``unmoved`` (their pattern's answers on the changed sections) and decided when moved;
    one whose score stands but whose evidence quotes a changed section is answered ``LATER`` (its evidence is
    the function's, built when results are asked).
    """
    checks, needles, by_needle, loud, by_heading, keys = plan
    prev, changed = state.prev, state.changed
    old_lows, new_lows = (prev.joined_low, state.joined_low) if joined else (prev.texts_low, state.texts_low)
    lows = [*map(old_lows.__getitem__, changed), *map(new_lows.__getitem__, changed)]  # in C: no frame each
    asked: Any
    if None in lows or (heads and not state.same_heads):  # nothing is quiet
        asked = range(len(checks))
    else:
        text = "\0".join(lows)
        asked = set(loud)
        for n in compress(needles, map(text.__contains__, needles)):
            asked.update(by_needle[n])
        # the answers of the others are the same on the new parse: carried over (in C but for the last loop)
        found, kept = state.found, prev.found
        carry = keys.difference({checks[k][2] for k in asked}, found).intersection(kept)
        for answers in carry:
            found[answers] = kept[answers]
        if by_heading:  # ``doc_section_contains``: a failing verdict quotes the text of the sections named
            under_of = state.under
            for heading, at in by_heading.items():
                under = under_of.get(heading)
                if under is None:
                    asked.update(at)
                elif any(map(under.__getitem__, changed)):  # a changed section is named: asked unless no text is quoted
                    for k in at:  # (with the same answers, it is quoted iff no named section matched)
                        if k not in asked:
                            old = kept.get(checks[k][2])
                            if old is None or not any(compress(under, old)):
                                asked.add(k)
        asked = sorted(asked)
    for k in asked:
        pos, kw, _ = checks[k]
        stands = unmoved(state, kw)
        if stands is True:
            continue
        out[pos] = LATER if stands is LATER else verdict(state, document, kw)


def shares_decided(function: Callable[[], Callable[..., Any]]) -> Callable[..., Verdict | None]:
    """An ``on_changes`` evaluator for a share check: its function on the shares the log leaves, no re-run.

    The document row is the one ``checks_docs._document`` folds from the logged images and its shares those
    ``_grants`` folds, so the function costs no query; a change the fold cannot settle (a rename, a deletion)
    or a change of the employees (a username may name another person now) leaves the check to a re-run.
    """

    def on_changes(ctx: GradingContext, rows: list[ChangeRow], document: str, **kwargs: Any) -> Verdict | None:
        from graders.checks_docs import _UNKNOWN, _document  # lazy: office readers

        if any(r.table == "employees" for r in rows) or _document(ctx, document, query=False) is _UNKNOWN:
            return None
        found = function()(ctx, document=document, **kwargs)
        return found.score, found.evidence, dict(found.details)

    return on_changes


_NOBODY: frozenset[Any] = frozenset()
"""No grantee: a document none of the step's new shares names."""

_TEXT_ONLY = frozenset({"content", "blob_sha256", "version", "updated_at"})
"""The columns a write of a document's text changes: none of them is read by a share check."""


def share_step(verdict: Callable[[], Callable[..., Verdict]], scope: str) -> Callable[..., dict[int, Verdict | None]]:
    """The ``on_step`` evaluator of a share check function: one call a step settles all of a rubric's.

    ``verdict()`` gives the function's verdict code (``(ctx, **params) -> (score, evidence, details)``, what the
    function itself returns as its outcome): a check asked costs no ``CheckOutcome`` and no copy of it.

    A data-request rubric asks a share check per request and document (who got it, nobody else did): a share
    step moves the checks of one document, and of those only the grantee's. Asking every check after every
    step (a ``touches`` call per row, ``shares_decided`` per check) cost a frame chain per check; here a step's
    rows are read once and the checks they cannot move are left out (their verdicts stand). What ``scope``
    says may move a check, besides a change of its document's row (``checks_docs._doc_touches``):

    - ``"grantee"`` (``doc_shared_with``): a share of its document given to its person (by employee id);
    - ``"only"`` (``doc_shared_only_with``): any share of its document; a new one given to one of its
      ``usernames`` adds a name its evidence lists and none its score reads (who else holds it): ``LATER``;
    - ``"episode"`` (``doc_not_shared``): a share of its document; a new share of another document moves only
      the count its evidence quotes (the shares of its own stand, so its score does): ``LATER``, read when
      ``results`` asks.

    A write that changes only a document's text (``_TEXT_ONLY``) moves none of them. A share updated or
    deleted (the log's image may not name its document), a change of the employees (a
    username may name another person now) or a document the fold cannot settle (``_UNKNOWN``) sends the
    checks back to their function as ``shares_decided`` does; the ones asked are decided by the function on
    the folded rows, no query.
    """

    def on_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> dict[int, Verdict | None]:
        docs = _docs()  # lazy: office readers
        _UNKNOWN, _doc_touches, _document, _employee = docs._UNKNOWN, docs._doc_touches, docs._document, docs._employee
        key = ("share_step", id(params))
        plan = ctx.lasting.get(key)
        if plan is None or plan[0] is not params:
            by_doc: dict[str, list[int]] = {}
            for pos, kw in enumerate(params):
                by_doc.setdefault(kw["document"], []).append(pos)
            plan = ctx.lasting[key] = (params, by_doc)
        if not rows:
            return {}
        # read once for every document: when each row is a new share naming its document and person (a share
        # step), the grantees by document id; else None, and each document reads the rows itself
        shares: dict[Any, set[Any]] | None = {}
        for r in rows:
            if r.table == "employees":
                return dict.fromkeys(range(len(params)))
            if shares is not None:
                ch = r.changes
                if r.table == "document_shares" and r.op == "insert" and "document_id" in ch and "employee_id" in ch:
                    shares.setdefault(ch["document_id"], set()).add(ch["employee_id"])
                else:
                    shares = None
        decide: Callable[..., Verdict] | None = None  # the function's verdict code, fetched when a check is asked
        out: dict[int, Any] = {}
        for document, positions in plan[1].items():
            every = False  # every check of the document may move
            grantees: AbstractSet[Any] = _NOBODY  # else the checks of these employees (scopes "grantee", "only")
            counted = False  # a share of another document: only the count a "episode" check quotes moved
            lookup = ctx.lasting.get(("doc_lookup", document))
            doc_id = lookup[2][0] if lookup is not None and lookup[2] is not None else None
            if shares is not None and doc_id is not None:  # new shares only: the row loop's answer, by document
                if scope == "episode":
                    every, counted = doc_id in shares, True
                else:
                    grantees = shares.get(doc_id, _NOBODY)
                rows_left: list[ChangeRow] = []
            else:
                rows_left, grantees = rows, (granted := set())
            for r in rows_left:
                if r.table == "documents":  # a write of its text moves no share check: its owner or place may
                    every = (r.op != "update" or not _TEXT_ONLY.issuperset(r.changes)) and _doc_touches(
                        ctx, r, document
                    )
                elif r.op != "insert" or doc_id is None or "document_id" not in r.changes:
                    every = True  # a share that moved or went, or a document not found when last read
                elif scope == "episode":
                    every = r.changes["document_id"] == doc_id
                    counted = True
                elif r.changes.get("document_id") == doc_id:
                    if "employee_id" in r.changes:
                        granted.add(r.changes["employee_id"])
                    else:
                        every = True
                if every:
                    break
            if not every and not grantees:
                if counted:  # its document's shares stand, so does its score: its evidence is read when asked
                    out.update(dict.fromkeys(positions, LATER))
                continue
            if _document(ctx, document, query=False) is _UNKNOWN:
                out.update(dict.fromkeys(positions))
                continue
            for pos in positions:
                kw = params[pos]
                if every:
                    pass
                elif scope == "grantee":
                    if _employee(ctx, kw["username"]) not in grantees:
                        continue
                elif grantees <= {_employee(ctx, u) for u in kw["usernames"]}:
                    out[pos] = LATER  # new shares, each to a person it names: nobody else holds it now than before
                    continue
                if decide is None:
                    decide = verdict()
                out[pos] = decide(ctx, **kw)
        return out

    return on_step
