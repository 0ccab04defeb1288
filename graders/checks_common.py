"""Shared pieces of the check library: param types validated at rubric load, cheap lookups, evidence text.

Every lookup here is an indexed query (a unique column or a primary key) kept for the duration of one grade
(and across the per-step progress updates until the employees table changes, ``GradingContext.kept``), or a
walk over this episode's change log; none scans a table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator
from sqlalchemy import Table

from graders.base import GradingContext
from worlds.rawsql import Sql
from worlds.schema import Base

_EMPLOYEE_ID = "SELECT id FROM employees WHERE username = ?"
_USERNAMES = "SELECT id, username FROM employees WHERE id IN ({}) ORDER BY id"


def _valid_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return pattern


def _known_table(name: str) -> str:
    if name not in Base.metadata.tables or name == "change_log":
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(sorted(Base.metadata.tables))}")
    return name


Regex = Annotated[str, AfterValidator(_valid_regex)]
"""A regular expression, matched case-insensitively with ``re.search``; compiled once at rubric load."""

TableName = Annotated[str, AfterValidator(_known_table)]
"""A world table name (``change_log`` excluded)."""

Who = str
"""An employee: ``"actor"`` (the agent's employee) or a username."""


@lru_cache(maxsize=1024)
def rx(pattern: str) -> re.Pattern[str]:
    """The compiled, case-insensitive form of a rubric pattern."""
    return re.compile(pattern, re.IGNORECASE)


def table(name: str) -> Table:
    """The schema table called ``name``."""
    return Base.metadata.tables[name]


def employee_id(ctx: GradingContext, who: Who) -> int | None:
    """Resolve ``"actor"`` or a username to an employee id (unique index, memoised); None if unknown."""
    if who == "actor":
        return ctx.actor_id
    found: int | None = ctx.kept(
        ("employee_id", who), ("employees",), lambda: Sql.of(ctx.session).scalar(_EMPLOYEE_ID, (who,))
    )
    return found


def usernames(ctx: GradingContext, ids: Iterable[int | None]) -> dict[int, str]:
    """Usernames of the given employee ids (primary-key lookups, memoised)."""
    given = [i for i in ids if i is not None]
    known: dict[int, str | None] = ctx.kept("usernames", ("employees",), dict)
    wanted = sorted({i for i in given if i not in known})
    if wanted:
        known.update(dict.fromkeys(wanted))
        known.update((emp_id, name) for emp_id, name in rows_in(ctx, _USERNAMES, wanted))
    return {i: name for i in given if (name := known.get(i)) is not None}


_AHEAD = {
    "assignee": ("employees", "SELECT id, username FROM employees WHERE username = ? ORDER BY id"),
    "sprint": ("sprints", "SELECT id, name FROM sprints WHERE name = ? ORDER BY id"),
}
"""The field values named by another table's row (an assignee by username, a sprint by name): that table, and
the ids of the rows that carry a name."""


def name_ahead(ctx: GradingContext, field: str, value: Any) -> None:
    """Look up the ids carrying an expected assignee's or sprint's name once, as progress starts.

    The step that assigns the ticket (or plans it into a sprint) then needs no lookup to name the new value:
    most such steps set the expected one. Kept with how many rows of that table the log had changed, since a
    name is not the ticket's to keep: a later change to the table makes it unknown again (the usual lookup
    decides). Several sprints may share a name: any of them names the value.
    """
    if type(value) is not str or field not in _AHEAD:
        return
    table, sql = _AHEAD[field]
    ids = frozenset(row[0] for row in Sql.of(ctx.session).all(sql, (value,)) if row[1] == value)  # exactly it
    ctx.lasting[("named_ahead", field, value)] = (len(ctx.changed_rows(table)), ids)


def named_ahead(ctx: GradingContext, field: str, value: Any, actual: Any) -> bool:
    """Whether id ``actual`` is one ``name_ahead`` found carrying ``value``, with no row of its table changed since."""
    found: tuple[int, frozenset[Any]] | None = ctx.lasting.get(("named_ahead", field, value))
    if found is None or actual not in found[1]:
        return False
    # ``ctx.changed_rows``, read from its index directly: a method's frame less on the step that files a ticket
    return found[0] == len(ctx._by_table.get(_AHEAD[field][0], ()))


def inserted_ids(ctx: GradingContext, table_name: str) -> list[Any]:
    """Primary keys (first column) of the rows this episode inserted into ``table_name``, in log order."""
    return [row.key[0] for row in ctx.changed_rows(table_name) if row.op == "insert"]


def rows_in(ctx: GradingContext, sql: str, ids: Sequence[Any]) -> list[Any]:
    """Rows of a raw query whose ``IN ({})`` takes ``ids`` (``worlds.rawsql``; an empty list runs nothing).

    Why raw: a Core statement with an expanding ``IN`` costs ~100 us of compilation per run, and the per-step
    progress score re-runs these lookups after the steps that wrote the rows; the driver runs them in ~10 us.
    Select only columns whose stored form is what the check compares (ids, text; not timestamps or JSON).
    """
    if not ids:
        return []
    return Sql.of(ctx.session).all(sql.format(", ".join("?" * len(ids))), list(ids))


def snippet(text: str, width: int = 60) -> str:
    """``text`` on one line, cut to ``width`` characters, quoted for evidence."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 1] + "…")


def listing(items: list[str], limit: int = 3) -> str:
    """The first ``limit`` items joined with '; ' and a count of the rest."""
    head = "; ".join(items[:limit])
    return head + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def who_label(who: Who | None) -> str:
    """How an author param reads in evidence."""
    return "anyone" if who is None else who


_MAILBOXES = (
    "SELECT b.id, b.address, b.employee_id, e.username FROM mailboxes b LEFT JOIN employees e ON e.id = b.employee_id"
    " WHERE b.id IN ({}) ORDER BY b.id"
)
_MAIL_IMAGE = frozenset({"subject", "body", "sender_mailbox_id"})


def mailboxes(ctx: GradingContext, ids: Iterable[int]) -> dict[int, tuple[str, int | None, str | None] | None]:
    """(address, employee id, username) of mailboxes by id (None: no such mailbox), kept until either changes."""
    known: dict[int, tuple[str, int | None, str | None] | None] = ctx.kept(
        "mailboxes", ("mailboxes", "employees"), dict
    )
    missing = sorted({i for i in ids if i not in known})
    if missing:
        known.update(dict.fromkeys(missing))
        known.update({r[0]: (r[1], r[2], r[3]) for r in rows_in(ctx, _MAILBOXES, missing)})
    return known


def logged_mail(ctx: GradingContext) -> tuple[dict[int, Any], dict[int, list[int]]] | None:
    """This episode's new messages (their logged insert images) and each one's recipient mailboxes, in log order.

    A message or recipient row that was only inserted is, in the final state, what its insert logged, so the
    checks on sent mail read it from the log rather than query it after every mail the agent sends. None when
    one was edited or deleted afterwards, or its image lacks a column (then the database is read).
    """

    def read() -> tuple[dict[int, Any], dict[int, list[int]]] | None:
        messages: dict[int, Any] = {}
        for row in ctx.changed_rows("mail_messages"):
            if row.op != "insert" or not _MAIL_IMAGE.issubset(row.changes):
                return None
            messages[row.key[0]] = row.changes
        recipients: dict[int, list[int]] = {}
        for row in ctx.changed_rows("mail_recipients"):
            if row.op != "insert" or "message_id" not in row.changes or "mailbox_id" not in row.changes:
                return None
            recipients.setdefault(row.changes["message_id"], []).append(row.changes["mailbox_id"])
        return messages, recipients

    found: tuple[dict[int, Any], dict[int, list[int]]] | None = ctx.kept(
        "logged_mail", ("mail_messages", "mail_recipients"), read
    )
    return found
