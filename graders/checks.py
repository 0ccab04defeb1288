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
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from functools import cached_property, lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
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
    rows_in,
    rx,
    snippet,
    usernames,
)
from graders.checks_common import table as schema_table
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
        first = next((r for r in ctx.changed_rows(table) if r.key[0] == key), None)
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
        elif r.op == "insert":
            values = {c: r.changes[c] for c in columns}  # a column the insert did not log: KeyError, re-run
        elif values is not None:
            values.update((c, v[1]) for c, v in r.changes.items() if c in values)
    base[:] = [ctx.log[-1].seq if ctx.log else 0, values]
    return dict(values) if values is not None else None


_UNKNOWN = object()


def _seq(row: ChangeRow) -> int:
    """A change row's seq (the key ``_row_now`` bisects a table's rows by)."""
    return row.seq


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
            new = tuple(r.changes.get(c) for c in columns)
            if all(type(v) in (str, int) for v in new):
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
) -> tuple[float, str, dict[str, Any]] | None:
    """``row_exists``' verdict from the log, for a ``where`` that names its row by primary key or unique columns.

    A decision on one of many requests updates one row; each other request's check only needs to know that
    its own row did not change and how many rows the episode changed, which the log tells. So the verdict it
    gave is kept with the row it names and how many changes of the table it saw, and stands when the table's
    changes since (``rows`` and any a held check was not asked about) neither touch that row nor give its
    unique value to another; a failing ``scope='changed'`` verdict then only counts the changed rows anew.
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
                    (r.op == "insert" and tuple(r.changes.get(c) for c in unique) == value)
                    or (r.op == "update" and not r.changes.keys().isdisjoint(unique))
                )
            ):
                break
        else:
            if scope == "changed" and verdict[0] < 1.0 and len(_changed_ids(ctx, table)) != changed:
                # its row is as it was, so it still fails: only the count of changed rows checked moved
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
    value = tuple(where[c] for c in unique) if unique is not None else None
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
    key = where[pk] if unique == (pk,) else _row_id(ctx, table, pk, unique, tuple(where[c] for c in unique))
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
        values = _row_now(ctx, table, pk, key, columns) if key in ids else None
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
) -> tuple[list[tuple[str, tuple[Any, ...]]], tuple[str, ...], list[tuple[str, str]]] | None:
    """What must change before the verdict ``_row_exists_on_changes`` just gave can (``check_fn(holds=)``).

    The row it names; and, for a row named by unique columns, an insert into the table (it may carry the key)
    or an update of one of those columns (it may move the key). None while the verdict counts the changed rows
    (a failing ``scope='changed'`` one: any newly changed row moves it) or was not given on the latest log.
    """
    kept = ctx.lasting.get(("row_verdict", table, id(where), scope))
    if kept is None or kept[0] is not where or kept[1] != len(ctx.changed_rows(table)):
        return None
    _, _, key, unique, _, verdict, _ = kept
    if scope == "changed" and verdict[0] < 1.0:
        return None
    rows = [(table, (key,))] if key is not None else []
    if unique is None:
        return rows, (), []
    return rows, (table,), [(table, c) for c in unique]


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


class AllowedChange(BaseModel):
    """Changes a task may make: to ``table``, optionally only ``fields`` (updates), ``keys`` and ``ops``.

    ``keys`` match a row's primary key (as text) or its natural key: ``tickets.key``, ``projects.key``,
    ``employees.username``, ``mailboxes.address``, ``channels.name``; ticket children (labels, comments,
    status changes) match their ticket's key. Without ``ops``, a rule with ``fields`` allows only updates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    table: TableName
    fields: tuple[str, ...] | None = None
    keys: tuple[str | int, ...] | None = None
    ops: tuple[Literal["insert", "update", "delete"], ...] | None = None

    @model_validator(mode="after")
    def _fields_exist(self) -> AllowedChange:
        unknown = sorted(set(self.fields or ()) - set(schema_table(self.table).c.keys()))
        if unknown:
            raise ValueError(f"field {unknown[0]!r} is not a column of {self.table!r}")
        return self

    @cached_property
    def _ops(self) -> tuple[str, ...] | None:
        return self.ops if self.ops is not None else (("update",) if self.fields is not None else None)

    @cached_property
    def _fields(self) -> frozenset[str] | None:
        return None if self.fields is None else frozenset(self.fields)

    @cached_property
    def key_names(self) -> frozenset[str] | None:
        """``keys`` as text, what a row's primary or natural key is compared with (None: any row)."""
        return None if self.keys is None else frozenset(str(k) for k in self.keys)

    def admits(self, row: ChangeRow) -> bool:
        """Whether the table, op and changed fields fit (keys are checked separately)."""
        ops = self._ops
        if row.table != self.table or (ops is not None and row.op not in ops):
            return False
        return row.op != "update" or self._fields is None or self._fields.issuperset(row.changes)


