"""State checks on tickets, rows and the change log itself.

Costs: ticket checks are unique-index lookups on ``tickets.key`` (kept per grade, and across progress steps
until a ticket changes; one ``IN`` query for a batch of keys); ``row_exists`` looks only at rows this episode
changed unless told to use an index; the change-log checks walk this episode's log plus at most one
primary-key query per table for natural keys.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping
from datetime import date, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Annotated, Any, Literal

from pydantic import Field
from sqlalchemy import (
    Boolean,
    Date,
    DateTime,
    Integer,
    Select,
    String,
    TypeDecorator,
    UniqueConstraint,
    and_,
    bindparam,
    select,
)
from sqlalchemy import Enum as SAEnum

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import (
    Regex,
    TableName,
    Who,
    employee_id,
    inserted_ids,
    listing,
    name_ahead,
    named_ahead,
    rx,
    snippet,
    usernames,
)
from graders.checks_common import table as schema_table
from graders.collateral import AllowedChange as AllowedChange  # where rubrics and tests have always found it
from graders.collateral import no_collateral_changes as no_collateral_changes
from graders.registry import LATER, Later
from worlds.rawsql import Sql
from worlds.schema import TicketComment, TicketLabel
from worlds.workflow import PRIORITIES, STATUSES, TICKET_TYPES

TicketField = Literal["status", "priority", "assignee", "type", "story_points", "sprint", "title"]
"""Comparable ticket fields; ``assignee`` is a username and ``sprint`` a sprint name (None = unset)."""
FieldValue = str | int | None
Scope = Literal["actor", "all"]
Primitive = str | int | float | bool | None

_LABELS = select(TicketLabel.label).where(TicketLabel.ticket_id == bindparam("tid")).order_by(TicketLabel.label)
_COMMENTS = (
    select(TicketComment.id, TicketComment.author_id, TicketComment.body)
    .where(TicketComment.ticket_id == bindparam("tid"))
    .order_by(TicketComment.id)
)
_NEW_COMMENTS = _COMMENTS.where(TicketComment.id.in_(bindparam("ids", expanding=True)))
_ALLOWED_VALUES = {"status": STATUSES, "priority": PRIORITIES, "type": TICKET_TYPES}


def _check_value(field: str, value: FieldValue, where: str = "") -> None:
    allowed = _ALLOWED_VALUES.get(field)
    if allowed is not None and value not in allowed:
        raise ValueError(f"{where}{field} value {value!r} is not one of {', '.join(allowed)}")
    if field == "story_points" and value is not None and not isinstance(value, int):
        raise ValueError(f"{where}story_points value must be an integer or null, got {value!r}")


_TICKETS_SQL = (
    "SELECT t.id, t.key, t.status, t.priority, t.type, t.title, t.story_points, e.username, s.name FROM tickets t"
    " LEFT JOIN employees e ON e.id = t.assignee_id LEFT JOIN sprints s ON s.id = t.sprint_id WHERE t.key IN ({})"
    " ORDER BY t.key"
)
_SPRINT_NAME = "SELECT name FROM sprints WHERE id = ?"
_TICKET_COLUMNS = ("id", "key", "status", "priority", "type", "title", "story_points", "assignee", "sprint")


def _tickets(ctx: GradingContext, keys: list[str]) -> dict[str, Mapping[str, Any] | None]:
    """Final-state ticket rows by key (None if missing): one indexed IN query for keys not yet memoised.

    A raw statement (``worlds.rawsql``): the per-step progress score runs this after every ticket write, and a
    Core statement with an expanding IN costs ~10x the lookup.
    """
    known: dict[str, Mapping[str, Any] | None] = ctx.kept("tickets", ("tickets", "employees", "sprints"), dict)
    missing = sorted({k for k in keys if k not in known})
    if missing:
        known.update(dict.fromkeys(missing))
        natural: dict[tuple[str, Any], Any] = ctx.lasting.setdefault("natural_by_id", {})
        sql = _TICKETS_SQL.format(", ".join("?" * len(missing)))
        for row in Sql.of(ctx.session).all(sql, missing):
            known[row[1]] = dict(zip(_TICKET_COLUMNS, row, strict=True))
            natural[("tickets", row[0])] = row[1]  # a ticket keeps its key: what no_collateral_changes names it by
    return {k: known[k] for k in keys}


def _mismatch(key: str, ticket: Mapping[str, Any], field: str, value: FieldValue) -> str | None:
    actual = ticket[field]
    return None if actual == value else f"{key} {field} is {actual!r} (expected {value!r})"


def _ticket_rows(ctx: GradingContext, keys: list[str]) -> set[tuple[str, tuple[Any, ...]]] | None:
    """The ticket rows a check on ``keys`` reads (for ``graders.progress``); None if one is not filed yet."""
    found = _tickets(ctx, keys)
    if any(row is None for row in found.values()):
        return None
    return {("tickets", (int(row["id"]),)) for row in found.values() if row is not None}


def _field_rows(ctx: GradingContext, key: str, field: str, value: Any) -> set[tuple[str, tuple[Any, ...]]] | None:
    """``ticket_field_equals``' ``rows`` hook: the ticket's row; the expected assignee or sprint named ahead."""
    name_ahead(ctx, field, value)
    return _ticket_rows(ctx, [key])


_COLUMN = {"assignee": "assignee_id", "sprint": "sprint_id"}
"""The tickets column a field is read from, where it is not the field's own name."""


