"""One call a step for all of a rubric's text-document checks of one function (``check_fn(on_step=)``).

A status report's rubric asks a fact per section: a dozen or more ``doc_section_contains`` checks on one
document, and a write changes one section of it. Asking each check after each write (a ``touches`` call per
row, an evaluator that runs the whole function) cost 15 to 20 µs a check, most of it re-deciding what the
write could not move. Here the checks of a function are grouped by document, and a step costs:

- per document no row of the step concerns (``checks_docs._doc_touches``): nothing;
- per document whose content did not change (the same parse, ``checks_docs._sections``): nothing;
- per check on a document a write changed: the pattern is matched against the changed sections only (the
  others keep their answer, ``Sections.matching``), and the function runs again only when one of those
  answers moved or the check's evidence quotes a changed section. A check left out keeps its verdict.

Exactness rests on one rule: a verdict is kept only when the parse it was taken on is the one the new parse
was diffed against (``Sections.prev``), so a write this hook did not see (a check re-run by the framework
after a rename, say) sends every check of the document back to its function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.base import GradingContext
from graders.changes import ChangeRow

Verdict = tuple[float, str, dict[str, Any]]
_MISSING = ("no document",)
"""The state of a document no row names: its checks' verdicts say so and stand until a row does."""


def _unmoved_contains(sections: Any, kw: dict[str, Any]) -> bool:
    """Whether ``doc_section_contains``' verdict on ``sections.prev`` stands on ``sections``.

    It reads which sections the heading names, which match the pattern, and (when failing) the text of the
    named ones: with the same headings, no changed section under the heading and no changed answer, none moved.
    """
    if not sections.same_heads:
        return False
    under = sections.under.get(kw["heading"])
    changed = sections.changed
    if under is None or any(under[i] for i in changed):
        return False
    return _same_answers(sections, kw["pattern"], False, lambda old, new: old == new)


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


UNMOVED: dict[str, Callable[[Any, dict[str, Any]], bool]] = {
    "doc_section_contains": _unmoved_contains,
    "doc_mentions_none": _unmoved_absent,
    "doc_lacks": _unmoved_lacks,
    "doc_mentions_once": _unmoved_once,
}


def text_step(check: str, function: Callable[[], Callable[..., Any]]) -> Callable[..., dict[int, Verdict | None]]:
    """The ``on_step`` evaluator of text check ``check`` (``function()`` gives the check function, when called).

    ``function`` is a thunk because the check is defined after the evaluator is registered with it, and
    ``checks_items`` loads the office readers only when a rubric uses them.
    """
    unmoved = UNMOVED[check]

    def on_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> dict[int, Verdict | None]:
        from graders.checks_docs import _UNKNOWN, _doc_touches, _document, _sections  # lazy: office readers

        key = ("text_step", check, id(params))
        plan = ctx.lasting.get(key)
        if plan is None or plan[0] is not params:
            by_doc: dict[str, list[int]] = {}
            for pos, kw in enumerate(params):
                by_doc.setdefault(kw["document"], []).append(pos)
            plan = ctx.lasting[key] = (params, by_doc, {})
        states: dict[str, Any] = plan[2]
        out: dict[int, Verdict | None] = {}
        fn = function()
        for document, positions in plan[1].items():
            if not any(_doc_touches(ctx, r, document) for r in rows):
                continue
            row = _document(ctx, document, query=False)
            if row is _UNKNOWN:
                states.pop(document, None)
                out.update(dict.fromkeys(positions))
                continue
            was = states.get(document)
            if row is None:
                state: Any = _MISSING
                if was is _MISSING:
                    continue
            elif row[2] == "text":
                state = _sections(ctx, row)
                if was is state:
                    continue
            else:
                state = None  # a spreadsheet or the like: its checks fail fast, so each is asked again
            diffed = state is not None and state is not _MISSING and was is state.prev and state.changed is not None
            for pos in positions:
                kw = params[pos]
                if diffed and unmoved(state, kw):
                    continue
                found = fn(ctx, **kw)
                out[pos] = (found.score, found.evidence, dict(found.details))
            states[document] = state
        return out

    return on_step


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
