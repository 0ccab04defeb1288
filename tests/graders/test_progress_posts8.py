"""The post paths of round 8, held to a full grade: what ``_PostIndex.moved`` skips at a new channel.

A step that posts in a channel nobody had posted to tells the checks with no posts of their own ``LATER``
(their evidence lists where posts went) unless the progress still holds them as lagging. Reading each such
check's marks to tell which is skipped while no verdict was built since they were last read (``PostLog.asked``);
these tests post in new channel after new channel, asking the results only now and then, and hold every answer
and the value to what the marks say and to a full grade.
"""

from __future__ import annotations

from typing import Any

from graders.base import GradingContext, grade, read_changes
from graders.progress import Progress
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _rubric, _said
from tests.graders.test_progress_pcomms import _outcomes
from worlds.schema import Channel


def _spied(world, checks: list[tuple[str, str, dict[str, Any]]]) -> tuple[Any, Progress, dict[str, object]]:
    """A started progress whose ``on_step`` answers are recorded by check id ("LATER" or the score)."""
    rubric = _rubric(checks)
    progress = Progress(rubric, GradingContext(session=world.session, trace=[], actor_id=1))
    progress.update([])
    answers: dict[str, object] = {}
    for key, (fn, positions, params) in list(progress._grouped.items()):

        def spy(ctx, rows, params, _fn=fn, _positions=positions):
            out = _fn(ctx, rows, params)
            answers.update({checks[_positions[p]][0]: _said(v) for p, v in out.items()})
            return out

        progress._grouped[key] = (spy, positions, params)
    return rubric, progress, answers


def test_bare_checks_are_told_of_new_channels_once_until_the_results_ask_them(world):
    checks = [
        ("eng-deploy", "post_in_channel", {"channel": "eng", "pattern": "deploy"}),
        ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
        # an unknown person to mention: its verdict never reads the channels (no marks), so it is told every time
        ("ghost", "post_in_channel", {"channel": "eng", "pattern": "x", "mention": "nobody"}),
    ]
    rubric, progress, answers = _spied(world, checks)
    seq, said = world.start_seq, []
    for n, ask in enumerate([False, False, False, True, False, False]):
        answers.clear()
        channel = Channel(team_id=1, name=f"room{n}", display_name=f"Room {n}", type="O", created_at=world.clock.now())
        world.add(channel)
        post(world, channel.id, "hello")
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        assert progress.update(rows) == grade(rubric, world.ctx()).value, f"value after step {n}"  # type: ignore[arg-type]
        said.append(dict(answers))
        if ask:  # the results bring every lagging check up to date: the next new channel tells them again
            assert _outcomes(progress.results()) == _outcomes(grade(rubric, world.ctx()).checks), f"after step {n}"
    everyone = {"eng-deploy": "LATER", "bob-dm": "LATER", "ghost": "LATER"}
    assert said[0] == everyone, "a first channel: every check bare"
    assert said[1] == said[2] == {"ghost": "LATER"}, "told at room0 and not asked since: lagging, no marks read"
    assert said[3] == {"ghost": "LATER"}
    assert said[4] == everyone, "asked by the results since: told of the new channel"
    assert said[5] == {"ghost": "LATER"}
    assert _outcomes(progress.results()) == _outcomes(grade(rubric, world.ctx()).checks)


def test_a_verdict_built_between_new_channels_makes_the_marks_read_again(world):
    checks = [
        ("eng-deploy", "post_in_channel", {"channel": "eng", "pattern": "deploy"}),
        ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
    ]
    rubric, progress, answers = _spied(world, checks)
    seq, said = world.start_seq, []
    for n in range(3):
        answers.clear()
        channel = Channel(team_id=1, name=f"hall{n}", display_name=f"Hall {n}", type="O", created_at=world.clock.now())
        world.add(channel)
        post(world, channel.id, "hello")
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        progress.update(rows)  # type: ignore[arg-type]
        said.append(dict(answers))
        if n == 1:  # one check alone is brought up to date (as ``results`` would): only it is told again
            i = next(i for i, c in enumerate(rubric.checks) if c.id == "bob-dm")
            assert progress._lagging >= {i}
            progress._run(i)
            progress._lagging.discard(i)
    assert said == [{"eng-deploy": "LATER", "bob-dm": "LATER"}, {}, {"bob-dm": "LATER"}]
    assert _outcomes(progress.results()) == _outcomes(grade(rubric, world.ctx()).checks)
