"""The share checks' ``on_step`` on a step that only grants: one lookup by document (and grantee), no document loop.

``text_step.share_step`` settles a rubric's share checks (``doc_shared_with``, ``doc_shared_only_with``,
``doc_not_shared``) by walking every document of the rubric at each step that touched a share, reading each
one's kept lookup, and asking the checks of the document the new share names. A data-request rubric shares
four times an episode and has a share check per request and document, so that walk was most of a share
step's cost (issue 14). Here the step that does nothing but insert shares, each naming its document and
person (every ``docs_share`` step), is settled from a plan kept for the episode: the rubric's checks by the
document id their path names now (and, for ``doc_shared_with``, by grantee), so a grant asks the checks of its
document (and person) only and hands back nothing for the rest (their verdicts stand, by identity).

The plan is built from ``checks_docs._document(query=False)`` (no query: the lookups the first grade kept,
folded from the log) and the grantees' employee ids, and stands while the log holds as many ``documents``,
``doc_folders`` and ``employees`` rows as when it was built: a step that changed none of them cannot move the
row a path names or the person a username names. Any other step (a document created or written, a share
raised or removed, an employee changed), a plan a lookup cannot settle without a query, and the first call
(with no rows) go to ``text_step.share_step`` itself, which decides them as before.

What a grant moves, by ``scope`` (as ``share_step`` says it):

- ``"grantee"``: the checks of its document and person;
- ``"only"``: the checks of its document; when each of the step's grantees of that document is one of a
  check's ``usernames``, only the names its evidence lists moved (``LATER``);
- ``"episode"``: the checks of its document; every other check only in the count of shares its evidence
  quotes (``LATER``).

A check whose path names no document is left out: its verdict says so, whatever is shared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.base import GradingContext
from graders.changes import ChangeRow
from graders.registry import LATER
from graders.text_match import Verdict
from graders.text_step import _docs, share_step

_TOKEN_TABLES = ("documents", "doc_folders", "employees")
_NO_ROWS: list[ChangeRow] = []


class _Plan:
    """A rubric's share checks of one function by the document id their path names, kept for the episode.

    ``token`` is how many ``documents``, ``doc_folders`` and ``employees`` rows the log held when it was built:
    while it holds as many, no path names another row and no username another person.
    """

    __slots__ = ("by_doc", "by_grant", "held", "later", "names", "params", "token")

    def __init__(self, params: list[dict[str, Any]], token: tuple[int, int, int], held: Callable[..., Verdict]) -> None:
        self.params = params
        self.token = token
        self.held = held  # ``checks_docs._held_verdict``, handed in by ``_plan`` (which has the module at hand)
        self.by_doc: dict[Any, list[int]] = {}  # document id -> the checks on it, in rubric order (not "grantee")
        # "grantee": (document id, employee id) -> the checks a grant to that person may move (not the owner's: its
        # verdict says it owns the document, whatever is shared)
        self.by_grant: dict[tuple[Any, Any], list[int]] = {}
        self.names: dict[int, frozenset[Any]] = {}  # "only": each check's usernames' employee ids
        self.later: dict[int, Any] = {}  # "episode": every check on an existing document, LATER


def _grants_of(rows: list[ChangeRow]) -> dict[Any, set[Any]] | None:
    """A step's new shares as document id -> grantees, or None unless every row is one naming both."""
    grants: dict[Any, set[Any]] = {}
    for r in rows:
        ch = r.changes
        if r.table != "document_shares" or r.op != "insert" or "document_id" not in ch or "employee_id" not in ch:
            return None
        found = grants.get(ch["document_id"])
        if found is None:
            grants[ch["document_id"]] = {ch["employee_id"]}
        else:
            found.add(ch["employee_id"])
    return grants


def _token(ctx: GradingContext) -> tuple[int, int, int]:
    by_table = ctx._by_table
    return (
        len(by_table.get("documents", _NO_ROWS)),
        len(by_table.get("doc_folders", _NO_ROWS)),
        len(by_table.get("employees", _NO_ROWS)),
    )


