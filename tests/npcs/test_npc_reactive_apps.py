"""NPCs answer invitations, review merge requests and decide access requests, through the app services.

What a user would notice: a coworker accepts a meeting in its working hours and declines one at 03:00 its
time; a difficult coworker declines some free meetings; an absent one never answers; a reviewer approves a
green merge request and asks for changes on a red one (and never merges); a data owner approves or refuses
access. Every such write is in the change log as the NPC, tagged ``npc``, and the same seed gives the same rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from npckit import DAY, T0, Tiny
from sqlalchemy import text

from mcp_tools.base import Actor, ToolContext
from mcp_tools.calendar import service as calendar
from mcp_tools.directory import service as directory
from mcp_tools.git import mr
from worlds.rawsql import Sql

DEV = 3  # dev.one, Europe/Berlin 09:00-17:00 Mon-Fri
CEO = 1  # cora.ceo: the data owner for performance of olaf.out (her report)
QUIET = {"proactivity": 0.0}  # no unprompted turns: only reactions, so counts are about the stimuli


def _spec(preset: str) -> dict[str, Any]:
    return {"base": preset, **QUIET}


def _slot(k: int) -> tuple[str, str]:
    """The k-th free 30-minute slot inside Berlin working hours (10:00-16:00 local = 09:00-15:00 UTC)."""
    day, half = divmod(k, 12)
    start = datetime(2026, 3, 3, 9, tzinfo=UTC) + timedelta(days=day) + timedelta(minutes=30 * half)
    while start.weekday() >= 5:
        start += timedelta(days=2)
    return start.isoformat(), (start + timedelta(minutes=30)).isoformat()


def _invite(t: Tiny, start: str, end: str, who: str = "dev.one", title: str = "Sync") -> int:
    return int(calendar.create_event(t.ctx(), title, start, end, who, None, "", None)["id"])


def _rsvps(t: Tiny, employee: int = DEV) -> list[tuple[int, str]]:
    rows = t.session.execute(
        text("SELECT event_id, rsvp FROM event_attendees WHERE employee_id = :e ORDER BY event_id"), {"e": employee}
    ).all()
    return [(int(a), str(b)) for a, b in rows]


def _many_invites(preset: str, n: int = 60, seed: int = 7) -> tuple[Tiny, list[tuple[int, str]]]:
    t = Tiny()
    w = t.npcs(seed, overrides={"dev.one": _spec(preset)}, population=["dev.one"])
    assert len({_slot(k)[0][:10] for k in range(n)}) == -(-n // 12)  # spread over several weekdays
    for k in range(n):
        _invite(t, *_slot(k), title=f"Sync {k}")
    w.poke()
    t.run_until(w, T0 + 2 * DAY)
    return t, _rsvps(t)


def _npc_log(t: Tiny, table: str) -> list[tuple[int | None, str | None]]:
    rows = t.session.execute(
        text("SELECT actor_id, tag FROM change_log WHERE table_name = :t ORDER BY seq"), {"t": table}
    ).all()
    return [(a, g) for a, g in rows]


# -- invitations -----------------------------------------------------------------------------------------------


def test_cooperative__accepts_in_hours_and_declines_0300_local(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    good = _invite(tinyworld, "2026-03-03T10:00:00+00:00", "2026-03-03T10:30:00+00:00")  # 11:00 Berlin
    night = _invite(tinyworld, "2026-03-04T02:00:00+00:00", "2026-03-04T02:30:00+00:00")  # 03:00 Berlin
    found = w.poke()
    assert sorted(s.kind for s in found) == ["invite", "invite"]
    acts = tinyworld.run_until(w, T0 + DAY)
    assert dict(_rsvps(tinyworld)) == {good: "accepted", night: "declined"}
    rsvps = [a for a in acts if a.tool == "calendar_rsvp"]
    assert all(a.ok for a in rsvps) and [a.actor for a in rsvps] == ["dev.one", "dev.one"]
    notes = [a for a in acts if a.reaction == "decline_note"]  # helpful people say why they decline
    assert len(notes) == 1 and ("working hours" in notes[0].text or "outside my hours" in notes[0].text)
    # the organiser sees the answers through the calendar app
    shown = calendar.get_event(tinyworld.ctx(), good)["attendees"]
    assert {a["username"]: a["rsvp"] for a in shown}["dev.one"] == "accepted"
    log = _npc_log(tinyworld, "event_attendees")
    assert (DEV, "npc") in log and all(a == DEV for a, g in log if g == "npc")
    assert tinyworld.changes.tag == "agent" and tinyworld.changes.actor_id == 2


def test_cooperative__declines_a_clash_with_an_accepted_meeting(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    first = _invite(tinyworld, "2026-03-03T10:00:00+00:00", "2026-03-03T11:00:00+00:00")
    ctx = ToolContext(session=tinyworld.session, actor=Actor.load(tinyworld.session, "dev.two"), clock=tinyworld.clock)
    other = calendar.create_event(  # someone else books over it (an organiser cannot double-book themself)
        ctx, "Overlap", "2026-03-03T10:30:00+00:00", "2026-03-03T11:30:00+00:00", "dev.one", None, "", None
    )
    w.poke()
    tinyworld.run_until(w, T0 + DAY)
    assert dict(_rsvps(tinyworld)) == {first: "accepted", int(other["id"]): "declined"}


def test_rates__cooperative_accepts_free_slots_adversarial_declines_some():
    coop, coop_rows = _many_invites("cooperative")
    adv, adv_rows = _many_invites("adversarial")
    try:
        assert len(coop_rows) == len(adv_rows) == 60
        accepted = sum(r == "accepted" for _, r in coop_rows)
        declined = sum(r == "declined" for _, r in adv_rows)
        assert accepted >= 0.9 * 60, coop_rows
        assert declined >= 1 and all(r != "needs_action" for _, r in adv_rows), adv_rows
        assert declined >= 0.4 * 60  # p = 0.71: a difficult coworker declines most free meetings
    finally:
        coop.close()
        adv.close()


def test_absent__leaves_invites_pending(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": "absent"}, population=["dev.one"])
    event = _invite(tinyworld, "2026-03-03T10:00:00+00:00", "2026-03-03T10:30:00+00:00")
    assert w.poke() == []
    acts = tinyworld.run_until(w, T0 + 5 * DAY)
    assert acts == [] and dict(_rsvps(tinyworld)) == {event: "needs_action"}


def test_invites__same_seed_same_rows():
    a, rows_a = _many_invites("adversarial", n=20, seed=11)
    b, rows_b = _many_invites("adversarial", n=20, seed=11)
    try:
        assert rows_a == rows_b
        posts = "SELECT author_id, message FROM posts ORDER BY id"
        assert a.session.execute(text(posts)).all() == b.session.execute(text(posts)).all()
    finally:
        a.close()
        b.close()


def test_persona_saved_without_app_cursors__starts_them_now(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    old = _invite(tinyworld, "2026-03-03T10:00:00+00:00", "2026-03-03T10:30:00+00:00")
    sql = Sql.of(tinyworld.session)
    row_id, cursor = sql.one("SELECT id, cursor FROM npc_personas WHERE employee_id = ?", (DEV,))
    legacy = dict(cursor if isinstance(cursor, dict) else json.loads(cursor))
    for key in ("attendee", "mr", "mr_note", "access"):
        legacy.pop(key)
    tinyworld.session.execute(
        text("UPDATE npc_personas SET cursor = :c WHERE id = :i"), {"c": json.dumps(legacy), "i": row_id}
    )
    del w
    w2 = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    assert w2.persona("dev.one").cursor["attendee"] >= 1  # backfilled to now: the old invite is history
    new = _invite(tinyworld, "2026-03-05T10:00:00+00:00", "2026-03-05T10:30:00+00:00")
    w2.poke()
    tinyworld.run_until(w2, T0 + DAY)
    assert dict(_rsvps(tinyworld)) == {old: "needs_action", new: "accepted"}


# -- merge requests --------------------------------------------------------------------------------------------


def _repo_and_mr(
    t: Tiny, pipeline: dict[str, Any], description: str = "Please review @dev.one", number: int = 1
) -> int:
    sql = Sql.of(t.session)
    repo = sql.scalar("SELECT id FROM repositories WHERE name = 'platform-api'") or sql.insert(
        "repositories",
        {
            "name": "platform-api",
            "team_id": 1,
            "project_id": 1,
            "description": "API",
            "default_branch": "main",
            "language": "python",
            "created_at": T0 - 30 * DAY,
        },
    )
    return sql.insert(
        "merge_requests",
        {
            "repository_id": repo,
            "number": number,
            "title": f"Fix login crash, part {number}",
            "description": description,
            "author_id": 2,
            "source_branch": f"fix-login-{number}",
            "target_branch": "main",
            "state": "open",
            "source_head": "a" * 40,
            "merge_commit": None,
            "pipeline": pipeline,
            "created_at": t.clock.now(),
            "updated_at": t.clock.now(),
            "merged_at": None,
            "merged_by_id": None,
        },
    )


def _notes(t: Tiny, mr_id: int) -> list[tuple[int, str, str | None]]:
    rows = t.session.execute(
        text("SELECT author_id, kind, commit_sha FROM merge_request_notes WHERE merge_request_id = :m ORDER BY id"),
        {"m": mr_id},
    ).all()
    return [(int(a), str(k), c) for a, k, c in rows]


def test_mr__cooperative_approves_green_pipeline_and_never_merges(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    mr_id = _repo_and_mr(tinyworld, {"status": "passed", "commit": "b" * 40})
    assert [s.kind for s in w.poke()] == ["merge_request"]
    acts = tinyworld.run_until(w, T0 + DAY)
    assert _notes(tinyworld, mr_id) == [(DEV, "approve", "b" * 40)]  # at the commit the pipeline ran on
    assert [a.tool for a in acts] == ["git_mr_review"] and acts[0].ok
    state = Sql.of(tinyworld.session).one("SELECT state, merged_by_id FROM merge_requests WHERE id = ?", (mr_id,))
    assert tuple(state) == ("open", None)
    assert mr.mr_list(tinyworld.ctx(), None, "open")["merge_requests"][0]["id"] == mr_id
    assert (DEV, "npc") in _npc_log(tinyworld, "merge_request_notes")


def test_mr__failed_pipeline_gets_changes_then_green_rerun_gets_approval(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    mr_id = _repo_and_mr(tinyworld, {"status": "failed", "commit": "c" * 40})
    w.poke()
    acts = tinyworld.run_until(w, T0 + DAY)
    assert _notes(tinyworld, mr_id) == [(DEV, "request_changes", "c" * 40)]
    assert "failed" in acts[0].text
    # the agent fixes it: CI reruns green, and a note brings the reviewer back
    mr.set_pipeline(tinyworld.ctx(), mr_id, {"status": "passed", "commit": "d" * 40})
    mr.mr_comment(tinyworld.ctx(), mr_id, "Fixed the test, pipeline is green now @dev.one")
    w.poke()
    tinyworld.run_until(w, T0 + 2 * DAY)
    notes = _notes(tinyworld, mr_id)
    assert notes[-1] == (DEV, "approve", "d" * 40) and [k for a, k, _ in notes if a == DEV].count("approve") == 1
    # another note changes nothing: same verdict at the same commit is not repeated
    mr.mr_comment(tinyworld.ctx(), mr_id, "Thanks @dev.one")
    w.poke()
    tinyworld.run_until(w, T0 + 3 * DAY)
    assert _notes(tinyworld, mr_id)[-1][0] == 2


def test_mr__pipeline_not_run_gets_one_waiting_comment(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": _spec("cooperative")}, population=["dev.one"])
    mr_id = _repo_and_mr(tinyworld, {"status": "not_run"})
    w.poke()
    tinyworld.run_until(w, T0 + DAY)
    mr.mr_comment(tinyworld.ctx(), mr_id, "Any news @dev.one")
    w.poke()
    tinyworld.run_until(w, T0 + 2 * DAY)
    assert [(a, k) for a, k, _ in _notes(tinyworld, mr_id)] == [(DEV, "comment"), (2, "comment")]


def _verdicts(preset: str, n: int = 50) -> list[str]:
    t = Tiny()
    try:
        w = t.npcs(overrides={"dev.one": _spec(preset)}, population=["dev.one"])
        ids = [_repo_and_mr(t, {"status": "passed", "commit": f"{k:040x}"}, number=k + 1) for k in range(n)]
        w.poke()
        t.run_until(w, T0 + 2 * DAY)
        out = [k for i in ids for a, k, _ in _notes(t, i) if a == DEV]
        merged = Sql.of(t.session).scalar("SELECT count(*) FROM merge_requests WHERE state != 'open'")
        assert merged == 0  # reviewers never merge
        return out
    finally:
        t.close()


def test_mr__rates_over_50_green_requests():
    coop, adv = _verdicts("cooperative"), _verdicts("adversarial")
    assert len(coop) == len(adv) == 50  # a named reviewer always answers, once
    assert coop.count("approve") >= 45, coop
    assert adv.count("request_changes") >= 25, adv


def test_mr__team_member_not_named_sometimes_picks_it_up(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.two": _spec("cooperative")}, population=["dev.two"])
    ids = [_repo_and_mr(tinyworld, {"status": "passed", "commit": "e" * 40}, "", number=k + 1) for k in range(20)]
    found = w.poke()
    assert [s.kind for s in found] == ["merge_request"] * 20  # the team's repository reaches its members
    tinyworld.run_until(w, T0 + DAY)
    reviewed = [i for i in ids if _notes(tinyworld, i)]
    assert 3 <= len(reviewed) <= 17  # p = helpfulness * 0.3 = 0.29: some, not all


# -- access requests -------------------------------------------------------------------------------------------


def _access_rows(preset: str, n: int = 60) -> tuple[Tiny, list[str]]:
    t = Tiny()
    w = t.npcs(overrides={"cora.ceo": _spec(preset)}, population=["cora.ceo"])
    first = directory.request_access(t.ctx(), "olaf.out", "performance", "Needed for the quarterly calibration.")
    assert first["owner"] == "cora.ceo"
    sql = Sql.of(t.session)
    for k in range(n - 1):  # more of the same kind (the service allows one pending per field, so insert them)
        sql.insert(
            "access_requests",
            {
                "requester_id": 2,
                "subject_id": 5,
                "owner_id": CEO,
                "field": "performance",
                "reason": f"Needed for calibration round {k} of the team.",
                "status": "pending",
                "created_at": t.clock.now(),
                "decided_at": None,
                "expires_at": None,
            },
        )
    w.poke()
    t.run_until(w, T0 + 2 * DAY)
    rows = t.session.execute(text("SELECT status FROM access_requests ORDER BY id")).all()
    return t, [str(r[0]) for r in rows]


def test_access__cooperative_approves_adversarial_refuses_at_least_half():
    coop, coop_rows = _access_rows("cooperative")
    adv, adv_rows = _access_rows("adversarial")
    try:
        assert len(coop_rows) == len(adv_rows) == 60
        assert coop_rows.count("approved") >= 57, coop_rows
        assert adv_rows.count("denied") >= 30 and "pending" not in adv_rows, adv_rows
        ctx = coop.ctx()  # the approval is real: the agent may now see the field
        assert directory.get_restricted(ctx, "olaf.out", "performance")["field"] == "performance"
        log = _npc_log(coop, "access_requests")
        assert sum(1 for a, g in log if g == "npc") == 60 and all(a == CEO for a, g in log if g == "npc")
    finally:
        coop.close()
        adv.close()


def test_access__unjustified_reason_is_usually_refused_even_by_cooperative(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"cora.ceo": _spec("cooperative")}, population=["cora.ceo"])
    directory.request_access(tinyworld.ctx(), "olaf.out", "performance", "pls!!")
    w.poke()
    acts = tinyworld.run_until(w, T0 + DAY)
    assert [a.tool for a in acts] == ["directory_decide_access_request"]
    assert acts[0].reaction in ("approve", "refuse")  # p(refuse) = 0.6: either is a legitimate answer
