"""Feed stdin, read capped output and enforce the wall clock for one launched sandbox process.

One ``select`` loop over stdin, stdout, stderr and a pidfd of the launcher: no threads, no unbounded buffers.
Output beyond the kept prefix is counted and dropped; a stream that floods past ``flood_bytes`` gets the
sandbox killed, and is read to exactly that many bytes so the reported count does not depend on timing.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CHUNK = 65_536
EXIT_GRACE_SECONDS = 5.0
"""After a kill or an exit, how long to wait for the last output before giving up on the pipes."""
NAMESPACE_EXIT_SECONDS = 5.0


@dataclass
class Stream:
    """What was read from one output pipe."""

    kept: bytearray = field(default_factory=bytearray)
    produced: int = 0
    cut: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a launched process ended."""

    returncode: int
    stdout: Stream
    stderr: Stream
    stopped: str | None
    cpu_seconds: float


def _now() -> float:
    return time.monotonic()  # allow-nondeterminism: the wall timeout only decides when to kill; never recorded


def pump(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    *,
    keep: int,
    flood_bytes: int,
    wall_seconds: float,
    kill: Callable[[], None],
) -> Outcome:
    """Drive ``proc`` to its end and reap it; kill it on timeout or output flood.

    Args:
        proc: A process started with all three standard streams as pipes.
        stdin: Bytes to write to its standard input (then closed).
        keep: Bytes kept per output stream.
        flood_bytes: Bytes a stream may produce before the process is killed.
        wall_seconds: Wall-clock budget from now.
        kill: Kills the process and everything it started.

    Returns:
        The exit status, both streams, why it was stopped (``timeout``, ``output`` or None) and the CPU time
        of the process tree (only used to name the cause of a SIGKILL, never reported).
    """
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    streams = {"stdout": Stream(), "stderr": Stream()}
    stopped: str | None = None
    deadline = _now() + wall_seconds
    grace: float | None = None
    exited = False
    pidfd = os.pidfd_open(proc.pid)
    sel = selectors.DefaultSelector()
    try:
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            os.set_blocking(pipe.fileno(), False)
            sel.register(pipe, selectors.EVENT_READ, name)
        pending = memoryview(stdin)
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE, "stdin")
        else:
            proc.stdin.close()
        while sel.get_map():
            now = _now()
            if stopped is None and not exited and now >= deadline:
                kill()
                stopped = "timeout"
            if (stopped is not None or exited) and grace is None:
                grace = now + EXIT_GRACE_SECONDS
            if grace is not None and now >= grace:
                break
            limit = grace if grace is not None else deadline
            for key, _ in sel.select(max(0.0, limit - now)):
                if key.data == "exit":
                    exited = True
                    sel.unregister(key.fileobj)
                    if pending:  # nobody will read the rest of stdin
                        pending = pending[:0]
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                elif key.data == "stdin" and pending:
                    pending = _feed(proc, pending, sel)
                elif key.data in streams:
                    stream = streams[key.data]
                    if _drain(key, stream, keep, flood_bytes, sel) and stopped is None:
                        kill()
                        stopped = "output"
    finally:
        sel.close()
        os.close(pidfd)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
        if proc.returncode is None and not exited:
            kill()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Outcome(
        returncode=proc.returncode,
        stdout=streams["stdout"],
        stderr=streams["stderr"],
        stopped=stopped,
        cpu_seconds=_cpu(usage),
    )


def _cpu(usage: resource.struct_rusage) -> float:
    return float(usage.ru_utime + usage.ru_stime)


def _feed(proc: subprocess.Popen[bytes], pending: memoryview, sel: selectors.BaseSelector) -> memoryview:
    """Write what the pipe takes; close stdin when done or when the reader went away."""
    assert proc.stdin is not None
    try:
        written = os.write(proc.stdin.fileno(), pending[:CHUNK])
        pending = pending[written:]
    except BlockingIOError:
        return pending
    except (BrokenPipeError, ConnectionResetError):
        pending = pending[:0]
    if not pending:
        sel.unregister(proc.stdin)
        proc.stdin.close()
    return pending


def _drain(
    key: selectors.SelectorKey, stream: Stream, keep: int, flood_bytes: int, sel: selectors.BaseSelector
) -> bool:
    """Read one chunk into ``stream``; True when the stream just reached the flood limit."""
    try:
        chunk = os.read(key.fd, min(CHUNK, flood_bytes - stream.produced))
    except BlockingIOError:
        return False
    if chunk:
        room = keep - len(stream.kept)
        if room > 0:
            stream.kept += chunk[:room]
        stream.produced += len(chunk)
    if not chunk or stream.produced >= flood_bytes:
        sel.unregister(key.fileobj)
        stream.cut = bool(chunk)
        return stream.cut
    return False


class FdOnce:
    """An fd closed at most once (the info pipe's write end is closed early, and again on error paths)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    def close(self) -> None:
        """Close the fd unless already closed."""
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


def await_namespace(info_fd: int, uid: int) -> None:
    """Wait until the sandbox's PID-namespace init, and with it every process inside, is gone.

    After a kill, the launcher dies first and its init child follows through ``--die-with-parent``; the kernel
    kills the rest of the namespace before that init exits. Waiting for it means a returned run has no
    survivors (which also keeps the next run's RLIMIT_NPROC count clean).
    """
    try:
        os.set_blocking(info_fd, False)
        info = json.loads(os.read(info_fd, 4096).decode("utf-8") or "{}")
        child = int(info.get("child-pid", 0))
    except (OSError, ValueError):
        return
    if child <= 0:
        return
    try:
        pidfd = os.pidfd_open(child)
    except OSError:  # already gone
        return
    try:
        if _owner(child) == uid:  # not a recycled pid of some other process
            select.select([pidfd], [], [], NAMESPACE_EXIT_SECONDS)
    finally:
        os.close(pidfd)


def _owner(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None
