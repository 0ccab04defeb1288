"""info["progress"]: the rubric's partial score after each step, kept from the rows a step changed (issue 14).

The incremental score must never drift from a full grade: after every step of every family's agents (oracle,
random, no-op; with faults and coworkers), each counted check's verdict equals the one a full ``grade`` of the
same state gives, and after the last step the progress is the episode's reward.
"""

from __future__ import annotations

import os

import pytest

from mcp_tools.sandbox import get_sandbox
from sim.agents import run_agent
from sim.episode import Episode

CASES = [
    ("triage-tickets-v0", "oracle", 3, {"difficulty": 2, "noise": "realistic"}),
    ("triage-tickets-v0", "random", 4, {}),
    ("triage-tickets-v0", "oracle", 5, {"difficulty": 3}),
    ("customer-escalation-v0", "oracle", 5, {"npcs": "cooperative", "noise": "realistic"}),
    ("customer-escalation-v0", "random", 2, {}),
    ("schedule-with-coworkers-v0", "oracle", 6, {"npcs": "adversarial"}),
    ("schedule-with-coworkers-v0", "noop", 6, {}),
    ("fix-failing-test-v0", "oracle", 7, {}),
    ("quarterly-budget-v0", "oracle", 3, {"difficulty": 3, "noise": "realistic"}),
    ("quarterly-budget-v0", "random", 1, {}),
    ("expense-reconciliation-v0", "oracle", 2, {"difficulty": 3, "noise": "realistic"}),
    ("expense-reconciliation-v0", "random", 3, {}),
    ("weekly-status-report-v0", "oracle", 6, {"difficulty": 2, "noise": "realistic"}),
    ("weekly-status-report-v0", "random", 5, {}),
    ("release-notes-v0", "oracle", 4, {"difficulty": 3, "noise": "realistic"}),
    ("release-notes-v0", "random", 2, {}),
    ("access-requests-v0", "oracle", 3, {"difficulty": 3, "noise": "realistic"}),
    ("access-requests-v0", "random", 1, {}),
    ("suspicious-request-v0", "oracle", 3, {"difficulty": 3, "noise": "realistic"}),
    ("suspicious-request-v0", "random", 1, {}),
    ("incident-postmortem-v0", "oracle", 2, {"difficulty": 3, "noise": "realistic"}),
    ("incident-postmortem-v0", "random", 4, {}),
    ("onboard-new-hire-v0", "oracle", 2, {"difficulty": 3, "noise": "realistic"}),
    ("onboard-new-hire-v0", "random", 1, {}),
    ("offboard-leaver-v0", "oracle", 3, {"difficulty": 3, "noise": "realistic"}),
    ("offboard-leaver-v0", "random", 2, {}),
    ("sprint-execute-v0", "oracle", 2, {"difficulty": 3}),
    ("sprint-execute-v0", "random", 4, {}),
    ("sprint-plan-v0", "oracle", 1, {"difficulty": 3}),
    ("one-on-ones-book-v0", "oracle", 3, {"difficulty": 2}),
    ("roadmap-update-v0", "oracle", 3, {"difficulty": 3}),  # a document written twice: decided from the log
    ("roadmap-update-v0", "random", 1, {}),
    ("sprint-plan-v0", "oracle", 2, {"difficulty": 2}),
    # the closing submit's summary decides these trace checks (``submit_explains``, ``submit_answer``)
    ("triage-departed-v0", "oracle", 1, {"difficulty": 2}),
    ("budget-over-cap-v0", "random", 2, {}),
    ("history-question-v0", "oracle", 3, {}),
]
DECIDED = {
    "access-requests-v0": "row_exists",
    "sprint-execute-v0": "ticket_field_equals",  # v2: each committed ticket's sprint and status
    "triage-tickets-v0": "ticket_field_equals",
}
"""A check function each family's oracle episode must see decided from the rows (not re-run) several times.

The sheet checks are settled by ``on_step`` (one call a step), held to the grade in test_progress_sheets2."""


