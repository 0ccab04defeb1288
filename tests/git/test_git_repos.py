"""Generation is deterministic and real; episode checkouts share objects yet are isolated."""

import os
import subprocess
import sys

from gitkit import REPO, SEED, git_dir, sh, tiny
from sqlalchemy import text

from mcp_tools.git.workspace import GIT_DIRS
from worlds.gitrun import host_git_user
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
    root = checkout(info.path, tmp_path / "co.git", tmp_path / "co").tree
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


def test_checkout__links_packs_keeps_git_dir_apart_and_episodes_are_isolated(gapp):
    base = gapp.bases[REPO]
    base_refs = sh(base, "for-each-ref")
    user = host_git_user()
    for name in ("one", "two"):
        checkout(base, gapp.root / GIT_DIRS / f"{name}.git", gapp.root / name, user=user)
    one, two = gapp.root / "one", gapp.root / "two"
    assert not os.path.lexists(one / ".git")  # the agent-writable tree holds no git directory
    packs = sorted((git_dir(one) / "objects/pack").glob("*.pack"))
    assert packs and all(os.stat(p).st_ino == os.stat(base / "objects/pack" / p.name).st_ino for p in packs)
    assert not (git_dir(one) / "objects/info/alternates").exists()  # no path outside is followed at run time
    assert "!filter" in (git_dir(one) / "info/attributes").read_text()
    if user is not None:  # as root: the checkout belongs to git's unprivileged uid, the linked packs stay root's
        assert os.stat(one).st_uid == os.stat(git_dir(one) / "index").st_uid == user[0]
        assert os.stat(packs[0]).st_uid == 0
    (one / "NEW.md").write_text("only in one\n")
    sh(one, "add", "NEW.md")
    sh(one, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-q", "-m", "one")
    new = sh(one, "rev-parse", "HEAD").strip()
    for other in (git_dir(two), base):
        proc = subprocess.run(["git", f"--git-dir={other}", "cat-file", "-e", new], capture_output=True)
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
