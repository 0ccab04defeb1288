"""The post paths of round 9, held to a full grade after every step (``_play`` of comms3's tests).

A step that adds one post is routed by ``_post_step`` straight to the checks of its channel and author
(``_PostIndex.entries``), a mention check reading the step's mention rows as the set of people they name; a
step of several posts reads them as (post, person) pairs (``_post_steps``). A check whose new match is past the
count it needs answers ``LATER``: its score stands and its evidence is rebuilt when the results are asked for.
A ``channel_member`` check whose membership a step moved gets its score alone too. Every answer below is also
held to a full grade by ``_play`` (each path was broken once on purpose: each break failed a test here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.comms_log import post_log
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play
from worlds.schema import ChannelMember, Mention

_TOLD = [
    ("bob-told", "post_in_channel", {"channel": "eng", "pattern": "ENG-3", "mention": "bob"}),
    ("carol-told", "post_in_channel", {"channel": "eng", "pattern": "ENG-3", "mention": "carol"}),
]


def _posts(world, *said: tuple[str, tuple[int, ...]]) -> Callable[[], None]:
    """A step posting each (text, ids of the people its mention rows name) in ~eng, in one flush."""

    def step() -> None:
        for text, named in said:
            p = post(world, 2, text)
            world.session.flush()
            for who in named:
                world.add(Mention(post_id=p.id, employee_id=who))

    return step


def test_one_post_is_decided_by_the_people_its_own_mention_rows_name(world):
    _, said = _play(
        world,
        list(_TOLD),
        [
            _posts(world, ("ENG-3 is ready", (3,))),  # a row for carol only: bob's check does not pass
            _posts(world, ("ENG-3 shipped", (2, 4))),  # rows for bob and dave: bob's passes now
            _posts(world, ("ENG-3 done", (2,))),  # bob again, past the one post his check needs
        ],
    )
    assert said == [
        {"carol-told": 1.0, "bob-told": "LATER"},
        {"bob-told": 1.0, "carol-told": "LATER"},
        {"bob-told": "LATER", "carol-told": "LATER"},
    ]


def test_one_post_naming_the_person_in_its_text_alone_passes_a_mention_check(world):
    _, said = _play(world, list(_TOLD), [_posts(world, ("ENG-3, @bob", ())), _posts(world, ("ENG-3 @carol", (2,)))])
    assert said == [{"bob-told": 1.0, "carol-told": "LATER"}, {"carol-told": 1.0, "bob-told": "LATER"}]


def test_several_posts_in_a_step_read_their_mention_rows_by_post(world):
    _, said = _play(
        world,
        list(_TOLD),
        [
            # the row naming bob belongs to the post that does not match: bob's check must not pass
            _posts(world, ("ENG-3 is ready", (3,)), ("lunch?", (2,))),
            _posts(world, ("nothing yet", ()), ("ENG-3 for real", (2,))),
        ],
    )
    assert said == [{"carol-told": 1.0, "bob-told": "LATER"}, {"bob-told": 1.0, "carol-told": "LATER"}]


def test_a_match_past_min_count_answers_later_in_both_paths(world):
    checks = [("two", "post_in_channel", {"channel": "eng", "pattern": "deploy", "min_count": 2})]
    steps: list[Callable[[], Any]] = [
        _posts(world, ("deploy one", ())),
        _posts(world, ("deploy two", ()), ("deploy three", ())),  # reached within the step: the score moves
        _posts(world, ("deploy four", ())),  # past it: one post
        _posts(world, ("deploy five", ()), ("deploy six", ())),  # past it: several posts
    ]
    _, said = _play(world, checks, steps)
    assert said == [{"two": 0.5}, {"two": 1.0}, {"two": "LATER"}, {"two": "LATER"}]


def test_posts_in_channels_the_fold_does_not_know_are_named_by_one_lookup_in_the_same_pass(world):
    checks = [
        ("general-hi", "post_in_channel", {"channel": "general", "pattern": "hello"}),
        ("bob-dm", "post_in_channel", {"channel": "@bob", "pattern": "ENG-4"}),
    ]

    def unknown_then_known() -> None:
        post(world, 2, "hello eng")  # ~eng: no check watches it, its id is looked up with the others
        post(world, 1, "hello all")  # ~general (id 1) and the direct channel (id 3): named by the same lookup
        post(world, 3, "ENG-4 is yours")

    progress, said = _play(world, checks, [unknown_then_known, lambda: post(world, 2, "bye")])
    assert said == [{"general-hi": 1.0, "bob-dm": 1.0}, {}]
    log = post_log(progress.ctx)
    assert log is not None, "every post was folded: the checks never fell back to the query"
    assert [p.channel for p in log.posts] == ["eng", "general", "1__2", "eng"]


def test_a_membership_the_step_moved_gives_the_score_alone_and_its_evidence_when_asked(world):
    checks = [
        ("carol-in", "channel_member", {"channel": "eng", "username": "carol"}),
        ("carol-out", "channel_member", {"channel": "~eng", "username": "carol", "member": False}),
        ("dave-general", "channel_member", {"channel": "general", "username": "dave"}),
    ]

    def join(channel: int, who: int) -> Callable[[], None]:
        return lambda: world.add(ChannelMember(channel_id=channel, employee_id=who, joined_at=world.clock.now()))

    # ``_play`` holds the results (the evidence the checks build when asked) to a full grade after each step
    _, said = _play(world, checks, [join(2, 3), join(2, 4)])
    assert said == [{"carol-in": 1.0, "carol-out": 0.0}, {}], "dave joined eng: no check of his names it"
    assert all(type(v) is float for v in said[0].values()), "the scores alone, no evidence text"


def test_a_matching_post_of_its_own_fails_a_no_post_check_with_the_score_alone(world):
    checks = [("no-leak", "no_post_in_channel", {"channel": "eng", "pattern": "password"})]
    steps: list[Callable[[], Any]] = [
        _posts(world, ("lunch?", ())),  # its own, no match: only the count its evidence quotes
        _posts(world, ("the password is hunter2", ())),  # fails: 0 alone, the text when asked
        _posts(world, ("password again", ())),  # fails still: the same score, lagging only
    ]
    _, said = _play(world, checks, steps)
    assert said == [{"no-leak": "LATER"}, {"no-leak": 0.0}, {"no-leak": 0.0}]
