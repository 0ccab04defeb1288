"""The framework's per-step shortcuts of the third pass, each held to a full grade after every step (issue 14).

A ticket check names its expected assignee or sprint ahead, so the step that sets it needs no lookup (and a
changed directory makes the name unknown again); ``row_exists`` with a ``where`` no unique columns name scans the
changed rows as the log leaves them (an inserted row needs no query, a row only updated and not read yet leaves
it to the query); a read step of an impossible variant hands its kept verdict back by identity, so nothing is
stored or re-run. Each test compares every check with a fresh grade, so none passes when a shortcut drifts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import graders.checks as checks
from graders.base import ChangeRow, Check, GradingContext, Rubric, grade, read_changes
from graders.progress import Progress
from sim.agents import run_agent
from tests.graders.conftest import T0, employee
from tests.graders.test_progress import Checked
from worlds.rawsql import Sql
from worlds.schema import Post, Sprint


def _rubric(*checks_: Check) -> Rubric:
    return Rubric(id="core3", version=1, description="core3 unit rubric", checks=checks_)


def _play(world: Any, rubric: Rubric, edits: list[Callable[[], Any]], queries: list[str]) -> list[list[str]]:
    """Apply each edit as one step, update progress with its rows and compare with a full grade.

    Returns, by step, the queries progress ran (``queries`` is filled by a spy on ``Sql``).
    """
    live = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    world.session.flush()
    before = read_changes(world.session, after_seq=world.start_seq)  # what the test set up: the first step's
    live.update(before)  # type: ignore[arg-type]
    seq, by_step = before[-1].seq if before else world.start_seq, []
    for n, edit in enumerate(edits):
        edit()
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        queries.clear()
        value = live.update(rows)  # type: ignore[arg-type]
        by_step.append(list(queries))
        full = grade(rubric, world.ctx())
        assert live.results() == full.checks, n
        assert value == full.value, n
    return by_step


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The raw statements run while a step is folded in (the ones ``graders.checks`` runs through ``Sql``)."""
    seen: list[str] = []
    for name in ("all", "one"):
        real = getattr(Sql, name)
        monkeypatch.setattr(
            Sql, name, lambda self, sql, params=(), _real=real: seen.append(sql) or _real(self, sql, params)
        )
    return seen


def test_an_expected_assignee_or_sprint_is_named_ahead_until_the_directory_changes(world, evaluated, queries):
    world.add(Sprint(id=2, project_id=1, name="Sprint 8", start_date=T0.date(), end_date=T0.date(), state="future"))

    def field(n: int, key: str, name: str, value: str) -> Check:
        params = {"key": key, "field": name, "value": value}
        return Check(id=f"c{n}", description="d", fn="ticket_field_equals", params=params)

    rubric = _rubric(
        field(0, "ENG-3", "assignee", "carol"),
        field(1, "ENG-4", "assignee", "bob"),
        field(2, "ENG-3", "sprint", "Sprint 8"),
    )
    bob = employee(world.session, "bob")
    edits: list[Callable[[], Any]] = [
        lambda: setattr(world.ticket("ENG-3"), "assignee_id", 3),  # carol, as expected: no lookup
        lambda: setattr(world.ticket("ENG-4"), "assignee_id", 4),  # dave, not expected: looked up
        lambda: setattr(world.ticket("ENG-3"), "sprint_id", 2),  # the expected sprint: no lookup
        lambda: (world.as_("bob"), setattr(bob, "username", "bobby"), world.as_("alice")),  # the directory moves
        lambda: setattr(world.ticket("ENG-4"), "assignee_id", 2),  # bob's id, now named bobby: looked up again
    ]
    by_step = _play(world, rubric, edits, queries)
    assert by_step[0] == [] and by_step[2] == [], by_step
    assert len(by_step[1]) == 1 and "employees" in by_step[1][0]
    assert len(by_step[4]) == 1 and "employees" in by_step[4][0], "a name read before the directory moved"
    decided = [cid for cid, _, answered in evaluated if answered]
    assert decided == ["c0", "c1", "c2", "c1"]  # every step settled from the rows, none re-run
    final = grade(rubric, world.ctx()).checks
    assert [c.score for c in final] == [1.0, 0.0, 1.0] and "'bobby'" in final[1].evidence


def test_row_exists_without_unique_columns_scans_the_changed_rows_as_its_query_does(world, evaluated, queries):
    where = {"channel_id": 2, "message": "ship it"}
    rubric = _rubric(
        Check(id="shipped", description="d", fn="row_exists", params={"table": "posts", "where": where}),
    )

    def post(channel: int, message: str, pid: int) -> Callable[[], Any]:
        return lambda: world.add(Post(id=pid, channel_id=channel, author_id=1, message=message, created_at=T0))

    def edit(pid: int, message: str) -> Callable[[], Any]:
        return lambda: setattr(world.session.get(Post, pid), "message", message)

    edits: list[Callable[[], Any]] = [
        post(2, "hello", 10),  # inserted, no match
        post(1, "ship it", 11),  # the wrong channel
        post(2, "ship it", 12),  # a match, from its insert
        edit(10, "ship it"),  # an earlier row matches now: the lowest key is the query's answer
        edit(1, "ship it"),  # a row from before the episode, only updated: the query decides
        edit(1, "later"),  # still unread by the log: the query again
        edit(10, "hold on"),  # so is every step after it (row 1 comes first)
    ]
    by_step = _play(world, rubric, edits, queries)
    answered = [ok for cid, _, ok in evaluated if cid == "shipped"]
    assert answered == [True, True, True, True, False, False, False]
    assert by_step[:4] == [[], [], [], []], "the inserted rows are judged from the log"
    final = grade(rubric, world.ctx()).checks[0]
    assert final.score == 1.0 and final.details == {"key": [12]}


