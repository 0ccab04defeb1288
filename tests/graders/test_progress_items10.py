"""The tenth round of the case paths (items10), held to a full grade after every step (``_play`` of comms3's tests).

What each test plays is what the path settles: the ticket fold keeps a filed ticket's logged insert row as its
image until an edit of the ticket is folded in, and copies it then (the log's row must never change: a check
that reads it later, or the collateral check, would read the edit as the insert); a ticket row's lowered text
and case ticket are worked out once per row in ``ctx.memo`` for every case function of the rubric; a share
function's plan of scope "grantee" files its checks by grant only (its grants never read an index by document);
``row_exists``' scan of the changed rows finds a row's first logged change with a loop and folds an insert's
columns without a comprehension (an inserted row from its insert, an updated one read).
"""

from __future__ import annotations

import sys
from typing import Any

import graders.checks_cases as checks_cases
from graders import share_step
from tests.graders.conftest import employee
from tests.graders.test_progress_comms3 import _play
from tests.graders.test_progress_mail8 import _in_progress
from tests.graders.test_progress_pcomms import T0, _file
from tests.graders.test_progress_pdocs import _doc
from tests.graders.test_progress_share9 import CHECKS, _two_docs
from worlds.schema import DocumentShare
from worlds.schema.projects import Project
from worlds.schema.tickets import Ticket

REF = {"project": "ENG", "reference": "REF-1234"}


def _set(world, key: str, **values: Any):
    def step() -> None:
        ticket = world.ticket(key)
        for column, value in values.items():
            setattr(ticket, column, value)

    return step


def test_a_filed_tickets_image_is_its_logged_row_until_an_edit_copies_it(world):
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("case", "ticket_for_reference", dict(REF)),
        ("case-high", "ticket_for_reference", {**REF, "fields": {"priority": "high"}}),
        ("case-in-title", "ticket_for_reference", {**REF, "in_title": True}),
    ]
    progress, said = _play(
        world,
        checks,
        [
            lambda: _file(world, 6, "Login fails", "REF-1234 from mail", priority="high"),  # filed: all but the title
            _set(world, "ENG-6", priority="low"),  # an edit: the image is copied before it is applied
            _set(world, "ENG-6", title="REF-1234 login fails"),  # the copy takes the next edit too
            _set(world, "ENG-6", priority="high"),
        ],
    )
    assert said == [
        {"case": 1.0, "case-high": 1.0, "case-in-title": 0.0},
        {"case-high": 0.0},
        {"case": 1.0, "case-high": 0.0, "case-in-title": 1.0},
        {"case-high": 1.0},
    ]
    fold = progress.ctx.lasting["ticket_fold"]
    (filed,) = [r for r in progress.ctx.changed_rows("tickets") if r.op == "insert"]
    tid = filed.key[0]
    # the log's insert row is as the step logged it; the fold's image is its own copy, every edit applied
    assert filed.changes["priority"] == "high" and filed.changes["title"] == "Login fails"
    assert fold.images[tid] is fold.edited[tid] and fold.images[tid] is not filed.changes
    assert fold.images[tid]["title"] == "REF-1234 login fails" and fold.images[tid]["priority"] == "high"


def test_an_unedited_tickets_image_is_the_logged_row_itself(world):
    progress, said = _play(
        world,
        [("case-high", "ticket_for_reference", {**REF, "fields": {"priority": "high"}})],
        [lambda: _file(world, 6, "REF-1234 login fails", "from mail", priority="high")],
    )
    assert said == [{"case-high": 1.0}]
    fold = progress.ctx.lasting["ticket_fold"]
    (filed,) = progress.ctx.changed_rows("tickets")
    assert fold.images[filed.key[0]] is filed.changes and not fold.edited, "no copy of a ticket never edited"


def test_a_deleted_and_refiled_id_starts_from_its_new_insert(world):
    def delete() -> None:
        world.session.delete(world.ticket("ENG-6"))

    progress, said = _play(
        world,
        [("case-high", "ticket_for_reference", {**REF, "fields": {"priority": "high"}})],
        [
            lambda: _file(world, 6, "REF-1234 login fails", "from mail", priority="high"),
            _set(world, "ENG-6", priority="low"),
            delete,
            lambda: _file(world, 7, "REF-1234 again", "from mail", priority="high"),  # SQLite gives it id 6 again
            _set(world, "ENG-7", story_points=3),  # an edit of the new ticket: copied from its own insert
        ],
    )
    rows = progress.ctx.changed_rows("tickets")
    assert [r.op for r in rows] == ["insert", "update", "delete", "insert", "update"]
    assert len({r.key for r in rows}) == 1, "the id was filed again (what this test is about)"
    # the log cannot tell a deleted id's fields: the check re-ran (None) and matched the grade (``_play``)
    assert said[3:] == [{"case-high": None}, {}]
    image = checks_cases._ticket_fold(progress.ctx).images[rows[0].key[0]]  # (folded when a check next reads it)
    assert image["key"] == "ENG-7" and image["story_points"] == 3 and rows[3].changes["story_points"] is None