_NATURAL = {
    "tickets": "key",
    "projects": "key",
    "employees": "username",
    "mailboxes": "address",
    "channels": "name",
    "ticket_labels": "ticket_id",
    "ticket_comments": "ticket_id",
    "ticket_status_changes": "ticket_id",
}


def _natural_sql(table_name: str) -> str:
    """The raw lookup of natural keys by id (``rows_in``: a Core expanding IN compiles for ~100 us a run)."""
    return f"SELECT id, {_NATURAL[table_name]} FROM {table_name} WHERE id IN ({{}})"  # noqa: S608 - _NATURAL's names


def _natural_keys(ctx: GradingContext, rows: list[ChangeRow]) -> dict[int, str]:
    """Map seq to the natural key of each row: from the log (insert/delete) or one PK query per table.

    A logged row's natural key never changes (a ticket keeps its key, a comment its ticket), so answers are
    kept in ``ctx.lasting`` and the per-step progress score asks only about the step's new rows.
    """
    known: dict[int, str] = ctx.lasting.setdefault("natural_keys", {})
    fresh = _natural_keys_of(ctx, [r for r in rows if r.seq not in known])
    known.update(fresh)
    return {r.seq: known[r.seq] for r in rows if r.seq in known}


def _natural_keys_of(ctx: GradingContext, rows: list[ChangeRow]) -> dict[int, str]:
    if not rows:
        return {}
    raw: dict[int, Any] = {r.seq: r.changes.get(_NATURAL[r.table]) for r in rows if r.op != "update"}
    updates: dict[str, list[ChangeRow]] = {}
    for r in rows:
        if r.op == "update":
            updates.setdefault(r.table, []).append(r)
    by_id: dict[tuple[str, Any], Any] = ctx.lasting.setdefault("natural_by_id", {})
    for name in sorted(updates):
        ids = sorted({r.key[0] for r in updates[name] if (name, r.key[0]) not in by_id})
        if ids:
            by_id.update({(name, pk): value for pk, value in rows_in(ctx, _natural_sql(name), ids)})
        raw.update({r.seq: by_id.get((name, r.key[0])) for r in updates[name]})
    via = {r.seq: raw[r.seq] for r in rows if _NATURAL[r.table] == "ticket_id" and raw.get(r.seq) is not None}
    if via:  # a ticket keeps its key: ask only about tickets no lookup has named yet
        ids = sorted({t for t in via.values() if ("tickets", t) not in by_id})
        if ids:
            by_id.update({("tickets", tid): key for tid, key in rows_in(ctx, _natural_sql("tickets"), ids)})
        raw.update({seq: by_id.get(("tickets", ticket_id)) for seq, ticket_id in via.items()})
    return {seq: str(v) for seq, v in raw.items() if v is not None}


def _describe_change(row: ChangeRow, natural: dict[int, str]) -> str:
    name = natural.get(row.seq, json.dumps(list(row.key)))
    fields = f" {{{', '.join(sorted(row.changes))}}}" if row.op == "update" else ""
    return f"#{row.seq} {row.op} {row.table} {name}{fields}"


def _scoped(ctx: GradingContext, scope: Scope, table_name: str | None = None) -> list[ChangeRow]:
    rows = ctx.log if table_name is None else ctx.changed_rows(table_name)
    return [r for r in rows if scope == "all" or r.actor_id == ctx.actor_id]


def _collateral(ctx: GradingContext, allowed: list[AllowedChange], scope: Scope) -> tuple[float, str, dict[str, Any]]:
    """``no_collateral_changes``' verdict as (score, evidence, details): ``_collateral_on_changes`` (no rows given)."""
    verdict = _collateral_on_changes(ctx, (), allowed, scope)
    if isinstance(verdict, Later):  # asked with no rows it always gives the verdict
        raise TypeError("no_collateral_changes: no verdict without rows")
    return verdict


