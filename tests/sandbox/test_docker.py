"""The Docker sandbox holds against adversarial code, exactly like bubblewrap: isolation, limits, cleanup.

The same probes as ``test_bwrap.py``, run in real containers on a real engine with small limits; after every
test no process of the sandbox uid and no labelled container may be left. Without the docker SDK, an engine
(``$COMPANYSIM_DOCKER_HOST``, see ``.ci/docker-setup.sh``) or the image (``companysim sandbox build-image``)
the tests skip with the reason, except under CI=true, where a missing Docker sandbox is a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mcp_tools.sandbox as registry
from mcp_tools.errors import AppError, InvalidArgument, SandboxUnavailable
from mcp_tools.git.pipeline import pipeline
from mcp_tools.sandbox import BASE_ENV, Limits, RunResult, get_sandbox
from mcp_tools.sandbox.docker import DockerSandbox
from mcp_tools.sandbox.engine import LABEL
from worlds.gitrun import GitRepo

UNDER_CI = os.environ.get("CI") == "true"
UID = 65000 + os.getpid() % 400  # a uid of its own, so the leftover scan sees only this module's processes
SMALL = Limits(cpu_seconds=2, memory_mb=256, max_processes=24, max_file_mb=4, wall_seconds=5, max_output_bytes=4096)


def _processes_of(uid: int) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            found.append(f"{entry} {fields['Name'].strip()} {fields['State'].strip()}")
    return found


def _containers(box: DockerSandbox) -> list[str]:
    """Every container the backend made that still exists (running or not)."""
    return [c["Id"][:12] for c in box._client().containers(all=True, filters={"label": LABEL})]


@pytest.fixture(scope="module")
def box() -> DockerSandbox:
    sandbox = DockerSandbox(uid=UID)
    if not sandbox.available():
        message = f"Docker sandbox unavailable: {sandbox.reason}"
        if UNDER_CI:
            pytest.fail(message + " (CI=true: .ci/run starts the engine and builds the image; it must work)")
        pytest.skip(message)
    return sandbox


@pytest.fixture
def ws(tmp_path: Path, box: DockerSandbox):
    """A workspace; afterwards no process of the sandbox uid and no sandbox container may exist."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    yield workspace
    assert _processes_of(box.effective_uid) == []
    assert _containers(box) == []


def run(box: DockerSandbox, ws: Path, code: str, limits: Limits = SMALL, **kwargs) -> RunResult:
    return box.run(["python3", "-c", code], ws, limits=limits, **kwargs)


def test_docker__python_runs_in_workspace_and_results_reach_the_host(box, ws):
    (ws / "data.txt").write_text("from the host")
    code = "import os; print(os.getcwd(), open('data.txt').read()); open('out.txt', 'w').write('from the sandbox')"
    assert run(box, ws, code) == RunResult(0, "/workspace from the host\n", "", False, None)
    assert (ws / "out.txt").read_text() == "from the sandbox"
    assert box.run(["cat"], ws, limits=SMALL, stdin="piped in\n").stdout == "piped in\n"
    big = "x" * 300_000 + "\n"  # more than a socket buffer: stdin is fed while output is read
    assert box.run(["wc", "-c"], ws, limits=SMALL, stdin=big).stdout == "300001\n"


def test_docker__files_written_belong_to_the_sandbox_uid_and_the_host_can_remove_them(box, ws):
    result = box.run(["sh", "-c", "mkdir -p made/deep && echo hi > made/deep/f && chmod -R a-w made"], ws)
    assert result.exit_code == 0, result.stderr
    made = ws / "made" / "deep" / "f"
    assert made.read_text() == "hi\n" and made.stat().st_uid == box.effective_uid != 0
    for path in (made.parent, made):
        path.chmod(0o700)
    shutil.rmtree(ws / "made")
    assert list(ws.iterdir()) == []


def test_docker__runs_unprivileged_with_no_capabilities(box, ws):
    result = box.run(["sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"], ws)
    lines = result.stdout.split()
    assert lines[0] == lines[1] == str(box.effective_uid) != "0"
    assert lines[2:] == ["CapEff:", "0" * 16, "CapBnd:", "0" * 16, "NoNewPrivs:", "1"]
    nested = box.run(["unshare", "--user", "--map-root-user", "id", "-u"], ws, limits=SMALL)
    assert nested.exit_code != 0 and nested.stdout == ""  # no way back to uid 0 through a new user namespace


