"""The post paths of round 7, held to a full grade after every step (``_play`` of comms3's tests).

What each test plays is what the path settles: a check whose new posts are the ones ``_PostIndex.moved`` just
found is folded from them (no scan of the log), and two checks with the same parameters share one followed
state, so the second must read the verdict the first one just built rather than be told ``LATER``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import graders.comms_posts as comms_posts
from graders.base import GradingContext, grade, read_changes
from graders.progress import Progress
from tests.graders.conftest import employee
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play, _rubric, _said
from tests.graders.test_progress_pcomms import _outcomes
from worlds.schema import Channel, Mention


def test_two_checks_with_the_same_params_both_move_on_the_post_that_passes_them(world):
    same = {"channel": "eng", "pattern": "deploy"}
    checks = [("first", "post_in_channel", dict(same)), ("second", "post_in_channel", dict(same))]
    _, said = _play(
        world,
        checks,
        [
            lambda: post(world, 2, "lunch?"),
            lambda: post(world, 2, "deploy at noon"),
            lambda: post(world, 2, "deploy done"),
        ],
    )
    # the second reads the state the first just folded: the verdict it holds (the score as it stands)
    assert said[0] == {"first": "LATER", "second": 0.0}
    assert said[1] == {"first": 1.0, "second": 1.0}, "both scores moved, not only the first one's"
    # a third match past the one post each needs: the first's score stands (``LATER``), the twin reads the state
    assert said[2] == {"first": "LATER", "second": 1.0}


def test_posts_a_rebuilt_index_already_folded_are_not_folded_twice(world):
    def rename_and_post() -> None:
        employee(world.session, "bob").username = "robert"  # an employee changed: the index is built anew
        post(world, 2, "deploy one")

    checks = [
        ("three-deploys", "post_in_channel", {"channel": "eng", "pattern": "deploy", "min_count": 3}),
        ("robert-dm", "post_in_channel", {"channel": "@robert", "pattern": "ENG-4"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: post(world, 2, "status"),
            rename_and_post,
            lambda: post(world, 2, "deploy two"),  # the index still starts before "deploy one"
            lambda: post(world, 3, "take ENG-4?"),
        ],
    )
    status, rebuilt, second, dm = said
    assert status == {"three-deploys": "LATER"}, "no robert yet: robert-dm says so whatever is posted"
    assert rebuilt == {"three-deploys": 1 / 3, "robert-dm": 0.0}, "every check decided in full"
    assert second == {"three-deploys": 2 / 3}, "two deploys, not three"
    assert dm == {"robert-dm": 1.0}, "three-deploys has posts of its own: a DM is not in its evidence"


def test_a_bare_check_told_later_is_not_told_again_until_the_results_ask_it(world):
    def new_channel() -> int:
        world.add(Channel(team_id=1, name="random", display_name="Random", type="O", created_at=world.clock.now()))
        return 4

    checks = [
        ("eng-deploy", "post_in_channel", {"channel": "eng", "pattern": "deploy"}),
        ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
    ]
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
    seq, said = world.start_seq, []
    steps = [
        (lambda: 1, "hi", False),
        (lambda: 2, "lunch", True),
        (new_channel, "x", False),
        (lambda: 3, "ENG-4?", False),
    ]
    for n, (channel, text, ask) in enumerate(steps):
        answers.clear()
        post(world, channel(), text)
        world.session.flush()
        rows = read_changes(world.session, after_seq=seq)
        seq = rows[-1].seq
        assert progress.update(rows) == grade(rubric, world.ctx()).value, f"value after step {n}"  # type: ignore[arg-type]
        said.append(dict(answers))
        if ask:  # the results bring every lagging check up to date: the next new channel tells them again
            assert _outcomes(progress.results()) == _outcomes(grade(rubric, world.ctx()).checks)
    general, eng, random, dm = said
    assert general == {"eng-deploy": "LATER", "bob-dm": "LATER"}, "a first channel: both bare"
    assert eng == {"eng-deploy": "LATER"}, "bob-dm was told at ~general and not asked since: still lagging"
    assert random == {"bob-dm": "LATER"}, "asked by the results since: told of the new channel"
    assert dm == {"bob-dm": 1.0}
    assert _outcomes(progress.results()) == _outcomes(grade(rubric, world.ctx()).checks)


def test_mention_checks_fold_their_new_posts_and_only_mentions_of_their_own_posts_move_them(world, monkeypatch):
    generic: list[str] = []
    real = comms_posts._post_verdict

    def spy(*args: Any, **kwargs: Any) -> Any:
        generic.append(kwargs["mention"])
        return real(*args, **kwargs)

    monkeypatch.setattr(comms_posts, "_post_verdict", spy)

    made: list[int] = []

    def mentioned(channel: int, text: str, who: int | None) -> Callable[[], Any]:
        def step() -> None:
            p = post(world, channel, text)
            made.append(p.id)
            if who is not None:
                world.add(Mention(post_id=p.id, employee_id=who))

        return step

    checks = [
        ("bob-told", "post_in_channel", {"channel": "eng", "pattern": "ENG-3", "mention": "bob"}),
        ("carol-told", "post_in_channel", {"channel": "eng", "pattern": "ENG-3", "mention": "carol"}),
    ]
    _, said = _play(
        world,
        checks,
        [
            mentioned(2, "ENG-3 is ready", 2),  # a mention row for bob with the post
            mentioned(3, "can you ask carol?", 3),  # a mention of carol on a DM: no check's post
            lambda: world.add(Mention(post_id=made[0], employee_id=3)),  # carol named on the first post, later
            mentioned(2, "ENG-3 again, @carol", None),  # carol named in the text only
        ],
    )
    first, dm, late, text = said
    assert first == {"bob-told": 1.0, "carol-told": "LATER"}
    assert dm == {}, "a mention on another channel's post moves neither"
    assert late == {"carol-told": 1.0}
    # carol's check passes already: a second match (by the text) moves only its evidence (round 9: ``LATER``)
    assert text == {"carol-told": "LATER", "bob-told": "LATER"}
    # only the mention of an earlier post is decided in full (the first verdicts come from the check itself)
    assert generic == ["carol"], "new posts are folded and searched with their mention rows"


def test_a_mention_of_an_earlier_post_in_a_step_with_a_new_post_redecides_the_check(world):
    made: list[int] = []

    def first() -> None:
        made.append(post(world, 2, "ENG-3 is ready").id)

    def second() -> None:
        post(world, 2, "ENG-3 still")
        world.add(Mention(post_id=made[0], employee_id=4))  # dave named on the first post

    checks = [("dave-told", "post_in_channel", {"channel": "eng", "pattern": "ENG-3", "mention": "dave"})]
    _, said = _play(world, checks, [first, second])
    assert said == [{"dave-told": "LATER"}, {"dave-told": 1.0}], "the earlier post counts now, not only the new one"
