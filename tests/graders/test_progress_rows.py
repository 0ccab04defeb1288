"""Verdicts read from the change rows: ``ticket_field_equals``' after-image evaluator, the column filter, sent mail.

The evaluator (``on_rows``) and the logged mail answer without a query, so they must agree with the database
exactly (score, evidence and details; the same rows); these tests fail if they disagree or silently stop
answering. A full grade reads the same paths, so ``test_progress`` alone could not catch it.
"""

from __future__ import annotations

from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.checks import _tickets, no_collateral_changes
from graders.checks_cases import _QUERIES, CaseMail, _logged_mails
from graders.checks_common import inserted_ids, logged_mail, rows_in
from graders.checks_comms import _sent_mail, _sent_mail_read
from graders.progress import Progress
from graders.registry import LATER, check_fn_spec
from tests.graders.test_checks import send
from worlds.schema import MailMessage

FIELDS: dict[str, list[Any]] = {
    "priority": ["high", "medium"],
    "status": ["done", "backlog"],
    "type": ["bug", "task"],
    "title": ["Renamed", "Bug 3"],
    "story_points": [None, 3, 8],
    "assignee": ["carol", None, "dave"],
}


def _edits(world):
    """Ticket edits as an agent makes them, each flushed as its own step (two columns in the last)."""
    t = world.ticket("ENG-3")
    yield "priority", lambda: setattr(t, "priority", "high")
    yield "status", lambda: setattr(t, "status", "done")
    yield "assignee", lambda: setattr(t, "assignee_id", 3)
    yield "assignee", lambda: setattr(t, "assignee_id", None)
    yield "story_points", lambda: setattr(t, "story_points", None)
    yield "title", lambda: setattr(t, "title", "Renamed")
    yield "type", lambda: setattr(t, "type", "task")
    yield "assignee", lambda: (setattr(t, "assignee_id", 4), setattr(t, "priority", "medium"))


def test_the_after_image_gives_the_verdict_the_query_gives(world):
    spec = check_fn_spec("ticket_field_equals")
    assert spec.on_rows is not None
    seq, decided = world.start_seq, 0
    for changed, edit in _edits(world):
        edit()
        world.session.flush()
        rows = list(read_changes(world.session, after_seq=seq))
        seq = rows[-1].seq
        ctx = world.ctx()
        for field, values in FIELDS.items():
            for value in values:
                kwargs = {"key": "ENG-3", "field": field, "value": value}
                fast = spec.on_rows(ctx, rows, **kwargs)
                if field == changed:
                    assert fast is not None, f"{field} was updated: the row tells its new value"
                if fast is not None:
                    decided += 1
                    slow = spec.fn(ctx, **kwargs)
                    assert fast == (slow.score, slow.evidence, dict(slow.details)), kwargs
    assert decided >= 20


def test_progress_decides_ticket_fields_from_the_rows_and_equals_a_full_grade(world, monkeypatch):
    checks = [
        Check(id=f"{f}-{v}", description="d", fn="ticket_field_equals", params={"key": "ENG-3", "field": f, "value": v})
        for f, values in FIELDS.items()
        for v in values
    ]
    checks.append(
        Check(
            id="several",
            description="d",
            fn="ticket_fields_equal",
            params={"expected": {"ENG-3": {"priority": "high"}, "ENG-4": {"status": "done"}}},
        )
    )
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    ran: list[str] = []
    real = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])  # the first update grades every check once
    ran.clear()
    seq = world.start_seq
    for _, edit in _edits(world):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert [(c.score, c.evidence, c.details) for c in progress.results()] == [
            (c.score, c.evidence, c.details) for c in full.checks
        ]
        assert value == full.value
    assert not [i for i in ran if i != "several"], "single-field checks were decided from the rows, not re-run"
    # it reads priority and status: re-run for those two edits and the last, not for the five others
    assert ran.count("several") == 3


