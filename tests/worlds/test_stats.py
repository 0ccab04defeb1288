import json

import pytest
from typer.testing import CliRunner

from sim.cli.app import app
from worlds.generate import generate
from worlds.rows import load_in_memory
from worlds.spec import WorldSpec
from worlds.stats import Masker, kind_stats, world_text_stats

MASKER = Masker(
    people=frozenset({"Ada", "Lovelace", "Grace"}),
    entities=frozenset({"Payments", "Northwind"}),
    usernames=frozenset({"ada.lovelace", "grace.hopper"}),
)


def test_skeleton__texts_that_differ_only_in_what_they_name_share_one():
    a = "Hi Ada, PAY-12 broke on 2026-03-01 at 10:30 for 1,200 users of Payments (see https://x.test/a, ada.lovelace)"
    b = "Hi Grace, WEB-7 broke on 2025-11-30 at 9:05 for 17 users of Northwind (see https://y.test/b, grace.hopper)"
    assert MASKER.mask(a) == MASKER.mask(b)
    assert "<KEY>" in MASKER.mask(a) and "<NAME>" in MASKER.mask(a) and "<USER>" in MASKER.mask(a)


def test_skeleton__different_wording_stays_distinct_and_plain_words_are_kept():
    assert MASKER.mask("grace period ends Friday") == "grace period ends Friday"
    assert MASKER.mask("@ada.lovelace can you review?") != MASKER.mask("@ada.lovelace ship it")


def test_kind_stats__counts_rows_skeletons_and_trigrams():
    s = kind_stats("t", ["Ask Ada about PAY-1", "Ask Grace about PAY-2", "Ship it now please"], MASKER)
    assert (s.rows, s.distinct_texts, s.distinct_skeletons) == (3, 3, 2)
    assert s.skeleton_ratio == pytest.approx(2 / 3, abs=1e-3)
    # trigrams of the skeletons: "ask <name> about", "<name> about <key>" twice each, then two of "ship it now please"
    assert (s.trigrams, s.distinct_trigrams) == (6, 4)


@pytest.fixture(scope="module")
def small_world(tmp_path_factory):
    from worlds.store import create_world

    path = tmp_path_factory.mktemp("stats") / "w.db"
    create_world(WorldSpec(seed=2, employees=30, history_days=10), path).close()
    return path


def test_world_stats__cli_prints_every_kind_and_writes_json(small_world, tmp_path):
    out = tmp_path / "stats.json"
    result = CliRunner().invoke(app, ["world", "stats", str(small_world), "--json", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "ticket_titles" in result.output and "mail_bodies" in result.output
    data = json.loads(out.read_text())
    assert set(data["kinds"]) >= {"ticket_titles", "ticket_comments", "chat_posts", "mail_subjects", "mail_bodies"}
    titles = data["kinds"]["ticket_titles"]
    assert titles["rows"] >= titles["distinct_skeletons"] > 0
    assert 0 < titles["skeleton_ratio"] <= 1


def test_world_text_stats__figures_match_a_direct_count():
    engine = load_in_memory(generate(WorldSpec(seed=4, employees=20, history_days=5)))
    with engine.connect() as conn:
        stats = world_text_stats(conn)
        n = conn.exec_driver_sql("SELECT count(*) FROM posts").scalar()
    assert stats["chat_posts"].rows == n