def field_columns(fields: Any) -> frozenset[str]:
    """The ``tickets`` columns a check on ``fields`` reads (for ``graders.progress``: other edits cannot matter)."""
    return frozenset(_COLUMN.get(f, f) for f in fields)


def _field_after(
    ctx: GradingContext, rows: list[ChangeRow], key: str, field: TicketField, value: FieldValue
) -> tuple[float, str, dict[str, Any]] | None:
    """``ticket_field_equals`` decided from the ticket's updates in one step, without a query.

    An update's change-log row carries the column's new value, which is what the final-state query would read
    (the last update of the step wins). ``assignee`` maps the id to a username (kept until employees change),
    ``sprint`` the id to the sprint's name (kept until sprints change); an insert or a delete leaves it to the
    query.
    """
    column = _COLUMN.get(field, field)
    found = None
    for r in rows:
        if r.op != "update":
            return None
        if column in r.changes:
            found = r.changes[column]
    if found is None:
        return None
    actual = found[1]
    if field == "assignee" and actual is not None:
        known: dict[int, str | None] = ctx.kept("usernames", ("employees",), dict)  # usernames()'s cache
        if actual in known:
            actual = known[actual]
        elif named_ahead(ctx, field, value, actual):  # the expected assignee: no lookup
            actual = value
        else:
            actual = usernames(ctx, [actual]).get(actual)
        if actual is None:
            return None
    elif field == "sprint" and actual is not None:
        names: dict[int, str] = ctx.kept("sprint_names", ("sprints",), dict)
        if actual not in names and named_ahead(ctx, field, value, actual):  # the expected sprint: no lookup
            names[actual] = str(value)  # a name: name_ahead keeps text only
        elif actual not in names:
            found_name = Sql.of(ctx.session).all(_SPRINT_NAME, [actual])
            if not found_name:
                return None
            names[actual] = found_name[0][0]
        actual = names[actual]
    return (1.0 if actual == value else 0.0), f"{key} {field} is {actual!r} (expected {value!r})", {"actual": actual}


@check_fn(
    "ticket_field_equals",
    validate=lambda kw: _check_value(kw["field"], kw["value"]),
    reads=("tickets",),
    rows=_field_rows,
    columns=lambda field, **_: field_columns([field]),
    on_rows=_field_after,
)
def ticket_field_equals(ctx: GradingContext, key: str, field: TicketField, value: FieldValue) -> CheckOutcome:
    """Ticket ``key`` has ``field`` equal to ``value`` in the final state (no partial credit)."""
    ticket = _tickets(ctx, [key])[key]
    if ticket is None:
        return CheckOutcome.of(False, f"ticket {key} not found")
    return CheckOutcome.of(
        ticket[field] == value,
        f"{key} {field} is {ticket[field]!r} (expected {value!r})",
        actual=ticket[field],
    )


def _check_expected(kw: dict[str, Any]) -> None:
    for key, fields in kw["expected"].items():
        if not fields:
            raise ValueError(f"expected[{key!r}] names no fields")
        for field, value in fields.items():
            _check_value(field, value, where=f"expected[{key!r}]: ")


