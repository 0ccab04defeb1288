"""``WorkHours.last_open``: the generator's fallback for an action that must exist before history ends."""

from datetime import UTC, datetime

from worlds.hours import WorkHours


def test_last_open__inside_hours_is_itself_and_after_hours_is_the_end_of_the_day() -> None:
    berlin = WorkHours("Europe/Berlin", 540, 1020, "1111100")
    inside = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)  # Wednesday 11:00 in Berlin
    assert berlin.last_open(inside) == inside
    evening = datetime(2026, 3, 4, 20, 0, tzinfo=UTC)  # 21:00 in Berlin, work ended at 17:00 (16:00 UTC)
    assert berlin.last_open(evening) == datetime(2026, 3, 4, 15, 59, 59, tzinfo=UTC)


def test_last_open__a_weekend_goes_back_to_friday() -> None:
    berlin = WorkHours("Europe/Berlin", 540, 1020, "1111100")
    sunday = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)
    assert berlin.last_open(sunday) == datetime(2026, 3, 6, 15, 59, 59, tzinfo=UTC)
    assert berlin.is_open(berlin.last_open(sunday))
