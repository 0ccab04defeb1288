"""One NPC turn end to end on the tiny company: perceive, decide, act through services, remember."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
from npckit import DAY, T0, Tiny
from sqlalchemy import text

from mcp_tools.chat import service as chat
from mcp_tools.mail import service as mail
from mcp_tools.tickets import service as tickets
from npcs.errors import UnknownNpc
from npcs.intents import recognise
from npcs.persona import recall


def test_recognise__intents_and_times():
    sent = T0  # 10:00 in Berlin
    assert recognise("what is the status of ENG-12?", "Europe/Berlin", sent).kind == "status"
    assert recognise("who owns ENG-12?", "Europe/Berlin", sent).key == "ENG-12"
    assert recognise("who owns ENG-12?", "Europe/Berlin", sent).kind == "owner"
    assert recognise("When are you free this week?", "Europe/Berlin", sent).kind == "availability"
    agree = recognise("are you ok with 14:30 tomorrow?", "Europe/Berlin", sent)
    assert agree.kind == "agreement" and agree.when is not None
    assert agree.when.isoformat() == "2026-03-03T14:30:00+01:00"
    assert recognise("can you make 3pm?", "UTC", sent).when.hour == 15  # type: ignore[union-attr]
    assert recognise("The status of ENG-1 is done.", "UTC", sent).kind == "statement"  # answers never loop
    assert recognise("anything new?", "UTC", sent).kind == "question"


def test_dm_question__answered_through_chat_as_the_npc(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": "cooperative"}, population=["dev.one"])
    tinyworld.dm(w, "dev.one", "Hi Devi, what is the status of ENG-1?")
    acts = tinyworld.run_until(w, T0 + timedelta(hours=1))
    replies = [a for a in acts if a.tool == "chat_direct_message"]
    assert len(replies) == 1 and replies[0].ok and replies[0].reaction == "answer"
    assert replies[0].fact == {"intent": "status", "subject": "ENG-1", "truth": "in_progress", "said": "in_progress"}
    posts = chat.read_channel(tinyworld.ctx(), "2__3", 10, None)["posts"]
    assert [p["author"] for p in posts] == ["lena.lead", "dev.one"] and "in_progress" in posts[1]["message"]
    assert posts[1]["at"] > posts[0]["at"]
    log = tinyworld.session.execute(
        text("SELECT actor_id, tag FROM change_log WHERE table_name = 'posts' ORDER BY seq")
    ).all()
    assert log == [(2, "agent"), (3, "npc")]  # the NPC's write is logged as the NPC, and the tag restored after
    assert tinyworld.changes.actor_id == 2 and tinyworld.changes.tag == "agent"
    kinds = [m.kind for m in recall(Sql_of(tinyworld), 3)]
    assert kinds == ["perceived", "did"]


def Sql_of(t: Tiny):  # noqa: N802 - reads like the class it returns
    from worlds.rawsql import Sql

    return Sql.of(t.session)


def test_mention_ticket_comment_assignment_and_mail__each_get_their_channel(tinyworld: Tiny):
    w = tinyworld.npcs(
        overrides={"dev.one": {"base": "cooperative", "proactivity": 0.0, "cooperativeness": 1.0}},
        population=["dev.one"],
    )
    ctx = tinyworld.ctx()
    chat.post(ctx, "town-square", "@dev.one who owns ENG-4?")
    tickets.comment(ctx, "ENG-1", "What is the status of ENG-1?")
    tickets.assign(ctx, "ENG-2", "dev.one")
    mail.send(ctx, "dev.one", "", "", "Quick question", "Hi, when are you free?", "")
    found = w.poke()
    assert sorted(s.kind for s in found) == ["assigned", "mail", "mention", "ticket_comment"]
    acts = tinyworld.run_until(w, T0 + timedelta(hours=2))
    tools = sorted((a.tool, a.reaction) for a in acts)
    assert ("chat_reply", "answer") in tools and ("mail_reply", "answer") in tools
    assert ("tickets_comment", "answer") in tools and ("tickets_comment", "ack") in tools
    assert all(a.ok for a in acts), [a for a in acts if not a.ok]
    assert w.next_wakeup() is None  # nothing pending: no proactivity, everything answered
    box = mail.list_messages(ctx, "Inbox", False, 10, 0)["messages"]
    assert [m["subject"] for m in box] == ["Re: Quick question"]


def test_absent_npc__never_acts(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": "absent"}, population=["dev.one"])
    assert w.next_wakeup() is None
    for q in ("what is the status of ENG-1?", "who owns ENG-4?", "when are you free?"):
        tinyworld.dm(w, "dev.one", q)
    assert w.next_wakeup() is None
    assert tinyworld.run_until(w, T0 + 10 * DAY) == []


def test_refused_action__rolls_back_only_itself(tinyworld: Tiny):
    w = tinyworld.npcs(overrides={"dev.one": {"base": "cooperative", "cooperativeness": 1.0}}, population=["dev.one"])
    tinyworld.dm(w, "dev.one", "what is the status of ENG-1?")
    # the asker leaves the company before the NPC answers: the service refuses the DM (no active employee)
    tinyworld.session.execute(text("UPDATE employees SET active = 0 WHERE id = 2"))
    posts_before = tinyworld.session.execute(text("SELECT count(*) FROM posts")).scalar()
    acts = tinyworld.run_until(w, T0 + timedelta(minutes=90))
    replies = [a for a in acts if a.target == "lena.lead"]
    assert replies and replies[0].ok is False and replies[0].error == "not_found"
    made = sum(1 for a in acts if a.ok and a.tool.startswith("chat_"))
    assert tinyworld.session.execute(text("SELECT count(*) FROM posts")).scalar() == posts_before + made
    did = [m for m in recall(Sql_of(tinyworld), 3, "did") if m.subject == "lena.lead"]
    assert did[0].data["ok"] is False and did[0].data["error"] == "not_found"


def test_unknown_override__refused(tinyworld: Tiny):
    with pytest.raises(UnknownNpc) as err:
        tinyworld.npcs(overrides={"nobody.here": "chaotic"})
    assert err.value.code == "unknown_npc"
    with pytest.raises(UnknownNpc):
        tinyworld.npcs(overrides={"lena.lead": "chaotic"})  # the agent is never an NPC


def _episode(seed: int) -> tuple[list[dict], list[tuple], list[tuple]]:
    """A scripted agent against the whole population for three days; everything the NPCs did and logged."""
    t = Tiny()
    try:
        w = t.npcs(seed=seed, overrides={"dev.two": "chaotic", "cora.ceo": "adversarial"})
        ctx = t.ctx()
        acts = []
        for i, (who, q) in enumerate(
            [
                ("dev.one", "what is the status of ENG-4?"),
                ("dev.two", "who owns ENG-1?"),
                ("cora.ceo", "can you make 15:00 tomorrow?"),
                ("olaf.out", "when are you free?"),
            ]
        ):
            t.clock.set(T0 + timedelta(minutes=37 * i))
            acts += t.run_until(w, t.clock.now())
            t.dm(w, who, q)
        tickets.assign(ctx, "ENG-2", "dev.two")
        w.poke()
        acts += t.run_until(w, T0 + 3 * DAY)
        rows = t.session.execute(
            text("SELECT table_name, row_key, op, changes, actor_id, at, tag FROM change_log ORDER BY seq")
        ).all()
        memory = t.session.execute(text("SELECT * FROM npc_memory ORDER BY id")).all()
        return [a.to_dict() for a in acts], [tuple(r) for r in rows], [tuple(r) for r in memory]
    finally:
        t.close()


def test_determinism__same_seed_same_actions_times_memory_and_log():
    a, b = _episode(5), _episode(5)
    assert len(a[0]) > 20
    assert json.dumps(a[0], sort_keys=True) == json.dumps(b[0], sort_keys=True)
    assert a[1] == b[1] and a[2] == b[2]
    c = _episode(6)
    assert c[0] != a[0]
    reactions = {x["reaction"] for x in a[0]}
    assert {"answer", "disruption"} <= reactions


def test_work_hours__latency_is_working_time_and_skips_the_weekend():
    from datetime import UTC, datetime

    from npcs.hours import WorkHours

    berlin = WorkHours("Europe/Berlin", 540, 1020, "1111100")
    friday = datetime(2026, 3, 6, 15, 55, tzinfo=UTC)  # 16:55 in Berlin
    assert berlin.is_open(friday) and not berlin.is_open(friday + timedelta(hours=1))
    monday = berlin.add(friday, 20)
    assert monday == datetime(2026, 3, 9, 8, 15, tzinfo=UTC)  # 5 minutes on Friday, 15 on Monday from 09:00
    assert berlin.minutes_between(friday, monday) == 20
    assert berlin.next_open(datetime(2026, 3, 7, 12, tzinfo=UTC)) == datetime(2026, 3, 9, 8, tzinfo=UTC)
    always = WorkHours("UTC", 0, 0, "0000000")  # misconfigured: never stalls, always open
    assert always.add(friday, 30) == friday + timedelta(minutes=30)


def test_templates__only_questions_ask_so_npc_chats_terminate(tinyworld: Tiny):
    from npcs.text import TEMPLATES

    asking = {k for k, options in TEMPLATES.items() if any("?" in o for o in options)}
    assert asking == {"peer_question", "escalation"}
    w = tinyworld.npcs(seed=3)  # everyone, sampled traits: NPCs ask and answer each other for two weeks
    acts = tinyworld.run_until(w, T0 + 14 * DAY)
    per_turn = Counter((a.actor, a.turn) for a in acts)
    assert acts and max(per_turn.values()) <= 4
    assert all("?" not in a.text for a in acts if a.reaction not in ("peer_question", "escalation"))