@check_fn(
    "ticket_fields_equal",
    validate=_check_expected,
    reads=("tickets",),
    rows=lambda ctx, expected: _ticket_rows(ctx, list(expected)),
    columns=lambda expected: field_columns({f for fields in expected.values() for f in fields}),
)
def ticket_fields_equal(
    ctx: GradingContext, expected: Annotated[dict[str, dict[TicketField, FieldValue]], Field(min_length=1)]
) -> CheckOutcome:
    """Several tickets' fields at once; partial credit = fraction of (ticket, field) pairs that match."""
    keys = sorted(expected)
    found = _tickets(ctx, keys)
    total, problems = 0, list[str]()
    for key in keys:
        ticket = found[key]
        total += len(expected[key])
        if ticket is None:
            problems.extend(f"{key} not found ({field})" for field in expected[key])
            continue
        problems.extend(p for f, v in expected[key].items() if (p := _mismatch(key, ticket, f, v)) is not None)
    good = total - len(problems)
    evidence = f"{good}/{total} ticket fields match" + (f"; mismatches: {listing(problems, 5)}" if problems else "")
    return CheckOutcome(score=good / total, evidence=evidence, details={"mismatches": problems})


@check_fn("ticket_has_label")
def ticket_has_label(ctx: GradingContext, key: str, label: str, present: bool = True) -> CheckOutcome:
    """Ticket ``key`` carries ``label`` (or, with ``present=False``, no longer carries it)."""
    ticket = _tickets(ctx, [key])[key]
    if ticket is None:
        return CheckOutcome.of(False, f"ticket {key} not found")
    labels = list(ctx.db.execute(_LABELS, {"tid": ticket["id"]}).scalars())
    has = label in labels
    verb = "has" if has else "lacks"
    return CheckOutcome.of(has == present, f"{key} {verb} label {label!r} (labels: {labels})", labels=labels)


@check_fn("ticket_comment_matches")
def ticket_comment_matches(
    ctx: GradingContext, key: str, pattern: Regex, author: Who | None = None, new_only: bool = True
) -> CheckOutcome:
    """A comment on ``key`` matches ``pattern``; by default only comments added during the episode count."""
    ticket = _tickets(ctx, [key])[key]
    if ticket is None:
        return CheckOutcome.of(False, f"ticket {key} not found")
    author_id = employee_id(ctx, author) if author is not None else None
    if author is not None and author_id is None:
        return CheckOutcome.of(False, f"unknown employee {author!r}")
    if new_only:
        found = ctx.db.execute(_NEW_COMMENTS, {"tid": ticket["id"], "ids": inserted_ids(ctx, "ticket_comments")})
    else:
        found = ctx.db.execute(_COMMENTS, {"tid": ticket["id"]})
    rows = [r for r in found if author_id in (None, r.author_id)]
    scope = f"{'new ' if new_only else ''}comments on {key} by {author or 'anyone'}"
    hits = [r for r in rows if rx(pattern).search(r.body)]
    if hits:
        first = f"#{hits[0].id} {snippet(hits[0].body)}"
        evidence = f"{len(hits)} of {len(rows)} {scope} match /{pattern}/: {first}"
        return CheckOutcome.of(True, evidence, comment_ids=[r.id for r in hits])
    seen = listing([f"#{r.id} {snippet(r.body)}" for r in rows])
    return CheckOutcome.of(False, f"none of {len(rows)} {scope} match /{pattern}/" + (f": {seen}" if seen else ""))


def _check_where(kw: dict[str, Any]) -> None:
    tbl = schema_table(kw["table"])
    unknown = sorted(set(kw["where"]) - set(tbl.c.keys()))
    if unknown:
        raise ValueError(f"where column {unknown[0]!r} is not in table {kw['table']!r}")
    if len(tbl.primary_key) != 1:
        raise ValueError(f"table {kw['table']!r} has a composite primary key, which row_exists does not support")
    if kw["scope"] == "any":
        indexed = {c.name for c in tbl.primary_key} | {c.name for c in tbl.c if c.index or c.unique}
        indexed |= {next(iter(i.columns)).name for i in tbl.indexes}
        indexed |= {next(iter(u.columns)).name for u in tbl.constraints if hasattr(u, "columns") and len(u.columns)}
        if not indexed & set(kw["where"]):
            raise ValueError(
                f"scope 'any' needs an indexed where column of {kw['table']!r}: {', '.join(sorted(indexed))}"
            )


def _bind_value(column: Any, value: Primitive) -> Any:
    if isinstance(value, str) and isinstance(column.type, DateTime):
        return datetime.fromisoformat(value)
    if isinstance(value, str) and isinstance(column.type, Date):
        return date.fromisoformat(value)
    return value


