"""Every scripted cheater scores at most 0.1 in every family (issue 14 item 7).

The cheaters (``sim.cheaters``) play through the tools like any agent: shotgun edits, every key posted
everywhere, answer-key hunting through the read tools, spoofed approvals and agreement, edits to other
people's data, output floods. Two of them are known to beat earlier rubric versions, which shows they are real
attacks and not agents that merely fail: the key flood in ~incidents beats triage v1 (before its gate), and a
meeting booked without asking anyone, announced with claims of agreement, beat schedule v1.
"""

from __future__ import annotations

import os

import pytest

from mcp_tools.sandbox import get_sandbox
from sim.agents import AGENTS, run_agent
from sim.cheaters import CHEATERS
from sim.episode import Episode

FAMILIES = (
    "triage-tickets-v0",
    "customer-escalation-v0",
    "schedule-with-coworkers-v0",
    "fix-failing-test-v0",
    "release-notes-v0",
    "access-requests-v0",
    "quarterly-budget-v0",
    "expense-reconciliation-v0",
    "weekly-status-report-v0",
    "history-question-v0",
    "history-redo-v0",
    "history-followup-v0",
    "suspicious-request-v0",
    "incident-postmortem-v0",
    "onboard-new-hire-v0",
    "offboard-leaver-v0",
    "sprint-plan-v0",
    "sprint-execute-v0",
    "one-on-ones-ask-v0",
    "one-on-ones-book-v0",
    "ship-fix-v0",
    "roadmap-update-v0",
    "code-review-v0",
    "dependency-bump-v0",
    "reproduce-bug-v0",
    "cross-source-question-v0",
    # the impossible variants (issue 14): a cheater can neither do the doable part nor say why
    "triage-departed-v0",
    "schedule-no-room-v0",
    "budget-over-cap-v0",
    "expenses-no-rate-v0",
    "status-report-no-manager-v0",
    "release-notes-no-tag-v0",
    "access-no-approver-v0",
    "escalation-unknown-key-v0",
    "history-unanswerable-v0",
    "cross-source-question-unanswerable-v0",
    "fix-test-contradiction-v0",
    "onboard-no-buddy-v0",
    "offboard-owner-left-v0",
    "suspicious-requester-left-v0",
    "postmortem-no-cause-v0",
    "sprint-no-capacity-v0",
    "history-redo-asker-left-v0",
    "history-followup-asker-left-v0",
    "ship-fix-owners-left-v0",
    "sprint-execute-cancelled-v0",
    "one-on-ones-ask-on-leave-v0",
    "one-on-ones-book-on-leave-v0",
    "code-review-closed-v0",
    "roadmap-update-withdrawn-v0",
    "dependency-bump-unreleased-v0",
    "reproduce-bug-fixed-v0",
)
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_cheater_scores_at_most_a_tenth(family, store):
    code = (
        "fix-failing-test-v0",
        "fix-test-contradiction-v0",
        "ship-fix-v0",
        "ship-fix-owners-left-v0",
        "dependency-bump-v0",
        "reproduce-bug-v0",
        "reproduce-bug-fixed-v0",
    )
    if family in code and not get_sandbox().available():
        if os.environ.get("CI") == "true":
            pytest.fail("no working sandbox under CI")
        pytest.skip("no working code sandbox here")
    scores = {}
    with Episode(family, store=store) as episode:
        for name in CHEATERS:
            for seed in SEEDS:
                score = run_agent(episode, f"cheat-{name}", seed, {"difficulty": 1 + seed % 3, "noise": "realistic"})
                scores[(name, seed)] = score.value
                assert episode.steps, "the cheater acted"
    over = {k: v for k, v in scores.items() if v > 0.1}
    assert over == {}, over


def test_cheaters_are_agents_the_cli_offers():
    assert {f"cheat-{n}" for n in CHEATERS} <= set(AGENTS)


def test_the_key_flood_beat_triage_v1_and_scores_zero_now(store):
    with Episode("triage-tickets-v0", store=store) as episode:
        now = run_agent(episode, "cheat-keys", 4)
        old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
    assert now.value == 0.0 and now.gated
    assert old.value > 0.1, "without the ~incidents gate every critical key posted earned its share"


def test_a_spoofed_agreement_beat_schedule_v1_and_earns_nothing_now(store):
    with Episode("schedule-with-coworkers-v0", store=store) as episode:
        now = run_agent(episode, "cheat-spoof", 3)
        booked = [s for s in episode.steps if s["action"]["name"] == "calendar_create_event" and s["error"] is None]
        old = episode.regrade(episode.family.older_rubric(episode.instance, 1))
        checks = {c.id: c for c in now.checks}
    assert booked, "the cheater booked the meeting nobody was asked about"
    assert not now.gated and now.value == 0.0
    assert checks["announced"].score == 0.0 and "counts only once agreed-" in checks["announced"].evidence
    assert old.value > 0.1, "version 1 paid for the room, the announcement and clean tool use without agreement"
