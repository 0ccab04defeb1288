r"""The bubblewrap backend: unprivileged user namespaces, no network, a read-only system, rlimits.

The launch chain for one run when the host process is root (as a normal user, only the last two)::

    setpriv --pdeathsig SIGKILL -- unshare --pid --mount --kill-child -- \  # a PID ns that reaps everything
      sh -c 'mount tmpfs on /mnt; mount --bind WS /mnt/workspace; exec' \   # stage the workspace
      setpriv --reuid U --regid G --clear-groups --no-new-privs -- \  # drop to the sandbox uid
        prlimit --cpu --as --nproc --fsize --core -- \                 # limits, inherited by everything below
          bwrap --unshare-all --disable-userns --cap-drop ALL ... -- argv  # namespaces and mounts

Inside: ``/usr`` (and the ``/bin``, ``/lib*`` links) read-only, a synthetic ``/etc`` (passwd, group, hosts,
nsswitch, the loader cache and ``/etc/alternatives`` only), fresh ``/proc`` and ``/dev``, size-capped tmpfs
``/tmp`` and ``/dev/shm``, the workspace read-write at ``/workspace``, everything else absent. The root and
``/dev`` are remounted read-only. Only a loopback interface exists, so no network and no DNS. The process runs
as the sandbox uid (never 0), with no capabilities, no new privileges and no nested user namespaces.

Workspace ownership: when the host runs as root, the workspace tree is ``lchown``-ed to the sandbox uid before
each run so the unprivileged code can write it; root keeps full access. The workspace is first bound at
``/mnt/workspace`` in the run's private mount namespace, so its host path need not be reachable by the sandbox
uid (pytest's 0700 temp dirs, /root). As a normal user the workspace path is bound directly.

Killing: on a wall timeout or an output flood the init of the outer PID namespace (bwrap) is SIGKILLed; the
kernel kills and reaps every process inside, then ``unshare`` exits. A normal exit ends the same way: when
the command exits, bwrap exits and its namespaces die with it, background and daemonised children included.
When the host process is not root, the launcher's process group is killed and the run waits (via bwrap's
``--info-fd``) until the sandbox's own PID-namespace init has exited.

RLIMIT_NPROC counts processes per real uid across the host, so concurrent sandboxes must use distinct uids
(``BwrapSandbox(uid=...)``); ``max_processes`` includes the two bwrap processes of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from mcp_tools.errors import InvalidArgument, SandboxUnavailable
from mcp_tools.sandbox.base import (
    KILLED_CPU,
    KILLED_FILE_SIZE,
    KILLED_MEMORY,
    WORKSPACE,
    RunResult,
    Sandbox,
    chown_tree,
    render_output,
    sandbox_env,
)
from mcp_tools.sandbox.limits import MIB, Limits
from mcp_tools.sandbox.pump import FdOnce, Outcome, Stream, await_namespace, pump

DEFAULT_UID = 64000
"""The sandbox uid when neither the constructor nor ``COMPANYSIM_SANDBOX_UID`` names one: a uid owned by no
account, so RLIMIT_NPROC counts only sandboxed processes and nothing else on the host can be signalled."""
TOOL_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("/etc/alternatives", "/etc/ld.so.cache")
"""Host /etc entries made visible: the loader cache and the alternatives links (``awk``, ``editor``)."""
MEMORY_MARKERS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")
FILE_SIZE_MARKERS = (b"File too large",)
STAGING_DIR = "/mnt"
STAGED_WORKSPACE = f"{STAGING_DIR}/workspace"
STAGE_SCRIPT = (
    f"mount -t tmpfs -o size=64k,mode=0755 sandbox-stage {STAGING_DIR} && mkdir {STAGED_WORKSPACE}"
    f' && mount --bind -- "$1" {STAGED_WORKSPACE} && shift && exec "$@"'
)
"""Run by ``sh`` as root inside the run's private mount namespace: ``$1`` is the workspace, the rest the command."""


def _env_uid() -> int:
    raw = os.environ.get("COMPANYSIM_SANDBOX_UID", "")
    return int(raw) if raw.isdigit() else DEFAULT_UID


