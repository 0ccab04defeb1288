"""The progress framework's own evaluators: the collateral verdict folded on per step, flags and keys from the log.

``no_collateral_changes`` is decided by its ``on_changes`` evaluator on every step (it reads every table), and
``row_exists`` answers a flag column (``employees.active``) and a unique column from the log; each must equal
what a fresh grade gives after every step, including a coworker's rows, rows outside the allowed set and a
row that takes over a unique value (when the log cannot tell, the evaluator must say so, not guess).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.progress import Progress
from graders.registry import LATER, check_fn_spec
from worlds.schema import Employee, Post, Ticket, TicketComment

T = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)
ALLOWED = [
    {"table": "tickets", "fields": ["priority", "updated_at"], "keys": ["ENG-3"]},
    {"table": "ticket_comments", "ops": ["insert"], "keys": ["ENG-3"]},
    {"table": "posts", "ops": ["insert"]},
]


def _edits(world: Any) -> Iterator[Callable[[], None]]:
    """One step each: allowed, a coworker's, outside the set (by key, by op), an allowed one after them."""
    yield lambda: setattr(world.ticket("ENG-3"), "priority", "high")
    yield lambda: (world.as_("bob"), setattr(world.ticket("ENG-4"), "priority", "high"), world.session.flush())
    yield lambda: world.as_("alice")  # a step that changed nothing
    yield lambda: world.add(TicketComment(ticket_id=3, author_id=1, body="Taking this", created_at=T))
    yield lambda: world.add(TicketComment(ticket_id=4, author_id=1, body="And this", created_at=T))
    yield lambda: setattr(world.ticket("ENG-5"), "priority", "high")
    yield lambda: world.add(Post(channel_id=2, author_id=1, message="done", created_at=T))
    yield lambda: setattr(world.ticket("ENG-3"), "status", "done")


def test_the_collateral_verdict_folded_per_step_is_a_fresh_grades(world):
    spec = check_fn_spec("no_collateral_changes")
    assert spec.on_changes is not None and spec.reads is None
    kwargs = spec.bind({"allowed": ALLOWED}, where="t")
    everyone = spec.bind({"allowed": ALLOWED, "scope": "all"}, where="t")
    ctx, seq, verdicts = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq, []
    for edit in _edits(world):
        edit()
        world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq if rows else seq
        ctx.extend(rows)
        ctx.forget({r.table for r in rows})
        step = []
        for n, kw in enumerate((kwargs, everyone)):
            fast = spec.on_changes(ctx, rows, **kw)
            slow = spec.fn(world.ctx(), **kw)
            if fast is LATER:  # the score stands (only the count moved): the verdict is asked for with no rows
                assert verdicts[-1][n].startswith("all") == (slow.score == 1.0)
                fast = spec.on_changes(ctx, [], **kw)
            assert fast == (slow.score, slow.evidence, dict(slow.details)), (kw.get("scope"), fast)
            step.append(fast[1])
        verdicts.append(tuple(step))
    assert verdicts[0] == ("all 1 changes are within the allowed set",) * 2
    assert verdicts[1] == (
        "all 1 changes are within the allowed set",  # bob's update of ENG-4 is not the agent's
        "1 of 2 changes are outside the allowed set: #2 update tickets ENG-4 {priority}",
    )
    assert verdicts[2] == verdicts[1]
    assert verdicts[4][0] == "1 of 3 changes are outside the allowed set: #4 insert ticket_comments ENG-4"
    assert verdicts[5][0].endswith("#4 insert ticket_comments ENG-4; #5 update tickets ENG-5 {priority}")
    assert verdicts[-1][0].startswith("3 of 6 changes are outside the allowed set: "), "status is not allowed"


