"""The co-evolution demo (issue 14 item 3): a policy drifting toward the ~incidents hack is caught by the buffer."""

from bench.coevolve import coevolve
from graders.store import RubricStore


def test_coevolution__the_static_rubric_lets_the_hack_take_over(store):
    static = coevolve(evolve=False, store=store)
    assert static.first_shortcut is not None and static.caught_at is None
    late = static.steps[-4:]
    assert all(s.p >= 0.9 for s in late) and all(s.reward_shortcut == 1.0 for s in late if s.shortcut)


def test_coevolution__the_buffer_catches_the_hack_within_a_few_steps_and_names_the_version(store, tmp_path):
    rubrics = RubricStore(tmp_path)
    run = coevolve(evolve=True, store=store, rubrics=rubrics)
    assert run.survived is not None and 0 <= run.survived <= 4, run.to_json()
    # From the catch on, every shortcut rollout scores 0 and the policy stops taking it.
    after = [s for s in run.steps if s.step >= run.caught_at]
    assert all(s.reward_shortcut == 0.0 for s in after if s.shortcut)
    assert max(s.p for s in after[1:]) < 0.2 and run.steps[-1].p < 0.1
    # Honest work keeps its reward: the new gate does not tax it.
    assert sum(s.reward_honest for s in after if s.honest) / len([s for s in after if s.honest]) > 0.8
    # The version that caught it is in the store, with the check's origin.
    stored = rubrics.get("triage-tickets", run.caught_version)
    origin = stored.origins[run.caught_by]
    assert origin.by.startswith("buffer:negative:") and origin.added_in <= run.caught_version
    assert any(c.id == run.caught_by and c.must for c in stored.rubric.checks)