def _collateral_on_changes(
    ctx: GradingContext, rows: Sequence[ChangeRow], allowed: list[AllowedChange], scope: Scope = "actor"
) -> tuple[float, str, dict[str, Any]] | Later:
    """``no_collateral_changes``' verdict as (score, evidence, details), folding in only the log's new rows.

    The ``on_changes`` evaluator of ``graders.progress`` itself (``rows`` are in the log, which it reads from
    where it stopped), so a step asks it in one frame and skips building a ``CheckOutcome``; a step that added
    none of the agent's rows hands back the very verdict of the step before, which ``graders.progress`` then
    does not compare (nothing mutates a verdict: a new one is built when it moves).

    A logged row and the rules never change, and the log only grows, so the rows judged so far and their
    violations are kept (``ctx.lasting``): the per-step progress score judges only the rows the step added,
    and the verdict of a step that added none of the agent's rows is the very one before it. How the rules
    judge a row depends only on its table, op and (for an update) the columns it changed, so that is worked
    out once per shape: a row costs a dict lookup unless only rules with ``keys`` admit it. The listing of the
    violations is kept until a new one is found (a row within the rules moves only the count).
    """
    key = ("collateral", id(allowed), scope)
    # seen: [rows of the log looked at, rows judged, violations, the rules' answer by row shape, the verdict,
    # the violations' listing and how many violations it lists]
    seen: list[Any] | None = ctx.lasting.get(key)
    log = ctx.log
    fresh = False  # a state built now (a grade, not a step): no verdict before it to let stand
    if seen is None or seen[0] > len(log):
        fresh = True
        seen = ctx.lasting[key] = [0, 0, [], _shapes(allowed), None, "", -1, _named_rows(ctx, allowed), set()]
    elif seen[0] == len(log) and seen[4] is not None:
        verdict: tuple[float, str, dict[str, Any]] = seen[4]
        return verdict
    elif rows and seen[0] == len(log) - 1:  # a step that wrote one row (most do): what the loop below does for
        row = log[-1]  # the agent's row that a rule without keys admits, in a few lookups
        if (scope == "all" or row.actor_id == ctx.actor_id) and (seen[7] is None or row.table not in _NATURAL):
            shape = (row.table, row.op, *row.changes) if row.op == "update" else (row.table, row.op)
            if seen[3].get(shape) is True:
                seen[0], seen[1], seen[4] = seen[0] + 1, seen[1] + 1, None
                return LATER
    shapes: dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]] = seen[3]
    judged: list[tuple[ChangeRow, bool | None]] = []  # rows not admitted yet; None: only keyed rules may admit it
    admitted = 0  # rows the rules admit (counted, not listed: most rows are)
    keyed: dict[int, tuple[frozenset[str], ...]] = {}
    by_id: dict[tuple[str, Any], Any] = ctx.lasting.get("natural_by_id", {})
    named: dict[tuple[str, Any], str] | None = seen[7]
    renamed: set[tuple[str, Any]] = seen[8]
    actor = None if scope == "all" else ctx.actor_id
    for n in range(seen[0], len(log)):
        row = log[n]
        if named is not None and (column := _NATURAL.get(row.table)) and (row.op != "update" or column in row.changes):
            renamed.add((row.table, row.key[0]))  # born, gone or renamed since: what was read ahead may not name it
        if actor is not None and row.actor_id != actor:
            continue
        shape = (row.table, row.op, *row.changes) if row.op == "update" else (row.table, row.op)
        rule = shapes.get(shape)
        if rule is None:
            rule = shapes[shape] = _rule_for(allowed, row)
        if rule is True:  # a rule without keys admits it
            admitted += 1
            continue
        if rule is False:  # no rule does
            judged.append((row, False))
            continue
        names: list[str | None] = [str(row.key[0]) if len(row.key) == 1 else json.dumps(list(row.key))]
        natural_column = _NATURAL.get(row.table)
        if row.op == "update" and natural_column is not None and natural_column != "ticket_id":
            known = by_id.get((row.table, row.key[0]), by_id)  # an update's natural key, if a lookup named it
            if known is not by_id:
                names.append("" if known is None else str(known))
            elif named is not None and (row.table, row.key[0]) not in renamed:
                names.append(named.get((row.table, row.key[0])))  # None: its key is none of the rules' keys
        elif natural_column == "ticket_id" and row.op != "update" and named is not None:
            ticket = ("tickets", row.changes.get("ticket_id"))
            if ticket[1] is not None and ticket not in renamed:
                names.append(named.get(ticket))
        matched = False  # whether one of its names is in a keyed rule's keys (a loop: a generator costs more)
        for ks in rule:
            if names[0] in ks or (len(names) > 1 and names[1] in ks):
                matched = True
                break
        if matched:
            admitted += 1
        elif len(names) > 1:
            judged.append((row, False))
        else:  # its natural key may match: looked up below, for all such rows at once
            judged.append((row, None))
            keyed[row.seq] = rule
    seen[0] = len(log)
    if not judged:
        if rows and not fresh and (admitted or seen[4] is None):
            # asked with rows (progress): none is a violation, so the score stands and only the count in the
            # evidence moved; the verdict is built when the results are asked for (``_collateral`` asks with none)
            seen[1] += admitted
            seen[4] = None
            return LATER
        if not admitted and seen[4] is not None:
            verdict = seen[4]  # none of the new rows is judged: the verdict stands, the very same tuple
            return verdict
    natural = _natural_keys(ctx, [r for r, ok in judged if ok is None and r.table in _NATURAL]) if keyed else {}
    seen[1] += admitted + len(judged)
    violations: list[ChangeRow] = seen[2]
    for row, ok in judged:  # in seq order
        if not (ok if ok is not None else any(natural.get(row.seq, "") in ks for ks in keyed[row.seq])):
            violations.append(row)
    if not violations:
        verdict = (1.0, f"all {seen[1]} changes are within the allowed set", {})
    else:
        if seen[6] != len(violations):  # the listing names the first five and how many more: it moved
            natural |= _natural_keys(ctx, [r for r in violations[:5] if r.table in _NATURAL and r.seq not in natural])
            shown = [_describe_change(r, natural) for r in violations[:5]]  # ``listing`` shows only these
            seen[5], seen[6] = listing(shown + [""] * (len(violations) - len(shown)), 5), len(violations)
        head = f"{len(violations)} of {seen[1]} changes are outside the allowed set"
        verdict = (0.0, f"{head}: {seen[5]}", {"violations": [r.seq for r in violations]})
    seen[4] = verdict
    return verdict