def test_progress_decides_collateral_without_re_running_it_and_equals_a_full_grade(world, monkeypatch):
    checks = [
        Check(id="collateral", description="d", fn="no_collateral_changes", params={"allowed": ALLOWED}),
        Check(
            id="prio",
            description="d",
            fn="ticket_field_equals",
            params={"key": "ENG-3", "field": "priority", "value": "high"},
        ),
    ]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    ran: list[str] = []
    real = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    ran.clear()
    seq = world.start_seq
    for edit in _edits(world):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        value = progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert [(c.score, c.evidence, c.details) for c in progress.results()] == [
            (c.score, c.evidence, c.details) for c in full.checks
        ]
        assert value == full.value
    assert "collateral" not in ran, "the evaluator folded every step in"
    assert full.checks[0].score == 0.0 and full.checks[0].details["violations"]


def test_row_exists_reads_a_flag_and_a_unique_key_from_the_log_or_says_it_cannot(world):
    spec = check_fn_spec("row_exists")
    assert spec.on_changes is not None
    asks = [
        ("employees", {"id": 4, "active": False}, "changed"),
        ("employees", {"id": 4, "active": True}, "any"),
        ("employees", {"username": "dave", "active": False}, "any"),
        ("posts", {"id": 1, "is_pinned": True}, "changed"),
        ("tickets", {"key": "ENG-9", "status": "todo"}, "any"),
        ("tickets", {"key": "ENG-2", "status": "in_progress"}, "any"),
    ]
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-5"), "title", "Untouched by any ask"),
        lambda: setattr(world.session.get(Employee, 4), "active", False),
        lambda: setattr(world.session.get(Post, 1), "is_pinned", True),
        lambda: setattr(world.session.get(Employee, 4), "active", True),
        lambda: world.add(Ticket(**{**_ticket_row(world, "ENG-1"), "id": 9, "key": "ENG-9", "status": "todo"})),
        lambda: setattr(world.ticket("ENG-2"), "key", "ENG-22"),
    ]
    ctx, seq, answered = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq, []
    for step, edit in enumerate(edits):
        edit()
        world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq
        ctx.extend(rows)
        ctx.forget({r.table for r in rows})
        for table, where, scope in asks:
            fast = spec.on_changes(ctx, list(ctx.changed_rows(table)[-1:]), table=table, where=where, scope=scope)
            slow = spec.fn(world.ctx(), table=table, where=where, scope=scope)
            if fast is None:
                answered.append((step, where.get("key"), None))
                continue
            assert fast == (slow.score, slow.evidence, dict(slow.details)), (step, table, where, scope)
            answered.append((step, where.get("key") or where.get("id"), fast[0]))
    flags = [a for a in answered if a[1] not in ("ENG-9", "ENG-2")]
    assert len(flags) == len(edits) * 4 and None not in [a[2] for a in flags], "a flag is read from the log"
    assert (1, 4, 1.0) in flags and (3, 4, 1.0) in flags and (2, 1, 1.0) in flags and (1, None, 1.0) in flags
    # the row inserted with ENG-9 is the one holding it; once a ticket's key changed, the log cannot tell
    assert [a[2] for a in answered if a[1] == "ENG-9"] == [0.0, 0.0, 0.0, 0.0, 1.0, None]
    assert [a[2] for a in answered if a[1] == "ENG-2"] == [1.0, 1.0, 1.0, 1.0, 1.0, None]


def _ticket_row(world: Any, key: str) -> dict[str, Any]:
    """Ticket ``key``'s columns, to copy into a new ticket."""
    t = world.ticket(key)
    return {c.key: getattr(t, c.key) for c in Ticket.__table__.columns}


def test_held_back_checks_count_as_a_full_grade_counts_them(world):
    def field(id_: str, key: str, name: str, value: Any, **extra: Any) -> Check:
        params = {"key": key, "field": name, "value": value}
        return Check(id=id_, description="d", fn="ticket_field_equals", params=params, **extra)

    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=(
            field("triaged", "ENG-3", "priority", "high"),
            field("assigned", "ENG-3", "assignee", "carol", needs=("triaged",)),
            field("closed", "ENG-4", "status", "done", must=True, needs=("assigned",)),
            field("other", "ENG-5", "priority", "high", weight=2.5),
        ),
    )
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-4"), "status", "done"),  # a must check passing, held back: gated
        lambda: setattr(world.ticket("ENG-3"), "assignee_id", 3),  # passing, held back; the must counts
        lambda: setattr(world.ticket("ENG-5"), "priority", "high"),
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),  # every need met
        lambda: setattr(world.ticket("ENG-3"), "assignee_id", None),  # the must's need fails again
    ]
    seq, seen = world.start_seq, []
    for edit in edits:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert progress.results() == full.checks
        assert value == full.value and progress.passed == sum(c.passed for c in full.checks)
        seen.append((value, full.gated))
    assert [gated for _, gated in seen] == [True, False, False, False, True]
    assert seen[1][0] == 0.0 and seen[2][0] == 2.5 / 4.5 and seen[3][0] == 1.0


