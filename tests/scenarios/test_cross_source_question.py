"""cross-source-question-v0 and its unanswerable variant: facts spread over a document, a chat thread and mail."""

from __future__ import annotations

import re

import pytest

from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import play_partial, verify
from sim.episode import Episode
from worlds.rawsql import Sql

FAMILY = "cross-source-question-v0"
IMPOSSIBLE = "cross-source-question-unanswerable-v0"


@pytest.fixture(scope="module")
def episode(store):
    with Episode(FAMILY, store=store) as ep:
        yield ep


@pytest.fixture(scope="module")
def impossible(store):
    with Episode(IMPOSSIBLE, store=store) as ep:
        yield ep


def _submit(ep: Episode, seed: int, difficulty: int, **override: str) -> tuple[set[str], float, bool]:
    """Submit the right answer with ``override`` (fact -> value) in it: (failed checks, score, verifier's word)."""
    prompt, info = ep.reset(seed=seed, options={"difficulty": difficulty})
    p = ep.instance.params
    facts = {**p["answer"], **override}
    lines = [f"{p['labels'][f]}: {'@' if f == 'approved-by' else ''}{facts[f]}" for f in p["labels"]]
    EpisodeEnv(ep, prompt, info).call("submit", summary="\n".join(lines))
    score = ep.grade()
    verdict = verify(ep)
    assert verdict is not None
    return {c.id for c in score.checks if not c.passed}, score.value, verdict.solved


def _sql(ep: Episode) -> Sql:
    return Sql.of(ep.tool_context.session)


def test_oracle_solves_every_difficulty_and_the_verifier_agrees(episode):
    for difficulty in range(4):
        assert run_agent(episode, "oracle", 1, {"difficulty": difficulty}).value == 1.0
        verdict = verify(episode)
        assert verdict is not None and verdict.solved, verdict
        asked = set(episode.instance.params["labels"])
        assert asked == {"vendor", "annual-price", "approved-by", "cost-centre"} | (
            {"starts-on"} if difficulty else set()
        )
    assert set(episode.instance.apps) == {"chat", "docs", "mail"}


def test_the_superseded_quote_loses_exactly_the_price(episode):
    episode.reset(seed=2, options={"difficulty": 1})
    vendor = episode.instance.params["answer"]["vendor"]
    bodies = _sql(episode).column(
        "SELECT m.body FROM mail_messages m JOIN mailboxes b ON b.id = m.sender_mailbox_id WHERE b.address LIKE ?"
        " ORDER BY m.sent_at, m.id",
        (f"%@{vendor.lower()}.example",),
    )
    first, latest = (int(re.search(r"EUR ([\d,]+)", str(b)).group(1).replace(",", "")) for b in bodies[:2])
    assert first != latest and str(latest) == episode.instance.params["answer"]["annual-price"]
    failed, score, solved = _submit(episode, 2, 1, **{"annual-price": str(first)})
    assert failed == {"answer-annual-price"} and score == 0.8 and not solved


def test_the_other_projects_pick_loses_the_vendor(episode):
    episode.reset(seed=3, options={"difficulty": 2})
    p = episode.instance.params
    other = _sql(episode).column(
        "SELECT message FROM posts WHERE message LIKE 'Approved: we go with % for %' ORDER BY id DESC"
    )
    theirs = re.match(r"Approved: we go with (\w+)", str(other[0])).group(1)
    assert theirs != p["answer"]["vendor"] and p["withdrawn"] not in (None, theirs)
    failed, _, solved = _submit(episode, 3, 2, vendor=theirs)
    assert failed == {"answer-vendor"} and not solved
    failed, _, _ = _submit(episode, 3, 2, vendor=p["withdrawn"])
    assert failed == {"answer-vendor"}


def test_listing_candidates_or_the_undiscounted_price_earns_nothing_for_that_fact(episode):
    episode.reset(seed=4, options={"difficulty": 3})
    p = episode.instance.params
    right = p["answer"]["vendor"]
    failed, _, _ = _submit(episode, 4, 3, vendor=f"{right}\nvendor: {p['withdrawn']}")
    assert failed == {"answer-vendor"}
    monthly = p["quotes"][right][0]
    assert int(p["answer"]["annual-price"]) == monthly * 12 * (100 - p["discount"]) // 100
    failed, _, solved = _submit(episode, 4, 3, **{"annual-price": str(monthly * 12)})
    assert failed == {"answer-annual-price"} and not solved


def test_partials_lose_the_facts_their_mistake_hides(episode):
    lost = {}
    for agent in ("partial-first-word", "partial-no-docs"):
        score = play_partial(episode, FAMILY, agent, 5, {"difficulty": 3})
        lost[agent] = {c.id for c in score.checks if not c.passed}
    assert {"answer-vendor", "answer-approved-by", "answer-annual-price"} <= lost["partial-first-word"]
    assert "answer-cost-centre" not in lost["partial-first-word"]
    assert lost["partial-no-docs"] == {"answer-cost-centre", "answer-annual-price"}


def test_unanswerable_a_stated_price_scores_nothing(impossible):
    for difficulty in (1, 3):
        assert run_agent(impossible, "oracle", 0, {"difficulty": difficulty}).value == 1.0
        verdict = verify(impossible)
        assert verdict is not None and verdict.solved, verdict
    prompt, info = impossible.reset(seed=0, options={"difficulty": 2})
    p = impossible.instance.params
    vendor = p["answer"]["vendor"]
    assert vendor not in p["quotes"] and len(p["quotes"]) == 1  # the other vendor quoted, the picked one did not
    other_price = next(iter(p["quotes"].values()))[0]
    why = f"vendor: {vendor}\n{vendor} has not answered our quote request yet, so the price is not known."
    for summary, solved in ((why, True), (f"{why}\nannual price: {other_price}", False)):
        impossible.reset(seed=0, options={"difficulty": 2})
        EpisodeEnv(impossible, prompt, info).call("submit", summary=summary)
        score = impossible.grade()
        verdict = verify(impossible)
        assert verdict is not None and verdict.solved is solved and score.value == (1.0 if solved else 0.0), summary
    assert play_partial(impossible, IMPOSSIBLE, "partial-claims-success", 0, {"difficulty": 2}).value == 0.0
