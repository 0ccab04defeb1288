"""The third round of the chat, mail and case ``on_step`` paths, held to a full grade after every step.

What each test plays is what the path settles: a ``LATER`` answer (the score stands, the evidence moved) for a
failing mail or post check, a passing mail or reply check left out, a case's tickets folded from the log and
filed from the ticket's insert image, ``no_ticket_for_reference``'s routing, and the lookahead patterns tried
with ``match``. After every step the progress's results and value must equal a full grade's, and the answers
the evaluators gave are asserted, so a path that answered ``LATER`` where the score moved (or left out a check
whose verdict moved) fails on the value or the results; one that stopped answering ``LATER`` fails on the
answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.checks_cases import _logged_fields, _logged_tickets, _new_tickets_for
from graders.comms_mail import _lookaheads_only, finder
from graders.progress import Progress
from graders.registry import LATER
from tests.graders.conftest import employee
from tests.graders.test_checks import post, send
from tests.graders.test_progress_pcomms import _file, _outcomes

AHEAD = r"(?=[\s\S]*ENG-1)(?=[\s\S]*fixed)"


def _rubric(checks: list[tuple[str, str, dict[str, Any]]]) -> Rubric:
    made = tuple(Check(id=i, description="d", fn=fn, params=p) for i, fn, p in checks)
    return Rubric(id="t", version=1, description="t", checks=made)


def _said(verdict: Any) -> Any:
    """How the spies record an ``on_step`` answer: "LATER", the score (a float alone or a verdict's), or None."""
    if verdict is LATER:
        return "LATER"
    return verdict if type(verdict) is float else verdict and verdict[0]


def _play(world, checks: list[tuple[str, str, dict[str, Any]]], steps: list[Callable[[], Any]]):
    """Play ``steps``; after each, the answers the on_step evaluators gave by check id ("LATER" or the score).

    Results and value are held to a full grade after every step, and a LATER check must be lagging until the
    results are asked for.
    """
    rubric = _rubric(checks)
    ids = [c for c, _, _ in checks]
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    answers: dict[str, Any] = {}
    for key, (fn, positions, params) in list(progress._grouped.items()):

        def spy(ctx, rows, params, _fn=fn, _positions=positions):
            out = _fn(ctx, rows, params)
            for pos, verdict in out.items():
                answers[ids[_positions[pos]]] = _said(verdict)
            return out

        progress._grouped[key] = (spy, positions, params)
    seq, said = world.start_seq, []
    for n, step in enumerate(steps):
        answers.clear()
        step()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        later = {c for c, a in answers.items() if a == "LATER"}
        assert {ids[i] for i in progress._lagging} >= later, "a LATER check waits for the results"
        full = grade(rubric, world.ctx())
        assert value == full.value, f"value after step {n}"
        assert _outcomes(progress.results()) == _outcomes(full.checks), f"after step {n}"
        assert not progress._lagging, "the results asked every lagging check"
        said.append(dict(answers))
    return progress, said


def test_lookahead_only_patterns_are_matched_where_search_would_find_them():
    dotall = r"(?s)(?=.*\bENG-1\b)(?=.*\b(fixed|mended))"
    assert _lookaheads_only(AHEAD) and _lookaheads_only(dotall)
    assert _lookaheads_only(r"(?=[\s\S]*[)(\]])(?=[\s\S]*(a|b))")
    ordinary = (r"(?=[\s\S]*a)|b", r"(?=[\s\S]*a)b", r"\bENG-1\b", r"(?=[\s\S]*a", "", r"(?=.*a)", r"(?i)(?=.*a)")
    for pattern in ordinary:  # without (?s) a ``.*`` stops at a line's end: a later line is not seen from 0
        assert not _lookaheads_only(pattern), pattern
    texts = ["", "fixed ENG-1", "x ENG-1 y fixed", "ENG-12 fixed", "xb", "ENG-1", "nothing", "a\nENG-1\nfixed", "\na"]
    for pattern in (AHEAD, dotall, *ordinary[:2], r"(?=[\s\S]*\bENG-1\b)(?=[\s\S]*(?:fix|mend))", r"(?i)(?=.*a)"):
        for text in texts:
            assert bool(finder(pattern)(text)) == bool(re.search(pattern, text, re.IGNORECASE)), (pattern, text)


def test_mail_checks_answer_later_until_a_mail_can_move_their_score(world):
    checks = [
        ("mail-bob", "mail_sent", {"to": "bob", "body_pattern": "ENG-1"}),
        ("mail-carol", "mail_sent", {"to": "carol"}),
        ("mail-ahead", "mail_sent", {"to": "bob", "body_pattern": AHEAD}),
        ("no-buyer", "mail_not_sent", {"to": "buyer@client.test"}),
        ("no-bob", "mail_not_sent", {"to": "bob"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # to carol: the first mail decides every check
            lambda: send(world, "Lunch", "anyone?", [4]),  # to dave: nothing fits
            lambda: send(world, "Fix", "ENG-1 is fixed", [2]),  # to bob: both of bob's checks pass
            lambda: send(world, "Fix", "ENG-1 again", [2]),  # passing checks stand
            lambda: send(world, "Quote", "ENG-1", [9]),  # to the buyer: the score falls
            lambda: send(world, "Quote", "again", [9]),  # failing already: only the count moves
            lambda: setattr(employee(world.session, "bob"), "username", "bobby"),  # who "bob" is moved
        ],
    )
    first, nothing, fits, again, buyer, buyer_again, renamed = said
    later = {"no-buyer": "LATER", "no-bob": "LATER"}
    assert first == {"mail-bob": "LATER", "mail-carol": 1.0, "mail-ahead": "LATER", **later}
    assert nothing == {"mail-bob": "LATER", "mail-ahead": "LATER", **later}, "mail-carol passes: left out"
    assert fits == {"mail-bob": 1.0, "mail-ahead": 1.0, "no-buyer": "LATER", "no-bob": 0.0}
    assert again == later, "no-bob fails already"
    assert buyer == {"no-buyer": 0.0, "no-bob": "LATER"}
    assert buyer_again == later
    # a new generation of the mail log: every check decided in full, none told LATER on its old lookups (the
    # mails to bob no longer reach a "bob": mail-bob fails and no-bob passes again)
    assert renamed == {"mail-bob": 0.0, "mail-carol": 1.0, "mail-ahead": 0.0, "no-buyer": 0.0, "no-bob": 1.0}


def test_post_checks_answer_later_when_only_their_evidence_moves(world):
    checks = [
        ("eng-deploy", "post_in_channel", {"channel": "eng", "pattern": "deploy"}),
        ("eng-two", "post_in_channel", {"channel": "eng", "pattern": "ENG-\\d", "min_count": 2}),
        ("general", "post_in_channel", {"channel": "general", "pattern": "hello"}),
        ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
        ("no-salary", "no_post_in_channel", {"channel": "general", "pattern": "salary"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: post(world, 2, "status update"),  # ~eng, matching nothing; a first channel
            lambda: post(world, 2, "deploy ENG-3"),
            lambda: post(world, 1, "hi all"),  # ~general, matching nothing
            lambda: post(world, 1, "salary talk"),  # the no_post check's score falls
            lambda: post(world, 2, "ENG-5 too"),  # eng-two's second match
        ],
    )
    status, deploy, hi, salary, second = said
    assert status == {"eng-deploy": "LATER", "eng-two": "LATER", "general": "LATER", "bob-dm": "LATER"}
    assert deploy == {"eng-deploy": 1.0, "eng-two": 0.5}
    assert hi == {"general": "LATER", "bob-dm": "LATER", "no-salary": "LATER"}, "a first post in ~general"
    assert salary == {"general": "LATER", "no-salary": 0.0}
    assert second == {"eng-deploy": "LATER", "eng-two": 1.0}


REF = {"project": "ENG", "reference": "REF-1234"}


def test_case_tickets_fold_from_the_log_and_passing_replies_are_left_out(world):
    checks = [
        ("case", "ticket_for_reference", REF),
        ("case-fields", "ticket_for_reference", {**REF, "fields": {"priority": "high"}}),
        ("case-title", "ticket_for_reference", {**REF, "in_title": True}),
        ("case-reply", "ticket_for_reference", {**REF, "reply_to": "buyer@client.test"}),
        ("other", "ticket_for_reference", {"project": "ENG", "reference": "REF-9999"}),
        ("no-dup", "no_ticket_for_reference", {"reference": "REF-1234"}),
        ("no-other", "no_ticket_for_reference", {"reference": "REF-9999"}),
    ]
    progress, said = _play(
        world,
        checks,
        [
            lambda: _file(world, 6, "Customer REF-1234 cannot log in", "from their mail", priority="high"),
            lambda: send(world, "Re: REF-1234", "Tracked as ENG-6.", [9]),
            lambda: send(world, "Re: REF-1234", "ENG-6 is fixed", [9]),  # the reply passes already
            lambda: setattr(world.ticket("ENG-6"), "assignee_id", 2),  # no column a case reads
            lambda: setattr(world.ticket("ENG-6"), "priority", "low"),
            lambda: setattr(world.ticket("ENG-6"), "title", "Customer cannot log in"),  # the text: every case
            lambda: _file(world, 7, "REF-1234 again", "filed anew"),
        ],
    )
    filed, reply, reply_again, assignee, priority, retitle, duplicate = said
    assert filed == {"case": 1.0, "case-fields": 1.0, "case-title": 1.0, "case-reply": 0.0, "no-dup": 0.0}
    assert reply == {"case-reply": 1.0}
    assert reply_again == {}, "the first reply stays the one named"
    assert assignee == {} and priority == {"case-fields": 0.0}
    assert retitle["case-title"] == 0.0 and {"case", "other", "no-dup", "no-other"} <= retitle.keys()
    # ENG-6 no longer names the reference: ENG-7 is the case's one ticket, filed from its insert image
    assert duplicate == {"case": 1.0, "case-fields": 0.0, "case-title": 1.0, "case-reply": 0.0, "no-dup": 0.0}
    ctx = progress.ctx
    tickets = _logged_tickets(ctx)
    assert tickets is not None and [t.key for t in tickets] == ["ENG-6", "ENG-7"]
    assert [t.key for t in _new_tickets_for(ctx, "REF-1234")] == ["ENG-7"], "ENG-6's title no longer names it"
    assert _logged_fields(ctx, tickets[0].id, {"priority": "low", "assignee": "bob"}) == {
        "priority": "low",
        "assignee": "bob",
    }


def test_the_ticket_fold_builds_the_case_tickets_again_only_when_a_case_column_moves(world):
    ctx = GradingContext(session=world.session, trace=[], actor_id=1)
    seq = world.start_seq

    def fold_in() -> None:
        nonlocal seq
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        ctx.extend(rows)
        ctx.forget()

    _file(world, 6, "REF-1 down", "x")
    fold_in()
    first = _logged_tickets(ctx)
    world.ticket("ENG-6").priority = "high"
    fold_in()
    assert _logged_tickets(ctx) is first, "an edit of no case column keeps the built tickets"
    world.ticket("ENG-6").description = "REF-2 as well"
    fold_in()
    again = _logged_tickets(ctx)
    assert again is not first and again is not None and again[0].description == "REF-2 as well"
    world.session.delete(world.ticket("ENG-6"))
    fold_in()
    assert _logged_tickets(ctx) == [] and _logged_fields(ctx, again[0].id, {"priority": "high"}) is None