class Checked(Episode):
    """An episode that grades the whole rubric after every step and compares it with the step's progress."""

    compared = 0

    def step(self, action):  # type: ignore[override]
        obs, reward, terminated, truncated, info = super().step(action)
        live = self._live
        assert live is not None and live.progress is not None
        full = live.score if live.over else live.grade()
        assert full is not None
        want = {c.id: (c.score, c.evidence, c.details) for c in full.checks if c.kind != "judge"}
        got = {c.id: (c.score, c.evidence, c.details) for c in live.progress.results()}
        assert got == want, f"step {len(live.steps) - 1} ({live.steps.records[-1]['action']['name']})"
        assert info["progress"] == full.value  # the same float: progress adds the shares in the same order
        if live.over:
            assert info["progress"] == pytest.approx(reward)
        self.compared += 1
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(("scenario", "agent", "seed", "options"), CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_progress_after_every_step_equals_a_full_grade(scenario, agent, seed, options, store, evaluated):
    if scenario == "fix-failing-test-v0" and not get_sandbox().available():
        if os.environ.get("CI") == "true":
            pytest.fail("no working sandbox under CI")
        pytest.skip("no working code sandbox here")
    with Checked(scenario, store=store) as episode:
        score = run_agent(episode, agent, seed, {**options, "progress": True})
        assert episode.compared >= (1 if agent == "noop" else 3)
        if agent == "oracle":
            assert score.value == 1.0
            if scenario in DECIDED:  # the evaluators answered, so the comparisons above held them to the grade
                decided = [fn for _, fn, answered in evaluated if answered]
                assert decided.count(DECIDED[scenario]) >= 5, decided


def test_progress_rises_as_the_oracle_works_and_reads_cost_nothing(store):
    with Episode("triage-tickets-v0", store=store) as episode:
        values: list[float] = []
        original = episode.step

        def step(action):
            out = original(action)
            values.append(out[4]["progress"])
            return out

        episode.step = step  # type: ignore[method-assign]
        from sim.agents import EpisodeEnv

        prompt, info = episode.reset(seed=8, options={"progress": True})
        episode.family.oracle(EpisodeEnv(episode, prompt, info))
        assert values[0] == 0.0 and values[-1] == 1.0
        assert values == sorted(values), "each triaged ticket adds to the partial score, none takes it away"
        assert len(set(values)) > 5, "a dense rubric rewards the work ticket by ticket"


def test_progress_is_off_unless_asked_for_and_a_bad_value_changes_nothing(store):
    from sim.errors import BadOption

    with Episode("triage-tickets-v0", store=store) as episode:
        episode.reset(seed=2)
        *_, info = episode.step({"name": "tickets_search", "arguments": {"limit": 1}})
        assert info["progress"] is None
        before = episode.episode_id
        with pytest.raises(BadOption, match="progress must be true or false"):
            episode.reset(seed=3, options={"progress": "yes"})
        assert episode.episode_id == before and not episode.done


def test_a_step_re_runs_only_the_checks_its_rows_can_change(store, monkeypatch, evaluated):
    """Reads re-run nothing; filing one case's ticket re-runs (or decides) that case's checks, not the others'."""
    import json
    import re

    import graders.progress as progress
    from sim.agents import EpisodeEnv

    ran: list[str] = []
    real = progress.Progress._run
    monkeypatch.setattr(progress.Progress, "_run", lambda self, i: ran.append(self._checks[i].id) or real(self, i))
    stored = progress.Progress._store  # and so does one an ``on_step`` evaluator decided (it stores the verdict)
    monkeypatch.setattr(
        progress.Progress, "_store", lambda self, i, out: ran.append(self._checks[i].id) or stored(self, i, out)
    )
    with Episode("customer-escalation-v0", store=store) as episode:
        steps: list[tuple[str, str, list[str]]] = []
        original = episode.step

        def step(action):
            ran.clear()
            evaluated.clear()
            out = original(action)
            decided = [cid for cid, _, answered in evaluated if answered]  # decided from the rows: re-run here
            steps.append((action["name"], json.dumps(action.get("arguments", {})), list(ran) + decided))
            return out

        episode.step = step  # type: ignore[method-assign]
        prompt, info = episode.reset(seed=4, options={"difficulty": 2, "progress": True})
        episode.family.oracle(EpisodeEnv(episode, prompt, info))
        assert episode._live.score.value == 1.0
    later = steps[1:]  # the first step grades every check once
    assert all(not ids for name, _, ids in later if name in ("mail_read_message", "mail_list_messages"))
    filed = [(args, ids) for name, args, ids in later if name == "tickets_create"]
    assert len(filed) >= 3
    for args, ids in filed:
        ref = re.search(r"REF-\d{4}", args).group(0)
        cases = {i.split("-", 1)[1] for i in ids if "-REF-" in i}
        assert cases == {ref}, f"filing {ref} re-ran {sorted(ids)}"


def test_a_kept_answer_lasts_until_a_table_it_reads_changes():
    from graders.base import GradingContext

    ctx = GradingContext(session=None, actor_id=1)  # type: ignore[arg-type]
    calls: list[int] = []

    def answer() -> int:
        calls.append(1)
        return len(calls)

    assert ctx.kept("k", ("tickets", "employees"), answer) == 1
    ctx.forget(["posts"])  # a step that changed only chat keeps it
    assert ctx.kept("k", ("tickets", "employees"), answer) == 1
    ctx.forget(["employees"])
    assert ctx.kept("k", ("tickets", "employees"), answer) == 2
    ctx.forget()  # a full grade starts from nothing
    assert ctx.kept("k", ("tickets",), answer) == 3 and ctx.memo == {}