def _plan(
    ctx: GradingContext, params: list[dict[str, Any]], scope: str, token: tuple[int, int, int] | None = None
) -> _Plan | None:
    """The plan for ``params`` as the log stands now, or None when a path's row cannot be told without a query.

    ``token`` is the log's lengths (``_token``) when the caller has worked them out already.
    """
    docs = _docs()
    unknown, document, employee = docs._UNKNOWN, docs._document, docs._employee
    plan = _Plan(params, _token(ctx) if token is None else token, docs._held_verdict)
    for pos, kw in enumerate(params):
        row = document(ctx, kw["document"], query=False)
        if row is unknown:
            return None  # left to ``share_step``, which looks it up; the plan is built at a later grant
        if row is None:
            continue  # no document: its verdict says so whatever is shared
        doc_id = row[0]
        if scope == "grantee":  # a grant finds its checks by document and person: ``by_doc`` is not read
            emp = employee(ctx, kw["username"])
            if emp is not None and emp != row[7]:  # an unknown person's verdict, and the owner's, stand
                plan.by_grant.setdefault((doc_id, emp), []).append(pos)
            continue
        plan.by_doc.setdefault(doc_id, []).append(pos)
        if scope == "only":
            plan.names[pos] = frozenset(employee(ctx, u) for u in kw["usernames"])
        else:
            plan.later[pos] = LATER
    ctx.lasting[("share_plan", id(params))] = plan
    return plan


def share_checks(
    verdict: Callable[[], Callable[..., Verdict]], scope: str
) -> Callable[..., dict[int, Verdict | Any | None]]:
    """The ``on_step`` evaluator of a share check function: a grant settled from the plan, else ``share_step``.

    ``verdict()`` gives the function's verdict code, as for ``share_step``; ``scope`` is ``"grantee"``,
    ``"only"`` or ``"episode"`` (the module docstring says what each moves). A ``doc_shared_with`` check a
    grant moves is decided by ``checks_docs._held_verdict`` (its document and person are the plan's).
    """
    general = share_step(verdict, scope)

    def on_step(ctx: GradingContext, rows: list[ChangeRow], params: list[dict[str, Any]]) -> dict[int, Any]:
        if not rows:  # progress starts: every lookup was just made, so the plan is built in the step that grades all
            first = general(ctx, rows, params)
            _plan(ctx, params, scope)
            return first
        if rows[0].table != "document_shares":  # a document written or created, an employee changed: no grant
            return general(ctx, rows, params)
        # the step's grants and the tables' log lengths, worked out by the first of the share functions asked
        step = ctx.memo.get("share_grants")
        if step is None or step[0] is not rows:
            found = _grants_of(rows)
            step = ctx.memo["share_grants"] = (rows, found, None if found is None else _token(ctx))
        grants = step[1]
        if grants is None:
            return general(ctx, rows, params)
        plan: _Plan | None = ctx.lasting.get(("share_plan", id(params)))
        if plan is None or plan.params is not params or plan.token != step[2]:
            plan = _plan(ctx, params, scope, step[2])
            if plan is None:
                return general(ctx, rows, params)
        out: dict[int, Any] = {}
        if scope == "grantee":
            held = plan.held
            for doc_id, grantees in grants.items():
                for emp in grantees:
                    for pos in plan.by_grant.get((doc_id, emp), ()):
                        kw = params[pos]
                        out[pos] = held(ctx, doc_id, emp, kw["document"], kw["username"], kw["permission"])
            return out
        if scope == "episode":
            out.update(plan.later)
        decide: Callable[..., Verdict] | None = None
        for doc_id, grantees in grants.items():
            for pos in plan.by_doc.get(doc_id, ()):
                if scope == "only" and grantees <= plan.names[pos]:
                    out[pos] = LATER  # each new share to a person it names: who else holds it did not move
                    continue
                if decide is None:
                    decide = verdict()
                out[pos] = decide(ctx, **params[pos])
        return out

    return on_step