@lru_cache(maxsize=256)
def _row_stmt(table_name: str, cols: tuple[str, ...], nulls: tuple[str, ...], changed: bool) -> Select[Any]:
    """The lookup statement for one shape of ``where``, built once and reused with new bind values."""
    tbl = schema_table(table_name)
    pk = next(iter(tbl.primary_key))
    conds = [tbl.c[c] == bindparam(f"w_{c}") for c in cols] + [tbl.c[c].is_(None) for c in nulls]
    if changed:
        conds.append(pk.in_(bindparam("ids", expanding=True)))
    return select(pk).where(and_(*conds)).order_by(pk).limit(1)


def _plain_where(tbl: Any, where: Mapping[str, Primitive]) -> bool:
    """Whether ``where`` compares only text and integer columns (not a type decorator) with str, int or None."""
    for column, value in where.items():
        kind = type(tbl.c[column].type)
        if not issubclass(kind, String | Integer) or issubclass(kind, TypeDecorator | SAEnum):
            return False
        if value is not None and type(value) not in (str, int):
            return False
    return True


@lru_cache(maxsize=256)
def _row_sql(table_name: str, cols: tuple[str, ...], nulls: tuple[str, ...], changed: bool) -> str:
    """``_row_stmt`` as raw SQL (names checked at load: a schema table, its columns); ``{}`` takes the ids."""
    pk = next(iter(schema_table(table_name).primary_key)).name
    conds = [f"{c} = ?" for c in cols] + [f"{c} IS NULL" for c in nulls] + [f"{pk} IN ({{}})"] * changed
    return f"SELECT {pk} FROM {table_name} WHERE {' AND '.join(conds)} ORDER BY {pk} LIMIT 1"  # noqa: S608


def _changed_ids(ctx: GradingContext, table: str) -> set[Any]:
    """Primary keys of the rows of ``table`` this episode inserted or updated (``row_exists``' ``ids``).

    Kept in ``ctx.lasting`` and grown by the log's new rows: the log only grows, so a step costs its own rows.
    """
    key = ("changed_ids", table)
    seen: list[Any] | None = ctx.lasting.get(key)
    rows = ctx.changed_rows(table)
    if seen is None or seen[0] > len(rows):
        seen = ctx.lasting[key] = [0, set()]
    ids: set[Any] = seen[1]
    if seen[0] < len(rows):  # only the rows logged since: a step that wrote none of them costs two lookups
        for n in range(seen[0], len(rows)):
            row = rows[n]
            if row.op != "delete":
                ids.add(row.key[0])
        seen[0] = len(rows)
    return ids


def _typed_like(tbl: Any, where: Mapping[str, Primitive]) -> bool:
    """Whether each ``where`` value has its column's Python type (str, int; bool for a flag) or is None.

    Then Python's ``==`` is the database's ``=`` (no affinity conversion of ``'1'`` to 1, no enum names).
    """
    for column, value in where.items():
        kind = type(tbl.c[column].type)
        if issubclass(kind, TypeDecorator | SAEnum) or value is None:
            if value is not None:
                return False
            continue
        want: type | None = str if issubclass(kind, String) else int if issubclass(kind, Integer) else None
        if issubclass(kind, Boolean):
            want = bool  # stored as 0/1: True = 1 in SQL as in Python
        if want is None or type(value) is not want:
            return False
    return True