def test_sent_mail_from_the_log_is_what_the_database_holds(world):
    send(world, "Outage report", "ENG-1 is resolved", [2, 9])
    world.as_("bob")
    send(world, "Re: outage", "thanks", [1])
    world.as_("alice")
    send(world, "Nobody", "a draft with no recipient yet", [])
    ctx = world.ctx()
    ids = inserted_ids(ctx, "mail_messages")
    assert len(ids) == 3 and logged_mail(ctx) is not None, "only inserts: read from the log"
    logged, read = _sent_mail(ctx, ids), _sent_mail_read(ctx, ids)
    assert logged == read and len(logged[0]) == 3 and logged[1][ids[0]] == {"bob", "bob@acme.test", "buyer@client.test"}
    sql = _QUERIES["case_mails"][0]
    assert _logged_mails(ctx) == [CaseMail(*r) for r in rows_in(ctx, sql, ids)]
    world.session.get(MailMessage, ids[0]).body = "ENG-1 is resolved for good"  # an edit: the log cannot tell
    ctx = world.ctx()
    assert logged_mail(ctx) is None
    assert _sent_mail(ctx, ids) == _sent_mail_read(ctx, ids)
    assert _sent_mail(ctx, ids)[0][0].body == "ENG-1 is resolved for good"


def test_collateral_names_an_update_by_a_key_already_looked_up_as_a_fresh_grade_does(world):
    allowed = check_fn_spec("no_collateral_changes").bind(
        {"allowed": [{"table": "tickets", "fields": ["priority", "updated_at"], "keys": ["ENG-3"]}]}, where="t"
    )["allowed"]
    world.ticket("ENG-3").priority = "high"
    world.ticket("ENG-4").priority = "high"
    fresh = no_collateral_changes(world.ctx(), allowed=allowed)
    ctx = world.ctx()
    _tickets(ctx, ["ENG-3", "ENG-4"])  # as the ticket checks before it in a grade: the keys are known by id
    assert ("tickets", 3) in ctx.lasting["natural_by_id"]
    named = no_collateral_changes(ctx, allowed=allowed)
    assert (named.score, named.evidence, named.details) == (fresh.score, fresh.evidence, fresh.details)
    assert named.evidence.endswith("1 of 2 changes are outside the allowed set: #2 update tickets ENG-4 {priority}")


def test_row_exists_raw_statement_finds_what_the_core_statement_finds(world, monkeypatch):
    import graders.checks as checks
    from worlds.schema import TicketLabel

    world.add(TicketLabel(ticket_id=4, label="needs-info"), TicketLabel(ticket_id=3, label="backend"))
    world.ticket("ENG-3").priority = "high"
    asks = [
        ("ticket_labels", {"ticket_id": 4, "label": "needs-info"}, "changed"),
        ("ticket_labels", {"label": "backend"}, "any"),
        ("ticket_labels", {"label": "nothing"}, "changed"),
        ("tickets", {"key": "ENG-3", "priority": "high", "assignee_id": None}, "changed"),
        ("tickets", {"key": "ENG-3", "priority": "low"}, "any"),
    ]
    ctx = world.ctx()
    assert all(checks._plain_where(checks.schema_table(t), w) for t, w, _ in asks), "the raw path is taken"
    raw = [checks.row_exists(ctx, table=t, where=w, scope=s) for t, w, s in asks]  # type: ignore[arg-type]
    monkeypatch.setattr(checks, "_plain_where", lambda *_: False)
    core = [checks.row_exists(ctx, table=t, where=w, scope=s) for t, w, s in asks]  # type: ignore[arg-type]
    assert raw == core and [r.score for r in raw] == [1.0, 1.0, 0.0, 1.0, 0.0]


def _step_ctx(world, ctx: GradingContext, seq: int) -> tuple[GradingContext, int]:
    """Fold the rows written since ``seq`` into ``ctx`` as ``Progress.update`` does (one context per episode)."""
    world.session.flush()
    rows = list(read_changes(world.session, after_seq=seq))
    ctx.extend(rows)
    ctx.forget({r.table for r in rows})
    return ctx, rows[-1].seq if rows else seq