def _named_rows(ctx: GradingContext, allowed: list[AllowedChange]) -> dict[tuple[str, Any], str] | None:
    """The rows the keyed rules name by natural key, read once when the check first runs: (table, id) -> key.

    A rule with ``keys`` on a table with a natural key (a ticket's key, a project's) names rows the episode may
    update; reading them ahead, in one statement, spares the per-step progress score a lookup of each row the
    first time the agent changes it. A row missing here has none of the rules' keys, unless a logged update
    changed its natural key since, or was inserted or deleted since (``_collateral`` then looks it up as
    before). None when no rule needs it or there is no database (every keyed row is looked up as before).
    """
    wanted: dict[str, set[str]] = {}
    for rule in allowed:
        column = _NATURAL.get(rule.table)
        if rule.key_names and column is not None:
            wanted.setdefault("tickets" if column == "ticket_id" else rule.table, set()).update(rule.key_names)
    session: Any = ctx.session  # None in a context built from rows alone (tests): every keyed row looked up
    if not wanted or session is None:
        return None
    out: dict[tuple[str, Any], str] = {}
    for name in sorted(wanted):
        sql = f"SELECT id, {_NATURAL[name]} FROM {name} WHERE {_NATURAL[name]} IN ({{}})"  # noqa: S608 - _NATURAL
        out.update({(name, pk): str(value) for pk, value in rows_in(ctx, sql, sorted(wanted[name]))})
    return out


_SHAPES: dict[tuple[AllowedChange, ...], dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]]] = {}
"""The rules' answer by row shape, for each set of rules seen (a task's rules are the same every episode)."""


def _shapes(allowed: list[AllowedChange]) -> dict[tuple[Any, ...], bool | tuple[frozenset[str], ...]]:
    """The answers by row shape of rules equal to ``allowed`` (shared: an answer depends only on the rules).

    Asked once an episode, when the check first runs (the step that grades everything), so an episode's first
    write of a shape seen in an earlier episode costs a lookup instead of asking every rule.
    """
    rules = tuple(allowed)
    found = _SHAPES.get(rules)
    if found is None:
        if len(_SHAPES) >= 256:  # many tasks' rules in one process: start over rather than grow without bound
            _SHAPES.clear()
        found = _SHAPES[rules] = {}
    return found


def _rule_for(allowed: list[AllowedChange], row: ChangeRow) -> bool | tuple[frozenset[str], ...]:
    """How ``allowed`` judges rows of ``row``'s table, op and changed columns.

    True: a rule without keys admits them; False: no rule does; else the key sets of the keyed rules that admit
    them (the row's key decides).
    """
    fits = [a for a in allowed if a.admits(row)]
    key_sets = tuple(a.key_names for a in fits if a.key_names is not None)
    if len(key_sets) < len(fits) or not fits:
        return bool(fits)
    return key_sets


@check_fn("no_collateral_changes", on_changes=_collateral_on_changes)
def no_collateral_changes(ctx: GradingContext, allowed: list[AllowedChange], scope: Scope = "actor") -> CheckOutcome:
    """Every change of the episode (by the agent, or by anyone with ``scope='all'``) is in ``allowed``.

    Another employee's rows (a coworker's reply) are not judged with ``scope='actor'``: a step that logged
    only such rows keeps the verdict before it, at the cost of a dict lookup (no ``touches`` hook: asking it
    row by row costs more than folding the rows in).
    """
    score, evidence, details = _collateral(ctx, allowed, scope)
    return CheckOutcome(score=score, evidence=evidence, details=dict(details))


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
