"""history-redo-v0, history-followup-v0 and the miner over all three kinds (issue 13 item 3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scenarios import check_scenario
from scenarios.splits import source_split
from sim.agents import EpisodeEnv, run_agent
from sim.calibrate import PARTIALS, calibrate, play_partial
from sim.episode import Episode
from sim.mine import mine
from worlds.rawsql import Sql
from worlds.spec import WorldSpec

WORLD = {"world_seed": 0, "employees": 100, "history_days": 30}


def test_both_families_honour_the_contract(store):
    world = store.base(WorldSpec(seed=2, employees=40, history_days=30))
    try:
        for family in ("history-redo-v0", "history-followup-v0"):
            check_scenario(family, world, seeds=(0, 1))
    finally:
        world.close()


def test_redo_cuts_the_answer_and_its_thread_from_the_world(store):
    with Episode("history-redo-v0", store=store) as episode:
        episode.reset(seed=1, options={**WORLD, "difficulty": 0})
        prov = episode.instance.params["provenance"]
        sql = Sql.of(episode.tool_context.session)
        left = sql.column("SELECT id FROM mail_messages WHERE thread_id = ? ORDER BY id", (prov["thread"],))
        dangling = sql.scalar(
            "SELECT count(*) FROM mail_recipients r LEFT JOIN mail_messages m ON m.id = r.message_id WHERE m.id IS NULL"
        )
    assert left == [prov["trigger"]] and prov["cut"] and dangling == 0


def test_redo_a_wrong_status_loses_exactly_the_status_check(store):
    with Episode("history-redo-v0", store=store) as episode:
        prompt, info = episode.reset(seed=2, options={**WORLD, "difficulty": 0})
        p = episode.instance.params
        wrong = "blocked" if p["facts"]["status"] != "blocked" else "todo"
        env = EpisodeEnv(episode, prompt, info)
        inbox = env.call("mail_list_messages", folder="Inbox", limit=100)["messages"]
        trigger = next(m for m in inbox if m["id"] == p["provenance"]["trigger"])
        env.call("mail_reply", message_id=trigger["id"], body=f"{p['key']} is {wrong}.")
        env.call("submit", summary="answered")
        checks = {c.id: c.score for c in episode.grade().checks}
    assert checks["states-status"] == 0.0 and checks["names-key"] == 1.0 and checks["replied-in-thread"] == 1.0


def test_redo_customer_reply_states_the_state_and_plain_words_lose_only_the_state(store):
    """A customer is told where their ticket stands and who holds it; words and names lose the state checks only."""
    lost: set[str] = set()
    with Episode("history-redo-v0", store=store) as episode:
        for seed in range(4):
            episode.reset(seed=seed, options={"difficulty": 2})
            assert episode.instance.params["facts"].keys() == {"status", "assignee"}
            assert episode.instance.params["linked"] is None
            score = play_partial(episode, "history-redo-v0", "partial-plain-words", seed, {"difficulty": 2})
            failed = {c.id for c in score.checks if not c.passed}
            assert failed <= {"states-status", "only-status", "names-assignee"}, seed
            lost |= failed
            score = play_partial(episode, "history-redo-v0", "partial-title-not-key", seed, {"difficulty": 2})
            assert {c.id for c in score.checks if not c.passed} == {"names-key", "only-key"}, seed
    assert "states-status" in lost, "some customer's ticket is in_progress, in_review or wont_do"
    assert "names-assignee" in lost, "some customer's ticket has an assignee (an unassigned one has no name to lose)"


def test_redo_difficulty_3_adds_the_ticket_the_work_moved_on_to(store):
    """At 3 the asked-about ticket is linked to one in progress, named in its latest comment; the answer must
    add that ticket, and each partial agent's mistake costs it there too: a title for its key, its state as filed
    or in words. The same case at 2 asks nothing of it, so every partial agent scores strictly less at 3.
    """
    with Episode("history-redo-v0", store=store) as episode:
        for seed in range(3):
            episode.reset(seed=seed, options={"difficulty": 3})
            p = episode.instance.params
            linked = p["linked"]
            sql = Sql.of(episode.tool_context.session)
            link = sql.one(
                "SELECT l.kind FROM ticket_links l JOIN tickets a ON a.id = l.source_id JOIN tickets b"
                " ON b.id = l.target_id WHERE (a.key = ? AND b.key = ?) OR (a.key = ? AND b.key = ?)",
                (p["key"], linked["key"], linked["key"], p["key"]),
            )
            latest = sql.scalar(
                "SELECT c.body FROM ticket_comments c JOIN tickets t ON t.id = c.ticket_id WHERE t.key = ?"
                " ORDER BY c.created_at DESC, c.id DESC LIMIT 1",
                (p["key"],),
            )
            assert link == (linked["kind"],) and linked["key"] in latest, (seed, link, latest)
            assert linked["status"] in ("in_progress", "in_review") and linked["assignee"]
            assert run_agent(episode, "oracle", seed, {"difficulty": 3}).value == 1.0
            for name in PARTIALS["history-redo-v0"]:
                at2 = play_partial(episode, "history-redo-v0", name, seed, {"difficulty": 2})
                at3 = play_partial(episode, "history-redo-v0", name, seed, {"difficulty": 3})
                lost = {c.id for c in at3.checks if not c.passed}
                assert lost & {"names-linked-key", "states-linked-status", "names-linked-assignee"}, (seed, name)
                if name != "partial-title-not-key":  # it loses 3 of 8 checks at 3, 2 of 5 at 2
                    assert 0.0 < at3.value < at2.value, (seed, name, at2.value, at3.value)


def test_followup_reply_outside_the_thread_earns_nothing(store):
    with Episode("history-followup-v0", store=store) as episode:
        prompt, info = episode.reset(seed=0, options={**WORLD, "difficulty": 1})
        p = episode.instance.params
        assert p["kind"] == "status-question"
        env = EpisodeEnv(episode, prompt, info)
        env.call("chat_post", channel=p["provenance"]["channel"], message=f"{p['key']} is {p['status']}.")
        env.call("submit", summary="answered")
        score = episode.grade()
    assert score.value == 0.0 and score.gated


def test_followup_plain_words_never_mention_the_reviewer_asker_and_miss_the_tracker_status(store):
    """Names instead of @usernames lose the mention of a review's asker; a status in words loses the status."""
    lost: dict[str, set[str]] = {}
    with Episode("history-followup-v0", store=store) as episode:
        for seed in range(6):
            for difficulty in (2, 3):
                score = play_partial(
                    episode, "history-followup-v0", "partial-plain-words", seed, {"difficulty": difficulty}
                )
                kind = episode.instance.params["kind"]
                lost.setdefault(kind, set()).update(c.id for c in score.checks if not c.passed)
                assert 0.0 < score.value < 1.0 or kind == "status-question", (seed, difficulty)
    assert lost["review-request"] == {"mentions-asker"}
    assert lost["status-question"] == {"states-status", "only-status", "names-assignee"}