def test_docker__environment_is_fixed_and_host_variables_do_not_leak(box, ws, monkeypatch):
    monkeypatch.setenv("HOST_SECRET_TOKEN", "canary-env-1234")
    result = box.run(["env"], ws, limits=SMALL, env={"EXTRA": "1"})
    assert dict(line.split("=", 1) for line in result.stdout.splitlines()) == {
        **BASE_ENV,
        "EXTRA": "1",
        "PWD": "/workspace",
    }


def test_docker__network_is_refused_even_to_a_host_listener(box, ws):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # the host can reach it
        code = (
            "import socket\n"
            f"for host in ('127.0.0.1', '10.0.0.1', '1.1.1.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=2); print(host, 'connected')\n"
            "    except OSError as e: print(host, type(e).__name__)\n"
            "try: socket.getaddrinfo('example.com', 80); print('dns resolved')\n"
            "except OSError as e: print('dns', type(e).__name__)\n"
            "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))\n"
        )
        result = run(box, ws, code)
    assert result.stdout.splitlines() == [
        "127.0.0.1 ConnectionRefusedError",
        "10.0.0.1 OSError",
        "1.1.1.1 OSError",
        "dns gaierror",
        "['lo']",
    ], result.stderr


def test_docker__host_files_and_grader_data_are_unreachable(box, ws, tmp_path):
    canary = tmp_path / "outside" / "canary-secret.txt"
    canary.parent.mkdir()
    canary.write_text("canary-file-5678")
    canary.chmod(0o644)
    grader = tmp_path / "grader"  # a world's rubric and oracle answers, next to the workspace
    grader.mkdir()
    (grader / "rubric.yaml").write_text("answer: canary-rubric-9012\n")
    code = (
        "import os\n"
        f"for p in ({str(canary)!r}, {str(grader)!r}, '/workspace/../grader', '/work', '/run/docker.sock'):\n"
        "    print(p, os.path.exists(p))\n"
        "for p in ('/etc/shadow', '/root'):\n"
        "    try: open(p).read() if os.path.isfile(p) else os.listdir(p); print(p, 'read')\n"
        "    except OSError as e: print(p, type(e).__name__)\n"
    )
    result = run(box, ws, code)
    assert result.exit_code == 0, result.stderr
    *absent, shadow, root = result.stdout.splitlines()
    assert all(line.endswith(" False") for line in absent), absent
    assert (shadow, root) == ("/etc/shadow PermissionError", "/root PermissionError")
    dirs = ["/usr", "/etc", "/tmp", "/workspace", "/home", "/var", "/opt", "/srv", "/mnt", "/run"]
    grep = box.run(["grep", "-rlsE", "canary-(file-5678|rubric-9012|env)", *dirs], ws, limits=SMALL)
    assert grep.stdout == ""