def test_a_read_step_of_an_impossible_variant_stores_and_re_runs_nothing(store, monkeypatch, evaluated):
    touched: list[tuple[str, int]] = []
    run, stored = Progress._run, Progress._store
    monkeypatch.setattr(Progress, "_run", lambda self, i: touched.append(("run", i)) or run(self, i))
    monkeypatch.setattr(Progress, "_store", lambda self, i, o: touched.append(("store", i)) or stored(self, i, o))
    reads: list[int] = []
    update = Progress.update

    def counted(self: Progress, rows: Any) -> float:
        before, started = len(touched), self._started
        value = update(self, rows)
        if started and not rows and self.ctx.steps[-1]["action"]["name"] != "submit":
            reads.append(len(touched) - before)
        return value

    monkeypatch.setattr(Progress, "update", counted)
    with Checked("triage-departed-v0", store=store) as episode:
        score = run_agent(episode, "oracle", 2, {"difficulty": 1, "progress": True})
    assert score.value == 1.0 and len(reads) >= 5
    # the first read keeps the evaluator's verdict in place of the equal one the first grade built; from then on
    # a read step gets the very same tuple back, so it stores nothing
    assert reads[0] <= 1 and reads[1:] == [0] * (len(reads) - 1), reads
    assert any(fn == "submit_explains" and ok for _, fn, ok in evaluated)


def test_offboarding_a_departed_owner_settles_every_reassignment_without_a_lookup(store, monkeypatch, evaluated):
    looked: list[Any] = []  # the full grades read tickets with their assignees joined: only progress asks this
    real = checks.usernames
    monkeypatch.setattr(checks, "usernames", lambda ctx, ids: looked.append(list(ids)) or real(ctx, ids))
    with Checked("offboard-owner-left-v0", store=store) as episode:  # compared with a full grade every step
        score = run_agent(episode, "oracle", 3, {"difficulty": 2, "progress": True})
    assert score.value == 1.0
    assignees = [ok for _, fn, ok in evaluated if fn == "ticket_field_equals"]
    assert len(assignees) >= 3 and all(assignees)
    assert looked == [], "the expected assignees were named when progress started"


def test_a_filed_access_request_is_judged_from_its_insert(store, monkeypatch, evaluated):
    ran: list[str] = []
    run = Progress._run
    monkeypatch.setattr(Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or run(self, i))
    with Checked("onboard-new-hire-v0", store=store) as episode:  # compared with a full grade every step
        score = run_agent(episode, "oracle", 4, {"difficulty": 1, "progress": True})
    assert score.value == 1.0
    asked = [ok for cid, _, ok in evaluated if cid == "access-request"]
    assert asked and all(asked), asked
    assert ran.count("access-request") == 1, "graded once as progress started, never re-run"


@pytest.mark.parametrize(
    "text", ["[17]", "[0]", "[123456789012]", '["ENG-3"]', "[1, 2]", "[-3]", '"x"', "[]", "[1.5]", "[ 7]"]
)
def test_a_logged_key_reads_as_the_json_parser_reads_it(text):
    """The integer fast path of ``ChangeRow.of`` (and its cache) gives what ``json.loads`` gives, twice over."""
    parsed = json.loads(text)
    want = tuple(parsed) if isinstance(parsed, list) else (parsed,)
    row = {
        "seq": 1,
        "table": "tickets",
        "key": text,
        "op": "update",
        "changes": {},
        "actor": 1,
        "at": None,
        "tag": None,
    }
    assert ChangeRow.of(row).key == want and ChangeRow.of(dict(row)).key == want
    assert [type(v) for v in ChangeRow.of(row).key] == [type(v) for v in want]  # 17, not 17.0 or '17'


def test_a_summary_check_is_asked_only_after_a_submit_and_the_step_after_it(world, evaluated):
    """``moved_by``: a check on the closing submit's summary stands through other steps, never past a submit."""
    rubric = _rubric(
        Check(id="why", description="d", fn="submit_explains", params={"patterns": ["left the company"]}),
        Check(id="who", description="d", fn="submit_answer", params={"pattern": r"@(\w+)", "value": "bob"}),
    )
    live = Progress(rubric, GradingContext(session=world.session, trace=world.trace, actor_id=1))
    live.update([])
    said = "@bob left the company"
    plan: list[tuple[str, dict[str, Any], str | None]] = [
        ("tickets_get", {}, None),
        ("tickets_search", {}, None),
        ("submit", {"summary": said}, "invalid"),  # a failed submit: asked, still not submitted
        ("tickets_get", {}, None),  # asked once more after it, then it stands
        ("tickets_get", {}, None),
        ("submit", {"summary": said}, None),  # passes
        ("tickets_get", {}, None),  # a step after the submit: back to not submitted
        ("chat_read", {}, None),
        ("submit", {"summary": "@carol left the company"}, None),
    ]
    asked = []
    for n, (name, arguments, error) in enumerate(plan):
        world.step(name, error, **arguments)
        evaluated.clear()
        value = live.update([])
        asked.append(len(evaluated))
        full = grade(rubric, world.ctx())
        assert live.results() == full.checks, n
        assert value == full.value, n
        if n == 5:
            assert value == 1.0
    assert asked == [2, 0, 2, 2, 0, 2, 2, 0, 2]
