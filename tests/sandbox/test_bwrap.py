"""The bubblewrap sandbox holds against adversarial code: isolation, limits, cleanup, determinism.

Every test runs real code in a real sandbox under small limits, and afterwards checks that no process of the
sandbox uid is left on the host. Without bwrap (or user namespaces) the tests skip, except under CI=true,
where a missing sandbox is a failure.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from mcp_tools.errors import AppError, InvalidArgument, SandboxUnavailable, UnknownSandbox
from mcp_tools.sandbox import BASE_ENV, BwrapSandbox, Limits, RunResult, get_sandbox, register_sandbox

UNDER_CI = os.environ.get("CI", "").lower() == "true"
UID = 64100 + os.getpid() % 800  # a uid of its own: RLIMIT_NPROC and the leftover scan are per uid
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


@pytest.fixture(scope="module")
def box() -> BwrapSandbox:
    sandbox = BwrapSandbox(uid=UID)
    if not sandbox.available():
        message = f"bubblewrap sandbox unavailable: {sandbox.reason}"
        if UNDER_CI:
            pytest.fail(message + " (CI=true: the sandbox must work here; install bubblewrap)")
        pytest.skip(message)
    return sandbox


@pytest.fixture
def ws(tmp_path: Path, box: BwrapSandbox):
    """A workspace; after the test, nothing of the sandbox uid may still run (not even a zombie)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    yield workspace
    assert _processes_of(box.effective_uid) == []


def run(box: BwrapSandbox, ws: Path, code: str, limits: Limits = SMALL, **kwargs) -> RunResult:
    return box.run(["python3", "-c", code], ws, limits=limits, **kwargs)


def test_bwrap__python_runs_in_workspace_and_results_reach_the_host(box, ws):
    (ws / "data.txt").write_text("from the host")
    code = "import os; print(os.getcwd(), open('data.txt').read()); open('out.txt', 'w').write('from the sandbox')"
    result = run(box, ws, code)
    assert result == RunResult(0, "/workspace from the host\n", "", False, None)
    assert (ws / "out.txt").read_text() == "from the sandbox"
    assert box.run(["cat"], ws, limits=SMALL, stdin="piped in\n").stdout == "piped in\n"


def test_bwrap__runs_unprivileged_with_no_capabilities(box, ws):
    result = box.run(["sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status"], ws)
    lines = result.stdout.split()
    assert lines[0] == lines[1] == str(box.effective_uid) != "0"
    assert lines[2:] == ["CapEff:", "0" * 16, "CapBnd:", "0" * 16, "NoNewPrivs:", "1"]
    nested = box.run(["unshare", "--user", "--map-root-user", "id", "-u"], ws, limits=SMALL)
    assert nested.exit_code != 0 and nested.stdout == ""  # no way back to uid 0 through a new user namespace


def test_bwrap__environment_is_fixed_and_host_variables_do_not_leak(box, ws, monkeypatch):
    monkeypatch.setenv("HOST_SECRET_TOKEN", "canary-env-1234")
    result = box.run(["env"], ws, limits=SMALL, env={"EXTRA": "1"})
    assert dict(line.split("=", 1) for line in result.stdout.splitlines()) == {
        **BASE_ENV,
        "EXTRA": "1",
        "PWD": "/workspace",
    }


def test_bwrap__network_is_refused_even_to_a_host_listener(box, ws):
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


def test_bwrap__host_files_are_invisible(box, ws, tmp_path):
    canary = tmp_path / "outside" / "canary-secret.txt"
    canary.parent.mkdir()
    canary.write_text("canary-file-5678")
    canary.chmod(0o644)
    code = (
        "import os\n"
        f"for p in ({str(canary)!r}, '/root', '/etc/shadow', '/work', '/home', '/var', '/run', '/sys', '/mnt'):\n"
        "    print(p, os.path.exists(p))\n"
        "print(sorted(os.listdir('/')))\n"
        "print(sorted(os.listdir('/etc')))\n"
    )
    result = run(box, ws, code)
    assert result.exit_code == 0, result.stderr
    *probes, root, etc = result.stdout.splitlines()
    assert all(line.endswith(" False") for line in probes), probes
    assert root == str(sorted(["bin", "dev", "etc", "lib", "lib64", "proc", "sbin", "tmp", "usr", "workspace"]))
    assert etc == str(sorted(["alternatives", "group", "hosts", "ld.so.cache", "nsswitch.conf", "passwd"]))
    grep = box.run(["grep", "-rl", "canary-file-5678", "/usr", "/etc", "/tmp", "/workspace"], ws, limits=SMALL)
    assert grep.stdout == ""


def test_bwrap__only_workspace_and_tmp_are_writable(box, ws):
    targets = ["/workspace/ok", "/tmp/ok", "/dev/shm/ok", "/x", "/usr/x", "/etc/passwd", "/etc/x", "/dev/x"]
    targets += ["/proc/sys/kernel/hostname", "/proc/sysrq-trigger"]
    code = (
        "import os\n"
        f"for p in {targets!r}:\n"
        "    try: open(p, 'w').write('x'); print(p, 'written')\n"
        "    except OSError as e: print(p, 'refused')\n"
        "print(sorted(os.listdir('/proc/self/fd')))\n"  # nothing of the launcher leaks in (fds to host dirs)
    )
    result = run(box, ws, code)
    lines = result.stdout.splitlines()
    assert lines[:3] == ["/workspace/ok written", "/tmp/ok written", "/dev/shm/ok written"], result.stderr
    assert all(line.endswith(" refused") for line in lines[3:-1]), lines
    assert lines[-1] == "['0', '1', '2', '3']"  # stdio and listdir's own handle
    assert (ws / "ok").exists()


