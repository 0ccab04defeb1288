"""The meeting checks' round-8 shortcuts give what a full grade gives, and are taken where the rows allow.

``event_exists``'s step decides the checks that differ only by their attendees (a kickoff's check for the whole
team and one per teammate) with one ``checks_comms._fits_all`` call: the new events, the organizer and which
events fit the title, window and room are read once, the invitees tested per check. Each test plays its steps
through ``test_progress_meet5._play``, which compares every verdict and the value with a full grade after every
step, and counts the grouped calls (else it could not fail when the grouping silently stops); a full grade runs
the same function one check at a time, so the evidence the two share is written out here.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from graders import checks_comms
from tests.graders.test_progress_meet import MEET
from tests.graders.test_progress_meet5 import _play
from tests.graders.test_progress_meet7 import _calendar, _progress
from worlds.rawsql import Sql

WINDOW = {
    "title_pattern": "Sprint 9 kickoff",
    "start_after": MEET.isoformat(),
    "start_before": (MEET + timedelta(days=1)).isoformat(),
}
KICKOFF = [
    ("team", "event_exists", {**WINDOW, "attendees": ["bob", "carol", "dave"]}),
    ("team-bob", "event_exists", {**WINDOW, "attendees": ["bob"]}),
    ("team-carol", "event_exists", {**WINDOW, "attendees": ["carol"]}),
    ("team-dave", "event_exists", {**WINDOW, "attendees": ["dave"]}),
    ("team-dave-twin", "event_exists", {**WINDOW, "attendees": ["dave"]}),
    ("with-me", "event_exists", {**WINDOW, "attendees": ["actor", "carol"]}),
    ("in-orca", "event_exists", {**WINDOW, "attendees": ["bob"], "room": "Orca"}),
    ("nobody", "event_exists", {**WINDOW, "attendees": ["zed"]}),
    ("retro", "event_exists", {"title_pattern": "Retro", "attendees": ["carol"]}),
]


def test_checks_alike_but_for_attendees_are_decided_together(world, monkeypatch):
    rubric, progress = _progress(world, KICKOFF)
    at = [""]
    calls: dict[str, list[int]] = {}  # step -> how many checks each grouped call decided (not the full grades)
    real = checks_comms._fits_all

    def fits_all(ctx: Any, *args: Any) -> Any:
        if at[0] != "full grade":
            calls.setdefault(at[0], []).append(len(args[-1]))
        return real(ctx, *args)

    monkeypatch.setattr(checks_comms, "_fits_all", fits_all)
    said, book = _calendar(Sql.of(world.session), world)

    def steps() -> Iterator[str]:
        yield "nothing yet"
        book("Sprint 9 kickoff", MEET, 2, 3)
        yield "the kickoff booked without dave"
        world.later()
        book("Sprint 9 kickoff", MEET + timedelta(days=3), 2, 3, 4)
        yield "a second kickoff, everyone, days late"
        world.later()
        book("Sprint 9 kickoff (take 3)", MEET + timedelta(hours=2), 2, 3, 4, room=1)
        yield "a third kickoff, everyone, in Orca"

    evidence = _play(world, rubric, steps(), progress, at)
    # the seven kickoff checks share a title, window, organizer and room: one call; Orca's apart, and the retro's
    # title matches no new event, so it waits (LATER, no call). Later bookings leave the passing checks alone
    # (a later event cannot move them) and decide the four failing ones together.
    assert calls["the kickoff booked without dave"] == [7, 1], calls
    assert calls["a second kickoff, everyone, days late"] == [4, 1], calls
    assert calls["a third kickoff, everyone, in Orca"] == [4, 1], calls
    head = "none of {} live events organised by actor fits /Sprint 9 kickoff/: "
    five = "#5 'Sprint 9 kickoff'"
    fits_five = f"event {five} at 2025-03-04T14:00:00+00:00 fits"
    first = evidence["the kickoff booked without dave"]
    assert first["team-bob"] == first["team-carol"] == first["with-me"] == fits_five, first
    assert first["team"] == first["team-dave"] == first["team-dave-twin"] == head.format(1) + f"{five}: missing dave"
    assert first["nobody"] == head.format(1) + f"{five}: missing zed", first
    assert first["in-orca"] == head.format(1) + f"{five}: room is None", first
    second = evidence["a second kickoff, everyone, days late"]
    late = "#6 'Sprint 9 kickoff': "
    assert second["team-bob"] == second["with-me"] == fits_five, second
    assert second["team"] == head.format(2) + f"{five}: missing dave; {late}starts 2025-03-07T14:00:00+00:00"
    assert second["team-dave-twin"] == second["team"], second
    assert (
        second["nobody"] == head.format(2) + f"{five}: missing zed; {late}missing zed, starts 2025-03-07T14:00:00+00:00"
    )
    assert (
        second["in-orca"]
        == head.format(2) + f"{five}: room is None; {late}starts 2025-03-07T14:00:00+00:00, room is None"
    )
    third = evidence["a third kickoff, everyone, in Orca"]
    fits_seven = "event #7 'Sprint 9 kickoff (take 3)' at 2025-03-04T16:00:00+00:00 fits"
    assert third["team"] == third["team-dave"] == third["team-dave-twin"] == third["in-orca"] == fits_seven, third
    assert third["team-carol"] == fits_five, third
    assert third["nobody"].endswith("; #7 'Sprint 9 kickoff (take 3)': missing zed"), third
