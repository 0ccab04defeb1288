"""Coherence checks of ``check_world`` (issue 12 item 4): generated worlds agree with themselves at every size.

Why: references that resolve but disagree (a mail titled "Status of DAT-31" asking about GRO-2), tickets named
before they were filed, budgets unrelated to headcount all pass a foreign-key check. These tests run the
coherence checks over 50 generated worlds from 1 to 3,000 employees, then break one thing at a time in a
small world and assert the named check reports it.
"""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from worlds.check import check_world, world_report
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec

# 46 small worlds over sizes 1..120 with a few days of history, and four larger ones (one of 3,000 people).
SMALL = [(seed, 1 + (seed * 37) % 120, 1 + seed % 6) for seed in range(46)]
LARGE = [(101, 250, 30), (102, 100, 90), (103, 1_000, 4), (104, 3_000, 2)]

Rows = dict[str, list[dict[str, Any]]]


def _report(rows: Rows) -> dict[str, Any]:
    with load_in_memory(rows).connect() as conn:
        return {r.name: r for r in world_report(conn)}


@pytest.mark.parametrize(("seed", "employees", "days"), SMALL + LARGE, ids=lambda v: str(v))
def test_check_world__generated_worlds_are_coherent(seed: int, employees: int, days: int) -> None:
    rows = generate(WorldSpec(seed=seed, employees=employees, history_days=days))
    with load_in_memory(rows).connect() as conn:
        assert check_world(conn) == []


@pytest.fixture(scope="module")
def base() -> Rows:
    return generate(WorldSpec(seed=12, employees=60, history_days=30))


def _copy(rows: Rows) -> Rows:
    return {t: [dict(r) for r in batch] for t, batch in rows.items()}


def test_world_report__lists_every_check_with_counts(base: Rows) -> None:
    report = _report(_copy(base))
    for name in ("refs_mail", "refs_chat", "refs_documents", "causal", "working_hours", "meeting_actions"):
        assert name in report
    assert report["refs_mail"].checked > 0 and report["refs_mail"].failed == 0
    assert report["budget_headcount"].checked >= 2 * len(base["departments"])


def test_check_world__catches_mail_body_naming_another_ticket(base: Rows) -> None:
    rows = _copy(base)
    earliest = min(rows["tickets"], key=lambda t: t["created_at"])["key"]
    keys = {t["key"] for t in rows["tickets"]} - {earliest}
    mail = next(m for m in rows["mail_messages"] if any(k in m["subject"].split() for k in keys))
    named = next(k for k in keys if k in mail["subject"].split())
    other = earliest  # filed before every other ticket, so before the mail: only the disagreement is wrong
    mail["body"] = f"Hi,\n\nCould you share an update on {other}?\n"
    problems = check_world(load_in_memory(rows).connect())
    assert any(f"mail {mail['id']}: subject names {named} but the body {other}" in p for p in problems)


def test_check_world__catches_a_dangling_ticket_in_chat(base: Rows) -> None:
    rows = _copy(base)
    key = rows["projects"][0]["key"]
    rows["posts"][0]["message"] = f"Picked up {key}-99999, PR tomorrow."
    assert any(f"post 1 names ticket {key}-99999, which does not exist" in p for p in check_world(_conn(rows)))


def test_check_world__catches_a_ticket_named_before_it_was_filed(base: Rows) -> None:
    rows = _copy(base)
    last = max(rows["tickets"], key=lambda t: t["created_at"])
    post = min(rows["posts"], key=lambda p: p["created_at"])
    post["message"] = f"Anyone seen errors like the ones in {last['key']} before?"
    assert any(
        f"post {post['id']} at" in p and f"names {last['key']}, created later" in p for p in check_world(_conn(rows))
    )


def test_check_world__catches_a_mention_of_nobody(base: Rows) -> None:
    rows = _copy(base)
    rows["posts"][0]["message"] = "Thanks @nobody.here for the help earlier!"
    assert any("mentions @nobody.here, who is not an employee" in p for p in check_world(_conn(rows)))


def test_check_world__catches_a_mail_reply_sent_before_its_original(base: Rows) -> None:
    rows = _copy(base)
    reply = next(m for m in rows["mail_messages"] if m["in_reply_to_id"] is not None)
    original = rows["mail_messages"][reply["in_reply_to_id"] - 1]
    reply["sent_at"] = original["sent_at"] - timedelta(hours=1)
    assert any(f"mail {reply['id']} replies to mail {original['id']}" in p for p in check_world(_conn(rows)))


def test_check_world__catches_a_budget_below_payroll(base: Rows) -> None:
    rows = _copy(base)
    budget = next(d for d in rows["documents"] if d["name"].startswith("Budget"))
    cells = budget["content"]["sheets"][0]["cells"]
    cells["G2"] = [1000, cells["G2"][1]]
    dept = cells["A2"][0]
    assert any(f"{dept} budget 1,000 is outside" in p for p in check_world(_conn(rows)))


