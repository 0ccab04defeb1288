"""A booking's meeting checks are decided in one pass per step, and match a fresh grade after every step.

``checks_meetings.decide_step`` settles every check a step touches with the function's own decision (no re-run
through the check machinery); ``_calendar_rows`` answers what every hook answers alike (the meeting's own
event touches all its checks, other new events touch no check of a meeting not booked); ``event_exists`` has an
``on_step`` of the same kind; the posts and memories folds keep their ordered lists; the rooms, the agreement
checks' direct channels and the announcement channel are read before the booking; ``channel_member`` keeps its
pairs over rows that cannot move them. Each test plays steps on the tiny world and compares every verdict
with a full grade after each, and counts what the shortcut was meant to save (re-runs, hook calls, queries),
so it fails if a path decides wrongly or silently stops being taken.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_meetings, meeting_log
from graders.base import Check, GradingContext, Rubric, grade, read_changes
from graders.checks_comms import _member_pair
from graders.progress import Progress
from tests.graders.test_progress_meet import CHECKS, SETUP
from tests.graders.test_progress_meet4 import PERSON, _asking
from worlds.rawsql import Sql
from worlds.rows import insert_rows

ROOM = [("room-hq", "meeting_room", {"title_pattern": "Sync", "location": "HQ"})]
ANNOUNCED = [("announced-eng", "meeting_announced", {"title_pattern": "Sync", "channel": "~eng", "key": "ENG-1"})]
BOOKING = "the meeting booked: bob's standup clashes"
MEETING_FNS = {fn for _, fn, _ in CHECKS + PERSON if fn.startswith("meeting_")}


def _play(world: Any, rubric: Rubric, steps: Iterator[str], progress: Progress, at: list[str]) -> dict[str, Any]:
    """Play the steps, comparing every verdict and the value with a full grade after each; the evidence by step."""
    seq, evidence = world.start_seq, {}
    for step in steps:
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq if rows else seq
        at[0] = step
        value = progress.update(rows)  # type: ignore[arg-type]
        at[0] = "full grade"
        full = grade(rubric, world.ctx())
        got = [(c.id, c.score, c.evidence, c.details) for c in progress.results()]
        assert got == [(c.id, c.score, c.evidence, c.details) for c in full.checks], step
        assert value == full.value, step
        evidence[step] = {c.id: c.evidence for c in full.checks}
    return evidence


def test_a_booking_decides_its_checks_without_re_running_them(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS + PERSON]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    at = [""]
    runs: dict[str, Counter[str]] = {}  # step -> check function -> re-runs
    real_run = Progress._run

    def run(self: Progress, i: int) -> None:
        runs.setdefault(at[0], Counter())[self._checks[i].fn] += 1
        real_run(self, i)

    monkeypatch.setattr(Progress, "_run", run)
    answered: dict[str, set[int]] = {}  # step -> checks given a new verdict, or a bare score (lagging after it)
    real_store, real_update = Progress._store, Progress.update

    def store(self: Progress, i: int, out: Any) -> None:
        answered.setdefault(at[0], set()).add(i)
        real_store(self, i, out)

    def update(self: Progress, rows: Any) -> float:
        value = real_update(self, rows)
        answered.setdefault(at[0], set()).update(self._lagging)
        return value

    monkeypatch.setattr(Progress, "_store", store)
    monkeypatch.setattr(Progress, "update", update)
    evidence = _play(world, rubric, _asking(Sql.of(world.session), world), progress, at)
    # the booking re-ran nothing: every check of the meeting (and the event checks) was decided in its on_step
    assert BOOKING not in runs, runs.get(BOOKING)
    assert "@bob is also in #1 'Standup'" in evidence[BOOKING]["free-bob"], evidence[BOOKING]
    assert evidence[BOOKING]["exists"].endswith("fits"), evidence[BOOKING]
    # nor did any later step: each meeting check a row touches is decided (the first step grades everything)
    first = "the agent asks bob"
    # (Retro's event check answers LATER to the Sync's events, so ``results`` re-runs it: test_progress_meet7)
    assert set(runs) - {"full grade"} == {first}, {step: c for step, c in runs.items() if step != first}
    # (the meeting checks answer a bare score since round nine: ``results`` writes their evidence, in the full grade)
    assert set(runs.get("full grade", {})) <= {"event_exists", *MEETING_FNS}, runs["full grade"]
    # ... and yet every check of the meeting got a new verdict there, or a bare score: decided in its on_step
    decided = Counter(checks[i].fn for i in answered[BOOKING])
    assert decided == {
        "meeting_no_double_booking": 1,  # Sync's (Retro's: no meeting, no overlap asked)
        "meeting_in_working_hours": 1,
        "meeting_attendees": 1,
        "meeting_agreed": 1,
        "meeting_room": 1,
        "meeting_announced": 1,
        "event_exists": 3,  # the two whose title the Sync matches, and Retro's (still failing: LATER, lagging)
        "meeting_person_in_hours": 3,
        "meeting_person_free": 3,
        "meeting_length": 1,
    }, decided


def test_a_step_of_other_events_asks_no_hook_of_a_meeting_not_booked(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS + PERSON + ROOM]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    calls: Counter[str] = Counter()
    at = [""]
    real = checks_meetings._touched

    def touched(ctx: GradingContext, hook: Any, rows: Any, kw: Any) -> bool:
        calls[f"{at[0]}: {hook.__name__} {kw['title_pattern']}"] += 1
        return bool(real(ctx, hook, rows, kw))

    monkeypatch.setattr(checks_meetings, "_touched", touched)
    sql = Sql.of(world.session)
    ev = {"description": "", "rrule": None, "until": None, "room_id": None, "cancelled": False}

    def book(title: str, start: Any, invitee: int) -> None:  # the agent's event of 30 minutes, one invitation
        end = start + timedelta(minutes=30)
        values = {**ev, "organizer_id": 1, "title": title, "start_at": start, "end_at": end}
        event = sql.insert("events", {**values, "created_at": world.clock.now()})
        sql.insert(
            "event_attendees", {"event_id": event, "employee_id": invitee, "rsvp": "needs_action", "optional": 0}
        )

    def steps() -> Iterator[str]:
        yield "nothing booked"
        now = world.clock.now()
        book("Lunch", now, 2)
        yield "the agent books another event"
        world.later()
        book("Sync ENG-1", now + timedelta(days=1), 3)
        yield "the meeting booked"
        book("Retro", now + timedelta(days=1), 3)
        yield "the retro booked at the same time"

    evidence = _play(world, rubric, steps(), progress, at)
    asked = {k for k in calls if not k.startswith("full grade")}
    # no hook of the unbooked meetings (Sync, Retro) for another event; none of Sync's own for its booking; the
    # retro's booking asks only Sync's double-booking hooks (does the new event overlap the meeting?)
    assert asked == {"the retro booked at the same time: _clash_touches Sync",
                     "the retro booked at the same time: _free_touches Sync"}, asked  # fmt: skip
    assert "the room is also booked" not in evidence["the retro booked at the same time"]["clash"]
    assert "@carol is also in" in evidence["the retro booked at the same time"]["free-carol"]


def test_folds_keep_their_order_and_sort_again_for_a_row_out_of_order(world):
    ctx = world.ctx()
    sql = Sql.of(world.session)
    post = {"root_id": None, "edited_at": None, "deleted_at": None, "is_pinned": False}
    memory = {"employee_id": 2, "turn": 1, "kind": "did", "subject": "alice", "data": {"fact": {}}}
    seen = 0
    for minutes in (10, 20, 5, 30, 5):  # the third and fifth come before the last one: sorted again
        world.later(minutes)
        when = world.clock.now() if minutes != 5 else world.clock.now().replace(hour=0)
        sql.insert("posts", {**post, "channel_id": 2, "author_id": 1, "message": f"m{minutes}", "created_at": when})
        sql.insert("npc_memory", {**memory, "at": when})
        world.session.flush()
        rows = read_changes(world.session, after_seq=world.start_seq)
        ctx.extend(rows[seen:])
        seen = len(rows)
        ctx.forget(["posts", "npc_memory"])
        fresh = world.ctx()
        assert meeting_log.new_posts(ctx) == meeting_log._read_posts(fresh), minutes
        assert meeting_log.memories(ctx) == meeting_log._read_memories(fresh), minutes
        # the kept order is the fold's own (not a read of the table)
        assert ctx.lasting["meeting_post_fold"][4] is meeting_log.new_posts(ctx)
        assert ctx.lasting["meeting_memory_fold"][2] is meeting_log.memories(ctx)


def test_rooms_and_channels_are_read_before_the_booking(world, monkeypatch):
    insert_rows(world.session.connection(), SETUP)
    checks = [Check(id=i, description="d", fn=fn, params=p) for i, fn, p in CHECKS + ROOM + ANNOUNCED]
    rubric = Rubric(id="t", version=1, description="t", checks=tuple(checks))
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    at = [""]
    read: Counter[tuple[str, str]] = Counter()  # (step, statement) for the reads moved before the booking
    real = Sql._run
    watched = {
        checks_meetings._ROOM: "room",
        checks_meetings._ROOMS: "rooms",
        checks_meetings._DM_CHANNELS.split(" IN ")[0]: "dm",
        meeting_log._CHANNEL_NAMES.split(" IN ")[0]: "channel names",
        meeting_log._CHANNELS_NAMED.split(" IN ")[0]: "channels named",
    }

    def run(self: Sql, sql: str, params: Any) -> Any:
        label = watched.get(sql) or watched.get(sql.split(" IN ")[0])
        if label is not None and at[0] != "full grade":
            read[(at[0], label)] += 1
        return real(self, sql, params)

    monkeypatch.setattr(Sql, "_run", run)
    from tests.graders.test_progress_meet import _edits

    evidence = _play(world, rubric, _edits(Sql.of(world.session), world), progress, at)
    # every room, the agreement check's direct channels and the announcement channels (general, eng) once, in
    # the step that grades everything; then only the name of a direct channel older than the episode, which no
    # check names, at the agent's first post in it
    assert read == {
        ("nothing booked", "rooms"): 1,
        ("nothing booked", "dm"): 1,
        ("nothing booked", "channels named"): 2,
        ("the agent asks bob after the booking", "channel names"): 1,
    }, read
    assert "in Orca (HQ, 6 seats)" in evidence["the meeting gets a room"]["room-hq"]


def test_member_pairs_stand_over_rows_that_cannot_move_them(world, monkeypatch):
    ctx = world.ctx()
    queries: list[str] = []
    real = Sql.one
    monkeypatch.setattr(Sql, "one", lambda self, sql, params=(): queries.append(sql) or real(self, sql, params))
    sql = Sql.of(world.session)
    assert _member_pair(ctx, "eng", "bob") == (2, "eng", 2, "bob")
    channel = {"team_id": 1, "display_name": "", "type": "D", "purpose": "", "header": "", "creator_id": 1}

    def opened(name: str, team: int = 1) -> None:
        sql.insert("channels", {**channel, "team_id": team, "name": name, "created_at": world.clock.now()})

    steps = [  # (step, edit, queries of the pair it costs)
        ("a direct channel opened", lambda: opened("1__3"), 0),
        ("the general channel renamed", lambda: sql.update("channels", 1, {"name": ("general", "lobby")}), 0),
        ("a channel named eng created (another team)", lambda: opened("eng", team=2), 1),
        ("eng renamed", lambda: sql.update("channels", 2, {"name": ("eng", "platform")}), 1),
    ]
    seen = len(ctx.log)
    for step, edit, reads in steps:
        queries.clear()
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=world.start_seq)
        ctx.extend(rows[seen:])
        seen = len(rows)
        fresh = Sql.of(world.session).one(checks_comms_pair(), ("bob", "eng"))
        assert _member_pair(ctx, "eng", "bob") == (tuple(fresh) if fresh is not None else None), step
        assert len(queries) == reads + 1, (step, queries)  # the fresh read above, and the pair's own if any


def checks_comms_pair() -> str:
    """The statement ``_member_pair`` reads (named here so the test reads the table as the check would)."""
    from graders.checks_comms import _MEMBER_PAIR

    return _MEMBER_PAIR
