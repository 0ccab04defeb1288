"""The rubric store keeps every version immutable, with each check's origin; ids resolve to exact versions."""

import json

import pytest

from graders import load_rubric
from graders.errors import RubricError, RubricNotFound
from graders.store import Origin, RubricStore


def rubric(version=1, extra=False):
    checks = [
        {
            "id": "fields",
            "description": "fields set",
            "fn": "ticket_fields_equal",
            "params": {"expected": {"ENG-1": {"priority": "high"}}},
        },
    ]
    if extra:
        checks.append(
            {
                "id": "no-spam",
                "description": "at most 3 posts",
                "fn": "change_count_at_most",
                "params": {"table": "posts", "n": 3},
            }
        )
    return load_rubric({"id": "triage", "version": version, "description": "Triage.", "checks": checks})


def test_store__versions_are_immutable_files_with_parents_and_origins(tmp_path):
    store = RubricStore(tmp_path / "rubrics")
    first = store.put(rubric(1))
    second = store.put(
        rubric(1).evolve(provenance="spam seen in group 4", checks=list(rubric(1, extra=True).checks)),
        origins={"no-spam": Origin(by="buffer:negative:mass_post", rollouts=("t1", "t2"), added_in=2, why="spam")},
        note="buffer update 1",
    )
    assert [s.rubric.version for s in store.log("triage")] == [1, 2]
    assert second.parent == first.rubric.fingerprint and first.parent is None
    assert store.get("triage").origins["no-spam"].by == "buffer:negative:mass_post"
    assert store.get("triage", 1).origins["fields"].by == "family"
    assert store.resolve("triage@1") == first.rubric and store.resolve("triage") == second.rubric
    files = sorted(p.name for p in (tmp_path / "rubrics/triage").iterdir())
    assert files == [f"v0001-{first.rubric.fingerprint[:16]}.json", f"v0002-{second.rubric.fingerprint[:16]}.json"]
    assert store.resolve(tmp_path / "rubrics/triage" / files[0]) == first.rubric  # a stored file is a rubric too
    assert store.put(rubric(1)) == first  # the same content is the same version, not a new one
    lines = store.diff("triage", 1, 2).lines()
    assert (
        lines[0] == "triage@1 -> triage@2"
        and lines[1].startswith("+ no-spam (change_count_at_most")
        and "spam" in lines[1]
    )


def test_store__refusals_name_what_exists(tmp_path):
    store = RubricStore(tmp_path)
    store.put(rubric(1))
    with pytest.raises(RubricError, match="expected version 2"):
        store.put(rubric(5, extra=True))
    with pytest.raises(RubricNotFound, match="stored versions: 1"):
        store.get("triage", 9)
    with pytest.raises(RubricNotFound, match=r"stored: triage"):
        store.resolve("nope@1")
    with pytest.raises(RubricNotFound, match="ID\\[@VERSION\\]"):
        store.resolve("Not A Ref")
    path = next((tmp_path / "triage").iterdir())
    data = json.loads(path.read_text())
    data["rubric"]["checks"][0]["weight"] = 7
    path.write_text(json.dumps(data))
    with pytest.raises(RubricError, match="does not match its recorded fingerprint"):
        store.log("triage")
