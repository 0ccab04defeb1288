"""The mail paths of the seventh round (mail8), held to a full grade after every step (``_play`` of comms3's tests).

Each path saves a frame or a lookup on a reply step; each test plays what the path settles and counts the calls
it must no longer make, so a path that decided wrongly fails the grade comparison or the answers, and one that
fell back to the old calls fails the count: ``mail_sent``'s and ``mail_not_sent``'s steps compare a sender's
mailbox they know instead of asking ``sent_by`` per mail; ``reached`` reads the log's kept mailboxes when it
knows them all and asks ``boxes_of`` only for a mail to one it does not; the case checks' reply part and the mail
checks' steps take the log as this step already folded it.
"""

from __future__ import annotations

import sys
from typing import Any

import graders.checks_cases as checks_cases
import graders.comms_log as comms_log
import graders.comms_mail as comms_mail
from tests.graders.test_checks import send
from tests.graders.test_progress_comms3 import _play
from tests.graders.test_progress_pcomms import _file, _from_bob


def _in_progress() -> bool:
    """Whether the caller runs inside ``Progress.update`` (not the full grade ``_play`` compares it with)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "update" and frame.f_code.co_filename.endswith("progress.py"):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def test_a_known_senders_mailbox_is_compared_without_asking_sent_by(world, monkeypatch):
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("carol-by-bob", "mail_sent", {"to": "carol", "sender": "bob"}),
        ("mail-dave", "mail_sent", {"to": "dave"}),
    ]
    asked: list[int | None] = []
    real = comms_mail.sent_by

    def spy(ctx, log, mail, employee):
        if _in_progress():
            asked.append(employee)
        return real(ctx, log, mail, employee)

    monkeypatch.setattr(comms_mail, "sent_by", spy)
    _, said = _play(
        world,
        [*checks],
        [
            lambda: send(world, "Hi", "hello", [3]),  # the first mail: the general path reads bob's mailbox
            lambda: asked.clear() or send(world, "Hi again", "hello", [3]),  # the agent's, to carol: bob's waits
            lambda: _from_bob(world, "Hi", "hello", [3]),  # bob's, to carol: his check passes
            lambda: send(world, "Lunch", "anyone?", [4]),  # to dave: the agent's check passes
        ],
    )
    assert said == [
        {"carol-by-bob": "LATER", "mail-dave": "LATER"},
        {"mail-dave": "LATER"},
        {"carol-by-bob": 1.0},
        {"mail-dave": 1.0},
    ]
    assert asked == [], "both senders' mailboxes were known after the first mail: compared, never asked"


def test_reached_asks_boxes_of_only_for_a_mail_to_a_mailbox_it_does_not_know(world, monkeypatch):
    asked: list[tuple[int, ...]] = []
    real = comms_log.boxes_of

    def spy(ctx, log, ids):
        if _in_progress():
            asked.append(tuple(ids))
        return real(ctx, log, ids)

    monkeypatch.setattr(comms_log, "boxes_of", spy)
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("mail-bob", "mail_sent", {"to": "bob", "body_pattern": "ENG-1"}),
        ("mail-buyer", "mail_sent", {"to": "buyer@client.test"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [2]),  # bob's mailbox was warmed: no ask
            lambda: send(world, "Note", "ENG-1 for carol and bob", [3, 2]),  # carol's was not: asked once
            lambda: send(world, "Quote", "ENG-1", [9]),  # the buyer's, warmed: no ask, the check passes
        ],
    )
    assert said == [
        {"mail-bob": "LATER", "mail-buyer": "LATER"},
        {"mail-bob": 1.0, "mail-buyer": "LATER"},
        {"mail-buyer": 1.0},
    ]
    assert asked == [(3, 2)], "only the mail to carol's mailbox, which no warming read"


def test_a_reply_sent_with_its_ticket_in_one_step_is_read_from_the_log_that_step_folded(world, monkeypatch):
    asked: list[tuple[int, ...]] = []
    real = checks_cases.boxes_of

    def spy(ctx, log, ids):
        if _in_progress():
            asked.append(tuple(ids))
        return real(ctx, log, ids)

    monkeypatch.setattr(checks_cases, "boxes_of", spy)
    ref = {"project": "ENG", "reference": "REF-1234"}
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("case-reply", "ticket_for_reference", {**ref, "reply_to": "buyer@client.test"}),
        ("mail-buyer", "mail_sent", {"to": "buyer@client.test", "body_pattern": "ENG-6"}),
    ]

    def file_and_reply() -> None:
        _file(world, 6, "REF-1234 cannot log in", "from their mail")
        send(world, "Re: REF-1234", "Tracked as ENG-6.", [9])

    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # the first mail: every mail check moves
            file_and_reply,  # both parts in one step: the reply found in this step's fold
            lambda: send(world, "Re: REF-1234", "ENG-6 again", [9]),  # both passed: nothing to decide
        ],
    )
    assert said == [{"mail-buyer": "LATER"}, {"case-reply": 1.0, "mail-buyer": 1.0}, {}]
    assert asked == [], "the buyer's mailbox was warmed: the reply part read it from the log's kept mailboxes"


def test_mail_not_sent_compares_a_known_senders_mailbox_without_asking_sent_by(world, monkeypatch):
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("no-buyer", "mail_not_sent", {"to": "buyer@client.test"}),
        ("no-buyer-by-bob", "mail_not_sent", {"to": "buyer@client.test", "sender": "bob"}),
    ]
    asked: list[int | None] = []
    real = comms_mail.sent_by

    def spy(ctx, log, mail, employee):
        if sys._getframe(1).f_code.co_name == "_mail_not_sent_step":  # its loop (a verdict it decides reads all)
            asked.append(employee)
        return real(ctx, log, mail, employee)

    monkeypatch.setattr(comms_mail, "sent_by", spy)
    _, said = _play(
        world,
        checks,
        [
            lambda: send(world, "Hi", "hello", [3]),  # the first mail: the general path builds the entries
            lambda: asked.clear() or send(world, "Quote", "ENG-1", [9]),  # the agent's to the buyer: bob's waits
            lambda: _from_bob(world, "Lunch", "anyone?", [3]),  # bob's, to carol: LATER (its count moved)
            lambda: _from_bob(world, "Quote", "ENG-1", [9]),  # bob's, to the buyer: his check falls
        ],
    )
    assert said == [
        {"no-buyer": "LATER", "no-buyer-by-bob": "LATER"},
        {"no-buyer": 0.0},
        {"no-buyer-by-bob": "LATER"},
        {"no-buyer-by-bob": 0.0},
    ]
    assert asked == [], "both senders' mailboxes were known after the first mail: the loop compared them"


def test_a_filed_cases_fields_read_the_fold_once_and_word_only_a_field_that_differs(world, monkeypatch):
    calls: list[str] = []
    for name in ("_ticket_fold", "_mismatch"):
        real = getattr(checks_cases, name)

        def spy(*args, _real=real, _name=name):
            if _in_progress():
                calls.append(_name + ":" + sys._getframe(1).f_code.co_name)
            return _real(*args)

        monkeypatch.setattr(checks_cases, name, spy)
    ref = {"project": "ENG", "reference": "REF-1234"}
    checks: list[tuple[str, str, dict[str, Any]]] = [
        ("case-fields", "ticket_for_reference", {**ref, "fields": {"priority": "high", "type": "bug"}}),
        ("case-wrong", "ticket_for_reference", {**ref, "fields": {"priority": "low", "type": "bug"}}),
    ]
    _, said = _play(
        world,
        checks,
        [lambda: calls.clear() or _file(world, 6, "REF-1234 cannot log in", "from mail", priority="high")],
    )
    assert said == [{"case-fields": 1.0, "case-wrong": 0.0}]
    assert calls == ["_ticket_fold:_filed_row", "_mismatch:_case_rest"], "the fold once, the one field that differs"