def test_a_row_verdict_stands_while_its_row_is_untouched_and_equals_a_full_grade(world, monkeypatch):
    import graders.checks as checks

    asks = [
        ({"key": "ENG-3", "priority": "high"}, "changed"),  # fails, then passes: the count of changed rows moves
        ({"key": "ENG-4", "status": "backlog"}, "any"),
        ({"id": 5, "priority": "high"}, "changed"),
        ({"key": "ENG-9", "status": "todo"}, "any"),  # no such ticket until one is filed
        ({"key": "ENG-1", "status": "todo"}, "changed"),  # passes once ENG-1 is touched, whatever the edit
    ]
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(
            Check(id=f"c{n}", description="d", fn="row_exists", params={"table": "tickets", "where": w, "scope": s})
            for n, (w, s) in enumerate(asks)
        ),
    )
    worked: list[int] = []
    real = checks._row_exists_from_log
    monkeypatch.setattr(checks, "_row_exists_from_log", lambda *a: worked.append(1) or real(*a))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-2"), "title", "Another title"),
        lambda: setattr(world.ticket("ENG-2"), "title", "A third title"),  # no new row changed
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),
        lambda: setattr(world.ticket("ENG-1"), "title", "Touched"),
        lambda: setattr(world.ticket("ENG-5"), "title", "Renamed"),
        lambda: world.add(Ticket(**{**_ticket_row(world, "ENG-1"), "id": 9, "key": "ENG-9", "status": "todo"})),
        lambda: setattr(world.ticket("ENG-4"), "status", "done"),
        lambda: setattr(world.ticket("ENG-2"), "title", "A fourth title"),
    ]
    seq, scores = world.start_seq, []
    for edit in edits:
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert progress.results() == full.checks
        scores.append([c.score for c in full.checks])
    assert scores[0] == [0.0, 1.0, 0.0, 0.0, 0.0] and scores[-1] == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert len(worked) < len(edits) * len(asks) / 2, "most verdicts stood without working them out again"


def test_row_exists_names_a_row_by_a_composite_unique_key_from_the_log(world):
    from worlds.schema import TicketLabel

    spec = check_fn_spec("row_exists")
    assert spec.on_changes is not None
    asks = [
        ({"ticket_id": 4, "label": "needs-info"}, "changed"),
        ({"ticket_id": 4, "label": "needs-info"}, "any"),
        ({"ticket_id": 1, "label": "backend"}, "any"),  # set up before the episode: read once
        ({"ticket_id": 1, "label": "backend"}, "changed"),
    ]
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-5"), "title", "Untouched by any ask"),
        lambda: world.add(TicketLabel(ticket_id=3, label="needs-info")),  # another ticket's: names no asked row
        lambda: world.add(TicketLabel(ticket_id=4, label="needs-info")),  # the pair inserted: the log names it
        lambda: setattr(world.session.get(TicketLabel, 1), "label", "frontend"),  # a key column updated
    ]
    ctx, seq, answered = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq, []
    for edit in edits:
        edit()
        world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq
        ctx.extend(rows)
        ctx.forget({r.table for r in rows})
        step = []
        for where, scope in asks:
            kwargs = {"table": "ticket_labels", "where": where, "scope": scope}
            fast = spec.on_changes(ctx, list(ctx.changed_rows("ticket_labels")[-1:]), **kwargs)
            if fast is LATER:  # a failing count moved (its score stands): asked with no rows it gives the verdict
                fast = spec.on_changes(ctx, [], **kwargs)
            slow = spec.fn(world.ctx(), **kwargs)
            assert fast is None or fast == (slow.score, slow.evidence, dict(slow.details)), (where, scope)
            step.append(None if fast is None else fast[0])
        answered.append(step)
    assert answered[:2] == [[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0]], "named by (ticket_id, label), no query"
    assert answered[2] == [1.0, 1.0, 1.0, 0.0] and answered[3] == [None, None, None, None]