class BwrapSandbox(Sandbox):
    """Runs commands under bubblewrap as an unprivileged uid, with rlimits and a wall-clock timeout."""

    name = "bwrap"

    def __init__(self, *, uid: int | None = None, gid: int | None = None) -> None:
        """Choose the sandbox identity.

        Args:
            uid: Host uid the sandbox runs as when the host is root (default ``COMPANYSIM_SANDBOX_UID`` or
                64000). Give each concurrent worker its own: process limits are counted per uid.
            gid: Host gid (default: the uid).
        """
        self.uid = _env_uid() if uid is None else uid
        self.gid = self.uid if gid is None else gid
        if self.uid <= 0 or self.gid <= 0:
            raise InvalidArgument("the sandbox uid and gid must be positive: code never runs as root")

    def _probe(self) -> tuple[bool, str]:
        tools = ("bwrap", "prlimit", "setpriv", "unshare", "sh", "mount") if self.runs_as_root else ("bwrap", "prlimit")
        missing = [tool for tool in tools if shutil.which(tool, path=TOOL_PATH) is None]
        if missing:
            return False, f"{' and '.join(missing)} not found; install the apt packages bubblewrap and util-linux"
        if not hasattr(os, "pidfd_open"):
            return False, "os.pidfd_open is missing (needs Linux >= 5.3)"
        if self.effective_uid == 0:
            return False, "sandboxed code would run as uid 0"
        with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as tmp:
            try:
                result = self._run_checked(["id", "-u"], Path(tmp), Limits(wall_seconds=10), None, b"")
            except (OSError, subprocess.SubprocessError) as exc:
                return False, f"bwrap could not start: {exc}"
        if result.exit_code != 0 or result.stdout.strip() != str(self.effective_uid):
            detail = (result.stderr or result.stdout).strip()[:500]
            return False, f"bwrap probe failed (exit {result.exit_code}): {detail}"
        return True, ""

    def _machinery_errors(self) -> tuple[type[BaseException], ...]:
        """Bubblewrap and its launchers failing to start (a missing tool, a refused namespace)."""
        return (OSError, subprocess.SubprocessError)

    def _run_checked(
        self, argv: list[str], workspace: Path, limits: Limits, env: Mapping[str, str] | None, stdin: bytes
    ) -> RunResult:
        if self.runs_as_root:
            chown_tree(workspace, self.uid, self.gid)
        with contextlib.ExitStack() as stack:
            etc = {path: stack.enter_context(_data_fd(text)) for path, text in self._etc_files().items()}
            root = self.runs_as_root
            source = STAGED_WORKSPACE if root else str(workspace)
            sandbox = [_tool("bwrap"), *self._bwrap_args(source, etc, limits, env), "--", *argv]
            info_read = info_write = -1
            if root:
                prefix = self._root_prefix(workspace)
                launcher = [*prefix, _tool("prlimit"), *limits.prlimit_args(), "--", *sandbox]
            else:  # bwrap reports its namespace init's pid, to wait for after a kill
                info_read, info_write = os.pipe()
                stack.callback(os.close, info_read)
                write_end = stack.enter_context(contextlib.closing(FdOnce(info_write)))
                launcher = [_tool("prlimit"), *limits.prlimit_args(), "--", sandbox[0], "--info-fd"]
                launcher += [str(info_write), *sandbox[1:]]
            proc = subprocess.Popen(  # noqa: S603 - argv is passed as a list to a fixed launcher, no shell
                launcher,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(*etc.values(), *([] if root else [info_write])),
                cwd="/",
                env={"PATH": TOOL_PATH, "LANG": "C"},
                start_new_session=True,
                umask=0o022,
            )
            if not root:
                write_end.close()  # only bwrap holds it now
            outcome = pump(
                proc,
                stdin,
                keep=limits.max_output_bytes,
                flood_bytes=limits.flood_bytes,
                wall_seconds=limits.wall_seconds,
                kill=lambda: _kill_namespace(proc.pid) if root else _kill_group(proc.pid),
            )
            if not root:
                await_namespace(info_read, self.effective_uid)
        return _result(outcome, limits, root=self.runs_as_root)

    def _root_prefix(self, workspace: Path) -> list[str]:
        """As root: private PID and mount namespaces, the workspace staged, then the drop to the sandbox uid.

        bwrap's monitor exits as soon as the command does, leaving its namespace init to be reaped by the
        host's init; a zombie there still counts against RLIMIT_NPROC, and containers often run an init that
        never reaps. Running bwrap as init of an ``unshare --pid`` namespace makes the kernel reap the whole
        tree when bwrap exits, so ``unshare`` returns only when nothing of the run is left. ``--pdeathsig``
        and ``--kill-child`` chain the host process's death down to bwrap (whose ``--die-with-parent`` goes on).

        Unprivileged bwrap can only bind paths the sandbox uid can walk to, and workspaces often live under
        0700 directories (``/root``, pytest's temp root). So, still root, in the private mount namespace, a
        small tmpfs goes over ``/mnt`` and the workspace is bound at ``/mnt/workspace`` (the host's mount table
        never changes).
        """
        setpriv = _tool("setpriv")
        return [
            *(setpriv, "--pdeathsig", "SIGKILL", "--"),
            *(_tool("unshare"), "--pid", "--mount", "--propagation", "private", "--kill-child=SIGKILL", "--"),
            *(_tool("sh"), "-c", STAGE_SCRIPT, "stage", str(workspace)),
            *(setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--no-new-privs"),
            *("--pdeathsig", "SIGKILL", "--"),
        ]

    def _etc_files(self) -> dict[str, str]:
        """Synthetic /etc files: the sandbox user's name, loopback-only hosts, files-only name lookup."""
        uid, gid = self.effective_uid, (self.gid if self.runs_as_root else os.getgid())
        return {
            "/etc/passwd": (
                f"sandbox:x:{uid}:{gid}:sandbox:/tmp:/bin/sh\n"  # noqa: S108 - the sandbox's own private /tmp
                "nobody:x:65534:65534::/nonexistent:/bin/false\n"
            ),
            "/etc/group": f"sandbox:x:{gid}:\nnogroup:x:65534:\n",
            "/etc/hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
            "/etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
        }

    def _bwrap_args(
        self, workspace: str, etc: Mapping[str, int], limits: Limits, env: Mapping[str, str] | None
    ) -> list[str]:
        args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
        args += ["--hostname", "sandbox", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_DIRS:
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        for path in ETC_FILES:
            args += ["--ro-bind-try", path, path]
        for path, fd in etc.items():
            args += ["--perms", "0444", "--ro-bind-data", str(fd), path]
        tmp_bytes = str(limits.tmp_mb * MIB)
        # The sandbox's own private, size-capped tmpfs mounts, not host temp paths:
        args += ["--proc", "/proc", "--dev", "/dev", "--size", tmp_bytes, "--tmpfs", "/tmp"]  # noqa: S108
        args += ["--size", tmp_bytes, "--tmpfs", "/dev/shm", "--bind", workspace, WORKSPACE]  # noqa: S108
        args += ["--chdir", WORKSPACE, "--remount-ro", "/", "--remount-ro", "/dev", "--clearenv"]
        for key, value in sandbox_env(env).items():
            args += ["--setenv", key, value]
        return args


def _tool(name: str) -> str:
    path = shutil.which(name, path=TOOL_PATH)
    if path is None:
        raise SandboxUnavailable(f"{name} not found on {TOOL_PATH}")
    return path


@contextlib.contextmanager
def _data_fd(text: str) -> Iterator[int]:
    """A pipe already holding ``text`` (small: fits the pipe buffer), for bwrap's ``--ro-bind-data``."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, text.encode("utf-8"))
    finally:
        os.close(write_end)
    try:
        yield read_end
    finally:
        os.close(read_end)


def _kill_namespace(pid: int) -> None:
    """Kill the init of the run's PID namespace (the child of ``unshare``): the kernel kills and reaps the rest.

    ``unshare`` itself is left alive to wait for it, so its exit marks the moment nothing is left; if its child
    cannot be found (not forked yet), the whole process group is killed instead.
    """
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
            pids = [int(p) for p in children.read().split()]
    except (OSError, ValueError):
        pids = []
    for child in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    if not pids:
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    """SIGKILL the launcher's process group; the PID namespace takes everything inside down with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _strip_launcher_note(stream: Stream) -> None:
    """Drop ``unshare``'s complaint that it could not re-raise SIGKILL on itself (printed after our kill)."""
    kept = stream.kept
    start = kept.rfind(b"\n", 0, len(kept) - 1) + 1
    if kept.endswith(b"\n") and kept.startswith(b"unshare: ", start) and stream.produced == len(kept):
        del kept[start:]
        stream.produced = len(kept)


def _result(outcome: Outcome, limits: Limits, *, root: bool) -> RunResult:
    killed = outcome.stopped
    code = outcome.returncode
    if killed is not None:
        code = -signal.SIGKILL  # what the host did, whatever the launcher made of it
        if root:
            _strip_launcher_note(outcome.stderr)
    tail = bytes(outcome.stderr.kept[-4096:])
    if killed is None and code != 0:
        if code == 128 + signal.SIGXCPU or (code == 128 + signal.SIGKILL and outcome.cpu_seconds >= limits.cpu_seconds):
            killed = KILLED_CPU
        elif code == 128 + signal.SIGXFSZ or any(m in tail for m in FILE_SIZE_MARKERS):
            killed = KILLED_FILE_SIZE
        elif any(m in tail for m in MEMORY_MARKERS):
            killed = KILLED_MEMORY
    return RunResult(
        exit_code=code,
        stdout=render_output(bytes(outcome.stdout.kept), outcome.stdout.produced, killed=outcome.stdout.cut),
        stderr=render_output(bytes(outcome.stderr.kept), outcome.stderr.produced, killed=outcome.stderr.cut),
        timed_out=outcome.stopped == "timeout",
        killed_by=killed,
    )