def test_a_ticket_rows_text_is_worked_out_once_a_step_for_every_case_function(world, monkeypatch):
    calls: list[str] = []
    real = checks_cases._ticket_fold

    def spy(ctx):
        if _in_progress():
            calls.append(sys._getframe(1).f_code.co_name)
        return real(ctx)

    monkeypatch.setattr(checks_cases, "_ticket_fold", spy)
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("case", "ticket_for_reference", dict(REF)),
        ("no-dup", "no_ticket_for_reference", {"reference": "REF-1234"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: calls.clear() or _file(world, 6, "REF-1234 login fails", "from mail"),
            lambda: _file(world, 7, "REF-1234 still failing", "a second one"),
        ],
    )
    assert said == [{"case": 1.0, "no-dup": 0.0}, {"case": 0.0, "no-dup": 0.0}]
    # each step: one fold by the row's first reader, whichever function that is; the other reads ``ctx.memo``
    assert calls.count("_filed_row") == 2, calls


def test_a_grantee_plan_files_its_checks_by_grant_only(world):
    docs, req = _two_docs(world)

    def grant(doc: str, who: str, permission: str = "view") -> None:
        world.add(
            DocumentShare(document_id=docs[doc].id, employee_id=employee(world.session, who).id, permission=permission)
        )

    def create() -> None:
        docs["New"] = _doc(req.id, "New.odt", [[1, "New"]])
        world.add(docs["New"])

    progress, said = _play(
        world,
        CHECKS,
        [lambda: grant("A", "bob"), create, lambda: grant("New", "dave"), lambda: grant("B", "bob", "edit")],
    )
    assert said[0] == {"a-bob": 1.0, "a-only": "LATER", "a-kept": 0.0, "b-kept": "LATER"}
    assert said[2] == {"new-dave": 1.0, "a-kept": "LATER", "b-kept": "LATER"}, "the plan built again: New is in it"
    assert said[3] == {"b-bob": 1.0, "b-only": "LATER", "a-kept": "LATER", "b-kept": 0.0}
    lasting = progress.ctx.lasting
    plans = [plan for key, plan in lasting.items() if type(key) is tuple and key[0] == "share_plan"]
    assert len(plans) == 3, "one plan per share function"
    grantee = [p for p in plans if p.by_grant]
    assert len(grantee) == 1 and grantee[0].by_doc == {}, "a grantee plan builds no index by document"
    assert all(p.by_doc for p in plans if not p.by_grant), "the other scopes' plans are by document"
    assert all(p.held is share_step._docs()._held_verdict for p in plans)


def test_a_changed_row_scan_folds_an_inserted_row_and_reads_an_updated_one(world):
    """``row_exists`` on columns no unique names: the changed rows scanned, a filed one folded from its insert."""
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("filed-high", "row_exists", {"table": "tickets", "where": {"title": "REF-9 down", "priority": "high"}}),
        ("bug1-urgent", "row_exists", {"table": "tickets", "where": {"title": "Bug 1", "priority": "urgent"}}),
    ]
    progress, _ = _play(
        world,
        checks,
        [
            lambda: _file(world, 6, "REF-9 down", "from mail", priority="low"),  # first changed row: an insert
            _set(world, "ENG-6", priority="high"),  # the filed row's update, folded on its insert
            _set(world, "ENG-1", priority="urgent"),  # a row that existed: only updated, so it is read
            _set(world, "ENG-6", title="REF-9 fixed"),
        ],
    )
    assert [r.score for r in progress.results()] == [0.0, 1.0]


def test_a_project_made_on_the_way_is_named_by_its_logged_key_and_a_bump_changes_nothing(world):
    """The fold takes a new project's key from its insert; a ticket step's number bump (an update) is no key.

    Asserted on the answers, not only against the full grade: the grade reads the same fold.
    """
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("ops", "ticket_for_reference", {"project": "OPS", "reference": "REF-55"}),
        ("eng", "ticket_for_reference", dict(REF)),
    ]

    def project() -> None:
        world.add(
            Project(
                id=2, key="OPS", name="Operations", description="", team_id=1, lead_id=1, status="active",
                start_date=T0.date(),
            )
        )  # fmt: skip
        world.session.flush()
        world.add(
            Ticket(
                key="OPS-1", project_id=2, number=1, type="bug", title="REF-55 pager storm", description="",
                status="open", priority="medium", assignee_id=None, reporter_id=1, sprint_id=None,
                story_points=None, created_at=T0, updated_at=T0,
            )
        )  # fmt: skip

    def bump() -> None:
        world.session.get(Project, 1).next_ticket_number += 1
        _file(world, 6, "REF-1234 login fails", "from mail")

    progress, said = _play(world, checks, [project, bump])
    assert said == [{"ops": 1.0}, {"eng": 1.0}]
    assert [r.evidence for r in progress.results()] == ["OPS-1 filed for REF-55", "ENG-6 filed for REF-1234"]
    assert progress.ctx.lasting["project_keys"][2] == "OPS"
