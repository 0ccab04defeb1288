"""The issue's trait properties, each over at least 200 seeded requests on the tiny company.

The agent (``lena.lead``) DMs ``dev.one`` one question at a time during dev.one's working hours, then lets
simulated time run until dev.one replies or one working day (480 working minutes) has passed. Four worlds
(seeds) of 50 questions each give 200 requests per property.
"""

from __future__ import annotations

import statistics
from collections import Counter
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from npckit import DAY, T0, Tiny

from npcs.model import NpcWorld

QUESTIONS = (
    "Hi Devi, what is the status of ENG-1?",
    "who owns ENG-4?",
    "When are you free?",
    "can you make 15:00 tomorrow?",
    "What's the status of OPS-1?",
    "Who is working on ENG-3?",
    "are you ok with 10:30 tomorrow?",
    "quick one: status of ENG-2?",
)
SEEDS = (1, 2, 3, 4)
PER_SEED = 50
REPLIES = {"answer", "ack", "pushback", "refuse"}


def _ask_all(spec: Any, seed: int, n: int = PER_SEED) -> list[dict[str, Any]]:
    """Ask ``n`` questions in turn; per question: the reply action (or None) and its working-time latency."""
    t = Tiny()
    try:
        w: NpcWorld = t.npcs(seed=seed, overrides={"dev.one": spec}, population=["dev.one"])
        hours = w.persona("dev.one").hours
        out = []
        for i in range(n):
            asked = hours.next_open(t.clock.now() + timedelta(minutes=10 + 7 * (i % 5)))
            t.run_until(w, asked)
            t.dm(w, "dev.one", QUESTIONS[i % len(QUESTIONS)])
            deadline = hours.add(asked, 480)
            reply = None
            while reply is None and (at := w.next_wakeup()) is not None and at <= deadline:
                t.clock.set(max(at, t.clock.now()))
                for a in w.run_due(t.clock.now()):
                    if a.target == "lena.lead" and a.reaction in REPLIES and reply is None:
                        reply = a
            latency = hours.minutes_between(asked, t.clock.now()) if reply else None
            out.append({"reply": reply, "latency": latency})
            t.clock.set(max(t.clock.now(), asked + timedelta(minutes=1)))
        return out
    finally:
        t.close()


def _sweep(spec: Any) -> list[dict[str, Any]]:
    return [r for seed in SEEDS for r in _ask_all(spec, seed)]


def test_cooperative__answers_90pct_within_a_working_day_and_95pct_facts_right():
    results = _sweep("cooperative")
    assert len(results) >= 200
    answered = [r for r in results if r["reply"] is not None and r["reply"].reaction == "answer"]
    assert len(answered) / len(results) >= 0.90, Counter(r["reply"] and r["reply"].reaction for r in results)
    assert all(r["latency"] <= 480 for r in answered)
    facts = [r["reply"].fact for r in answered if r["reply"].fact is not None]
    assert len(facts) >= 150
    right = sum(f["truth"] == f["said"] for f in facts)
    assert right / len(facts) >= 0.95, (right, len(facts))


def test_adversarial__pushes_back_or_refuses_at_least_half():
    results = _sweep("adversarial")
    negative = [r for r in results if r["reply"] is not None and r["reply"].reaction in ("pushback", "refuse")]
    assert len(negative) / len(results) >= 0.50, Counter(r["reply"] and r["reply"].reaction for r in results)
    assert {r["reply"].reaction for r in negative} == {"pushback", "refuse"}


def test_responsiveness__higher_gives_shorter_median_latency():
    medians = {}
    for r in (0.2, 0.5, 0.9):
        spec = {"responsiveness": r, "proactivity": 0.0, "cooperativeness": 1.0, "helpfulness": 1.0}
        lat = [x["latency"] for x in _sweep(spec) if x["latency"] is not None]
        assert len(lat) >= 190
        medians[r] = statistics.median(lat)
    assert medians[0.9] < medians[0.5] < medians[0.2], medians


def test_chaotic__at_least_one_disruption_per_working_day():
    per_day: Counter[str] = Counter()
    days: set[str] = set()
    berlin = ZoneInfo("Europe/Berlin")
    for seed in range(1, 9):  # 8 weeks of 5 working days; ~8 proactive turns a day each
        t = Tiny()
        try:
            w = t.npcs(seed=seed, overrides={"dev.one": "chaotic"}, population=["dev.one"])
            acts = t.run_until(w, T0 + 5 * DAY)
        finally:
            t.close()
        for d in range(5):
            days.add(f"{seed}/{(T0 + d * DAY).astimezone(berlin).date()}")
        turns = {(a.turn, a.at) for a in acts if a.reaction == "disruption" and a.ok}
        for _, at in turns:
            per_day[f"{seed}/{(T0.fromisoformat(at)).astimezone(berlin).date()}"] += 1
    assert len(days) == 40 and set(per_day) <= days
    assert sum(per_day.values()) >= len(days)  # >= 1 per working day on average
    covered = sum(1 for d in days if per_day[d] >= 1)
    assert covered / len(days) >= 0.9, per_day
