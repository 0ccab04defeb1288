"""The chat, mail and case checks' ``on_step`` evaluators, held to a full grade and to the per-check hooks.

``post_in_channel``, ``no_post_in_channel``, ``mail_sent``, ``mail_not_sent`` and ``ticket_for_reference``
settle all of a rubric's checks with one call a step (``graders.comms_posts``, ``graders.comms_mail``,
``graders.checks_cases``): each new post goes to the checks of its channel, each new mail to the checks of
its sender, each new ticket to the cases its text names. A check left out keeps its verdict, so a routing
that forgets one would leave a stale verdict: after every step every check's score, evidence and details are
compared with a full grade and with a second progress that has no ``on_step`` (the per-check ``touches`` and
``on_changes`` hooks), and the routing itself is asserted (which checks a step hands a verdict for).
"""

from __future__ import annotations

from typing import Any

from graders.base import GradingContext, grade, read_changes
from graders.progress import Progress
from tests.graders.conftest import employee
from tests.graders.test_checks import post, send
from tests.graders.test_progress_pcomms import CHECKS, _file, _from_bob, _outcomes, _rubric
from worlds.schema import Mailbox

STEP_FNS = (
    "post_in_channel",
    "no_post_in_channel",
    "mail_sent",
    "mail_not_sent",
    "ticket_for_reference",
    "no_ticket_for_reference",
)


def _to_outside(world, address: str, body: str) -> None:
    """The agent's mail to an address no mailbox had: its mailbox is created in the same step, as the tool does."""
    box = Mailbox(address=address, display_name=address, employee_id=None)
    world.add(box)
    send(world, "Update", body, [box.id])


def _steps(world) -> list[tuple[str, Any]]:
    """Named steps: chat, mail and tickets by the agent and a coworker, then a rename and an edit."""
    return [
        ("eng", lambda: post(world, 2, "deploy ENG-3 today")),
        ("eng-again", lambda: post(world, 2, "ENG-3 deployed")),
        ("general", lambda: post(world, 1, "hello all")),
        ("general-again", lambda: post(world, 1, "hello again")),
        ("bob-dm", lambda: post(world, 3, "can you take ENG-4?")),
        ("bob-in-eng", lambda: post(world, 2, "deploy of ENG-3 at 5pm", author="bob")),
        ("mail-bob", lambda: send(world, "Outage report", "ENG-1 is resolved", [2, 9])),
        ("bob-mails", lambda: _from_bob(world, "Re: outage", "thanks, ENG-1 closed", [1, 4])),
        ("file-case", lambda: _file(world, 6, "Customer REF-1234 cannot log in", "from their mail", "high")),
        ("file-other", lambda: _file(world, 7, "Unrelated", "nothing to see")),
        ("reply", lambda: send(world, "Re: REF-1234", "Tracked as ENG-6.", [9])),
        ("outside", lambda: _to_outside(world, "new@client.test", "Hello, ENG-1 is fixed")),
        ("incident", lambda: post(world, 2, "REF-1234 is ENG-6, on it")),
        ("reassign", lambda: setattr(world.ticket("ENG-6"), "assignee_id", 2)),
        ("reassign-other", lambda: setattr(world.ticket("ENG-7"), "assignee_id", 2)),
        ("rename", lambda: setattr(employee(world.session, "carol"), "username", "carola")),
        ("after-rename", lambda: post(world, 1, "hello carola")),
        ("retitle", lambda: setattr(world.ticket("ENG-7"), "description", "also REF-9999")),
    ]