def _row_now(
    ctx: GradingContext, table: str, pk: str, key: Any, columns: tuple[str, ...], *, query: bool = True
) -> Any:
    """Row ``key``'s ``columns`` now: read once (``ctx.lasting``), then the log's later changes of it folded in.

    Every write goes through the change log, so a value read at seq N plus the row's logged changes after N
    is the value now; None when the row does not exist. With ``query=False`` a row not read yet is not read:
    one the episode inserted is folded from its insert on (it did not exist before), and for any other the
    answer is ``_UNKNOWN``.
    """
    memo_key = ("row_now", table, key, columns)
    base = ctx.lasting.get(memo_key)
    if base is None and not query:
        if ("row_unlogged", table, key) in ctx.lasting:
            return _UNKNOWN
        first = None
        for r in ctx.changed_rows(table):  # a loop, not ``next`` over a generator: no frame of its own a step
            if r.key[0] == key:
                first = r
                break
        if first is None or first.op != "insert":
            ctx.lasting[("row_unlogged", table, key)] = True  # its first change stays its first
            return _UNKNOWN
        base = ctx.lasting[memo_key] = [0, None]  # before the episode's first change: the insert is folded in
    if base is None:
        found = Sql.of(ctx.session).one(
            f"SELECT {', '.join(columns)} FROM {table} WHERE {pk} = ?",  # noqa: S608 - schema names checked at load
            (key,),
        )
        values = dict(zip(columns, found, strict=True)) if found is not None else None
        base = ctx.lasting[memo_key] = [ctx.log[-1].seq if ctx.log else 0, values]
        return dict(values) if values is not None else None
    values = dict(base[1]) if base[1] is not None else None
    rows = ctx.changed_rows(table)
    for r in rows[bisect_right(rows, base[0], key=_seq) :]:  # the table's rows logged after the base
        if r.key[0] != key:
            continue
        if r.op == "delete":
            values = None
        elif r.op == "insert":  # a column the insert did not log: KeyError, re-run (built in C: no comprehension)
            values = dict(zip(columns, map(r.changes.__getitem__, columns), strict=True))
        elif values is not None:
            for c, v in r.changes.items():  # a loop, not a generator handed to ``update`` (a frame per change)
                if c in values:
                    values[c] = v[1]
    base[:] = [ctx.log[-1].seq if ctx.log else 0, values]
    return dict(values) if values is not None else None


_UNKNOWN = object()

_KEY_TYPES = frozenset((str, int))
"""The types of a unique value ``row_exists`` names a row by (``type(v) in (str, int)``, read in C for a tuple)."""


_seq = itemgetter(0)
"""A change row's seq, its first field (the key ``_row_now`` bisects a table's rows by): a C getter, not a frame
for each step of the bisection."""


def _unique_column(tbl: Any, where: Mapping[str, Primitive]) -> str | None:
    """A column of ``where`` that names at most one row (unique on its own: a ticket's key), or None."""
    for name in sorted(where):
        if where[name] is None or type(where[name]) not in (str, int):
            continue
        if tbl.c[name].unique or any(
            index.unique and [c.name for c in index.columns] == [name] for index in tbl.indexes
        ):
            return name
    return None


def _unique_columns(tbl: Any, where: Mapping[str, Primitive]) -> tuple[str, ...] | None:
    """Columns of ``where`` that name at most one row, or None.

    One unique on its own (a ticket's key) if there is one, else a unique constraint or index whose columns
    ``where`` all gives (a document's share: its document and employee).
    """
    single = _unique_column(tbl, where)
    if single is not None:
        return (single,)
    given = {name for name, value in where.items() if type(value) in (str, int)}
    sets = [tuple(c.name for c in u.columns) for u in tbl.constraints if isinstance(u, UniqueConstraint)]
    sets += [tuple(c.name for c in index.columns) for index in tbl.indexes if index.unique]
    return next((cols for cols in sorted(sets) if cols and given.issuperset(cols)), None)


def _row_id(ctx: GradingContext, table: str, pk: str, columns: tuple[str, ...], values: tuple[Any, ...]) -> Any:
    """The primary key of the row whose unique ``columns`` hold ``values`` (None: no such row).

    Read once an episode, unless the episode inserted a row with ``values``: unique columns let only that row
    hold them (any earlier holder was deleted or changed first), so the last such insert names it. ``_UNKNOWN``
    once an update changed one of the columns or an insert logged a value of another type: then the check's
    own query decides.
    """
    # what the log did to the columns, folded on from its new rows: [rows seen, the row each inserted value
    # went to (the last), whether the log can no longer tell]
    taint: list[Any] = ctx.lasting.get(("row_id_taint", table, columns)) or [0, {}, False]
    rows = ctx.changed_rows(table)
    if taint[0] > len(rows):
        taint = [0, {}, False]
    ctx.lasting[("row_id_taint", table, columns)] = taint
    for r in rows[taint[0] :]:
        if r.op == "insert":
            new = tuple(map(r.changes.get, columns))
            if _KEY_TYPES.issuperset(map(type, new)):
                taint[1][new] = r.key[0]
            elif any(v is not None and type(v) not in (str, int) for v in new):
                taint[2] = True  # a value of another type: say unknown for every value
        elif r.op == "update" and not r.changes.keys().isdisjoint(columns):
            taint[2] = True
    taint[0] = len(rows)
    if taint[2]:
        return _UNKNOWN
    if values in taint[1]:
        return taint[1][values]
    memo_key = ("row_id", table, columns, values)
    if memo_key not in ctx.lasting:
        match = " AND ".join(f"{c} = ?" for c in columns)
        found = Sql.of(ctx.session).one(f"SELECT {pk} FROM {table} WHERE {match}", values)  # noqa: S608
        ctx.lasting[memo_key] = found[0] if found is not None else None
    return ctx.lasting[memo_key]