def test_a_trace_check_with_an_evaluator_folds_the_new_steps_in_and_equals_a_full_grade(world, monkeypatch):
    checks = (
        Check(id="clean", description="d", fn="no_tool_errors"),
        Check(id="allowed", description="d", fn="no_tool_errors", params={"codes": ["forbidden"]}),
        Check(
            id="prio",
            description="d",
            fn="ticket_field_equals",
            params={"key": "ENG-3", "field": "priority", "value": "high"},
        ),
    )
    rubric = Rubric(id="t", version=1, description="t", checks=checks)
    ran: list[str] = []
    real = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    progress = Progress(rubric, GradingContext(session=world.session, trace=world.trace, actor_id=1))
    progress.update([])
    ran.clear()
    seq, evidence = world.start_seq, []
    for n, error in enumerate([None, "not_found", None, "forbidden", None]):
        world.step("tickets_update" if n % 2 else "tickets_search", error=error)
        if n == 2:
            world.ticket("ENG-3").priority = "high"
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert progress.results() == full.checks
        evidence.append(full.checks[0].evidence)
    assert not ran, "no trace check was re-run"
    assert evidence[0] == "no tool errors in 1 steps" and evidence[-1].startswith("2 tool errors: step 1 ")


def test_a_held_row_verdict_is_not_asked_until_its_row_or_key_can_move(world, evaluated):
    asks = {
        "eng3": ({"key": "ENG-3", "status": "backlog"}, "any"),
        "eng4": ({"key": "ENG-4", "status": "backlog"}, "any"),
        "id5": ({"id": 5, "status": "done"}, "any"),
        "eng9": ({"key": "ENG-9", "status": "todo"}, "any"),
        "changed": ({"id": 2, "priority": "low"}, "changed"),  # fails, counts changed rows: held, its evidence lags
    }
    rubric = Rubric(
        id="t",
        version=1,
        description="t",
        checks=tuple(
            Check(id=k, description="d", fn="row_exists", params={"table": "tickets", "where": w, "scope": s})
            for k, (w, s) in asks.items()
        ),
    )
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-1"), "title", "One"),  # held from the start: none asked
        lambda: setattr(world.ticket("ENG-1"), "title", "Two"),  # none (the counting one's count is asked later)
        lambda: setattr(world.ticket("ENG-3"), "status", "todo"),  # ENG-3's row
        lambda: setattr(world.ticket("ENG-5"), "status", "todo"),  # row 5
        lambda: world.add(Ticket(**{**_ticket_row(world, "ENG-1"), "id": 9, "key": "ENG-9", "status": "todo"})),
        lambda: setattr(world.ticket("ENG-2"), "key", "ENG-22"),  # a key moved: every check named by key
    ]
    seq = world.start_seq
    by_step: list[list[str]] = []  # the checks whose evaluator each step asked
    for n, edit in enumerate(edits):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        evaluated.clear()
        progress.update(rows)  # type: ignore[arg-type]
        by_step.append(sorted(cid for cid, _, _ in evaluated))
        full = grade(rubric, world.ctx())
        assert progress.results() == full.checks, n
    assert by_step[0] == by_step[1] == []
    assert by_step[2] == ["eng3"] and by_step[3] == ["id5"]
    assert by_step[4] == ["eng9"], "an insert wakes only the checks whose key it carries"
    assert by_step[5] == ["changed", "eng3", "eng4", "eng9"], "an update of the key column (row 2's) may move one"
    assert [c.score for c in full.checks] == [0.0, 1.0, 0.0, 1.0, 0.0]
