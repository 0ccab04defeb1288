"""check_world: each injected violation is reported by a message that names it.

Why: a checker that always returns ``[]`` would let every generator test pass; these tests break one
invariant at a time in an otherwise valid small world and assert the specific complaint.
"""

from datetime import timedelta

import pytest

from worlds.check import check_world
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec


def _load_and_check(rows):
    with load_in_memory(rows).connect() as conn:
        return check_world(conn)


@pytest.fixture(scope="module")
def base_rows():
    return generate(WorldSpec(seed=11, employees=25, history_days=20))


def _fresh(base_rows):
    return {table: [dict(r) for r in batch] for table, batch in base_rows.items()}


def test_check_world__valid_world_has_no_violations(base_rows):
    assert _load_and_check(_fresh(base_rows)) == []


def test_check_world__five_employee_world_is_valid():
    assert _load_and_check(generate(WorldSpec(seed=2, employees=5, history_days=3))) == []


def test_check_world__catches_email_off_domain(base_rows):
    rows = _fresh(base_rows)
    rows["employees"][2]["email"] = "someone@elsewhere.example"
    assert any("not on the company domain" in p for p in _load_and_check(rows))


def test_check_world__catches_resolved_at_on_open_ticket(base_rows):
    rows = _fresh(base_rows)
    ticket = next(t for t in rows["tickets"] if t["resolved_at"] is None)
    ticket["resolved_at"] = ticket["created_at"]
    assert any("resolved_at is set" in p for p in _load_and_check(rows))


def test_check_world__catches_history_not_ending_at_status(base_rows):
    rows = _fresh(base_rows)
    ticket = next(t for t in rows["tickets"] if t["status"] == "done")
    ticket["status"] = "todo"
    ticket["resolved_at"] = None
    assert any(f"ticket {ticket['key']}: history ends at done" in p for p in _load_and_check(rows))


def test_check_world__catches_comment_before_ticket(base_rows):
    rows = _fresh(base_rows)
    comment = rows["ticket_comments"][0]
    ticket = rows["tickets"][comment["ticket_id"] - 1]
    comment["created_at"] = ticket["created_at"] - timedelta(hours=1)
    assert any(f"comment {comment['id']} is before its ticket" in p for p in _load_and_check(rows))


def test_check_world__catches_reply_before_root(base_rows):
    rows = _fresh(base_rows)
    reply = next(p for p in rows["posts"] if p["root_id"] is not None)
    root = rows["posts"][reply["root_id"] - 1]
    reply["created_at"] = root["created_at"] - timedelta(minutes=5)
    problems = _load_and_check(rows)
    assert any(f"reply {reply['id']} is before its thread root" in p for p in problems)


def test_check_world__catches_unknown_rsvp(base_rows):
    rows = _fresh(base_rows)
    rows["event_attendees"][0]["rsvp"] = "maybe-ish"
    assert any("unknown RSVP 'maybe-ish'" in p for p in _load_and_check(rows))


def test_check_world__catches_missing_team_lead(base_rows):
    rows = _fresh(base_rows)
    rows["teams"][0]["lead_id"] = None
    assert any("team 1 has lead None" in p for p in _load_and_check(rows))