def _row_exists_on_changes(
    ctx: GradingContext,
    rows: list[ChangeRow],
    table: str,
    where: dict[str, Primitive],
    scope: Literal["changed", "any"] = "changed",
) -> tuple[float, str, dict[str, Any]] | Later | None:
    """``row_exists``' verdict from the log, for a ``where`` that names its row by primary key or unique columns.

    A decision on one of many requests updates one row; each other request's check only needs to know that
    its own row did not change and how many rows the episode changed, which the log tells. So the verdict it
    gave is kept with the row it names and how many changes of the table it saw, and stands when the table's
    changes since (``rows`` and any a held check was not asked about) neither touch that row nor give its
    unique value to another; a failing ``scope='changed'`` verdict then only counts the changed rows anew, and
    asked with a step's rows it answers ``LATER`` instead (its score stands; a decision on one of ten requests
    would otherwise rebuild and store the text of every undecided one), so ``graders.progress`` asks it again
    with no rows only when the results are asked for.
    """
    memo_key = ("row_verdict", table, id(where), scope)
    kept = ctx.lasting.get(memo_key)
    table_rows = ctx.changed_rows(table)
    logged = len(table_rows)
    if kept is not None and kept[0] is where and kept[1] <= logged:
        _, _, key, unique, value, verdict, changed = kept
        for r in table_rows[kept[1] :]:  # every change of the table since the verdict, not only this step's
            if r.key[0] == key or (
                unique is not None
                and (
                    (r.op == "insert" and tuple(map(r.changes.get, unique)) == value)
                    or (r.op == "update" and not r.changes.keys().isdisjoint(unique))
                )
            ):
                break
        else:
            if scope == "changed" and verdict[0] < 1.0 and len(_changed_ids(ctx, table)) != changed:
                # its row is as it was, so it still fails: only the count of changed rows checked moved
                if rows:  # a step (progress): the score stands; the kept count is behind, so asked with none
                    ctx.lasting[memo_key] = (where, logged, key, unique, value, verdict, changed)  # it rebuilds
                    return LATER
                changed = len(_changed_ids(ctx, table))
                shown = ctx.lasting[("row_plan", table, id(where))][4]
                verdict = (0.0, f"no changed row of {table} matches {shown} ({changed} changed rows checked)", {})
            ctx.lasting[memo_key] = (where, logged, key, unique, value, verdict, changed)
            return verdict  # type: ignore[no-any-return]
    found = _row_exists_from_log(ctx, table, where, scope)
    if found is None:
        ctx.lasting.pop(memo_key, None)
        return None
    verdict, key, unique = found
    if key is _SCAN:  # any changed row may match: nothing to keep it by (and nothing holds it)
        ctx.lasting.pop(memo_key, None)
        return verdict
    changed = len(_changed_ids(ctx, table)) if scope == "changed" else 0
    value = tuple(map(where.__getitem__, unique)) if unique is not None else None
    ctx.lasting[memo_key] = (where, logged, key, unique, value, verdict, changed)
    return verdict


