"""The share checks' grant path of round eight (share9), held to a full grade after every step (``_play``).

A step that only inserts shares is settled from a plan kept for the episode (``share_step.share_checks``): the
checks on the granted document (``doc_shared_with``: of the grantee only, decided by ``_held_verdict`` with no
lookup of the document or the person), ``LATER`` for what moved only evidence, nothing for the rest. Each test
plays grants and the steps that must leave the plan (a document created, an employee renamed), asserts which
checks each step answered and how, and counts the lookups a grant must no longer make; a wrong routing fails
the comparison with the full grade, a fall back to the old path fails the count.
"""

from __future__ import annotations

from typing import Any

import graders.checks_docs as checks_docs
from tests.graders.conftest import employee
from tests.graders.test_progress_comms3 import _play
from tests.graders.test_progress_mail8 import _in_progress
from tests.graders.test_progress_pdocs import _doc
from worlds.schema import DocFolder, DocumentShare

A, B, NEW, GONE = "Shared/Req/A.odt", "Shared/Req/B.odt", "Shared/Req/New.odt", "Shared/Req/Gone.odt"
CHECKS: list[tuple[str, str, dict[str, Any]]] = [
    ("a-bob", "doc_shared_with", {"document": A, "username": "bob"}),
    ("a-carol", "doc_shared_with", {"document": A, "username": "carol", "permission": "edit"}),
    ("a-alice", "doc_shared_with", {"document": A, "username": "alice"}),  # the owner: no grant moves it
    ("b-bob", "doc_shared_with", {"document": B, "username": "bob"}),
    ("gone-bob", "doc_shared_with", {"document": GONE, "username": "bob"}),  # no such document
    ("new-dave", "doc_shared_with", {"document": NEW, "username": "dave"}),  # created on the way
    ("a-only", "doc_shared_only_with", {"document": A, "usernames": ["bob"]}),
    ("b-only", "doc_shared_only_with", {"document": B, "usernames": ["bob"]}),
    ("a-kept", "doc_not_shared", {"document": A}),
    ("b-kept", "doc_not_shared", {"document": B}),
    ("gone-kept", "doc_not_shared", {"document": GONE}),
]


def _two_docs(world: Any) -> tuple[dict[str, Any], Any]:
    """Documents A and B in Shared/Req, owned by alice, and the Req folder; the episode starts after them."""
    shared = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(shared)
    req = DocFolder(parent_id=shared.id, name="Req", owner_id=1, created_at=world.clock.now())
    world.add(req)
    docs = {"A": _doc(req.id, "A.odt", [[1, "A"]]), "B": _doc(req.id, "B.odt", [[1, "B"]])}
    world.add(*docs.values())
    world.start_seq = world.log_count()
    return docs, req


def test_a_grant_asks_only_its_documents_checks_from_the_plan(world, monkeypatch):
    docs, req = _two_docs(world)
    looked: list[str] = []
    real = checks_docs._employee

    def spy(ctx, username):
        if _in_progress():
            looked.append(username)
        return real(ctx, username)

    monkeypatch.setattr(checks_docs, "_employee", spy)
    counts: list[int] = []

    def grant(doc: str, who: str, permission: str = "view") -> None:
        looked.clear()
        world.add(
            DocumentShare(document_id=docs[doc].id, employee_id=employee(world.session, who).id, permission=permission)
        )

    def create() -> None:
        counts.append(len(looked))
        docs["New"] = _doc(req.id, "New.odt", [[1, "New"]])
        world.add(docs["New"])

    _, said = _play(
        world,
        CHECKS,
        [
            lambda: grant("A", "bob"),
            lambda: counts.append(len(looked)) or grant("A", "carol", "comment"),
            lambda: counts.append(len(looked)) or grant("B", "dave"),
            create,  # a document row: the old path, and the plan is built again at the next grant
            lambda: grant("New", "dave"),
            lambda: setattr(employee(world.session, "dave"), "username", "david"),  # an employee: the old path
            lambda: grant("B", "bob", "edit"),
            lambda: grant("A", "alice"),  # to the owner: her check says she owns it, whatever is shared
        ],
    )
    assert said[0] == {"a-bob": 1.0, "a-only": "LATER", "a-kept": 0.0, "b-kept": "LATER"}, "owner, B, GONE left out"
    assert said[1] == {"a-carol": 0.0, "a-only": 0.0, "a-kept": 0.0, "b-kept": "LATER"}, "comment is not edit"
    assert said[2] == {"b-only": 0.0, "a-kept": "LATER", "b-kept": 0.0}, "dave is checked on B by nobody"
    assert {"new-dave", "gone-bob", "a-bob"} <= set(said[3]), "a new document may move any path: all asked"
    assert said[4] == {"new-dave": 1.0, "a-kept": "LATER", "b-kept": "LATER"}, "the new document is in the plan"
    assert said[6] == {"b-bob": 1.0, "b-only": "LATER", "a-kept": "LATER", "b-kept": 0.0}
    assert said[7] == {"a-only": 0.0, "a-kept": 0.0, "b-kept": "LATER"}, "the owner's check is left out"
    assert counts == [0, 0, 0], "a grant looks up neither the person nor (through _employee) the plan again"
