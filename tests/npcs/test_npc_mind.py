"""The turn graph's ``mind`` channel is checkpointed into the world: a coworker remembers across populations."""

from __future__ import annotations

import json
from datetime import timedelta

from npckit import T0, Tiny
from sqlalchemy import text

from npcs import behaviour
from npcs.mind import WorldSaver


def _row(t: Tiny, username: str) -> tuple[dict[str, object], int]:
    cursor, turns = t.session.execute(
        text(
            "SELECT p.cursor, p.turns FROM npc_personas p JOIN employees e ON e.id = p.employee_id"
            " WHERE e.username = :u"
        ),
        {"u": username},
    ).one()
    return (json.loads(cursor) if isinstance(cursor, str) else cursor), int(turns)


def test_graph__is_compiled_with_the_world_checkpointer():
    assert isinstance(behaviour.graph().checkpointer, WorldSaver)


def test_mind__a_turn_writes_the_cursor_and_count_to_the_persona_row_without_wall_clock(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": "cooperative"}, population=["dev.one"])
    before, turns_before = _row(tinyworld, "dev.one")
    tinyworld.dm(w, "dev.one", "Hi Devi, what is the status of ENG-1?")
    tinyworld.run_until(w, T0 + timedelta(hours=1))
    after, turns = _row(tinyworld, "dev.one")
    assert turns > turns_before and int(after["post"]) > int(before["post"])
    assert set(after) - set(before) == set()  # langgraph's checkpoint id and timestamp are never stored
    assert str(after["at"]) <= (T0 + timedelta(hours=1)).isoformat()  # the simulated clock, not the host's
    logged = tinyworld.session.execute(
        text("SELECT COUNT(*) FROM change_log WHERE table_name = 'npc_personas' AND op = 'update'")
    ).scalar()
    assert logged == turns - turns_before  # one change-logged write per turn: snapshots and forks carry it


def test_mind__a_new_population_on_the_same_world_resumes_it_and_does_not_answer_twice(tinyworld: Tiny):
    first = tinyworld.npcs(overrides={"dev.one": "cooperative"}, population=["dev.one"])
    tinyworld.dm(first, "dev.one", "Hi Devi, what is the status of ENG-1?")
    acts = tinyworld.run_until(first, T0 + timedelta(hours=1))
    assert [a.tool for a in acts if a.ok].count("chat_direct_message") == 1
    _, turns = _row(tinyworld, "dev.one")
    # A campaign's next episode starts a new population on the world the last one left: the thread resumes.
    second = tinyworld.npcs(overrides={"dev.one": "cooperative"}, population=["dev.one"])
    second.poke()
    later = tinyworld.run_until(second, T0 + timedelta(hours=3))
    assert [a for a in later if a.tool == "chat_direct_message"] == []
    tinyworld.dm(second, "dev.one", "And who owns ENG-4?")
    answered = tinyworld.run_until(second, T0 + timedelta(hours=5))
    assert [a.fact["subject"] for a in answered if a.tool == "chat_direct_message"] == ["ENG-4"]
    assert _row(tinyworld, "dev.one")[1] > turns
