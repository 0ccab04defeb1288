"""The post paths of round nine, held to a full grade after every step (``_play`` of comms3's tests).

A post check's pattern is matched by its plan (``text_match._plan``): the search starts at the first of the
pattern's start texts in the post's lowered text, and a post holding none of its needles is not searched at
all. Both must give exactly the truth of ``re.search`` (case-insensitive), including where a start text occurs
first as part of a longer word, where a lookbehind or ``\\b`` reads the character before the start, and on text
whose lowercase form could hide a match (``ſ``, ``ı``, ``İ``). Each path was broken once on purpose (the search
started one character late; the lowered form used for a text that can hide a match): each break failed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from graders.base import ChangeRow, GradingContext
from graders.comms_log import post_log
from graders.text_match import _lowered, _plan, planned_hit
from tests.graders.test_checks import post
from tests.graders.test_progress_comms3 import _play
from worlds.schema import Channel, ChannelMember

_PATTERNS = [
    r"(?s)\b(approved|granted)\b",
    r"(?s)\brule\s*#?3\b",
    r"\bSEA\-2\b",
    r"(?i)(?<![\w-])Guest\ workspaces(?![\w-])",
    r"(?i)Postmortem\ 2026\-03\-01\ login",
    r"\d+ rules",  # no start text: its needle `` rules`` only
    r"(a|b)?c",  # neither: searched as it is
    r"^Rules\b",
]
_TEXTS = [
    "",
    "approved",
    "disapproved, then approved",  # the first start text is inside a word: the match is the second
    "disapproved",
    "Request GRANTED under Rule #3.",
    "rule 33 applies",
    "rule\n3",
    "SEA-21 and SEA-2",
    "SEA-21",
    "xSEA-2",
    "-Guest workspaces",  # the lookbehind reads the character before the start text
    "moved Guest workspaces to Q3",
    "Guest workspaces-x",
    "Postmortem 2026-03-01 LOGIN service",
    "12 rules",
    "12 ruleſ",  # ſ matches s case-insensitively, and lowercases to itself
    "RULEſ apply",
    "c",
    "rules at the start",
    "appRoved — with an em dash",  # not ASCII, but nothing in it can hide a match
    "ruleſ",
    "appİoved",  # İ lowers to two characters: the lowered form would shift every position after it
    "Grantedı",
]


def test_a_post_pattern_matched_by_its_plan_is_exactly_the_regex_search():
    for pattern in _PATTERNS:
        plan = _plan(pattern)
        for text in _TEXTS:
            want = re.search(pattern, text, re.IGNORECASE) is not None
            assert planned_hit(plan, text, _lowered(text)) is want, (pattern, text)
    assert _plan(_PATTERNS[2])[1] == ("sea-2",) and _plan(_PATTERNS[5])[1:] == (None, (" rules",))


def _say(world, *texts: str) -> Callable[[], None]:
    """A step posting each of ``texts`` in ~eng as carol (one post: ``_post_step``'s path; more: ``_post_steps``')."""

    def step() -> None:
        for text in texts:
            post(world, 2, text, author="carol")

    return step


def test_a_start_text_first_found_inside_a_word_still_finds_the_match_after_it_in_both_paths(world):
    checks = [
        ("sea", "post_in_channel", {"channel": "eng", "pattern": r"\bSEA\-2\b", "author": "carol", "min_count": 2}),
        (
            "ok",
            "post_in_channel",
            {"channel": "eng", "pattern": r"\b(approved|granted)\b", "author": "carol", "min_count": 2},
        ),
        ("rules", "post_in_channel", {"channel": "eng", "pattern": r"\d+ rules", "author": "carol", "min_count": 2}),
    ]
    steps = [
        _say(world, "SEA-21 is disapproved"),  # neither matches: a start text inside a longer word
        _say(world, "SEA-21, then SEA-2: disapproved, then GRANTED"),  # both match after their first start text
        _say(world, "4 ruleſ", "ruleſ 5"),  # several posts: the needle case, ſ read as s by the regex
        _say(world, "SEA-2 shipped"),  # one post: the match is at the first start text
        _say(world, "5 RULEſ"),  # one post whose lowered form could hide the match: searched as it is
        _say(world, "GRANTED, not approvedx"),  # the second start text comes first: the search starts there
    ]
    _, said = _play(world, checks, steps)
    assert said == [
        {"sea": "LATER", "ok": "LATER", "rules": "LATER"},
        {"sea": 0.5, "ok": 0.5, "rules": "LATER"},
        {"sea": "LATER", "ok": "LATER", "rules": 0.5},
        {"sea": 1.0, "ok": "LATER", "rules": "LATER"},
        {"sea": "LATER", "ok": "LATER", "rules": 1.0},
        {"sea": "LATER", "ok": 1.0, "rules": "LATER"},
    ]


def test_a_membership_step_after_a_channel_took_the_name_reads_the_index_built_again(world):
    checks = [("carol-eng", "channel_member", {"channel": "eng", "username": "carol"})]

    def rename() -> None:  # ~eng becomes ~eng-old and a new channel takes the name: the check's pair moves
        old = world.session.get(Channel, 2)
        old.name = "eng-old"
        world.session.flush()
        world.add(Channel(team_id=1, name="eng", display_name="Eng", type="O", created_at=world.clock.now()))

    def join(who: int) -> Callable[[], None]:
        def step() -> None:
            new = world.session.execute(select(Channel.id).where(Channel.name == "eng")).scalar_one()
            world.add(ChannelMember(channel_id=new, employee_id=who, joined_at=world.clock.now()))

        return step

    # a step of membership rows alone reads the index it kept only while no channel or employee row came since
    _, said = _play(world, checks, [rename, join(4), join(3)])
    assert said[1] == {} and said[2] == {"carol-eng": 1.0}, said


def test_a_membership_moved_to_the_checks_channel_is_not_read_as_a_membership_read_again(world):
    checks = [("carol-eng", "channel_member", {"channel": "eng", "username": "carol"})]
    joined: list[ChannelMember] = []

    def join_general() -> None:
        joined.append(ChannelMember(channel_id=1, employee_id=3, joined_at=world.clock.now()))
        world.add(joined[0])

    def move_to_eng() -> None:  # an update of the membership's channel: carol is in ~eng now
        joined[0].channel_id = 2

    _, said = _play(world, checks, [join_general, move_to_eng])
    assert said[0] == {} and "carol-eng" in said[1], said


def test_the_post_fold_turns_off_for_a_post_it_cannot_read_as_the_query_does(world):
    full = {"author_id": 1, "message": "hi", "deleted_at": None, "channel_id": 2}

    def posted(*rows: tuple[int, dict[str, Any]]) -> GradingContext:
        ctx = GradingContext(session=world.session, trace=[], actor_id=1)
        ctx.extend([ChangeRow(n, "posts", (key,), "insert", image) for n, (key, image) in enumerate(rows, 1)])
        return ctx

    log = post_log(posted((10, full), (11, full)))
    assert log is not None and [(p.id, p.channel) for p in log.posts] == [(10, "eng"), (11, "eng")]
    later = posted((10, full))
    assert post_log(later) is not None
    later.extend([ChangeRow(2, "posts", (5,), "insert", full)])  # an id below the last fold's: the query's order
    assert post_log(later) is None
    assert post_log(posted((10, {**full, "deleted_at": "2026-03-02T10:00:00"}))) is None  # a deleted post
    assert post_log(posted((10, {k: v for k, v in full.items() if k != "message"}))) is None  # a column missing


def test_a_plain_text_pattern_is_matched_by_finding_its_text_in_the_lowered_post(world):
    checks = [("kit", "post_in_channel", {"channel": "eng", "pattern": r"Kit\ 2", "author": "carol", "min_count": 3})]
    steps = [
        _say(world, "the KIT 2 is here"),  # found in the lowered post: the match, no regex run
        _say(world, "a \u212ait 2 too"),  # the Kelvin sign lowers to k in place: the regex matches it as well
        _say(world, "kit 3, kit-2"),  # not found: no match
        _say(world, "ſ kit 2"),  # ſ could hide a match: searched as it is
    ]
    _, said = _play(world, checks, steps)
    assert said == [{"kit": 1 / 3}, {"kit": 2 / 3}, {"kit": "LATER"}, {"kit": 1.0}]
