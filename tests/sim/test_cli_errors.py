"""Every user mistake on the command line: one line on stderr, exit code 2, no traceback, nothing changed.

This is the place for the next such case: add a row to ``CASES`` (the command, what its one line must say). Each
case runs the real ``companysim`` in a subprocess, in a directory holding a world file, a damaged world, a file,
a directory, an empty file and a saved campaign; the directory's every file (name, size, mtime) must be as
before the command.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "sim.cli"]
NO_SANDBOX = {"COMPANYSIM_SANDBOX": "docker", "COMPANYSIM_DOCKER_HOST": "unix:///nonexistent/docker.sock"}
CASES = [
    (["run", "triage-ticket-v0"], "unknown scenario 'triage-ticket-v0'", {}),
    (["scenarios", "show", "quarterly-budget-v9"], "unknown scenario 'quarterly-budget-v9'", {}),
    (["scenarios", "show", "quarterly-budget-v0", "--difficulty", "4"], "--difficulty must be 0, 1, 2 or 3", {}),
    (["campaign", "triage-ticket-v0"], "unknown scenario", {}),
    (["serve", "--scenario", "triage-ticket-v0", "--port", "1"], "unknown scenario", {}),
    (["mcp", "--scenario", "triage-ticket-v0"], "unknown scenario", {}),
    (["replay", "foreign.jsonl"], "unknown scenario", {}),
    (["run", "fix-failing-test-v0"], "sandbox status", NO_SANDBOX),
    (["run", "triage-tickets-v0", "--trace", "adir"], "is a directory", {}),
    (["run", "triage-tickets-v0", "--trace", "afile"], "pass --overwrite", {}),
    (["run", "triage-tickets-v0", "--trace", "nodir/t.jsonl"], "does not exist", {}),
    (["run", "triage-tickets-v0", "--agent", "smart"], "--agent must be one of", {}),
    (["run", "triage-tickets-v0", "--episodes", "0"], "--episodes must be at least 1", {}),
    (["run", "triage-tickets-v0", "--difficulty", "9"], "--difficulty must be 0, 1, 2 or 3", {}),
    (["run", "triage-tickets-v0", "--difficulty", "-1"], "--difficulty must be 0, 1, 2 or 3", {}),
    (["run", "triage-tickets-v0", "--npcs", "bogus"], "off, sampled", {}),
    (["run", "triage-tickets-v0", "--noise", "loud"], "loud", {}),
    (["replay", "w.db"], "not a text trace", {}),
    (["replay", "empty.jsonl"], "holds no episode", {}),
    (["replay", "missing.jsonl"], "no trace file", {}),
    (["demo", "--episodes", "0"], "--episodes must be at least 1", {}),
    (["tasks", "export", "--out", "tasks.csv"], "--out must end in .jsonl or .parquet", {}),
    (["tasks", "export", "--out", "empty.jsonl"], "pass --overwrite", {}),
    (["tasks", "list", "--seeds", "a:b"], "--seeds must be A:B", {}),
    (["tasks", "list", "--split", "holdout"], "unknown split 'holdout'", {}),
    (["tasks", "list", "--split-by", "colour", "--seeds", "0"], "unknown split kind 'colour'", {}),
    (["tasks", "list", "--family", "triage-ticket-v0"], "unknown scenario", {}),
    (["run", "triage-tickets-v0", "--agent", "openai"], "--agent openai needs --model", {}),
    (["run", "triage-tickets-v0", "--agent", "openai", "--model", "m", "--llm-cache", "afile"], "is a file", {}),
    (["demo", "--out", "afile"], "is a file", {}),
    (["campaign", "triage-tickets-v0", "--snapshots", "afile"], "is a file", {}),
    (["campaign", "triage-tickets-v0", "--split", "test", "--seed", "-1"], "--seed must be at least 0", {}),
    (["campaign", "triage-tickets-v0", "--resume"], "--resume needs --snapshots", {}),
    (["campaign", "triage-tickets-v0", "--curriculum", "--band", "0.9,0.1"], "--band: band must be", {}),
    (["campaign", "triage-tickets-v0", "--curriculum", "--band", "half"], "--band must be LOW,HIGH", {}),
    (["server", "--state-dir", "afile"], "is a file; expected a directory", {}),
    (["server", "--state-dir", "nodir/state"], "the directory nodir does not exist", {}),
    (["tasks", "export", "--mined", "--out", "m.parquet", "--employees", "0"], "--employees must be at least 2", {}),
    (["campaign", "triage-tickets-v0", "--snapshots", "camp", "--resume", "--seed", "5"], "not triage", {}),
    (["campaign", "triage-tickets-v0", "--snapshots", "swapped", "--resume"], "is not the state the manifest", {}),
    (["campaign", "triage-tickets-v0", "--snapshots", "foreign", "--resume"], "is not the state the manifest", {}),
    (
        ["campaign", "triage-tickets-v0", "--snapshots", "traced", "--resume", "--trace", "nope.jsonl"],
        "does not exist",
        {},
    ),
    (
        ["campaign", "triage-tickets-v0", "--snapshots", "traced", "--resume", "--trace", "other.jsonl"],
        "not the saved",
        {},
    ),
    (
        ["campaign", "triage-tickets-v0", "--snapshots", "traced", "--resume", "--trace", "empty.jsonl"],
        "holds 0 complete",
        {},
    ),
    (["world", "new", "--seed", "1", "--start-date", "9999-12-31", "-q"], "start_date 9999-12-31 is out of range", {}),
    (["world", "new", "--seed", "1", "--start-date", "2026-13-01", "-q"], "expected YYYY-MM-DD", {}),
    (["world", "new", "--seed", "1", "--out", "adir", "--overwrite", "-q"], "is a directory", {}),
    (["world", "new", "--seed", "1", "--out", "w.db", "-q"], "pass --overwrite", {}),
    (["world", "new", "--seed", "-3", "-q"], "invalid seed", {}),
    (["world", "show", "damaged.db"], "is damaged: no such table: tickets", {}),
    (["world", "hash", "damaged.db"], "is damaged", {}),
    (["world", "diff", "w.db", "damaged.db"], "one is damaged", {}),
    (["world", "show", "afile"], "", {}),
    (["serve", "--port", "99999"], "--port must be 1-65535", {}),
    (["serve", "--port", "BUSY"], "cannot listen on 127.0.0.1", {}),
    (["serve", "--host", "0.0.0.0"], "pass --token", {}),  # noqa: S104 - refused without a token
    (["web", "--host", "0.0.0.0"], "pass --token", {}),  # noqa: S104 - refused without a token
    (["web", "--port", "BUSY"], "cannot listen on 127.0.0.1", {}),
    (["web", "--scenario", "triage-ticket-v0", "--port", "1"], "unknown scenario 'triage-ticket-v0'", {}),
    (["view", "missing.jsonl"], "no trace file at missing.jsonl", {}),
    (["view", "adir"], "adir is a directory", {}),
    (["view", "w.db", "--out", "r"], "not a text trace", {}),
    (["view", "afile", "--out", "r"], "afile:1: not a JSON record", {}),
    (["view", "empty.jsonl", "--out", "r"], "holds no episode", {}),
    (["view", "traced.jsonl", "cut.jsonl", "--out", "r"], "cut.jsonl:", {}),
    (["view", "traced.jsonl", "--out", "afile"], "afile is a file", {}),
    (["view", "traced.jsonl", "--out", "afile/r"], "afile is a file, not a directory", {}),
    (["view", "traced.jsonl", "--out", "nodir/r"], "does not exist", {}),
    (["view", "traced.jsonl", "--out", "camp"], "is not a companysim report", {}),
    (["view", "traced.jsonl", "--out", "camp", "--overwrite"], "is not a companysim report", {}),
    (["view", "traced.jsonl", "--out", "areport"], "pass --overwrite", {}),
    (["view", "traced.jsonl", "--no-replay", "--out", "/proc/companysim-report"], "cannot write /proc/", {}),
    (["export", "cut.jsonl", "--parquet", "e.parquet"], "cut.jsonl:", {}),
    (["export", "missing.jsonl", "--parquet", "e.parquet"], "no trace file", {}),
    (["export", "traced.jsonl", "--parquet", "adir"], "is a directory", {}),
    (["export", "traced.jsonl", "--parquet", "afile"], "pass --overwrite", {}),
    (["export", "traced.jsonl", "--parquet", "nodir/e.parquet"], "does not exist", {}),
    (["export", "traced.jsonl", "--parquet", "/proc/companysim.parquet"], "cannot write /proc/", {}),
]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A working directory with the files the cases name, and a base-world cache of its own."""
    root = tmp_path_factory.mktemp("cli")
    data = tmp_path_factory.mktemp("cli-data")
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(data)}
    run = [*CLI, "world", "new", "--seed", "1", "--employees", "12", "--history-days", "5", "--out", "w.db", "-q"]
    subprocess.run(run, cwd=root, env=env, check=True, capture_output=True)
    damaged = root / "damaged.db"
    damaged.write_bytes((root / "w.db").read_bytes())
    conn = sqlite3.connect(damaged)
    conn.execute("DROP TABLE tickets")
    conn.commit()
    conn.close()
    (root / "adir").mkdir()
    (root / "afile").write_text("not a world\n")
    (root / "empty.jsonl").write_text("")
    header = {"type": "header", "format": 1, "scenario": "triage-ticket-v0", "seed": 0, "options": {}}
    (root / "foreign.jsonl").write_text(json.dumps(header) + "\n" + json.dumps({"type": "score", "value": 0}) + "\n")
    camp = [*CLI, "campaign", "triage-tickets-v0", "--seed", "3", "--episodes", "1", "--snapshots", "camp"]
    subprocess.run(camp, cwd=root, env=env, check=True, capture_output=True)
    # Two campaigns on one world (oracle and no-op agents), traced; then a copy whose last snapshot is an older
    # boundary's file, and a copy whose last snapshot is the other campaign's.
    for name, agent in (("traced", "oracle"), ("other", "noop")):
        run = [*camp[:-4], "--episodes", "2", "--agent", agent, "--snapshots", name, "--trace", f"{name}.jsonl"]
        subprocess.run(run, cwd=root, env=env, check=True, capture_output=True)
    # A trace cut in the middle of a line (a killed writer), and a report a new one may only replace with --overwrite.
    lines = (root / "traced.jsonl").read_text().splitlines(keepends=True)
    (root / "cut.jsonl").write_text("".join(lines[:-2]) + lines[-2][: len(lines[-2]) // 2])
    (root / "areport").mkdir()
    (root / "areport" / "index.html").write_text("an older report\n")
    for name, source in (
        ("swapped", root / "traced" / "episode-0000.snap"),
        ("foreign", root / "other" / "episode-0001.snap"),
    ):
        shutil.copytree(root / "traced", root / name)
        shutil.copyfile(source, root / name / "episode-0001.snap")
    return root, env


@pytest.mark.parametrize(("args", "says", "extra_env"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_cli_error__one_line_exit_2_nothing_changed(place, args, says, extra_env):
    root, env = place
    busy = None
    if "BUSY" in args:
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        args = [str(busy.getsockname()[1]) if a == "BUSY" else a for a in args]
    before = _snapshot(root)
    try:
        out = subprocess.run(
            [*CLI, *args], cwd=root, env={**env, **extra_env}, capture_output=True, text=True, timeout=300
        )
    finally:
        if busy is not None:
            busy.close()
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr[-2000:]
    assert "Traceback" not in out.stderr and says in lines[0], lines[0]
    assert _snapshot(root) == before, "the command changed files in its directory"