def test_check_world__catches_activity_after_a_leavers_last_day(base: Rows) -> None:
    rows = _copy(base)
    post = max(rows["posts"], key=lambda p: p["created_at"])
    who = post["author_id"]
    left = post["created_at"] - timedelta(days=1)
    rows["employees"][who - 1]["active"] = False
    rows["change_log"] = [
        {
            "seq": 1,
            "table_name": "employees",
            "row_key": f"[{who}]",
            "op": "update",
            "changes": {"active": [True, False]},
            "actor_id": None,
            "at": left,
            "tag": "setup",
        }
    ]
    problems = check_world(_conn(rows))
    assert any(f"posts {post['id']} by employee {who} is after their last day" in p for p in problems)


def test_check_world__working_hours_hold_and_catch_a_post_at_night(base: Rows) -> None:
    rows = _copy(base)
    report = _report(rows)["working_hours"]
    assert report.checked > len(rows["posts"]) and report.failed == 0 and not report.expected_to_fail
    post = rows["posts"][0]
    tz = ZoneInfo(rows["employees"][post["author_id"] - 1]["timezone"])
    local = post["created_at"].astimezone(tz)
    post["created_at"] = local.replace(hour=3, minute=0).astimezone(UTC)  # 03:00 their time
    assert any(f"posts {post['id']} by employee {post['author_id']}" in p for p in check_world(_conn(rows)))


def _action_ticket(rows: Rows) -> dict[str, Any]:
    return next(t for t in rows["tickets"] if t["description"].startswith("Action item from the "))


def test_check_world__catches_an_action_item_owned_by_someone_else(base: Rows) -> None:
    rows = _copy(base)
    ticket = _action_ticket(rows)
    ticket["assignee_id"] = next(e["id"] for e in rows["employees"] if e["id"] != ticket["assignee_id"])
    assert _report(_copy(base))["meeting_actions"].checked > 0
    problems = check_world(_conn(rows))
    assert any(f"ticket {ticket['key']} is an action item of document" in p for p in problems)
    assert any("gives @" in p and "but no such ticket exists" in p for p in problems)


def test_check_world__catches_an_action_item_filed_before_its_meeting(base: Rows) -> None:
    rows = _copy(base)
    ticket = _action_ticket(rows)
    ticket["created_at"] -= timedelta(days=10)
    assert any(f"ticket {ticket['key']} was filed at" in p for p in check_world(_conn(rows)))


@pytest.fixture(scope="module")
def with_incidents() -> Rows:
    return generate(WorldSpec(seed=102, employees=100, history_days=90))


def _postmortem(rows: Rows) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = next(d for d in rows["documents"] if d["name"].startswith("Postmortem "))
    key = doc["name"].split(" ")[1]
    return doc, next(t for t in rows["tickets"] if t["key"] == key)


def test_check_world__postmortems_hold_and_one_written_before_the_fix_is_caught(with_incidents: Rows) -> None:
    rows = _copy(with_incidents)
    assert _report(_copy(with_incidents))["postmortems"].checked > 0
    assert check_world(_conn(_copy(with_incidents))) == []
    doc, ticket = _postmortem(rows)
    doc["created_at"] = doc["updated_at"] = ticket["resolved_at"] - timedelta(hours=1)
    problems = check_world(_conn(rows))
    assert any(
        f"document {doc['id']} ({doc['name']}) was written before {ticket['key']} was resolved" in p for p in problems
    )


def test_check_world__a_postmortem_whose_timeline_disagrees_with_the_ticket_is_caught(with_incidents: Rows) -> None:
    rows = _copy(with_incidents)
    doc, ticket = _postmortem(rows)
    ticket["resolved_at"] -= timedelta(minutes=7)
    problems = check_world(_conn(rows))
    assert any(f"the timeline does not give {ticket['key']}'s filing and resolution times" in p for p in problems)


def test_check_world__release_notes_shipping_an_unfinished_ticket_are_caught(base: Rows) -> None:
    rows = _copy(base)
    assert _report(_copy(base))["releases"].checked > 0
    doc = next(d for d in rows["documents"] if d["name"].startswith("Release notes "))
    key = next(text.split(":")[0] for level, text in doc["content"]["blocks"] if level == 0 and ": " in text)
    ticket = next(t for t in rows["tickets"] if t["key"] == key)
    ticket["status"], ticket["resolved_at"] = "in_progress", None
    problems = check_world(_conn(rows))
    assert any(f"ships {key}, which was not done when the notes were written" in p for p in problems)


def _conn(rows: Rows) -> Any:
    return load_in_memory(rows).connect()
