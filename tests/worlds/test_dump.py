import base64
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select, text

from worlds.dump import WorldDiff, canonical_dump, diff, state_hash
from worlds.schema import Blob, Employee, Event
from worlds.spec import WorldSpec
from worlds.store import WorldStore

SPEC = WorldSpec(seed=5, employees=12, history_days=10)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    world = WorldStore(tmp_path_factory.mktemp("store")).base(SPEC)
    yield world
    world.close()


@pytest.fixture
def fork(base):
    world = base.fork()
    yield world
    world.close()


def test_dump__lines_are_canonical_and_ordered(base):
    lines = base.dump()
    tables = [line.split("\t", 1)[0] for line in lines]
    assert tables == sorted(tables)
    for line in lines[:2000]:
        name, payload = line.split("\t", 1)
        row = json.loads(payload)
        assert payload == json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    meta = [json.loads(line.split("\t", 1)[1]) for line in lines if line.startswith("world_meta\t")]
    assert [m["key"] for m in meta] == ["complete", "generator_version", "schema_version", "spec", "spec_hash"]
    ids = [json.loads(line.split("\t", 1)[1])["id"] for line in lines if line.startswith("employees\t")]
    assert ids == sorted(ids) and len(ids) == SPEC.employees


def test_dump__value_spellings(fork):
    with fork.session() as s:
        emp = s.scalars(select(Employee).order_by(Employee.id).limit(1)).one()
        emp_id = emp.id
        event = s.scalars(select(Event).order_by(Event.id).limit(1)).one()
        event_id = event.id
        blob = s.scalars(select(Blob).order_by(Blob.sha256).limit(1)).first()
    rows = {}
    for line in fork.dump():
        name, payload = line.split("\t", 1)
        rows.setdefault(name, []).append(payload)
    emp_line = next(p for p in rows["employees"] if json.loads(p)["id"] == emp_id)
    assert '"active":true' in emp_line or '"active":false' in emp_line
    event_row = json.loads(next(p for p in rows["events"] if json.loads(p)["id"] == event_id))
    assert event_row["start_at"].endswith("+00:00")
    assert isinstance(event_row["cancelled"], bool)
    if blob is not None:
        blob_row = json.loads(rows["blobs"][0])
        assert base64.b64decode(blob_row["data"]) == blob.data


def test_state_hash__is_sha256_of_the_dump(base):
    expected = hashlib.sha256("".join(line + "\n" for line in base.dump()).encode()).hexdigest()
    assert base.state_hash() == expected
    with base.connect() as conn:
        assert state_hash(conn) == expected
        assert sum(1 for _ in canonical_dump(conn)) == len(base.dump())


def test_diff__identical_worlds(base, fork):
    with base.connect() as a, fork.connect() as b:
        result = diff(a, b)
    assert result.identical and result == WorldDiff(tables={})
    assert result.__rich__() == "identical"


def test_diff__reports_changed_added_and_removed_rows(base, fork):
    with fork.connect() as conn:
        conn.execute(text("UPDATE employees SET title = 'Chief Diff Officer' WHERE id = 3"))
        conn.execute(text("DELETE FROM reactions WHERE id = (SELECT min(id) FROM reactions)"))
        conn.execute(text("INSERT INTO world_meta (key, value) VALUES ('zz_note', 'x')"))
        conn.commit()
    with base.connect() as conn:
        removed = conn.execute(text("SELECT min(id) FROM reactions")).scalar_one()
    with base.connect() as a, fork.connect() as b:
        result = diff(a, b)
    assert list(result.tables) == ["employees", "reactions", "world_meta"]
    assert result.tables["employees"].changed == (3,)
    assert result.tables["reactions"].removed == (removed,)
    assert result.tables["world_meta"].added == ("zz_note",)
    assert result.summary()[0] == "employees: +0 -0 ~1 [3]"
    from rich.console import Console

    console = Console(width=100, record=True)
    console.print(result)
    assert "employees" in console.export_text()
    with base.connect() as a, fork.connect() as b:
        assert diff(b, a).tables["reactions"].added == (removed,)


@given(st.lists(st.tuples(st.integers(1, 12), st.text(max_size=20)), min_size=1, max_size=5))
def test_diff__names_exactly_the_edited_rows(base, edits):
    fork = base.fork()
    try:
        with fork.connect() as conn:
            for emp_id, title in edits:
                conn.execute(text("UPDATE employees SET title = :t WHERE id = :i"), {"t": title, "i": emp_id})
            conn.commit()
        with base.connect() as a:
            original = dict(a.execute(text("SELECT id, title FROM employees")).all())
            with fork.connect() as b:
                result = diff(a, b)
        final = dict(edits)
        expected = tuple(sorted(i for i, t in final.items() if t != original[i]))
        if expected:
            assert list(result.tables) == ["employees"]
            assert result.tables["employees"].changed == expected
        else:
            assert result.identical
    finally:
        fork.close()
