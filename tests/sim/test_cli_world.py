import subprocess
import sys

import pytest
from typer.testing import CliRunner

from sim.cli.app import app, fail_on_errors

runner = CliRunner()


def invoke(*args):
    """Run the CLI in-process through the same error boundary as the console script."""
    try:
        with fail_on_errors():
            result = runner.invoke(app, list(args), catch_exceptions=False)
    except SystemExit as exc:
        return exc.code, ""
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def world_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "w.db"
    code, out = invoke(
        "world", "new", "--seed", "3", "--employees", "20", "--history-days", "5", "--out", str(path), "-q"
    )
    assert code == 0, out
    return path


def test_world_new__writes_a_world_and_show_lists_departments(world_file):
    code, out = invoke("world", "show", str(world_file))
    assert code == 0
    assert "Headcount by department" in out
    assert "Tickets by status" in out


def test_world_hash__prints_the_hash_alone_and_is_stable(world_file, tmp_path):
    code, out = invoke("world", "hash", str(world_file))
    assert code == 0
    assert len(out.strip()) == 64 and out.count("\n") == 1
    again = tmp_path / "again.db"
    assert (
        invoke(
            "world",
            "new",
            "--seed",
            "3",
            "--employees",
            "20",
            "--history-days",
            "5",
            "--out",
            str(again),
            "-q",
        )[0]
        == 0
    )
    assert invoke("world", "hash", str(again))[1] == out


def test_world_diff__identical_then_differs(world_file, tmp_path):
    other = tmp_path / "other.db"
    assert (
        invoke(
            "world",
            "new",
            "--seed",
            "4",
            "--employees",
            "20",
            "--history-days",
            "5",
            "--out",
            str(other),
            "-q",
        )[0]
        == 0
    )
    assert invoke("world", "diff", str(world_file), str(world_file)) == (0, "identical\n")
    code, out = invoke("world", "diff", str(world_file), str(other))
    assert code == 1
    assert "employees" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--employees", "-5"], "invalid employees=-5"),
        (["--employees", "99999999"], "invalid employees=99999999"),
        (["--history-days", "-1"], "invalid history_days=-1"),
        (["--apps", "chat,fax"], "unknown app 'fax'"),
        (["--start-date", "yesterday"], "invalid start_date='yesterday'"),
        (["--db", "mysql://x/y"], "unsupported database URL scheme"),
    ],
)
def test_world_new__bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim.cli",
            "world",
            "new",
            "--seed",
            "1",
            "--out",
            str(tmp_path / "x.db"),
            "-q",
            *args,
        ]
        if "--db" not in args
        else [sys.executable, "-m", "sim.cli", "world", "new", "--seed", "1", "-q", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.db").exists()


def test_world_show__corrupt_and_missing_files_exit_2(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("garbage")
    for target in (bad, tmp_path / "missing.db"):
        proc = subprocess.run(
            [sys.executable, "-m", "sim.cli", "world", "show", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2
        assert proc.stderr.startswith("error: ")


def test_world_check__lists_each_check_with_counts_and_fails_on_a_broken_reference(world_file, tmp_path):
    import json
    import shutil
    import sqlite3

    code, out = invoke("world", "check", str(world_file), "--json")
    assert code == 0, out
    checks = {c["check"]: c for c in json.loads(out)["checks"]}
    assert {"refs_mail", "refs_chat", "causal", "working_hours", "budget_headcount"} <= set(checks)
    assert checks["refs_chat"]["checked"] > 0 and checks["refs_chat"]["failed"] == 0
    broken = tmp_path / "broken.db"
    shutil.copy(world_file, broken)
    with sqlite3.connect(broken) as db:
        key = db.execute("SELECT key FROM projects ORDER BY id LIMIT 1").fetchone()[0]
        db.execute("UPDATE posts SET message = ? WHERE id = 1", (f"Picked up {key}-99999.",))
    assert invoke("world", "check", str(broken))[0] == 1
    code, out = invoke("world", "check", str(broken), "--json")
    report = json.loads(out)
    failed = {c["check"]: c for c in report["checks"]}["refs_chat"]
    assert code == 1 and not report["ok"]
    assert failed["failed"] == 1 and f"{key}-99999, which does not exist" in failed["problems"][0]
