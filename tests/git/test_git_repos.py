"""Generation is deterministic and real; episode checkouts share objects yet are isolated."""

import subprocess
import sys

from gitkit import REPO, SEED, sh, tiny
from sqlalchemy import text

from worlds.repos import checkout, ensure_base_repos, generate_repos


def test_same_seed_same_hashes_in_two_fresh_dirs(tmp_path):
    engine = tiny.tiny_engine()
    with engine.connect() as conn:
        a = generate_repos(conn, SEED, tmp_path / "a", now=tiny.T0)
        b = generate_repos(conn, SEED, tmp_path / "b", now=tiny.T0)
        c = generate_repos(conn, SEED + 1, tmp_path / "c", now=tiny.T0)
    assert [(i.name, i.head, i.branches, i.tags) for i in a] == [(i.name, i.head, i.branches, i.tags) for i in b]
    assert [i.head for i in a] != [i.head for i in c]
    assert {i.name for i in a} == {"platform-service", "operations-service"}


def test_history_is_the_teams_and_dated_in_the_past(tmp_path):
    engine = tiny.tiny_engine()
    with engine.connect() as conn:
        info = generate_repos(conn, SEED, tmp_path, now=tiny.T0)[0]
    authors = set(sh(info.path, "log", "--all", "--format=%an <%ae>").splitlines())
    assert authors <= {
        "Lena Lind <lena.lead@acme.test>",
        "Devi One <dev.one@acme.test>",
        "Dario Two <dev.two@acme.test>",
    }
    dates = sh(info.path, "log", "--all", "--format=%at %ct").split()
    assert max(int(d) for d in dates) < tiny.T0.timestamp()
    assert info.commits == int(sh(info.path, "rev-list", "--all", "--count"))
    assert len(info.branches) > 1 and info.tags
    assert sh(info.path, "log", "--merges", "--oneline", "main").strip()  # merged feature branches


def test_generated_service_passes_its_tests(tmp_path):
    engine = tiny.tiny_engine()
    with engine.connect() as conn:
        info = generate_repos(conn, SEED, tmp_path / "b", now=tiny.T0)[0]
    root = checkout(info.path, tmp_path / "co")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_record_writes_rows_only_when_asked(tmp_path):
    engine = tiny.tiny_engine()
    with engine.begin() as conn:
        generate_repos(conn, SEED, tmp_path / "a", now=tiny.T0)
        assert conn.execute(text("SELECT count(*) FROM repositories")).scalar() == 0
        infos = generate_repos(conn, SEED, tmp_path / "b", now=tiny.T0, record=True)
        rows = conn.execute(
            text(
                "SELECT r.name, f.commit_sha FROM repositories r JOIN repository_refs f"
                " ON f.repository_id = r.id WHERE f.name = 'refs/heads/main' ORDER BY r.id"
            )
        ).all()
    assert [tuple(r) for r in rows] == [(i.name, i.head) for i in infos]


def test_checkout_uses_alternates_and_episodes_are_isolated(gapp, tmp_path):
    base = gapp.bases[REPO]
    base_refs = sh(base, "for-each-ref")
    one = checkout(base, tmp_path / "one")
    two = checkout(base, tmp_path / "two")
    assert (one / ".git/objects/info/alternates").read_text().strip() == str(base.resolve() / "objects")
    assert not list((one / ".git/objects/pack").iterdir())  # no object copied
    (one / "NEW.md").write_text("only in one\n")
    sh(one, "add", "NEW.md")
    sh(one, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-q", "-m", "one")
    new = sh(one, "rev-parse", "HEAD").strip()
    for other in (two, base):
        proc = subprocess.run(["git", "-C", str(other), "cat-file", "-e", new], capture_output=True)
        assert proc.returncode != 0
    assert sh(base, "for-each-ref") == base_refs
    assert sh(two, "rev-parse", "HEAD").strip() == gapp.infos[0].head


def test_base_cache_is_generated_once(tmp_path):
    engine = tiny.tiny_engine()
    world = tmp_path / "w.db"
    with engine.connect() as conn:
        conn.execute(
            text("INSERT INTO world_meta (key, value) VALUES ('spec', :s)"),
            {"s": '{"seed": 3, "employees": 10, "history_days": 5, "start_date": "2026-03-02"}'},
        )
        first = ensure_base_repos(world, conn, 3)
        stamp = (first[0].path / "packed-refs").stat().st_mtime_ns
        again = ensure_base_repos(world, conn, 3)
    assert [i.head for i in first] == [i.head for i in again]
    assert (again[0].path / "packed-refs").stat().st_mtime_ns == stamp
    assert first[0].path.parent == tmp_path / "w.db.repos"
