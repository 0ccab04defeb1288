"""Chat, mail and case checks decided from the step's rows (``graders.comms_log``, the ``on_changes`` evaluators).

The post and mail checks read the episode's posts and mails folded from the change log, and a full grade reads
them the same way, so ``test_progress`` alone could not catch a fold that disagrees with the database. Here
each step's verdicts are held to a full grade and to the database path (the fold turned off), and the
evaluators must have decided most of them without a re-run, so they fail if the fold silently stops answering.
"""

from __future__ import annotations

from typing import Any

from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.comms_log import MailLog, PostLog
from graders.progress import Progress
from graders.registry import check_fn_spec
from tests.graders.conftest import T0
from tests.graders.test_checks import post, send
from worlds.schema import MailMessage, MailRecipient, MailThread, Mention, Ticket

REF = {"project": "ENG", "reference": "REF-1234"}
CHECKS: list[tuple[str, str, dict[str, Any]]] = [
    ("eng-deploy", "post_in_channel", {"channel": "eng", "pattern": "deploy"}),
    ("eng-two", "post_in_channel", {"channel": "~eng", "pattern": "ENG-\\d", "min_count": 2}),
    ("eng-anyone", "post_in_channel", {"channel": "eng", "pattern": "ENG-\\d", "author": None}),
    ("eng-bob", "post_in_channel", {"channel": "eng", "pattern": ".", "author": "bob"}),
    ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
    ("bob-mention", "post_in_channel", {"channel": "eng", "pattern": "ENG", "mention": "bob"}),
    ("carol-dm", "post_in_channel", {"channel": "@carol", "pattern": "approved"}),
    ("general", "post_in_channel", {"channel": "general", "pattern": "hello"}),
    ("nobody", "post_in_channel", {"channel": "@zed", "pattern": "x"}),
    ("no-salary", "no_post_in_channel", {"channel": "general", "pattern": "salary"}),
    ("no-secret-eng", "no_post_in_channel", {"channel": "eng", "pattern": "secret", "author": None}),
    ("mail-bob", "mail_sent", {"to": "bob", "body_pattern": "ENG-1"}),
    ("mail-both", "mail_sent", {"to": ["bob", "buyer@client.test"], "subject_pattern": "outage"}),
    ("mail-carol", "mail_sent", {"to": "carol"}),
    ("mail-anyone", "mail_sent", {"to": "dave", "sender": None}),
    ("no-mail-buyer", "mail_not_sent", {"to": "buyer@client.test"}),
    ("no-mail-dave", "mail_not_sent", {"to": ["dave", "carol"], "sender": None}),
    ("no-mail-out", "mail_not_sent", {"to": "someone@else.test"}),
    ("case", "ticket_for_reference", REF),
    ("case-fields", "ticket_for_reference", {**REF, "fields": {"priority": "high"}}),
    ("case-who", "ticket_for_reference", {**REF, "fields": {"assignee": "bob"}}),
    ("case-title", "ticket_for_reference", {**REF, "in_title": True}),
    ("case-reply", "ticket_for_reference", {**REF, "reply_to": "buyer@client.test"}),
    ("case-post", "ticket_for_reference", {**REF, "incident_channel": "eng"}),
    ("other-case", "ticket_for_reference", {"project": "ENG", "reference": "REF-9999"}),
    ("no-dup", "no_ticket_for_reference", {"reference": "REF-1234"}),
]


def _file(world, number: int, title: str, description: str, priority: str = "medium") -> Ticket:
    ticket = Ticket(
        key=f"ENG-{number}",
        project_id=1,
        number=number,
        type="bug",
        title=title,
        description=description,
        status="open",
        priority=priority,
        assignee_id=None,
        reporter_id=1,
        sprint_id=None,
        story_points=None,
        created_at=T0,
        updated_at=T0,
    )
    world.add(ticket)
    return ticket


def _from_bob(world, subject: str, body: str, to: list[int]) -> None:
    """A coworker's mail (bob's mailbox): the checks on what the agent sent pass over it."""
    world.as_("bob")
    thread = MailThread(subject=subject, created_at=world.clock.now())
    world.add(thread)
    message = MailMessage(
        thread_id=thread.id,
        message_id=f"<{thread.id}@acme.test>",
        sender_mailbox_id=2,
        subject=subject,
        body=body,
        sent_at=world.clock.now(),
        attachment_document_ids=[],
    )
    world.add(message)
    world.add(*(MailRecipient(message_id=message.id, mailbox_id=m, kind="to") for m in to))
    world.as_("alice")


