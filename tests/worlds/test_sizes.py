"""Every headcount the spec allows generates a valid world (issue 12 item 5).

Why: ``world new --employees 1200`` once failed on a duplicate channel name because project keys ran past
``Z`` into punctuation and lowercase letters as teams multiplied, and a one-person company got a second person
(the head of its only department). Sizes here are drawn across 1..3,000 with short histories so the test stays
fast; the 20,000-employee world is generated in ``bench/worlds.py``.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from worlds.check import check_world
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import MAX_EMPLOYEES, MIN_EMPLOYEES, WorldSpec

SIZES = st.one_of(st.integers(MIN_EMPLOYEES, 12), st.integers(13, 400), st.integers(401, 3_000))


def _generated(seed: int, employees: int, days: int) -> dict[str, list[dict[str, object]]]:
    return generate(WorldSpec(seed=seed, employees=employees, history_days=days))


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32), employees=SIZES, days=st.integers(0, 3))
@example(seed=7, employees=1, days=2)
@example(seed=7, employees=2, days=2)
@example(seed=7, employees=3, days=2)
@example(seed=7, employees=1_200, days=1)
def test_generate__any_headcount_gives_a_valid_world_of_that_size(seed: int, employees: int, days: int) -> None:
    rows = _generated(seed, employees, days)
    assert len(rows["employees"]) == employees
    assert sum(1 for e in rows["employees"] if e["manager_id"] is None) == 1
    keys = [str(p["key"]) for p in rows.get("projects", [])]
    assert all(re.fullmatch(r"[A-Z]{2,10}", k) for k in keys), [k for k in keys if not re.fullmatch("[A-Z]+", k)]
    assert len(set(keys)) == len(keys)
    with load_in_memory(rows).connect() as conn:  # loading enforces every UNIQUE constraint
        assert check_world(conn) == []


def test_generate__one_person_company_is_its_ceo_heading_one_department() -> None:
    rows = _generated(3, 1, 5)
    (ceo,) = rows["employees"]
    assert ceo["manager_id"] is None and ceo["title"] == "Chief Executive Officer"
    assert [d["head_id"] for d in rows["departments"]] == [ceo["id"]]
    assert not rows.get("teams") and not rows.get("tickets")


def test_spec__accepts_the_whole_headcount_range() -> None:
    assert WorldSpec.parse(seed=0, employees=1).employees == 1
    assert WorldSpec.parse(seed=0, employees=MAX_EMPLOYEES).employees == MAX_EMPLOYEES
