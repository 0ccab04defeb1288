"""The meeting checks' per-step shortcuts give what a fresh grade gives (issue 14).

``graders.checks_meetings.Calendar`` keeps each participant's commitments over a horizon for the episode (and
their clashes per meeting window) and folds in the event and invitation rows of each step instead of querying
again; the touches hooks of ``meeting_agreed``, ``meeting_in_working_hours``/``meeting_attendees`` and
``event_exists`` skip rows that cannot change them; the agent's posts and the NPC memories are read once each,
unless one is edited. Each edit below is one step of the progress score on the tiny test world, and after
every step every check's verdict must equal a full grade's (which starts from an empty calendar), and the kept
calendar must have answered from what it kept where the rows allowed it (else these tests could not fail when
the shortcut silently stops working).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graders import checks_meetings, meeting_log
from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.checks_meetings import Calendar, _recurs_in
from graders.progress import Progress
from mcp_tools.calendar.slots import occurrences
from worlds.rawsql import Sql
from worlds.rows import insert_rows

MEET = datetime(2025, 3, 4, 14, 0, tzinfo=UTC)  # Tuesday; the agent (alice, 1) books "Sync ENG-1" then
SETUP = {  # untracked, like a generated world: dave's weekly standup (bob in it) clashes, carol's dentist does not
    "events": [
        {"id": 1, "organizer_id": 4, "title": "Standup", "description": "", "start_at": MEET - timedelta(days=7),
         "end_at": MEET - timedelta(days=7, minutes=-15), "rrule": "FREQ=WEEKLY", "until": None, "room_id": None,
         "cancelled": False, "created_at": MEET - timedelta(days=30)},
        {"id": 2, "organizer_id": 3, "title": "Dentist", "description": "", "start_at": MEET + timedelta(hours=2),
         "end_at": MEET + timedelta(hours=3), "rrule": None, "until": None, "room_id": None, "cancelled": False,
         "created_at": MEET - timedelta(days=30)},
        {"id": 3, "organizer_id": 4, "title": "Planning", "description": "",
         "start_at": MEET - timedelta(days=14, hours=-2),
         "end_at": MEET - timedelta(days=14, hours=-2, minutes=-30), "rrule": "FREQ=WEEKLY;BYDAY=TU,TH", "until": None,
         "room_id": None, "cancelled": False, "created_at": MEET - timedelta(days=30)},
        {"id": 4, "organizer_id": 4, "title": "Review", "description": "", "start_at": MEET + timedelta(minutes=20),
         "end_at": MEET + timedelta(minutes=40), "rrule": None, "until": None, "room_id": None, "cancelled": False,
         "created_at": MEET - timedelta(days=30)},
    ],
    "event_attendees": [
        {"id": 1, "event_id": 1, "employee_id": 2, "rsvp": "accepted", "optional": False},
        {"id": 2, "event_id": 1, "employee_id": 3, "rsvp": "declined", "optional": False},
        {"id": 3, "event_id": 3, "employee_id": 4, "rsvp": "accepted", "optional": False},
    ],
}  # fmt: skip
CHECKS = [
    ("clash", "meeting_no_double_booking", {"title_pattern": "Sync"}),
    ("hours", "meeting_in_working_hours", {"title_pattern": "Sync"}),
    ("invited", "meeting_attendees", {"title_pattern": "Sync", "attendees": ["bob", "carol"]}),
    ("agreed", "meeting_agreed", {"title_pattern": "Sync", "attendees": ["bob", "carol"]}),
    ("room", "meeting_room", {"title_pattern": "Sync", "location": "HQ"}),
    ("announced", "meeting_announced", {"title_pattern": "Sync", "channel": "general", "key": "ENG-1"}),
    ("exists", "event_exists", {"title_pattern": "Sync", "attendees": ["bob"]}),
    ("exists-dave", "event_exists", {"title_pattern": "Sync", "attendees": ["actor", "dave", "zed"]}),
    ("exists-retro", "event_exists", {"title_pattern": "Retro", "attendees": ["carol"], "room": "Orca"}),
    ("clash-retro", "meeting_no_double_booking", {"title_pattern": "Retro"}),
]


def _edits(sql: Sql, world: Any) -> Iterator[str]:
    """Edits as tools and coworkers make them, one step each (the name says what the step did)."""
    ev = {"description": "", "rrule": None, "until": None, "room_id": None, "cancelled": False}

    def event(title: str, organizer: int, start: datetime, minutes: int, **more: Any) -> int:
        return sql.insert(
            "events",
            {**ev, "organizer_id": organizer, "title": title, "start_at": start,
             "end_at": start + timedelta(minutes=minutes), "created_at": world.clock.now(), **more},
        )  # fmt: skip

    def invite(event_id: int, who: int, rsvp: str = "needs_action") -> int:
        return sql.insert(
            "event_attendees", {"event_id": event_id, "employee_id": who, "rsvp": rsvp, "optional": False}
        )

    yield "nothing booked"
    sync = event("Sync ENG-1", 1, MEET, 30)
    invite(sync, 1, "accepted")
    bob, carol = invite(sync, 2), invite(sync, 3)
    yield "the meeting booked: bob's standup clashes"
    world.later()
    sql.update("event_attendees", bob, {"rsvp": ("needs_action", "accepted")})
    yield "bob accepts: as busy as before"
    sql.update("event_attendees", 1, {"rsvp": ("accepted", "declined")})
    yield "bob declines his standup: no clash"
    lunch = event("Lunch", 3, MEET + timedelta(minutes=15), 60)
    yield "carol books a lunch over the meeting"
    invite(4, 3, "tentative")
    yield "carol is invited to the review, tentatively"
    allhands = event("All-hands", 4, MEET + timedelta(days=1, minutes=-30), 45, room_id=1)
    yield "an all-hands takes the Orca room before anyone asked about it"
    retro = event("Retro", 1, MEET + timedelta(days=1), 30, room_id=1)
    invite(retro, 1, "accepted")
    invite(retro, 3)
    yield "a second meeting with a room: the first keeps its clashes"
    offsite = event("Offsite", 4, MEET + timedelta(days=1), 60, room_id=1)
    yield "someone else takes the retro's room"
    sql.update("events", offsite, {"room_id": (1, None)})
    sql.update("events", allhands, {"cancelled": (False, True)})
    yield "the offsite gives the room back, the all-hands is cancelled"
    sql.update("event_attendees", carol, {"rsvp": ("needs_action", "declined")})
    yield "carol declines the meeting"
    world.later()
    post = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False, "created_at": world.clock.now()}
    sql.insert("posts", {**post, "channel_id": 2, "author_id": 1, "message": "Sync ENG-1 is booked"})
    yield "the agent announces the meeting"
    fact = {"intent": "agreement", "subject": MEET.isoformat(), "said": "yes"}
    sql.insert(
        "npc_memory",
        {
            "employee_id": 2,
            "at": world.clock.now(),
            "turn": 1,
            "kind": "did",
            "subject": "alice",
            "data": {"fact": fact},
        },
    )
    yield "bob says yes after the booking"
    ask = sql.insert("posts", {**post, "channel_id": 3, "author_id": 1, "message": "Does 14:00 suit you?"})  # ~1__2
    yield "the agent asks bob after the booking"
    sql.update("posts", ask, {"deleted_at": (None, world.clock.now())})
    yield "the agent deletes the ask"
    sql.update("events", lunch, {"cancelled": (False, True)})
    yield "carol's lunch cancelled"
    sql.update("events", sync, {"room_id": (None, 1)})
    yield "the meeting gets a room"
    sql.update(
        "events",
        sync,
        {"start_at": (MEET, MEET + timedelta(hours=2)), "end_at": (MEET, MEET + timedelta(hours=2, minutes=30))},
    )
    yield "the meeting moves onto carol's dentist"
    invite(sync, 4)
    yield "dave invited: his planning series clashes"
    sql.update("event_attendees", 3, {"event_id": (3, retro)})
    yield "dave's old planning invitation moved to the retro: the log cannot tell, the tables can"


def _utc(value: Any) -> datetime:
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).replace(tzinfo=UTC)


@pytest.mark.parametrize("clock", [False, True], ids=["no-clock", "preloaded"])
def test_kept_calendar_and_hooks_give_a_fresh_grade_after_every_step(world, monkeypatch, clock):
    """With a step's clock the calendar is read before the booking (``Calendar.preload``); the full grade that
    each step is compared with has no step, so it reads the calendar the first time a meeting asks."""
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    trace = [{"type": "step", "clock": world.clock.now().isoformat()}] if clock else []
    progress = Progress(rubric, GradingContext(session=world.session, trace=trace, actor_id=1))
    queried: list[str] = []  # the steps whose progress update queried someone's events again
    at = [""]
    real = Calendar._query
    monkeypatch.setattr(Calendar, "_query", lambda self, *a: queried.append(at[0]) or real(self, *a))
    tables_read: list[str] = []  # the steps whose progress update read the posts or memories table
    real_rows_in = meeting_log.rows_in

    def rows_in(ctx: GradingContext, sql: str, ids: Any) -> Any:
        if sql in (meeting_log._DM_POSTS, meeting_log._MEMORY):
            tables_read.append(at[0])
        return real_rows_in(ctx, sql, ids)

    monkeypatch.setattr(meeting_log, "rows_in", rows_in)
    seq, evidence, invitations = world.start_seq, {}, 0
    for step in _edits(Sql.of(world.session), world):
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        at[0] = step
        value = progress.update(rows)  # type: ignore[arg-type]
        if clock and step == "nothing booked":  # the agent, bob, carol and dave (named by the checks), every room
            kept = progress.ctx.lasting["calendar"]
            assert set(kept.busy) == {1, 2, 3, 4} and kept.all_rooms and set(kept.busy[2]) == {1}, kept.busy
        at[0] = "full grade"
        full = grade(rubric, world.ctx())
        got = [(c.id, c.score, c.evidence, c.details) for c in progress.results()]
        assert got == [(c.id, c.score, c.evidence, c.details) for c in full.checks], step
        assert value == full.value, step
        evidence[step] = {c.id: c.evidence for c in full.checks}
        events = Sql.of(world.session).all(meeting_log._EVENTS.format("?, ?, ?, ?, ?"), (5, 6, 7, 8, 9))
        want_events = [(i, t, o, _utc(a), _utc(b), r, bool(c), _utc(at)) for i, t, o, a, b, r, c, at in events]
        assert [tuple(m) for m in meeting_log._new_events(world.ctx())] == want_events, step
        stored = Sql.of(world.session).all(checks_meetings._EVENT_ROWS.format("?, ?, ?, ?, ?"), (5, 6, 7, 8, 9))
        assert checks_meetings._event_images(progress.ctx) == {r[0]: checks_meetings._stored(r) for r in stored}, step
        # the posts and memories folded step by step are what the tables hold (the reads are not counted)
        fresh = world.ctx()
        assert meeting_log.new_posts(progress.ctx) == meeting_log._read_posts(fresh), step
        assert meeting_log.memories(progress.ctx) == meeting_log._read_memories(fresh), step
        for event_id in (5, 8):  # the meeting and the retro: the invitations read from the log are the table's
            want = [tuple(r) for r in Sql.of(world.session).all(checks_meetings._ATTENDEES, (event_id,))]
            assert [tuple(a) for a in checks_meetings._attendees(world.ctx(), event_id)] == want, step
            invitations += len(want)
    assert invitations > 40, "the meeting's and the retro's invitations were compared"
    assert meeting_log.invitations(progress.ctx) is None, "the last step moved an invitation the log does not hold"
    ev = evidence
    assert "@bob is also in #1 'Standup'" in ev["the meeting booked: bob's standup clashes"]["clash"]
    assert "no clash for 3 participants" in ev["bob declines his standup: no clash"]["clash"]
    assert "@carol is also in #" in ev["carol books a lunch over the meeting"]["clash"]
    assert "the room is also booked for" in ev["someone else takes the retro's room"]["clash-retro"]
    assert (
        "the room is also booked for #7 'All-hands'"
        in ev["a second meeting with a room: the first keeps its clashes"]["clash-retro"]
    )
    assert (
        "no clash for 2 participants or the room"
        in ev["the offsite gives the room back, the all-hands is cancelled"]["clash-retro"]
    )
    assert "@dave is also in #3 'Planning'" in ev["dave invited: his planning series clashes"]["clash"]
    assert "missing zed" in ev["dave invited: his planning series clashes"]["exists-dave"]
    assert "missing dave, zed" in ev["the meeting booked: bob's standup clashes"]["exists-dave"]
    assert ev["carol declines the meeting"]["invited"].startswith("event #")
    assert "@carol was never asked" in ev["bob says yes after the booking"]["agreed"]
    assert "@bob was never asked" in ev["bob says yes after the booking"]["agreed"], "a yes after the booking"
    assert "@bob neither agreed" in ev["the agent asks bob after the booking"]["agreed"], "no longer never asked"
    assert "@bob was never asked" in ev["the agent deletes the ask"]["agreed"], "a deleted ask does not count"
    # posts (an edit and a deletion included) and answers came from the log: neither table was read for them
    assert not [s for s in tables_read if s != "full grade"], tables_read
    assert "@carol is also in #6 'Lunch'; #4 'Review'" in ev["carol is invited to the review, tentatively"]["clash"]
    # the kept windows answered through the answers, carol's new commitments and the second meeting
    kept = ["bob accepts: as busy as before", "carol books a lunch over the meeting"]
    kept += ["carol is invited to the review, tentatively", "someone else takes the retro's room"]
    assert not [s for s in kept if s in queried], queried
    assert "full grade" in queried
    # without a clock the booking reads its participants' events; with one, they were read at the first step
    assert ("the meeting booked: bob's standup clashes" in queried) is not clock, queried


def test_recurring_overlap_is_what_the_calendar_expansion_says():
    start = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    end = start + timedelta(minutes=45)
    rules = ["FREQ=WEEKLY", "FREQ=DAILY;INTERVAL=2", "FREQ=WEEKLY;BYDAY=MO,WE;COUNT=5", "FREQ=MONTHLY;BYMONTHDAY=15"]
    overlapping = 0
    for rule in rules:
        for until in (None, start + timedelta(days=20)):
            for day in (*range(0, 63, 4), *range(150, -1, -17)):  # out of order: the expansion grows, then is reread
                for minutes in (-60, -15, 0, 30, 44, 45, 600):  # ending as one starts, starting as one ends
                    lo = start + timedelta(days=day, minutes=minutes)
                    for length in (15, 60):
                        w = (lo, lo + timedelta(minutes=length))
                        want = any(a < w[1] and w[0] < b for a, b in occurrences(start, end, rule, until, *w))
                        assert _recurs_in(start, end, rule, until, w) == want, (rule, until, w)
                        overlapping += want
    assert overlapping > 50, "some windows overlap an occurrence"


def test_busy_intervals_are_what_the_calendar_service_reads(world):
    from mcp_tools.calendar.service import _busy, busy_intervals

    past = {"description": "", "rrule": None, "until": None, "room_id": None, "cancelled": False}
    history = [
        {**past, "id": 10 + d, "organizer_id": 2 + d % 3, "title": f"Old {d}", "start_at": MEET - timedelta(days=d),
         "end_at": MEET - timedelta(days=d, minutes=-45), "created_at": MEET - timedelta(days=90)}
        for d in range(1, 40)
    ]  # fmt: skip
    insert_rows(world.session.connection(), {"events": [*SETUP["events"], *history]})
    insert_rows(world.session.connection(), {"event_attendees": SETUP["event_attendees"]})
    sql = Sql.of(world.session)
    compared = 0
    for person in (1, 2, 3, 4):
        for lo in (MEET - timedelta(days=10), MEET - timedelta(hours=1), MEET + timedelta(days=2)):
            for days in (1, 9):
                hi = lo + timedelta(days=days)
                want = [(s, e) for s, e, _ in _busy(sql, person, lo, hi)]
                assert busy_intervals(sql, person, lo, hi) == want, (person, lo, hi)
                compared += bool(want)
    assert compared >= 10


def test_a_window_outside_the_kept_horizon_widens_it(world):
    insert_rows(world.session.connection(), SETUP)
    ctx = GradingContext(session=world.session, trace=[], actor_id=1)
    kept = Calendar()
    for weeks in (0, 5, -1, 1, 14, 0):  # later, earlier, inside again, far later: dave's weekly standup each time
        w = (MEET + timedelta(weeks=weeks), MEET + timedelta(weeks=weeks, minutes=30))
        busy, _ = kept.clashes(ctx, [2, 3, 4], None, w)
        assert busy == Calendar().clashes(ctx, [2, 3, 4], None, w)[0], weeks  # what a calendar new to it reads
        assert set(busy[2]) == {1} and set(busy[3]) == set(), weeks  # bob in the standup; carol declined it
        assert set(busy[4]) == ({1, 4} if weeks == 0 else {1}), weeks  # dave's review is once, that Tuesday
        assert kept.horizon is not None and kept.horizon[0] <= w[0] and w[1] <= kept.horizon[1]


MEMBER_CHECKS = [
    ("bob-eng", "channel_member", {"channel": "~eng", "username": "bob"}),
    ("carol-eng", "channel_member", {"channel": "eng", "username": "carol", "member": False}),
    ("bob-ops", "channel_member", {"channel": "ops", "username": "@bob"}),
    ("nobody", "channel_member", {"channel": "eng", "username": "zed"}),
]


def _memberships(sql: Sql) -> Iterator[str]:
    """Channel and membership edits as tools make them, one step each."""
    member = {"last_viewed_at": None, "joined_at": MEET}
    yield "nothing yet"
    bob = sql.insert("channel_members", {**member, "channel_id": 2, "employee_id": 2})
    yield "bob joins eng"
    sql.insert("channel_members", {**member, "channel_id": 1, "employee_id": 2})
    yield "bob joins general: no eng check moves"
    sql.update("channel_members", bob, {"last_viewed_at": (None, MEET)})
    yield "bob reads eng"
    carol = sql.insert("channel_members", {**member, "channel_id": 2, "employee_id": 3})
    yield "carol joins eng, which she must not"
    sql.delete("channel_members", {"id": carol}, {"id": carol, "channel_id": 2, "employee_id": 3, **member})
    yield "carol leaves eng"
    channel = {"team_id": 1, "display_name": "Ops", "type": "O", "purpose": "", "header": "", "creator_id": 1}
    ops = sql.insert("channels", {**channel, "name": "ops", "created_at": MEET})
    sql.insert("channel_members", {**member, "channel_id": ops, "employee_id": 2})
    yield "ops created with bob in it"
    sql.delete("channel_members", {"id": bob}, {"id": bob, "channel_id": 2, "employee_id": 2, **member})
    sql.insert("channel_members", {**member, "channel_id": 2, "employee_id": 2})
    yield "bob leaves eng and rejoins in one step"
    sql.update("channels", 2, {"name": ("eng", "engineering")})
    yield "eng renamed: no channel of the name"
    sql.update("channels", ops, {"name": ("ops", "eng")})
    yield "ops renamed eng: bob is in it"


def test_channel_member_decided_from_the_membership_rows_gives_a_fresh_grade(world, monkeypatch):
    import graders.progress as progress_module

    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in MEMBER_CHECKS]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    decided: list[str] = []  # the steps that stored a verdict no re-run gave (the membership rows decided it)
    ran: list[str] = []
    running = [False]
    real_run, real_store = progress_module.Progress._run, progress_module.Progress._store

    def run(self: Progress, i: int) -> None:
        ran.append(at[0])
        running[0] = True
        try:
            real_run(self, i)
        finally:
            running[0] = False

    def store(self: Progress, i: int, outcome: Any) -> None:
        if self._started and not running[0]:
            decided.append(at[0])
        real_store(self, i, outcome)

    monkeypatch.setattr(progress_module.Progress, "_run", run)
    monkeypatch.setattr(progress_module.Progress, "_store", store)
    seq, at, evidence = world.start_seq, [""], {}
    lagged: list[str] = []
    for step in _memberships(Sql.of(world.session)):
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        at[0] = step
        value = progress.update(rows)  # type: ignore[arg-type]
        if progress._lagging:  # the rows gave a score alone (or one that stands): evidence built for the results
            lagged.append(step)
        full = grade(rubric, world.ctx())
        got = [(c.id, c.score, c.evidence, c.details) for c in progress.results()]
        assert got == [(c.id, c.score, c.evidence, c.details) for c in full.checks], step
        assert value == full.value, step
        evidence[step] = {c.id: c.evidence for c in full.checks}
    assert evidence["ops renamed eng: bob is in it"]["bob-eng"] == "@bob is a member of eng"
    assert evidence["carol joins eng, which she must not"]["carol-eng"] == "@carol is a member of eng"
    # the membership rows decided these without the query; reading eng and joining general re-ran nothing
    assert decided.count("bob joins eng") == 1 and decided.count("carol leaves eng") == 1, decided
    # leaving and rejoining in one step: the score stands, so nothing is stored; the evidence waits for the results
    assert "bob leaves eng and rejoins in one step" in lagged, lagged
    assert not [s for s in ran if s in ("bob joins general: no eng check moves", "bob reads eng")], ran
    assert "eng renamed: no channel of the name" in ran, "a rename re-runs the checks on the name"