def test_row_exists_from_the_log_is_what_the_query_finds(world):
    from worlds.schema import TicketLabel

    spec = check_fn_spec("row_exists")
    assert spec.on_changes is not None
    asks = [
        ("tickets", {"id": 3, "priority": "high"}, "changed"),
        ("tickets", {"id": 3, "priority": "high", "assignee_id": None}, "any"),
        ("tickets", {"id": 4, "status": "done"}, "changed"),
        ("tickets", {"id": 4, "assignee_id": 3}, "any"),
        ("tickets", {"id": 5, "status": "done"}, "any"),
        ("ticket_labels", {"id": 2, "label": "needs-info"}, "changed"),
        ("ticket_labels", {"id": 2, "ticket_id": 4}, "any"),
        ("tickets", {"key": "ENG-3", "priority": "high"}, "changed"),  # a unique column names the row
        ("tickets", {"key": "ENG-4", "status": "done", "assignee_id": 3}, "any"),
        ("tickets", {"key": "ENG-99", "status": "done"}, "any"),
    ]
    edits = [
        lambda: setattr(world.ticket("ENG-5"), "title", "Untouched by any ask"),
        lambda: setattr(world.ticket("ENG-3"), "priority", "high"),
        lambda: world.add(TicketLabel(ticket_id=4, label="needs-info")),
        lambda: setattr(world.ticket("ENG-4"), "assignee_id", 3),
        lambda: setattr(world.ticket("ENG-3"), "assignee_id", 2),
        lambda: setattr(world.ticket("ENG-4"), "status", "done"),
        lambda: world.session.delete(world.session.get(TicketLabel, 2)),
    ]
    ctx, seq = GradingContext(session=world.session, trace=[], actor_id=1), world.start_seq
    decided = passed = later = 0
    scores: dict[int, float] = {}
    for edit in edits:
        edit()
        ctx, seq = _step_ctx(world, ctx, seq)
        for n, (table, where, scope) in enumerate(asks):
            fast = spec.on_changes(ctx, list(ctx.changed_rows(table)[-1:]), table=table, where=where, scope=scope)
            slow = spec.fn(world.ctx(), table=table, where=where, scope=scope)
            if fast is LATER:  # only the count of a failing verdict moved: the score stands, asked with none it says
                later += 1
                assert scores[n] == slow.score < 1.0, (table, where, scope)
                fast = spec.on_changes(ctx, [], table=table, where=where, scope=scope)
            assert fast == (slow.score, slow.evidence, dict(slow.details)), (table, where, scope)
            scores[n] = slow.score
            decided += 1
            passed += fast is not None and fast[0] == 1.0
    assert decided == len(edits) * len(asks) and passed >= 10 and later >= 1
    assert spec.on_changes(ctx, [], table="tickets", where={"title": "Bug 3"}, scope="any") is None, "no key"


def test_new_posts_and_case_tickets_from_the_log_are_what_the_database_holds(world):
    from datetime import timedelta

    from graders.checks_cases import _QUERIES, CaseTicket, _logged_tickets
    from graders.checks_comms import _NEW_POSTS, _POST_FIELDS, _logged_posts
    from tests.graders.test_checks import post
    from worlds.schema import Channel, Post, Ticket

    def ticket(n: int, title: str, description: str) -> Ticket:
        now = world.clock.now()
        return Ticket(
            key=f"ENG-{n}",
            project_id=1,
            number=n,
            type="bug",
            title=title,
            description=description,
            status="backlog",
            priority="high",
            reporter_id=1,
            created_at=now,
            updated_at=now,
        )

    def compare(ctx: GradingContext) -> bool:
        logged = _logged_posts(ctx)
        read = [dict(zip(_POST_FIELDS, r, strict=True)) for r in rows_in(ctx, _NEW_POSTS, inserted_ids(ctx, "posts"))]
        if logged is not None:
            assert logged == read
        tickets = _logged_tickets(ctx)
        assert tickets is not None and tickets == [
            CaseTicket(*r) for r in rows_in(ctx, _QUERIES["case_tickets"][0], inserted_ids(ctx, "tickets"))
        ]
        return logged is not None

    edits = [
        lambda: post(world, 2, "deploy REF-1 done"),
        lambda: world.add(ticket(6, "REF-1 outage", "")),
        lambda: world.add(
            Channel(team_id=1, name="incidents", display_name="Inc", type="O", created_at=world.clock.now())
        ),
        lambda: post(world, 4, "ENG-6 filed for REF-1", author="bob"),
        lambda: setattr(world.session.get(Post, 2), "message", "deploy REF-1 done, ENG-6"),
        lambda: setattr(world.ticket("ENG-6"), "description", "customer mail REF-1"),
        lambda: world.add(ticket(7, "Other", "REF-2")),
        lambda: world.session.delete(world.session.get(Post, 3)),
        lambda: world.session.delete(world.ticket("ENG-7")),
        lambda: setattr(world.session.get(Post, 2), "deleted_at", world.clock.now() + timedelta(minutes=1)),
    ]
    logged = []
    for edit in edits:
        edit()
        logged.append(compare(world.ctx()))
    assert logged == [True] * (len(edits) - 1) + [False], "a soft delete is read from the database"