def _row_exists_from_log(
    ctx: GradingContext, table: str, where: dict[str, Primitive], scope: Literal["changed", "any"]
) -> tuple[tuple[float, str, dict[str, Any]], Any, tuple[str, ...] | None] | None:
    """``row_exists``' verdict worked out from the log and the kept row values; None if the log cannot tell.

    With it, the primary key of the row ``where`` names and the unique columns it was named by (None: by its
    primary key), what ``_row_exists_on_changes`` keeps to tell whether later rows can move the verdict.
    """
    plan = ctx.lasting.get(("row_plan", table, id(where)))
    if plan is None or plan[0] is not where:  # what never changes for one check: worked out once an episode
        tbl = schema_table(table)
        pk = next(iter(tbl.primary_key)).name
        unique = (pk,) if type(where.get(pk)) is int else _unique_columns(tbl, where)
        typed = _typed_like(tbl, where)
        plan = (where, pk, unique, typed, json.dumps(where, sort_keys=True), tuple(sorted(where)))
        ctx.lasting[("row_plan", table, id(where))] = plan
    _, pk, unique, typed, shown, columns = plan
    if not typed or (unique is None and scope != "changed"):
        return None
    if unique is None:
        scanned = _row_scan(ctx, table, pk, where, shown, columns)
        return None if scanned is None else (scanned, _SCAN, None)
    key = where[pk] if unique == (pk,) else _row_id(ctx, table, pk, unique, tuple(map(where.__getitem__, unique)))
    if key is _UNKNOWN:
        return None
    named_by = None if unique == (pk,) else unique
    checked = ""
    if scope == "changed":
        ids = _changed_ids(ctx, table)
        if key is not None and key not in ids and ("row_now", table, key, columns) not in ctx.lasting:
            _row_now(ctx, table, pk, key, columns)  # read ahead (progress asks this as it starts): the step that
            # changes the row folds its logged change in rather than querying it
        if not ids:
            return (0.0, f"no row of {table} changed during the episode (wanted {shown})", {}), key, named_by
        checked = f" ({len(ids)} changed rows checked)"
        values = None
        if key in ids:  # a row the episode inserted is folded from its insert (a share just granted): no query
            values = _row_now(ctx, table, pk, key, columns, query=False)
            if values is _UNKNOWN:  # one it only updated: read once, its later changes folded in
                values = _row_now(ctx, table, pk, key, columns)
    else:
        values = _row_now(ctx, table, pk, key, columns) if key is not None else None
    if values is not None:
        matches = _matches(values, where)
        if matches is None:
            return None
        if not matches:
            values = None
    if values is None:
        missing = f"no {'changed ' if scope == 'changed' else ''}row of {table} matches {shown}{checked}"
        return (0.0, missing, {}), key, named_by
    return (1.0, f"{table} row {[key]} matches {shown}", {"key": [key]}), key, named_by


_SCAN = object()
"""What ``_row_exists_from_log`` names as the row of a verdict found by scanning the changed rows (no one row)."""


def _matches(values: Mapping[str, Any], where: Mapping[str, Primitive]) -> bool | None:
    """Whether a row's ``values`` equal ``where`` column by column; None when a value's type leaves it to SQL."""
    for column, want in where.items():
        have = values[column]
        if have is None or want is None:
            if have is not want:
                return False
        elif type(have) is not type(want) and not (type(want) is bool and type(have) is int):
            return None  # a value the log holds in another type: leave it to the query (a flag read as 0/1)
        elif have != want:
            return False
    return True


def _row_scan(
    ctx: GradingContext, table: str, pk: str, where: dict[str, Primitive], shown: str, columns: tuple[str, ...]
) -> tuple[float, str, dict[str, Any]] | None:
    """``row_exists``' ``scope='changed'`` verdict for a ``where`` no unique columns name: the changed rows, scanned.

    The check's query takes the first changed row (by primary key) that equals ``where``; so does this, on the
    rows' values as the log leaves them. A row the episode inserted is its insert with the later changes folded
    in, so a request the agent files is judged without a query; None when a row before the match was only
    updated and not read yet (the query decides, as before).
    """
    ids = _changed_ids(ctx, table)
    if not ids:
        return 0.0, f"no row of {table} changed during the episode (wanted {shown})", {}
    for key in sorted(ids):
        values = _row_now(ctx, table, pk, key, columns, query=False)
        if values is _UNKNOWN:
            return None
        if values is None:
            continue
        matches = _matches(values, where)
        if matches is None:
            return None
        if matches:
            return 1.0, f"{table} row {[key]} matches {shown}", {"key": [key]}
    return 0.0, f"no changed row of {table} matches {shown} ({len(ids)} changed rows checked)", {}


