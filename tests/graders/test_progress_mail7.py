"""The mail and case paths of the sixth round, held to a full grade after every step (``_play`` of comms3's tests).

What each test plays is what the path settles: every part of a case (a plain filing, a field, a reply, an
incident post) asked in one ``on_step`` call a step, a mail routed to the reply checks only and a post to the
incident checks only; ``mail_sent``'s one-loop step (``_sent_fast``) once its index is built, which leaves out a
passing check and a coworker's mail and answers ``LATER`` for a failing check whose sender sent a mail that does
not fit. ``_play`` compares the value and every check's verdict with a full grade after each step, and the
answers the evaluators gave are asserted, so a path that decided the wrong checks fails one or the other.
"""

from __future__ import annotations

from typing import Any

import graders.checks_cases as checks_cases
import graders.comms_log as comms_log
import graders.comms_mail as comms_mail
from tests.graders.conftest import employee
from tests.graders.test_checks import post, send
from tests.graders.test_progress_comms3 import _play
from tests.graders.test_progress_pcomms import _file, _from_bob

REF = {"project": "ENG", "reference": "REF-1234"}


def test_every_part_of_a_case_is_one_call_and_each_row_reaches_only_its_parts(world):
    checks = [
        ("case", "ticket_for_reference", REF),
        ("case-fields", "ticket_for_reference", {**REF, "fields": {"priority": "high"}}),
        ("case-reply", "ticket_for_reference", {**REF, "reply_to": "buyer@client.test"}),
        ("case-post", "ticket_for_reference", {**REF, "incident_channel": "eng"}),
        ("other", "ticket_for_reference", {"project": "ENG", "reference": "REF-77"}),
        ("no-dup", "no_ticket_for_reference", {"reference": "REF-1234"}),
    ]
    progress, said = _play(
        world,
        checks,
        [
            lambda: _file(world, 6, "Customer REF-1234 cannot log in", "from their mail", priority="high"),
            lambda: send(world, "Re: REF-1234", "Tracked as ENG-6.", [9]),  # the reply check alone
            lambda: post(world, 2, "ENG-6 filed for REF-1234"),  # the incident check alone
            lambda: post(world, 1, "lunch?"),  # no key: no part moves
            lambda: _file(world, 7, "REF-77 export is empty", "from their mail"),  # the other case only
        ],
    )
    groups = [key for key in progress._grouped if key[0] == "ticket_for_reference"]
    assert len(groups) == 1, "one call a step for every part of every case"
    filed, reply, incident, lunch, other = said
    assert filed == {"case": 1.0, "case-fields": 1.0, "case-reply": 0.0, "case-post": 0.0, "no-dup": 0.0}
    assert reply == {"case-reply": 1.0}
    assert incident == {"case-post": 1.0}
    assert lunch == {}
    assert other == {"other": 1.0}
    # the ticket fold was brought up to date once in the last step (the filed row, then no_ticket's text)
    assert progress.ctx.lasting["ticket_fold"].at == len(progress.ctx.log)
    # the shared empty lists the folds read for a table with no changes are never written to
    assert comms_log._NO_ROWS == [] and checks_cases._NO_ROWS == []


def test_a_case_rubric_without_replies_or_posts_lets_mail_and_posts_pass_by(world):
    checks = [("case", "ticket_for_reference", REF), ("case-title", "ticket_for_reference", {**REF, "in_title": True})]
    _, said = _play(
        world,
        checks,
        [
            lambda: _file(world, 6, "REF-1234 down", "from their mail"),
            lambda: send(world, "Re: REF-1234", "Tracked as ENG-6.", [9]),
            lambda: post(world, 2, "ENG-6 filed for REF-1234"),
        ],
    )
    assert said == [{"case": 1.0, "case-title": 1.0}, {}, {}]


def test_mail_sent_steps_fold_in_one_loop_once_the_index_is_built(world, monkeypatch):
    tried: list[int] = []
    real = comms_mail._fits_any

    def spy(ctx, log, spec, sender_id, mails):
        tried.append(len(mails))
        return real(ctx, log, spec, sender_id, mails)

    monkeypatch.setattr(comms_mail, "_fits_any", spy)
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("mail-bob", "mail_sent", {"to": "bob", "body_pattern": "ENG-1"}),
        ("mail-carol", "mail_sent", {"to": "carol"}),
        ("mail-both", "mail_sent", {"to": ["bob", "carol"], "subject_pattern": "Fix"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # the first mail: the general path builds the index
            lambda: send(world, "Lunch", "anyone?", [4]),  # to dave: the failing checks try it, LATER
            lambda: _from_bob(world, "Re: Lunch", "ENG-1 yes", [1]),  # a coworker's: no check of the agent's moves
            lambda: send(world, "Fix", "ENG-1 is fixed", [2, 3]),  # to bob and carol: both pass
            lambda: send(world, "Fix", "ENG-1 again", [2]),  # every check passes: nothing to decide
            lambda: setattr(employee(world.session, "bob"), "username", "bobby"),  # a new generation: in full
        ],
    )
    first, lunch, coworker, fixed, again, renamed = said
    assert first == {"mail-bob": "LATER", "mail-carol": 1.0, "mail-both": "LATER"}
    assert lunch == {"mail-bob": "LATER", "mail-both": "LATER"}, "mail-carol passes: left out"
    assert coworker == {}
    assert fixed == {"mail-bob": 1.0, "mail-both": 1.0}
    assert again == {}
    assert renamed == {"mail-bob": 0.0, "mail-carol": 1.0, "mail-both": 0.0}
    assert tried == [], "the index and checks were built as progress started: every step took the one loop"


