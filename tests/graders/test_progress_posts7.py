"""The post paths of round 7, held to a full grade after every step (``_play`` of comms3's tests).

What each test plays is what the path settles: a check whose new posts are the ones ``_PostIndex.moved`` just
found is folded from them (no scan of the log), and two checks with the same parameters share one followed
state, so the second must read the verdict the first one just built rather than be told ``LATER``.
"""

from __future__ import annotations

from tests.graders.conftest import employee
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play


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
    assert said[2] == {"first": 1.0, "second": 1.0}


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