def _row_exists_holds(
    ctx: GradingContext, table: str, where: dict[str, Primitive], scope: Literal["changed", "any"] = "changed"
) -> tuple[list[tuple[str, tuple[Any, ...]]], tuple[Any, ...], list[tuple[str, str]], tuple[str, ...]] | None:
    """What must change before the verdict ``_row_exists_on_changes`` just gave can (``check_fn(holds=)``).

    The row it names; and, for a row named by unique columns, an insert into the table that carries the
    unique values (named as ``(table, columns, values)``; any insert when a value is not plain) or an update of
    one of those columns (it may move the key). None while the verdict counts the changed rows
    None when the verdict was not given on the latest log. A failing ``scope='changed'`` verdict counts the
    changed rows, so any change of the table moves its evidence (not its score): it names the table a fourth
    time, as one whose every change leaves its evidence behind (``graders.progress`` asks it for results).
    """
    kept = ctx.lasting.get(("row_verdict", table, id(where), scope))
    if kept is None or kept[0] is not where or kept[1] != len(ctx.changed_rows(table)):
        return None
    _, _, key, unique, value, verdict, _ = kept
    rows = [(table, (key,))] if key is not None else []
    lags = (table,) if scope == "changed" and verdict[0] < 1.0 else ()
    if unique is None:
        return rows, (), [], lags
    # an insert moves the verdict only if it carries the unique values (the kept verdict's test is ``==`` on
    # them): named with them, so a grant of another document or employee wakes none of the other share checks
    inserts: tuple[Any, ...] = ((table, unique, value),) if _KEY_TYPES.issuperset(map(type, value)) else (table,)
    return rows, inserts, list(zip([table] * len(unique), unique, strict=True)), lags


@check_fn(
    "row_exists",
    validate=_check_where,
    reads=lambda table, **_: (table,),
    on_changes=_row_exists_on_changes,
    holds=_row_exists_holds,
)
def row_exists(
    ctx: GradingContext,
    table: TableName,
    where: Annotated[dict[str, Primitive], Field(min_length=1)],
    scope: Literal["changed", "any"] = "changed",
) -> CheckOutcome:
    """A row of ``table`` equals ``where`` column by column.

    ``scope='changed'`` (default) looks only at rows this episode inserted or updated, O(rows changed);
    ``scope='any'`` needs an indexed column in ``where`` (checked at load) so the lookup uses the index.
    """
    tbl = schema_table(table)
    cols = tuple(sorted(c for c, v in where.items() if v is not None))
    nulls = tuple(sorted(c for c, v in where.items() if v is None))
    binds: dict[str, Any] = {f"w_{c}": _bind_value(tbl.c[c], where[c]) for c in cols}
    shown = json.dumps(where, sort_keys=True)
    checked = ""
    if scope == "changed":
        binds["ids"] = sorted({r.key[0] for r in ctx.changed_rows(table) if r.op != "delete"})
        if not binds["ids"]:
            return CheckOutcome.of(False, f"no row of {table} changed during the episode (wanted {shown})")
        checked = f" ({len(binds['ids'])} changed rows checked)"
    raw = _row_sql(table, cols, nulls, scope == "changed") if _plain_where(tbl, where) else None
    if raw is not None:  # plain text and integer columns: the raw statement, a Core expanding IN compiles per run
        ids = binds.get("ids", [])
        params = [binds[f"w_{c}"] for c in cols] + list(ids)
        found = Sql.of(ctx.session).one(raw.format(", ".join("?" * len(ids))), params)
    else:
        found = ctx.db.execute(_row_stmt(table, cols, nulls, scope == "changed"), binds).first()
    if found is None:
        return CheckOutcome.of(
            False, f"no {'changed ' if scope == 'changed' else ''}row of {table} matches {shown}{checked}"
        )
    return CheckOutcome.of(True, f"{table} row {list(found)} matches {shown}", key=list(found))


def _scoped(ctx: GradingContext, scope: Scope, table_name: str | None = None) -> list[ChangeRow]:
    rows = ctx.log if table_name is None else ctx.changed_rows(table_name)
    return [r for r in rows if scope == "all" or r.actor_id == ctx.actor_id]


@check_fn("change_count_at_most")
def change_count_at_most(
    ctx: GradingContext,
    n: Annotated[int, Field(ge=0)],
    table: TableName | None = None,
    scope: Scope = "actor",
) -> CheckOutcome:
    """At most ``n`` changes (row inserts/updates/deletes) in the episode, optionally to one table."""
    rows = _scoped(ctx, scope, table)
    per_table = ", ".join(f"{t} {c}" for t, c in sorted(Counter(r.table for r in rows).items()))
    where = f" to {table}" if table else ""
    by = " by the agent" if scope == "actor" else ""
    return CheckOutcome.of(
        len(rows) <= n, f"{len(rows)} changes{where}{by} (at most {n})" + (f": {per_table}" if rows else "")
    )