def test_the_first_mail_moves_every_mail_sent_check_whoever_sent_it(world):
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("mail-bob", "mail_sent", {"to": "bob"}),
        ("mail-carol", "mail_sent", {"to": "carol", "sender": "bob"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: _from_bob(world, "Hi", "hello", [1]),  # bob's, to alice: no "no mail was sent" any more
            lambda: _from_bob(world, "Hi", "hello", [3]),  # bob's, to carol: his check passes
        ],
    )
    assert said == [{"mail-bob": "LATER", "mail-carol": "LATER"}, {"mail-carol": 1.0}]


def test_the_agents_mailbox_is_known_from_the_first_grade(world):
    # warmed with the recipients' mailboxes at the first grade: the step of the first mail asks no query of whose
    # mailbox sent it (``sent_by``)
    progress, _ = _play(
        world,
        [("mail-bob", "mail_sent", {"to": "bob"}), ("mail-buyer", "mail_sent", {"to": "buyer@client.test"})],
        [],
    )
    log = comms_log.mail_log(progress.ctx)
    assert log is not None and log.box_of == {1: 1, 2: 2}, "alice's mailbox and bob's, from the warming query"
    _, said = _play(world, [("mail-bob", "mail_sent", {"to": "bob"})], [lambda: send(world, "Hi", "hello", [2])])
    assert said == [{"mail-bob": 1.0}]


def test_mail_not_sent_steps_fold_in_one_loop_once_its_entries_are_built(world, monkeypatch):
    asked: list[str] = []
    real = comms_mail._mail_positions

    def spy(ctx, params, rows, name):
        asked.append(name)
        return real(ctx, params, rows, name)

    monkeypatch.setattr(comms_mail, "_mail_positions", spy)
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("no-buyer", "mail_not_sent", {"to": "buyer@client.test"}),
        ("no-bob", "mail_not_sent", {"to": "bob"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # the first mail: the general path builds the entries
            lambda: send(world, "Lunch", "anyone?", [4]),  # reaches neither: LATER
            lambda: _from_bob(world, "Re: Lunch", "yes", [1]),  # a coworker's: no check moves
            lambda: send(world, "Quote", "ENG-1", [9]),  # to the buyer: that score falls
            lambda: send(world, "Fix", "ENG-1", [2, 9]),  # no-buyer fails already; no-bob's falls
            lambda: setattr(employee(world.session, "bob"), "username", "bobby"),  # a new generation: in full
        ],
    )
    first, lunch, coworker, buyer, bob, renamed = said
    assert first == lunch == {"no-buyer": "LATER", "no-bob": "LATER"}
    assert coworker == {}
    assert buyer == {"no-buyer": 0.0, "no-bob": "LATER"}
    assert bob == {"no-buyer": "LATER", "no-bob": 0.0}
    assert renamed == {"no-buyer": 0.0, "no-bob": 1.0}
    assert len(asked) == 3, "the general path at the start, the first mail and the new generation only"


def test_two_mail_sent_checks_with_the_same_params_both_pass_on_the_mail_that_fits(world):
    # they share one followed state: the second must read the verdict the first just built, not skip it as
    # already passed (its score stayed 0: progress 0.5 where a full grade gives 1.0)
    same = {"to": "bob", "body_pattern": "ENG-1"}
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("first", "mail_sent", dict(same)),
        ("other", "mail_sent", {"to": "carol"}),
        ("second", "mail_sent", dict(same)),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # to carol: the first mail, the general path
            lambda: send(world, "Fix", "ENG-1 is fixed", [2]),  # to bob: the one loop passes both
            lambda: send(world, "More", "ENG-1 again", [2]),  # both passed already: nothing to decide
        ],
    )
    assert said[1] == {"first": 1.0, "second": 1.0}
    assert said[2] == {}