def test_docker__only_workspace_and_tmp_are_writable(box, ws):
    targets = ["/workspace/ok", "/tmp/ok", "/dev/shm/ok", "/x", "/usr/x", "/etc/passwd", "/etc/x", "/dev/x"]
    targets += ["/var/tmp/x", "/home/x", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/workspace/../x"]
    code = (
        "import os\n"
        f"for p in {targets!r}:\n"
        "    try: open(p, 'w').write('x'); print(p, 'written')\n"
        "    except OSError as e: print(p, 'refused')\n"
        "print(sorted(os.listdir('/proc/self/fd')))\n"  # nothing of the launcher leaks in
    )
    result = run(box, ws, code)
    lines = result.stdout.splitlines()
    assert lines[:3] == ["/workspace/ok written", "/tmp/ok written", "/dev/shm/ok written"], result.stderr
    assert all(line.endswith(" refused") for line in lines[3:-1]), lines
    assert lines[-1] == "['0', '1', '2', '3']"  # stdio and listdir's own handle
    assert sorted(p.name for p in ws.iterdir()) == ["ok"]


def test_docker__fork_bomb_is_capped_by_the_process_limit(box, ws):
    code = (
        "import os, time\n"
        "n = 0\n"
        "while True:\n"
        "    try: pid = os.fork()\n"
        "    except OSError: break\n"
        "    if pid == 0: time.sleep(100); os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    result = run(box, ws, code)
    assert result.exit_code == 0 and 0 < int(result.stdout) < SMALL.max_processes  # sleepers die with the run
    bomb = box.run(["sh", "-c", "b() { b | b & }; b; sleep 100"], ws, limits=Limits(max_processes=24, wall_seconds=1))
    assert bomb.timed_out and bomb.killed_by == "timeout" and bomb.exit_code == -9


def test_docker__memory_bomb_is_stopped(box, ws):
    result = run(box, ws, "chunks = []\nwhile True: chunks.append(bytearray(16 * 2**20))")
    assert (result.exit_code, result.killed_by) == (1, "memory")
    assert result.stderr.endswith("MemoryError\n")


def test_docker__many_processes_together_are_stopped_by_the_memory_cgroup(box, ws):
    """Each process stays under RLIMIT_AS; together they pass the container's limit and the kernel kills some."""
    code = (
        "import os, sys, time\n"
        "pids = []\n"
        "for i in range(4):\n"
        "    pid = os.fork()\n"
        "    if pid == 0: x = b'a' * (150 * 2**20); time.sleep(1); os._exit(0)\n"
        "    pids.append(pid)\n"
        "died = [os.waitpid(p, 0)[1] for p in pids]\n"
        "sys.exit(1 if any(os.WIFSIGNALED(s) for s in died) else 0)\n"
    )
    result = run(box, ws, code, Limits(memory_mb=256, tmp_mb=16, wall_seconds=10))
    assert (result.exit_code, result.killed_by) == (1, "memory")


def test_docker__cpu_loop_is_killed_by_the_cpu_limit(box, ws):
    start = time.monotonic()
    result = run(box, ws, "while True: pass", Limits(cpu_seconds=1, wall_seconds=10))
    assert (result.exit_code, result.killed_by, result.timed_out) == (128 + 24, "cpu", False)  # SIGXCPU
    assert time.monotonic() - start < 5


def test_docker__huge_file_is_stopped_at_the_file_size_limit(box, ws):
    result = box.run(["sh", "-c", "head -c 100000000 /dev/zero > big"], ws, limits=SMALL)
    assert (result.exit_code, result.killed_by) == (128 + 25, "file_size")  # SIGXFSZ
    assert (ws / "big").stat().st_size == SMALL.max_file_mb * 2**20
    py = run(box, ws, "open('big2', 'wb').write(bytes(8 * 2**20))")
    assert (py.exit_code, py.killed_by) == (1, "file_size") and "File too large" in py.stderr


def test_docker__tmp_is_size_capped(box, ws):
    code = "import os\nfor i in range(100):\n    open(f'/tmp/f{i}', 'wb').write(bytes(3 * 2**20))"
    result = run(box, ws, code, Limits(tmp_mb=8, wall_seconds=5))
    assert result.exit_code == 1 and "No space left on device" in result.stderr


def test_docker__sleep_is_killed_by_the_wall_timeout(box, ws):
    start = time.monotonic()
    result = box.run(["sh", "-c", "echo started; sleep 1000"], ws, limits=Limits(wall_seconds=1))
    assert result == RunResult(-9, "started\n", "", True, "timeout")
    assert time.monotonic() - start < 3


def test_docker__background_and_daemonised_children_die_with_the_run(box, ws):
    script = "sleep 1000 & (setsid sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & exec >&- 2>&-; sleep 1000"
    result = box.run(["sh", "-c", script], ws, limits=Limits(wall_seconds=1))
    assert result.timed_out
    quick = box.run(["sh", "-c", "sleep 1000 & (setsid sleep 1000 &); echo done"], ws, limits=SMALL)
    assert quick == RunResult(0, "done\n", "", False, None)
    start = time.monotonic()
    silent = box.run(["sh", "-c", "echo bye; exec >&- 2>&-; sleep 1000"], ws, limits=Limits(wall_seconds=1))
    assert silent == RunResult(-9, "bye\n", "", True, "timeout")  # no output left, still killed on time
    assert time.monotonic() - start < 4


def test_docker__output_flood_is_truncated_and_stopped(box, ws):
    limits = Limits(max_output_bytes=1000, wall_seconds=10)
    result = box.run(["yes"], ws, limits=limits)
    assert result.killed_by == "output" and not result.timed_out and result.exit_code == -9
    assert result.stdout.startswith("y\n" * 500)
    assert result.stdout.endswith(
        f"\n[output truncated: {2**20 - 1000} bytes omitted; output limit exceeded, process killed]"
    )
    small = box.run(["python3", "-c", "print('x' * 5000, end='')"], ws, limits=limits)
    assert small.stdout == "x" * 1000 + "\n[output truncated: 4000 bytes omitted]" and small.killed_by is None
    both = box.run(["sh", "-c", "yes e >&2 & yes o"], ws, limits=limits)  # two floods: one kill, both cut
    assert both.killed_by == "output" and "[output truncated" in both.stdout + both.stderr


def test_docker__same_command_twice_gives_the_same_result_and_leaks_no_fds(box, ws):
    code = "import os, sys\nprint(os.getpid(), hash('x'), sys.argv, os.uname().nodename)\nprint(list(range(5)))"
    first = run(box, ws, code)
    assert first.exit_code == 0 and "sandbox" in first.stdout
    fds = len(os.listdir("/proc/self/fd"))
    assert run(box, ws, code) == first
    flood = box.run(["yes", "abc"], ws, limits=Limits(max_output_bytes=100))
    for _ in range(6):  # attach connections are closed: only the SDK's bounded connection pool (10) may grow
        assert box.run(["yes", "abc"], ws, limits=Limits(max_output_bytes=100)) == flood
        assert box.run(["cat"], ws, limits=SMALL, stdin="in").stdout == "in"
    assert len(os.listdir("/proc/self/fd")) <= fds + 10


def test_docker__bad_requests_are_invalid_arguments(box, ws, tmp_path):
    for argv in ([], "ls", ["ls", "a\x00b"], [1]):
        with pytest.raises(InvalidArgument):
            box.run(argv, ws)
    with pytest.raises(InvalidArgument):
        box.run(["ls"], tmp_path / "missing")
    with pytest.raises(InvalidArgument):
        box.run(["ls"], ws, env={"BAD NAME": "x"})
    with pytest.raises(InvalidArgument):
        DockerSandbox(uid=0)


def test_docker__chosen_by_environment_and_runs_the_test_pipeline(box, ws, tmp_path, monkeypatch):
    """COMPANYSIM_SANDBOX=docker routes the merge-request pipeline (pytest of a repository) into containers."""
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "docker")
    monkeypatch.setitem(registry._INSTANCES, "docker", box)
    assert get_sandbox() is box and get_sandbox("docker") is box
    (ws / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (ws / "test_bad.py").write_text("def test_bad():\n    assert 1 + 1 == 3\n")
    direct = box.run(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"], ws)
    assert direct.exit_code == 1 and "1 failed, 1 passed" in direct.stdout, direct.stdout + direct.stderr
    repo = tmp_path / "repo"
    shutil.copytree(ws, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tests"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    report = pipeline(GitRepo(git_dir=repo / ".git"), head, scratch=tmp_path)
    assert (report["status"], report["counts"]) == ("failed", {"failed": 1, "passed": 1}), report


def test_docker__missing_image_is_reported_with_the_fix(box):
    sandbox = DockerSandbox(image="companysim/sandbox:no-such-tag", uid=UID)
    assert not sandbox.available()
    assert "no-such-tag is missing" in sandbox.reason and "companysim sandbox build-image" in sandbox.reason


def test_docker__no_engine_means_unavailable_and_nothing_runs(tmp_path, monkeypatch):
    sandbox = DockerSandbox(base_url=f"unix://{tmp_path}/no-engine.sock", uid=UID)
    assert not sandbox.available() and "no-engine.sock" in sandbox.reason
    with pytest.raises(SandboxUnavailable) as err:
        sandbox.run(["true"], tmp_path)
    assert isinstance(err.value, AppError) and err.value.code == "unavailable"
    monkeypatch.setitem(registry._INSTANCES, "docker", sandbox)
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "docker")
    with pytest.raises(SandboxUnavailable, match="docker sandbox is unavailable"):
        pipeline(GitRepo(git_dir=tmp_path), "0" * 40)


def test_docker__without_the_sdk_the_backend_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "docker", None)  # import docker now raises ImportError
    sandbox = DockerSandbox(uid=UID)
    assert not sandbox.available() and "docker SDK is not installed" in sandbox.reason
    with pytest.raises(SandboxUnavailable):
        sandbox.run(["true"], tmp_path)


def test_docker__cli_status_reports_why_and_fails_for_the_selected_backend(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from sim.cli.app import app

    monkeypatch.setenv("COMPANYSIM_SANDBOX", "docker")
    result = CliRunner().invoke(app, ["sandbox", "status", "--host", f"unix://{tmp_path}/none.sock"])
    assert result.exit_code == 1, result.output
    assert "'docker' is unavailable" in result.output and "no Docker engine answers" in " ".join(result.output.split())
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "no-such-backend")
    assert CliRunner().invoke(app, ["sandbox", "status"]).exit_code == 2