def test_on_step_verdicts_equal_a_full_grade_and_the_per_check_hooks_and_route_each_row(world, without_on_step):
    rubric = _rubric()
    ids = [c for c, _, _ in CHECKS]
    with_step = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    with_step.update([])
    assert {fn for fn, _ in with_step._grouped} == set(STEP_FNS), "every function is settled by its on_step"
    handed: dict[str, set[str]] = {}  # per step, the checks an on_step evaluator handed a verdict for
    for key, (fn, checks, params) in list(with_step._grouped.items()):

        def spy(ctx, rows, params, _fn=fn, _checks=checks):
            out = _fn(ctx, rows, params)
            handed.setdefault("now", set()).update(ids[_checks[pos]] for pos in out)
            return out

        with_step._grouped[key] = (spy, checks, params)
    without_on_step(STEP_FNS)
    hooks = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    hooks.update([])
    assert not hooks._grouped
    seq, routed = world.start_seq, {}
    for name, edit in _steps(world):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        handed.clear()
        value = with_step.update(rows)  # type: ignore[arg-type]
        routed[name] = handed.get("now", set())
        if name == "outside":  # a new outside address's mailbox: no new generation, no lookup of it
            assert with_step.ctx.lasting["mail_log"].generation == 0
            assert with_step.ctx.lasting["mail_log"].reach[rows[-1].changes["message_id"]] == {"new@client.test"}
        hooks.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        assert _outcomes(with_step.results()) == _outcomes(full.checks), f"after {name}"
        assert _outcomes(hooks.results()) == _outcomes(full.checks), f"hooks after {name}"
        assert value == full.value
    own = {"eng-deploy", "eng-two", "eng-anyone", "bob-mention", "no-secret-eng"}  # on ~eng by the agent or anyone
    bare = {"general", "carol-dm", "bob-dm", "eng-bob"}  # no posts of their own: where posts went is evidence
    assert routed["eng"] == own | bare, "the first post: its channel's checks, and those listing where posts went"
    assert routed["eng-again"] == own, "a second post in ~eng: no new channel, so no check without posts is asked"
    assert routed["general"] == {"general", "no-salary", "carol-dm", "bob-dm", "eng-bob"}, "a first post in ~general"
    assert routed["general-again"] == {"general", "no-salary"}
    assert routed["bob-in-eng"] == {"eng-anyone", "eng-bob", "no-secret-eng"}, "bob's post: the checks on anyone's"
    assert routed["bob-mails"] == {"mail-anyone", "no-mail-dave"}, "a coworker's mail: only the sender=None checks"
    assert {"mail-bob", "mail-both", "mail-carol", "no-mail-buyer", "no-mail-out"} <= routed["mail-bob"]
    assert not any(c.startswith("case") or c == "other-case" for c in routed["mail-bob"]), "no case ticket yet"
    assert routed["file-case"] == {"case", "case-fields", "case-who", "case-title", "case-reply", "case-post", "no-dup"}
    assert routed["file-other"] == set(), "a ticket no case names"
    assert "case-reply" in routed["reply"] and "case-post" not in routed["reply"]
    assert "case-post" in routed["incident"] and "case-reply" not in routed["incident"]
    assert {"mail-carol", "no-mail-buyer", "no-mail-out"} <= routed["outside"]
    assert not {"mail-bob", "mail-both"} & routed["outside"], "a mail_sent check that passes stands (not handed back)"
    assert routed["reassign"] == {"case-who"}, "an edit of the case's ticket: only the check on that field"
    assert routed["reassign-other"] == set()
    assert {"carol-dm", "eng-deploy", "no-salary"} <= routed["rename"], "an employee changed: post checks decided again"
    assert routed["after-rename"] == {"general", "no-salary"}
    assert {"case", "other-case"} <= routed["retitle"], "a ticket's text edited: every case decided again"
    passed = {c.id for c in grade(rubric, world.ctx()).checks if c.passed}
    assert {"eng-deploy", "eng-two", "bob-dm", "mail-bob", "case-reply", "case-post", "case-who"} <= passed


def test_an_edited_post_or_mail_re_runs_the_checks_and_still_agrees(world, monkeypatch):
    rubric = _rubric()
    ran: list[str] = []
    real = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    seq = world.start_seq
    made: dict[str, Any] = {}
    steps = [
        lambda: made.setdefault("p", post(world, 2, "a secret plan")),
        lambda: setattr(made["p"], "message", "a plan"),  # the post log stops: the database decides
        lambda: post(world, 2, "deploy now"),
        lambda: made.setdefault("m", send(world, "Outage", "ENG-1", [2])),
        lambda: setattr(made["m"], "body", "ENG-1 fixed"),  # the mail log stops too
        lambda: send(world, "FYI", "more", [4]),
    ]
    for n, edit in enumerate(steps):
        ran.clear()
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        value = progress.update(rows)  # type: ignore[arg-type]
        stepped = ran[:]  # the step's re-runs (a LATER answer's re-run comes with the results below)
        full = grade(rubric, world.ctx())
        assert _outcomes(progress.results()) == _outcomes(full.checks), f"after step {n}"
        assert value == full.value
        if n == 0:
            assert not stepped, "a plain post is decided from the log"
        if n in (1, 2):
            posts = {c for c, fn, _ in CHECKS if fn in ("post_in_channel", "no_post_in_channel")}
            assert posts <= set(stepped), "once the log cannot follow, every post check re-runs"
    mails = {c for c, fn, _ in CHECKS if fn in ("mail_sent", "mail_not_sent")}
    assert mails <= set(ran), "after the mail edit every mail check re-runs"
