"""The meeting checks' ``on_step`` evaluators give what a fresh grade gives, asking each hook as little as they say.

``checks_meetings.touch_step`` settles every check of a meeting function with one call a step: a hook is asked
once per meeting and row set (shared by the per-person checks and by the functions with the same hook), a
booking's invitations once per event, and the asking phase's chat and answers not at all. ``channel_member``'s
``_member_step`` reads the step's memberships once. After every step every verdict must equal a full grade's,
and the hook calls are counted, so these tests fail if the shortcuts ask too much or decide wrongly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from graders import checks_meetings
from graders.base import ChangeRow, Check, GradingContext, Rubric, grade, read_changes
from graders.checks_comms import _member_step
from graders.progress import Progress
from tests.graders.test_progress_meet import CHECKS, MEET, SETUP, _edits
from worlds.rawsql import Sql
from worlds.rows import insert_rows

PERSON = [  # a check per person of the meeting, as the per-item rubrics have them
    (f"{kind}-{who}", f"meeting_person_{kind}", {"title_pattern": "Sync", "username": who})
    for kind in ("in_hours", "free")
    for who in ("bob", "carol", "zed")
] + [("length", "meeting_length", {"title_pattern": "Sync", "minutes": 30})]


def _asking(sql: Sql, world: Any) -> Iterator[str]:
    """The asking phase before the booking: the agent's question and bob's answer (no event row)."""
    post = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False, "created_at": world.clock.now()}
    sql.insert("posts", {**post, "channel_id": 3, "author_id": 1, "message": "Does 14:00 on Tuesday suit you?"})
    yield "the agent asks bob"
    fact = {"intent": "agreement", "subject": MEET.isoformat(), "said": "yes"}
    memory = {"employee_id": 2, "at": world.clock.now(), "turn": 1, "kind": "did", "subject": "alice"}
    sql.insert("npc_memory", {**memory, "data": {"fact": fact}})
    yield "bob says yes"
    yield from _edits(sql, world)
    channel = {"team_id": 1, "display_name": "", "type": "D", "purpose": "", "header": "", "creator_id": 1}
    dm = sql.insert("channels", {**channel, "name": "1__3", "created_at": world.clock.now()})
    later = {**post, "created_at": world.clock.now()}  # after the booking: only a first ask can matter
    sql.insert("posts", {**later, "channel_id": dm, "author_id": 1, "message": "Does 16:00 suit you?"})
    yield "the agent opens a direct channel with carol and asks her"


def test_hooks_asked_once_per_meeting_and_event_and_every_step_a_fresh_grade(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS + PERSON]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    calls: dict[str, Counter[tuple[str, str]]] = {}  # step -> (hook, meeting) -> hook calls
    at = [""]
    real = checks_meetings._touched

    def touched(ctx: GradingContext, touches: Any, rows: Any, kw: Any) -> bool:
        def counted(ctx_: GradingContext, row: ChangeRow, **params: Any) -> bool:
            calls.setdefault(at[0], Counter())[(touches.__name__, kw["title_pattern"])] += 1
            return bool(touches(ctx_, row, **params))

        return real(ctx, counted, rows, kw)

    monkeypatch.setattr(checks_meetings, "_touched", touched)
    seq, evidence = world.start_seq, {}
    for step in _asking(Sql.of(world.session), world):
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        at[0] = step
        value = progress.update(rows)  # type: ignore[arg-type]
        full = grade(rubric, world.ctx())
        got = [(c.id, c.score, c.evidence, c.details) for c in progress.results()]
        assert got == [(c.id, c.score, c.evidence, c.details) for c in full.checks], step
        assert value == full.value, step
        evidence[step] = {c.id: c.evidence for c in full.checks}
    # the asking phase's post and answer asked no hook (no meeting, no event row)
    assert "the agent asks bob" not in calls and "bob says yes" not in calls, calls
    # the booking (an event, three invitations) asks no hook: the meeting's own event touches every check of
    # it, and new events touch no check of a meeting not booked (Retro) (``_calendar_rows``; asked per check
    # and row, as two rounds ago, this was over a hundred calls)
    assert "the meeting booked: bob's standup clashes" not in calls, calls
    ev = evidence["the meeting booked: bob's standup clashes"]
    assert "@bob is also in #1 'Standup'" in ev["free-bob"] and "has nothing else then" in ev["free-carol"], ev
    assert "no employee @zed" in ev["in_hours-zed"] and ev["length"].endswith("lasts 30 minutes"), ev
    assert "@bob agreed at" in evidence["bob says yes after the booking"]["agreed"], "his yes before the booking"
    assert "@carol is also in #6 'Lunch'" in evidence["carol books a lunch over the meeting"]["free-carol"]
    # the channel opened after the booking is one of the agent's direct channels (folded from its logged row)
    assert "@carol was never asked" in evidence["dave invited: his planning series clashes"]["agreed"]
    assert "@carol neither agreed" in evidence["the agent opens a direct channel with carol and asks her"]["agreed"]


def test_a_hook_that_raises_re_runs_its_checks(world):
    def boom(ctx: GradingContext, row: ChangeRow, title_pattern: str, **_: Any) -> bool:
        raise RuntimeError(title_pattern)

    step = checks_meetings.touch_step(boom)
    row = ChangeRow(seq=1, table="events", key=(9,), op="insert", changes={}, tag="t")
    params = [{"title_pattern": "Sync"}, {"title_pattern": "Retro", "attendees": ["bob"]}]
    ctx = world.ctx()
    ctx.extend([row])  # the step's row is in the log, as progress extends it before asking
    assert step(ctx, [row], params) == {0: None, 1: None}


MEMBER_PARAMS = [
    {"channel": "~eng", "username": "bob", "member": True},
    {"channel": "eng", "username": "carol", "member": False},
    {"channel": "general", "username": "bob", "member": True},
    {"channel": "eng", "username": "zed", "member": True},
]
JOINED = {"last_viewed_at": None, "joined_at": MEET}


@pytest.mark.parametrize(
    ("rows", "want"),
    [
        ([("insert", 2, 2)], {0: 1.0}),  # the score alone: its evidence is built when the results are asked for
        ([("insert", 2, 3), ("delete", 2, 3)], {1: 1.0}),
        ([("insert", 2, 4)], {}),  # dave: no check names him
        ([("update", 2, 2)], {}),  # bob read the channel: who is in it stands
    ],
    ids=["bob-joins", "carol-joins-and-leaves", "dave-joins", "bob-reads"],
)
def test_member_step_decides_the_checks_whose_membership_the_step_moved(world, rows, want):
    log = [
        ChangeRow(
            seq=n,
            table="channel_members",
            key=(100 + n,),
            op=op,
            changes={"last_viewed_at": (None, MEET)}
            if op == "update"
            else {"channel_id": c, "employee_id": e} | JOINED,
            tag="t",
        )
        for n, (op, c, e) in enumerate(rows, 1)
    ]
    assert _member_step(world.ctx(), log, MEMBER_PARAMS) == want


def test_member_step_leaves_a_renamed_channel_to_the_checks(world):
    rename = ChangeRow(seq=1, table="channels", key=(2,), op="update", changes={"name": ("eng", "x")}, tag="t")
    found = _member_step(world.ctx(), [rename], MEMBER_PARAMS)
    assert set(found) == {0, 1, 3} and set(found.values()) == {None}, found  # general and its member stand