def test_the_miner_validates_over_200_distinct_tasks_of_three_kinds_in_a_100_person_world(store):
    found = mine(0, employees=100, history_days=30, store=store)
    counts = {kind: len(m.valid) for kind, m in found.items()}
    assert counts["redo"] >= 10 and counts["followup"] >= 10 and sum(counts.values()) >= 200, counts
    for kind, m in found.items():
        assert not m.rejected, (kind, m.rejected)
        for task in m.valid.values():
            assert task["source"].startswith(f"mined/{kind}/") and task["split"] == source_split(task["source"])
    with Episode("history-redo-v0", store=store) as episode:
        task = next(iter(found["redo"].valid.values()))
        options = {k: task[k] for k in ("world_seed", "employees", "history_days", "difficulty")}
        assert run_agent(episode, "oracle", task["seed"], options).value == 1.0


def test_export_mined_parquet_loads_with_datasets(tmp_path, store):
    out = tmp_path / "mined.parquet"
    done = subprocess.run(
        [sys.executable, "-m", "sim.cli", "tasks", "export", "--mined", "--out", str(out), "--data-dir",
         str(store.data_dir)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    import datasets

    rows = datasets.load_dataset("parquet", data_files=str(out), split="train")
    kinds = {k: rows["kind"].count(k) for k in ("question", "redo", "followup")}
    assert len(rows) >= 200 and min(kinds.values()) > 0, kinds
    assert all(s.startswith("mined/") for s in rows["source"])
    assert rows[0]["options"]["employees"] == 100 and len(set(rows["id"])) == len(rows)


def test_calibration_agrees_with_the_verifier_and_partials_sit_between(store):
    families = ["history-redo-v0", "history-followup-v0"]
    report = calibrate(
        families, seeds=range(3), difficulties=(0, 1, 3), episode_factory=lambda f: Episode(f, store=store)
    )
    for family in families:
        assert report.agreement(family) == 1.0, report.disagreements[:3]
        for name in PARTIALS[family]:
            mean = sum(report.cells[(family, d, name)].mean for d in (0, 1, 3)) / 3
            assert 0.0 < mean < 1.0, (family, name, mean)
        assert all(c.mean <= 0.1 for (f, _, a), c in report.cells.items() if f == family and a.startswith("cheat-"))


@pytest.mark.parametrize("family", ["history-redo-v0", "history-followup-v0"])
def test_partial_agents_lose_more_as_difficulty_rises_over_20_seeds(store, family):
    """Issue 13 item 4: every partial strictly between 0 and 1 at difficulties 1-3, their mean falling strictly."""
    names = list(PARTIALS[family])
    report = calibrate([family], seeds=range(20), agents=names, episode_factory=lambda f: Episode(f, store=store))
    means = [sum(report.cells[(family, d, a)].mean for a in names) / len(names) for d in (1, 2, 3)]
    assert all(0.0 < report.cells[(family, d, a)].mean < 1.0 for d in (1, 2, 3) for a in names), family
    assert means[0] > means[1] > means[2], (family, means)