def test_bwrap__fork_bomb_is_capped_by_the_process_limit(box, ws):
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


def test_bwrap__memory_bomb_is_stopped(box, ws):
    result = run(box, ws, "chunks = []\nwhile True: chunks.append(bytearray(16 * 2**20))")
    assert (result.exit_code, result.killed_by) == (1, "memory")
    assert result.stderr.endswith("MemoryError\n")


def test_bwrap__cpu_loop_is_killed_by_the_cpu_limit(box, ws):
    start = time.monotonic()
    result = run(box, ws, "while True: pass", Limits(cpu_seconds=1, wall_seconds=10))
    assert (result.exit_code, result.killed_by, result.timed_out) == (128 + 24, "cpu", False)  # SIGXCPU
    assert time.monotonic() - start < 5


def test_bwrap__huge_file_is_stopped_at_the_file_size_limit(box, ws):
    result = box.run(["sh", "-c", "head -c 100000000 /dev/zero > big"], ws, limits=SMALL)
    assert (result.exit_code, result.killed_by) == (128 + 25, "file_size")  # SIGXFSZ
    assert (ws / "big").stat().st_size == SMALL.max_file_mb * 2**20
    py = run(box, ws, "open('big2', 'wb').write(bytes(8 * 2**20))")
    assert (py.exit_code, py.killed_by) == (1, "file_size") and "File too large" in py.stderr


def test_bwrap__tmp_is_size_capped(box, ws):
    code = "import os\nfor i in range(100):\n    open(f'/tmp/f{i}', 'wb').write(bytes(3 * 2**20))"
    result = run(box, ws, code, Limits(tmp_mb=8, wall_seconds=5))
    assert result.exit_code == 1 and "No space left on device" in result.stderr


def test_bwrap__sleep_is_killed_by_the_wall_timeout(box, ws):
    start = time.monotonic()
    result = box.run(["sh", "-c", "echo started; sleep 1000"], ws, limits=Limits(wall_seconds=1))
    assert result == RunResult(-9, "started\n", "", True, "timeout")
    assert time.monotonic() - start < 3


def test_bwrap__background_and_daemonised_children_die_with_the_run(box, ws):
    script = "sleep 1000 & (setsid sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & exec >&- 2>&-; sleep 1000"
    result = box.run(["sh", "-c", script], ws, limits=Limits(wall_seconds=1))
    assert result.timed_out
    quick = box.run(["sh", "-c", "sleep 1000 & (setsid sleep 1000 &); echo done"], ws, limits=SMALL)
    assert quick == RunResult(0, "done\n", "", False, None)


def test_bwrap__output_flood_is_truncated_and_stopped(box, ws):
    limits = Limits(max_output_bytes=1000, wall_seconds=10)
    result = box.run(["yes"], ws, limits=limits)
    assert result.killed_by == "output" and not result.timed_out
    assert result.stdout.startswith("y\n" * 500)
    assert result.stdout.endswith(
        f"\n[output truncated: {2**20 - 1000} bytes omitted; output limit exceeded, process killed]"
    )
    small = box.run(["python3", "-c", "print('x' * 5000, end='')"], ws, limits=limits)
    assert small.stdout == "x" * 1000 + "\n[output truncated: 4000 bytes omitted]" and small.killed_by is None


def test_bwrap__same_command_twice_gives_the_same_result(box, ws):
    code = "import os, sys\nprint(os.getpid(), hash('x'), sys.argv, os.uname().nodename)\nprint(list(range(5)))"
    first = run(box, ws, code)
    assert first.exit_code == 0 and "sandbox" in first.stdout
    assert run(box, ws, code) == first
    flood = box.run(["yes", "abc"], ws, limits=Limits(max_output_bytes=100))
    assert box.run(["yes", "abc"], ws, limits=Limits(max_output_bytes=100)) == flood


def test_bwrap__bad_requests_are_invalid_arguments(box, ws, tmp_path):
    for argv in ([], "ls", ["ls", "a\x00b"], [1]):
        with pytest.raises(InvalidArgument):
            box.run(argv, ws)
    with pytest.raises(InvalidArgument):
        box.run(["ls"], tmp_path / "missing")
    with pytest.raises(InvalidArgument):
        box.run(["ls"], ws, env={"BAD NAME": "x"})
    with pytest.raises(InvalidArgument):
        Limits(cpu_seconds=0)


def test_bwrap__selection_by_name_and_environment(monkeypatch):
    monkeypatch.delenv("COMPANYSIM_SANDBOX", raising=False)
    assert isinstance(get_sandbox(), BwrapSandbox) and get_sandbox() is get_sandbox("bwrap")
    monkeypatch.setenv("COMPANYSIM_SANDBOX", "no-such-sandbox")
    with pytest.raises(UnknownSandbox, match="unknown sandbox 'no-such-sandbox'") as err:
        get_sandbox()
    assert err.value.code == "invalid_argument"


def test_bwrap__unavailable_backend_refuses_to_run(tmp_path, monkeypatch):
    monkeypatch.setattr("mcp_tools.sandbox.bwrap.TOOL_PATH", str(tmp_path))  # no bwrap on this path
    sandbox = BwrapSandbox(uid=UID)
    assert not sandbox.available() and "bwrap" in sandbox.reason
    with pytest.raises(SandboxUnavailable) as err:
        sandbox.run(["true"], tmp_path)
    assert isinstance(err.value, AppError) and err.value.code == "unavailable"
    register_sandbox("never", lambda: sandbox)
    assert get_sandbox("never") is sandbox
