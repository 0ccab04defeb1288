"""The fourth round of the case paths, held to a full grade after every step (``_play`` of comms3's tests).

What each test plays is what the path settles: a case's expected assignee named ahead as progress starts (the
step that files its ticket then names the assignee with no lookup, unless an employee changed since); a post
check's matches searched once per post as ``_post_step`` folds them, the verdict built from those matches; a
filed ticket's case ticket worked out once per row for every case index (two cases in one step, a project the
same step created).
"""

from __future__ import annotations

from typing import Any

import graders.checks_cases as checks_cases
from tests.graders.conftest import employee
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play
from tests.graders.test_progress_pcomms import T0, _file
from worlds.schema.projects import Project
from worlds.schema.tickets import Ticket

REF = {"project": "ENG", "reference": "REF-1234"}


def _counting(monkeypatch) -> list[Any]:
    """Every ``usernames`` lookup the case checks make (the named-ahead path makes none)."""
    calls: list[Any] = []
    real = checks_cases.usernames

    def spy(ctx, ids):
        calls.append(list(ids))
        return real(ctx, ids)

    monkeypatch.setattr(checks_cases, "usernames", spy)
    return calls


def _assigned(world, number: int, title: str, who: str):
    def step() -> None:
        _file(world, number, title, "from their mail").assignee_id = employee(world.session, who).id

    return step


def test_the_expected_assignee_is_named_ahead_with_no_lookup(world, monkeypatch):
    calls = _counting(monkeypatch)
    checks = [
        ("owner", "ticket_for_reference", {**REF, "fields": {"assignee": "bob"}}),
        (
            "other-owner",
            "ticket_for_reference",
            {"project": "ENG", "reference": "REF-77", "fields": {"assignee": "bob"}},
        ),
    ]
    _, said = _play(
        world, checks, [_assigned(world, 6, "REF-1234 down", "bob"), _assigned(world, 7, "REF-77", "carol")]
    )
    assert said == [{"owner": 1.0}, {"other-owner": 0.0}]
    # the step filing bob's ticket looked nobody up; carol's (not the one expected) did, as the full grade does
    assert [c for c in calls if c] == [[employee(world.session, "carol").id]]


def test_a_renamed_employee_is_looked_up_again(world, monkeypatch):
    calls = _counting(monkeypatch)
    checks = [("owner", "ticket_for_reference", {**REF, "fields": {"assignee": "bob"}})]
    _, said = _play(
        world,
        checks,
        [
            lambda: setattr(employee(world.session, "bob"), "username", "robert"),  # bob's id no longer names bob
            _assigned(world, 6, "REF-1234 down", "robert"),
        ],
    )
    assert said[-1] == {"owner": 0.0}
    assert [c for c in calls if c] == [[employee(world.session, "robert").id]]


def test_post_checks_search_each_new_post_once_and_keep_their_matches(world):
    checks = [
        ("two-deploys", "post_in_channel", {"channel": "eng", "pattern": "deploy", "min_count": 2}),
        ("eng-key", "post_in_channel", {"channel": "eng", "pattern": r"ENG-\d"}),
        ("bob-says", "post_in_channel", {"channel": "eng", "pattern": "deploy", "author": "bob"}),
        ("mention", "post_in_channel", {"channel": "eng", "pattern": "deploy", "mention": "carol"}),
    ]
    progress, said = _play(
        world,
        checks,
        [
            lambda: post(world, 2, "deploy ENG-3"),
            lambda: post(world, 2, "nothing new"),
            lambda: post(world, 2, "deploy from bob", author="bob"),  # only bob's check's post
            lambda: post(world, 2, "deploy again, @carol"),
        ],
    )
    first, nothing, bobs, again = said
    # a mention check's own post with no match is folded like the others' (posts7): its score stands, LATER
    assert first == {"two-deploys": 0.5, "eng-key": 1.0, "bob-says": "LATER", "mention": "LATER"}
    assert nothing == {"two-deploys": "LATER", "eng-key": "LATER", "mention": "LATER"}
    assert bobs == {"bob-says": 1.0}
    assert again == {"two-deploys": 1.0, "eng-key": "LATER", "mention": 1.0}
    state = progress.ctx.lasting["post_in_channel", "eng", "deploy", "actor", 2, None]
    assert [p.message for p in state.hits] == ["deploy ENG-3", "deploy again, @carol"]
    assert state.searched == len(state.items) == 3, "every post of the agent's in ~eng searched, each once"


def test_a_step_filing_two_cases_files_each_ticket_once_for_every_index(world):
    # three sets of tables (a plain filing, a reply, a field): one ``_CaseIndex`` each, one shared row cache
    checks = [
        ("filed-1", "ticket_for_reference", REF),
        ("reply-1", "ticket_for_reference", {**REF, "reply_to": "buyer@client.test"}),
        ("filed-2", "ticket_for_reference", {"project": "ENG", "reference": "REF-77"}),
        ("reply-2", "ticket_for_reference", {"project": "ENG", "reference": "REF-77", "reply_to": "b@c.test"}),
        ("title-2", "ticket_for_reference", {"project": "ENG", "reference": "REF-77", "in_title": True}),
    ]

    def both() -> None:
        _file(world, 6, "Customer REF-1234 cannot log in", "from their mail")
        _file(world, 7, "Invoices fail", "REF-77 says the export is empty")  # the reference only in the text

    _, said = _play(world, checks, [both])
    assert said == [{"filed-1": 1.0, "reply-1": 0.0, "filed-2": 1.0, "reply-2": 0.0, "title-2": 0.0}]


def test_a_ticket_filed_in_a_project_made_the_same_step_names_that_project(world):
    checks = [
        ("filed", "ticket_for_reference", REF),
        ("reply", "ticket_for_reference", {**REF, "reply_to": "buyer@client.test"}),
    ]

    def elsewhere() -> None:
        world.add(
            Project(
                id=2, key="OPS", name="Operations", description="", team_id=1, lead_id=1, status="active",
                start_date=T0.date(),
            )
        )  # fmt: skip
        world.session.flush()
        ticket = Ticket(
            key="OPS-1", project_id=2, number=1, type="bug", title="Customer REF-1234 cannot log in",
            description="from their mail", status="open", priority="medium", assignee_id=None, reporter_id=1,
            sprint_id=None, story_points=None, created_at=T0, updated_at=T0,
        )  # fmt: skip
        world.add(ticket)

    _, said = _play(world, checks, [elsewhere])
    assert said == [{"filed": 0.0, "reply": 0.0}]
