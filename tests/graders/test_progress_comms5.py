"""The fifth round of the post paths, held to a full grade after every step (``_play`` of comms3's tests).

What the test plays is what the path settles: a post check asking for no mention whose new post brings a new
match is decided by ``_new_match`` from the matches ``_post_step`` just searched, with no generic verdict pass;
its text, score and details must be the ones a full grade gives (half-way to ``min_count``, reached; past it
the score stands and the check answers ``LATER``, round 9).
"""

from __future__ import annotations

from typing import Any

import graders.comms_posts as comms_posts
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play


def test_a_new_match_is_decided_from_the_searched_matches_alone(world, monkeypatch):
    calls: list[Any] = []
    real = comms_posts._post_verdict

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2:] or kwargs.get("channel"))
        return real(*args, **kwargs)

    monkeypatch.setattr(comms_posts, "_post_verdict", spy)
    checks = [
        ("two-deploys", "post_in_channel", {"channel": "eng", "pattern": "deploy", "min_count": 2}),
        ("anyone-key", "post_in_channel", {"channel": "~eng", "pattern": r"ENG-\d", "author": None}),
    ]
    _, said = _play(
        world,
        checks,
        [
            lambda: post(world, 2, "deploy ENG-3"),
            lambda: post(world, 2, "no news", author="bob"),
            lambda: post(world, 2, "deploy ENG-4 too"),
            lambda: post(world, 2, "deploy once more"),
        ],
    )
    assert said == [
        {"two-deploys": 0.5, "anyone-key": 1.0},
        {"anyone-key": "LATER"},  # bob's post: only the anyone check's, and no match
        {"two-deploys": 1.0, "anyone-key": "LATER"},  # the second match (a key past the first one: score stands)
        {"two-deploys": "LATER", "anyone-key": "LATER"},  # past min_count: the evidence is rebuilt when asked
    ]
    assert calls == [], "every new match of a mention-less check skipped the generic verdict pass"