def _steps(world):
    """An agent's and a coworker's chat, mail and ticket writes, one step each (plain inserts, then edits)."""
    yield lambda: post(world, 1, "hello all")
    yield lambda: post(world, 3, "can you take ENG-4?")  # the direct channel with bob
    yield lambda: post(world, 2, "deploy of ENG-3 at 5pm", author="bob")
    yield lambda: send(world, "Outage report", "ENG-1 is resolved", [2, 9])
    yield lambda: _from_bob(world, "Re: outage", "thanks, ENG-1 closed", [1, 4])
    yield lambda: post(world, 2, "deploying ENG-3 now")
    yield lambda: world.add(Mention(post_id=post(world, 2, "ENG-5 next, @carol").id, employee_id=2))
    yield lambda: send(world, "Lunch", "anyone?", [4])
    yield lambda: _file(world, 6, "Customer REF-1234 cannot log in", "from their mail", priority="high")
    yield lambda: _file(world, 7, "Unrelated", "nothing to see")
    yield lambda: send(world, "Re: REF-1234", "Tracked as ENG-6.", [9])
    yield lambda: post(world, 2, "REF-1234 is ENG-6, on it")
    yield lambda: setattr(world.ticket("ENG-6"), "assignee_id", 2)
    yield lambda: setattr(world.ticket("ENG-6"), "priority", "low")
    yield lambda: send(world, "FYI", "the ENG-1 fix", [2])
    yield lambda: post(world, 1, "hello again, no salary talk")
    last = {}
    yield lambda: last.setdefault("p", post(world, 2, "a secret plan"))
    yield lambda: setattr(last["p"], "message", "a plan")  # an edit: the post log stops, the database decides
    yield lambda: setattr(world.ticket("ENG-6"), "description", "also REF-9999")


def _rubric() -> Rubric:
    checks = tuple(Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS)
    return Rubric(id="t", version=1, description="t", checks=checks)


def _outcomes(result) -> list[tuple[str, float, str, Any]]:
    return [(c.id, c.score, c.evidence, c.details) for c in result]


def test_comms_checks_follow_the_log_as_a_full_grade_and_the_database_do(world, monkeypatch):
    rubric = _rubric()
    ran: list[str] = []
    real = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    ran.clear()
    seq, moved, passed = world.start_seq, 0, set()
    in_update: list[str] = []  # the re-runs a step made (a LATER answer's re-run comes with the results)
    for edit in _steps(world):
        before = [c.evidence for c in progress.results()]
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        ran.clear()
        value = progress.update(rows)  # type: ignore[arg-type]
        in_update += ran
        full = grade(rubric, world.ctx())
        assert _outcomes(progress.results()) == _outcomes(full.checks), f"after step {seq}"
        assert value == full.value
        moved += sum(a != c.evidence for a, c in zip(before, full.checks, strict=True))
        passed |= {c.id for c in full.checks if c.passed}
        ctx = world.ctx()  # the same checks read from the database: the fold turned off
        ctx.lasting["post_log"], ctx.lasting["mail_log"] = PostLog(), MailLog()
        ctx.lasting["post_log"].clean = ctx.lasting["mail_log"].clean = False
        for check, result in zip(rubric.checks, full.checks, strict=True):
            out = check_fn_spec(check.fn).fn(ctx, **check._kwargs)
            assert (out.score, out.evidence, dict(out.details)) == (result.score, result.evidence, result.details)
    assert moved >= 40, "the steps moved many verdicts"
    assert passed >= {"eng-deploy", "eng-two", "bob-dm", "bob-mention", "mail-bob", "mail-both", "case-reply"}
    assert {"case-post", "case-title", "case-who", "mail-anyone", "no-mail-out"} <= passed
    # decided from the rows at every step; re-run only when the post edit stopped the post log (once each)
    assert in_update == [c for c, fn, _ in CHECKS if fn in ("post_in_channel", "no_post_in_channel")]


def test_a_post_elsewhere_reaches_only_the_checks_whose_evidence_it_changes(world):
    rubric = _rubric()
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    touches = check_fn_spec("post_in_channel").touches
    assert touches is not None
    seq = world.start_seq
    asked: list[dict[str, bool]] = []
    for channel, message in ((2, "deploy ENG-3"), (2, "ENG-3 done"), (1, "hello"), (1, "hello again")):
        post(world, channel, message)
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        progress.update(rows)  # type: ignore[arg-type]
        said = {}
        for i, (c, fn, _) in enumerate(CHECKS):
            if fn == "post_in_channel":
                said[c] = touches(progress.ctx, rows[-1], **rubric.checks[i]._kwargs)
        asked.append(said)
    first_eng, second_eng, first_general, second_general = asked
    assert first_eng["eng-deploy"] and first_eng["general"], "its own channel; a first post elsewhere is evidence"
    assert not first_eng["nobody"], "an unknown person's channel: the verdict cannot move"
    assert second_eng["eng-deploy"] and not second_eng["general"] and not second_eng["carol-dm"]
    assert first_general["general"] and not first_general["eng-deploy"], "eng-deploy has posts of its own"
    assert first_general["carol-dm"], "no posts of its own: where posts went is its evidence"
    assert second_general["general"] and not second_general["carol-dm"] and not second_general["eng-two"]
