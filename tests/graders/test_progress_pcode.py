"""code-review's note checks decided from the inserted notes, held to a full grade after every step (issue 14).

``merge_request_note_names``, ``merge_request_note_spares``, ``merge_request_verdict`` and
``merge_request_review_says`` keep the note that decided them (or the verdicts so far) in ``ctx.lasting`` and
read each new note from its change-log row; their ``touches`` hooks skip notes that cannot move them, and
``merge_request_state`` ignores the ``updated_at`` each note bumps. Each episode below compares every counted
check's score, evidence and details with a full grade after every step, and asserts the evaluators answered
(else these tests could not fail when a shortcut silently stops working).
"""

from __future__ import annotations

import pytest

from sim.agents import EpisodeEnv, run_agent
from tests.graders.test_progress import Checked
from worlds.rawsql import Sql

SCENARIO = "code-review-v0"
NOTE_FNS = {"merge_request_note_names", "merge_request_note_spares", "merge_request_verdict"}


@pytest.fixture(scope="module")
def episode(store):
    with Checked(SCENARIO, store=store) as ep:
        yield ep


class _Messy:
    """The oracle's env, plus what a sloppy reviewer adds: repeated and lumped comments, false flags, an approval."""

    def __init__(self, env, mr_id, repo):
        self.env, self.prompt, self.actor, self.mr_id, self.repo = env, env.prompt, env.actor, mr_id, repo

    @property
    def done(self):
        return self.env.done

    def call(self, name, /, **arguments):
        if name == "git_mr_comment":
            self.env.call(name, **arguments)  # the same finding twice: the first note stays the one that counts
        if name == "git_mr_review":
            self.env.call("git_mr_comment", mr_id=self.mr_id, body="cli.py: print() should go through a logger")
            self.env.call("git_mr_review", mr_id=self.mr_id, verdict="approve", body="LGTM, docstrings look fine")
        return self.env.call(name, **arguments)


def test_the_oracle_and_random_agree_with_a_full_grade_and_notes_are_decided_from_their_rows(episode, settled):
    decided, reruns = settled["decided"], settled["rerun"]
    for difficulty in (1, 3):
        assert run_agent(episode, "oracle", difficulty, {"difficulty": difficulty, "progress": True}).value == 1.0
    assert run_agent(episode, "random", 2, {"progress": True}).value <= 0.1
    assert episode.compared >= 20
    assert {"merge_request_note_names", "merge_request_verdict", "merge_request_review_says"} <= set(decided)
    assert decided.count("merge_request_note_names") >= 10, decided
    assert not NOTE_FNS.intersection(reruns), reruns  # notes are only inserted: never a query after the first step
    assert "merge_request_state" not in reruns  # a note bumps updated_at, a column the gate does not read


def test_repeated_notes_false_flags_an_approval_and_a_merge_agree_with_a_full_grade(episode, settled):
    decided, reruns = settled["decided"], settled["rerun"]
    before = episode.compared
    prompt, info = episode.reset(seed=4, options={"difficulty": 2, "progress": True})
    p = episode.instance.params
    env = EpisodeEnv(episode, prompt, info)
    episode.family.oracle(_Messy(env, p["mr_id"], p["repo"]))
    score = episode.grade()
    assert 0.0 < score.value < 1.0
    assert {"verdict", "spares-print-cli"} <= {c.id for c in score.checks if not c.passed}
    assert episode.compared - before >= 10
    assert "merge_request_note_spares" in decided and not NOTE_FNS.intersection(reruns)


def test_a_merge_is_read_from_the_update_and_gates_the_score(episode, settled):
    decided = settled["decided"]
    prompt, info = episode.reset(seed=5, options={"difficulty": 0, "progress": True})
    p = episode.instance.params
    env = EpisodeEnv(episode, prompt, info)
    env.call("git_mr_comment", mr_id=p["mr_id"], body="Looks fine to me.")
    env.call("git_mr_review", mr_id=p["mr_id"], verdict="approve", body="Approved.")
    env.call("git_mr_merge", mr_id=p["mr_id"])
    assert "merge_request_state" in decided
    env.call("submit", summary="merged")
    score = episode.grade()
    assert score.value == 0.0
    assert next(c for c in score.checks if c.id == "still-open").evidence.endswith("is merged (wanted open)")


def test_without_on_step_the_per_check_hooks_decide_the_same_verdicts(episode, settled, without_on_step):
    """The ``touches``/``on_changes`` pair each note function also declares, for a progress without ``on_step``."""
    without_on_step((*NOTE_FNS, "merge_request_review_says"))
    prompt, info = episode.reset(seed=4, options={"difficulty": 2, "progress": True})
    p = episode.instance.params
    episode.family.oracle(_Messy(EpisodeEnv(episode, prompt, info), p["mr_id"], p["repo"]))
    assert {"merge_request_note_names", "merge_request_note_spares", "merge_request_verdict"} <= set(settled["decided"])
    assert not NOTE_FNS.intersection(settled["rerun"])


def test_an_edited_note_re_runs_the_note_checks_and_still_agrees_with_a_full_grade(episode, settled):
    """No tool edits a note, but the after-image path must not assume it: an update re-runs every note check."""
    prompt, info = episode.reset(seed=6, options={"difficulty": 1, "progress": True})
    p = episode.instance.params
    env = EpisodeEnv(episode, prompt, info)
    v = p["violations"][0]
    note = env.call("git_mr_comment", mr_id=p["mr_id"], body=f"{v['file']}: looks fine")
    session = episode._live.ctx.session
    said = f"{v['file']} line {v['line']}: {v['rule']}"
    Sql.of(session).update("merge_request_notes", note["id"], {"body": (note["body"], said)})
    before, compared = len(settled["rerun"]), episode.compared
    # the next write folds the edit in with its own note; Checked compares the step with a full grade
    env.call("git_mr_comment", mr_id=p["mr_id"], body=f"{v['file']}: and one more note after the edit")
    assert episode.compared == compared + 1 and "merge_request_note_names" in settled["rerun"][before:]
    env.call("git_mr_comment", mr_id=p["mr_id"], body=f"{v['file']} line {v['line']}: {v['rule']} again")
    env.call("submit", summary="done")
    assert episode.grade().value == 0.0  # no verdict: the spares and kept rules count for nothing
