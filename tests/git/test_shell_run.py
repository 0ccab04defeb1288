"""``shell_run``: commands in the episode's checkout, sandboxed, deterministic, capped, logged, refused cleanly."""

import os
import re
import subprocess
import time
from typing import Any

import pytest
from gitkit import REPO

from mcp_tools.base import call_tool
from mcp_tools.errors import AppError
from mcp_tools.git.workspace import use_workspace
from mcp_tools.sandbox import get_sandbox, register_sandbox
from mcp_tools.sandbox.bwrap import BwrapSandbox
from mcp_tools.shell.server import shell

UNDER_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(autouse=True)
def _needs_sandbox():
    sandbox = get_sandbox()
    if not sandbox.available():
        message = f"no working sandbox here: {getattr(sandbox, 'reason', '')}"
        if UNDER_CI:
            pytest.fail(message + " (CI=true: the sandbox must work here)")
        pytest.skip(message)


def run(g: Any, **arguments: Any) -> Any:
    """Call ``shell_run`` in-process as the lead, in the same workspace as the git tools."""
    spec = shell.get("shell_run")
    assert spec is not None
    with use_workspace(g.root, g.bases):
        return call_tool(spec, arguments, g.app.ctx(None))


def activity(g: Any) -> list[tuple[Any, ...]]:
    rows = g.app.session.connection().exec_driver_sql(
        "SELECT op, actor_id, content_sha256 FROM git_activity ORDER BY id"
    )
    return [tuple(r) for r in rows]


def test_runs_in_the_checkout_and_sees_the_agents_edits(gapp):
    gapp.call("write_file", repo=REPO, path="notes/hello.txt", content="hi from the agent\n")
    out = run(gapp, repo=REPO, command="cat notes/hello.txt && ls")
    assert out["exit_code"] == 0 and out["timed_out"] is False
    assert out["stdout"].startswith("hi from the agent\n")
    assert "README.md" in out["stdout"]


def test_the_repositorys_own_tests_pass_in_the_sandbox(gapp):
    out = run(gapp, repo=REPO, command="python3 -m pytest -q -p no:cacheprovider", timeout_seconds=60)
    assert out["exit_code"] == 0, out["stdout"] + out["stderr"]
    assert " passed" in out["stdout"]


def test_output_is_deterministic_fixed_env_and_unprivileged(gapp):
    command = "echo $TZ $LANG; id -u; date +%Z; ls -a | sort"
    first = run(gapp, repo=REPO, command=command)
    second = run(gapp, repo=REPO, command=command)
    assert first == second
    tz, lang = first["stdout"].splitlines()[0].split()
    assert (tz, lang) == ("UTC", "C")
    assert first["stdout"].splitlines()[1] != "0"


def test_each_run_is_logged_as_git_activity(gapp):
    before = activity(gapp)
    run(gapp, repo=REPO, command="echo one")
    run(gapp, repo=REPO, command="echo two")
    new = activity(gapp)[len(before) :]
    assert [op for op, _, _ in new] == ["shell_run", "shell_run"]
    assert new[0][2] != new[1][2]  # the digest covers the command and its outcome


def test_a_command_that_never_ends_is_killed_with_everything_it_started(gapp):
    out = run(gapp, repo=REPO, command="(sleep 300 &) ; sleep 300", timeout_seconds=1)
    assert out["timed_out"] is True
    # The kill reaches the sandbox's processes through its pid namespace, a moment after the call returns on a
    # busy machine. Two fresh-clone CI runs (both xdist workers busy) still saw a `sleep 300` after five seconds
    # (not reproduced alone or beside busy loops: 26 of 26 passed): wait up to 30 s, a tenth of what a real
    # survivor would live, and name what is left (owner, parent, age) if anything is.
    deadline = time.monotonic() + 30
    while True:
        leftovers = subprocess.run(["pgrep", "-f", "sleep 300"], capture_output=True, text=True)
        if not leftovers.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    pids = leftovers.stdout.split()
    if pids:
        ps = ["ps", "-o", "pid,ppid,user,etimes,args", "-p", ",".join(pids)]
        pytest.fail("left running:\n" + subprocess.run(ps, capture_output=True, text=True).stdout)


def test_output_flood_is_truncated_and_labelled(gapp):
    out = run(gapp, repo=REPO, command="yes companysim | head -c 5000000")
    assert len(out["stdout"]) < 25_000
    assert "truncated" in out["stdout"].lower() or "truncated" in str(out["killed_by"]).lower()


def test_writes_outside_the_checkout_do_not_land(gapp, tmp_path):
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched")
    command = f"echo owned > {canary}; echo owned > ../escape.txt; echo owned > /tmp/x; touch /usr/owned"
    run(gapp, repo=REPO, command=command)
    assert canary.read_text() == "untouched"
    assert not (gapp.root / "escape.txt").exists()
    assert not os.path.exists("/usr/owned")


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"repo": REPO, "command": ""}, "invalid_argument"),
        ({"repo": REPO, "command": "   "}, "invalid_argument"),
        ({"repo": REPO, "command": "echo a\x00b"}, "invalid_argument"),
        ({"repo": REPO, "command": "x" * 4001}, "invalid_argument"),
        ({"repo": REPO, "command": "ls", "timeout_seconds": 0}, "invalid_argument"),
        ({"repo": REPO, "command": "ls", "timeout_seconds": 121}, "invalid_argument"),
        ({"repo": "no-such-repo", "command": "ls"}, "not_found"),
        ({"repo": "../etc", "command": "ls"}, "not_found"),
    ],
)
def test_bad_input_is_refused_with_a_stable_code_and_nothing_logged(gapp, arguments, code):
    before = activity(gapp)
    with pytest.raises(AppError) as err:
        run(gapp, **arguments)
    assert err.value.code == code
    assert activity(gapp) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root host can misconfigure the sandbox uid to 0")
def test_no_working_sandbox_means_the_tool_refuses_and_nothing_runs(gapp, monkeypatch):
    register_sandbox("bwrap-as-root", lambda: BwrapSandbox(uid=0))  # would run code as root: must refuse
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "bwrap-as-root")
    before = activity(gapp)
    with pytest.raises(AppError) as err:
        run(gapp, repo=REPO, command="touch ran-unsandboxed")
    assert err.value.code == "unavailable"
    assert "root" in str(err.value)
    assert not (gapp.root / REPO / "ran-unsandboxed").exists()
    assert activity(gapp) == before


def test_wall_clock_figures_never_reach_the_agent(gapp):
    """pytest's and unittest's timings and the shell's ``time`` are normalised, so replays see the same bytes."""
    command = (
        "python3 -m pytest -q -p no:cacheprovider; python3 -m unittest -q 2>&1 | tail -3; bash -c 'time true' 2>&1"
    )
    out = run(gapp, repo=REPO, command=command, timeout_seconds=60)
    text = out["stdout"] + out["stderr"]
    assert " passed in [elapsed]" in text and "Ran 0 tests in [elapsed]" in text and "real\t[elapsed]" in text
    assert not re.search(r"\b\d+\.\d+s\b", text), text


def test_normalise_timings__only_timing_figures_change():
    from mcp_tools.shell.server import normalise_timings

    assert normalise_timings("== 1 failed, 2 passed, 1 warning in 3.21s (0:00:03) ==") == (
        "== 1 failed, 2 passed, 1 warning in [elapsed] =="
    )
    assert normalise_timings("0.50s call     tests/test_a.py::test_x") == "[elapsed] call     tests/test_a.py::test_x"
    assert normalise_timings("wait in 5s, then retry in 2.0s") == "wait in 5s, then retry in 2.0s"
