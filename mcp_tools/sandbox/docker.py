r"""The Docker backend: one throw-away container per run, on a local engine, through the docker SDK.

Each run is one container of ``IMAGE`` (a debootstrapped Debian with python3 and pytest, see ``image.py``)::

    docker-init (tini, PID 1 of the container's PID namespace)
      sh -c PIN_PID                          # forks the rest with a fixed pid (see PIN_PID), waits for it
        env -u HOSTNAME                      # the engine always adds HOSTNAME; bwrap's environment has none
          prlimit --cpu --as --fsize --core  # per-process rlimits, as bwrap sets them (RLIMIT_NPROC aside)
            argv                             # in /workspace, as the sandbox uid

Container settings: ``network_mode="none"`` (only a loopback interface), read-only root filesystem, the
workspace alone bind-mounted read-write at ``/workspace``, size-capped tmpfs ``/tmp`` and ``/dev/shm``, all
capabilities dropped, ``no-new-privileges``, the engine's default seccomp profile (which also refuses new user
namespaces), a ``pids`` cgroup limit of ``max_processes`` (instead of RLIMIT_NPROC, which counts per host uid
across every concurrent container), a memory cgroup limit with no swap on top of the per-process RLIMIT_AS,
no log driver (output only reaches the caller through the attach stream, never the engine's disk).

Why rlimits through the image's ``prlimit`` and not the engine's ``Ulimits``: an RLIMIT_AS set by the engine
applies to runc's own init, whose Go runtime then fails to start the container. ``prlimit`` sets them just
before the command, exactly like the bwrap launcher, so both backends report the same ``RunResult``s.

Why an init: the kernel ignores SIGXCPU and SIGXFSZ (default action) for a PID-namespace init, so a command
running as PID 1 would not die at its CPU or file-size limit. tini also reaps orphans, and it exits with
``128 + N`` when the command dies from signal N, which is the ``RunResult`` convention.

Output, stdin and the wall clock: the container is attached (``stdin``, ``stdout``, ``stderr``, raw
multiplexed stream) before it starts, so no output is lost; one ``select`` loop writes stdin (then half-closes
the connection, which closes the container's stdin), demultiplexes the frames into capped ``Stream``s and
watches the deadline. On a wall timeout or an output flood the container is SIGKILLed through the API: its
PID 1 dies and the kernel kills every process in the namespace, daemonised ones included. The container is
removed (``force``) whatever happened; each carries the label ``LABEL`` so leftovers can be found.

Ownership: as root, the workspace tree is ``lchown``-ed to the sandbox uid (64001) before the run, as bwrap
does, so the unprivileged code can write it and root keeps full access. As a normal user (in the ``docker``
group) the container runs as the caller's own uid and gid, so everything it writes stays the caller's.

The engine must run on this machine: bind mounts name host paths. The availability probe checks that a file
written in a probe workspace reaches the host.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

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
from mcp_tools.sandbox.bwrap import FILE_SIZE_MARKERS, MEMORY_MARKERS
from mcp_tools.sandbox.engine import API_TIMEOUT, IMAGE, LABEL, SANDBOX_UID, connect, docker_host, image_present
from mcp_tools.sandbox.limits import MIB, Limits
from mcp_tools.sandbox.pump import CHUNK, EXIT_GRACE_SECONDS, Stream

HOSTNAME = "sandbox"
MEMORY_HEADROOM_MB = 64
"""Memory cgroup allowance above RLIMIT_AS and the two tmpfs mounts: tini, page cache, kernel structures."""
FRAME_HEADER = struct.Struct(">BxxxL")
"""The attach stream's frame header without a TTY: stream (1 stdout, 2 stderr), 3 padding bytes, length."""
STDOUT, STDERR = 1, 2
PINNED_PID = 32
PIN_PID = (
    f'n=0; while [ "$n" -lt {PINNED_PID - 1} ]; do (:) & n=$!; wait "$n"; done;'
    ' exec 3<&0 4>&2 2>/dev/null; "$@" <&3 2>&4 3<&- 4>&- & wait $!'
)
"""Run by ``sh`` under tini: use up pids until the next is ``PINNED_PID``, then run the command as a child.

runc's init starts a varying number of threads in the container's PID namespace before tini, so the
command's pid would vary between runs (6 or 7); bwrap's is fixed, and a ``RunResult`` must not depend on
the run. Empty subshells are cheap forks, reaped one by one (the pids cgroup counts zombies). The command
runs in the background (so it gets the pinned pid) with the real stdin (dash gives background jobs
/dev/null) and stderr (the shell's own, which would report a killed job, goes to /dev/null); ``wait``
passes its status on (``128 + N`` when signal N killed it), and tini passes that on in turn.
"""
PROBE_FILE = "probe"
PROBE_SCRIPT = f"id -u && echo ok > {PROBE_FILE}"


def _now() -> float:
    return time.monotonic()  # allow-nondeterminism: the wall timeout only decides when to kill; never recorded


def engine_errors() -> tuple[type[BaseException], ...]:
    """The exceptions an engine call can raise: socket and HTTP failures, and the SDK's own (when installed)."""
    try:
        from docker.errors import DockerException  # type: ignore[import-untyped]  # optional, untyped
    except ImportError:
        return (OSError,)
    return (OSError, DockerException)


class DockerSandbox(Sandbox):
    """Runs commands in a fresh, locked-down container per run; the same contract as ``BwrapSandbox``."""

    name = "docker"

    def __init__(self, *, base_url: str | None = None, image: str = IMAGE, uid: int = SANDBOX_UID) -> None:
        """Choose the engine, the image and the sandbox identity.

        Args:
            base_url: The engine (default: ``$COMPANYSIM_DOCKER_HOST``, else ``$DOCKER_HOST``, else the SDK's
                default socket). It must run on this machine: the workspace is bind-mounted by host path.
            image: The image tag to run (built by ``companysim sandbox build-image``).
            uid: The uid (and gid) code runs as when this process is root. Unlike bwrap, concurrent runs may
                share it: processes are limited per container by the pids cgroup, not per uid.
        """
        if uid <= 0:
            raise InvalidArgument("the sandbox uid must be positive: code never runs as root")
        self.base_url = base_url
        self.image = image
        self.uid = uid
        self.gid = uid
        self._api: Any = None

    @property
    def where(self) -> str:
        """The engine address, for messages."""
        return self.base_url or docker_host() or "the default socket (unix:///var/run/docker.sock)"

    def _client(self) -> Any:
        if self._api is None:
            self._api = connect(self.base_url)
        return self._api

    def _probe(self) -> tuple[bool, str]:
        """The SDK, the engine, the image, then a real run of ``id -u`` that writes a file."""
        if self.effective_uid == 0:
            return False, "sandboxed code would run as uid 0"
        try:
            api = self._client()
            api.ping()
            present = image_present(api, self.image)
        except SandboxUnavailable as exc:
            return False, str(exc)
        except engine_errors() as exc:
            return False, f"the Docker engine at {self.where} does not answer: {_first_line(exc)}"
        if not present:
            return False, (
                f"the image {self.image} is missing from the engine at {self.where}; "
                "build it with `companysim sandbox build-image`"
            )
        failures: tuple[type[BaseException], ...] = (SandboxUnavailable, *engine_errors())
        with tempfile.TemporaryDirectory(prefix="sandbox-probe-") as tmp:
            try:
                result = self._run_checked(["sh", "-c", PROBE_SCRIPT], Path(tmp), Limits(wall_seconds=30), None, b"")
            except failures as exc:
                return False, f"a probe container failed to run on {self.where}: {_first_line(exc)}"
            if result.exit_code != 0 or result.stdout.strip() != str(self.effective_uid):
                detail = (result.stderr or result.stdout).strip()[:500]
                return False, f"docker probe failed (exit {result.exit_code}): {detail}"
            if not (Path(tmp) / PROBE_FILE).is_file():
                return False, (
                    f"the engine at {self.where} does not see this machine's files (a file written in the "
                    "workspace did not arrive); the Docker sandbox needs an engine on the same host"
                )
        return True, ""

    def _machinery_errors(self) -> tuple[type[BaseException], ...]:
        """The engine failing mid-run (API errors, a dropped connection)."""
        return engine_errors()

    def _run_checked(
        self, argv: list[str], workspace: Path, limits: Limits, env: Mapping[str, str] | None, stdin: bytes
    ) -> RunResult:
        api = self._client()
        if self.runs_as_root:
            chown_tree(workspace, self.uid, self.gid)
        container = api.create_container(
            self.image,
            command=command(argv, limits),
            user=f"{self.effective_uid}:{self.effective_gid}",
            working_dir=WORKSPACE,
            environment=[f"{key}={value}" for key, value in environment(env).items()],
            hostname=HOSTNAME,
            labels={LABEL: "run"},
            stdin_open=bool(stdin),
            network_disabled=True,
            host_config=self._host_config(api, workspace, limits),
        )["Id"]
        try:
            return self._attached_run(api, container, stdin, limits)
        finally:
            _remove(api, container)

    def _host_config(self, api: Any, workspace: Path, limits: Limits) -> Any:
        from docker.types import LogConfig, Mount  # type: ignore[import-untyped]  # optional, untyped

        memory = (limits.memory_mb + 2 * limits.tmp_mb + MEMORY_HEADROOM_MB) * MIB
        return api.create_host_config(
            # A structured bind mount: a missing source is an error (a "binds" entry would create it).
            mounts=[Mount(WORKSPACE, str(workspace), type="bind", read_only=False, propagation="rprivate")],
            network_mode="none",
            read_only=True,
            init=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=limits.max_processes,
            mem_limit=memory,
            memswap_limit=memory,  # no swap beyond the memory limit
            shm_size=limits.tmp_mb * MIB,
            # The sandbox's own size-capped tmpfs, not a host temp path:
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777"},  # noqa: S108
            ipc_mode="private",
            log_config=LogConfig(type="none"),
        )

    def _attached_run(self, api: Any, container: str, stdin: bytes, limits: Limits) -> RunResult:
        params = {"stdin": int(bool(stdin)), "stdout": 1, "stderr": 1, "stream": 1, "logs": 0}
        raw = api.attach_socket(container, params=params)
        killer = _Killer(api, container)
        try:
            sock = _plain_socket(raw)
            api.start(container)
            deadline = _now() + limits.wall_seconds
            out, err, stopped = drive(
                sock,
                stdin,
                keep=limits.max_output_bytes,
                flood_bytes=limits.flood_bytes,
                deadline=deadline,
                kill=killer,
                half_close=bool(stdin),
            )
        finally:
            _close(raw)
            killer.join()
        if stopped is None:
            # Output ends when the last holder of stdout and stderr is gone; code that closed both keeps running.
            try:
                code = int(api.wait(container, timeout=max(1.0, deadline - _now()))["StatusCode"])
            except engine_errors():  # a read timeout, or an engine failure (then removal fails and says so)
                killer()
                killer.join()
                stopped = "timeout"
        if stopped is not None:
            code, oom = -signal.SIGKILL, False
        else:
            # The memory cgroup kills without a trace in the output; the engine records it (failed runs only).
            oom = code != 0 and bool(api.inspect_container(container)["State"].get("OOMKilled"))
        return _result(code, out, err, stopped, oom=oom)


class _Killer:
    """SIGKILLs the container from a second thread, once, while the caller keeps reading its output.

    The engine's kill call returns only when the container has exited, and a container exits only when its
    output has been copied out; a kill made from the reading thread would wait for the reader (the API timeout).
    """

    def __init__(self, api: Any, container: str) -> None:
        self.api = api
        self.container = container
        self.thread: threading.Thread | None = None

    def __call__(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._kill, name="sandbox-kill", daemon=True)
            self.thread.start()

    def _kill(self) -> None:
        with contextlib.suppress(*engine_errors()):  # already gone: nothing to kill; removal forces it anyway
            self.api.kill(self.container, signal="SIGKILL")

    def join(self) -> None:
        """Wait for the kill call (it returns once the container is down, or at the API timeout)."""
        if self.thread is not None:
            self.thread.join(API_TIMEOUT)


def command(argv: list[str], limits: Limits) -> list[str]:
    """The container's command: pin the pid, drop the engine's HOSTNAME variable, set the rlimits, run argv.

    RLIMIT_NPROC is left out: it counts every process of the uid on the host, across containers; the pids
    cgroup (``max_processes``) limits each container on its own.
    """
    rlimits = [arg for arg in limits.prlimit_args() if not arg.startswith("--nproc=")]
    return [
        "/bin/sh",
        "-c",
        PIN_PID,
        "sandbox",
        "/usr/bin/env",
        "-u",
        "HOSTNAME",
        "/usr/bin/prlimit",
        *rlimits,
        "--",
        *argv,
    ]


def environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The sandbox environment: bwrap's, including the ``PWD`` bwrap sets when it changes to the workspace."""
    return dict(sorted({**sandbox_env(env), "PWD": WORKSPACE}.items()))


def drive(
    sock: socket.socket,
    stdin: bytes,
    *,
    keep: int,
    flood_bytes: int,
    deadline: float,
    kill: Callable[[], None],
    half_close: bool,
) -> tuple[Stream, Stream, str | None]:
    """Feed stdin and read the multiplexed output of an attached container until it ends; kill on limits.

    Args:
        sock: The raw attach connection (a plain socket; the container started after it was attached).
        stdin: Bytes for the container's standard input.
        keep: Bytes kept per output stream.
        flood_bytes: Bytes one stream may produce before the container is killed; counting stops there, so
            the reported omitted count is exact and does not depend on timing.
        deadline: When the wall-clock budget runs out (a ``time.monotonic`` value).
        kill: SIGKILLs the container (every process in it).
        half_close: Whether stdin is attached and must be closed (by shutting down the write side) when fed.

    Returns:
        stdout, stderr, and why the run was stopped (``timeout``, ``output``) or None.
    """
    streams = {STDOUT: Stream(), STDERR: Stream()}
    stopped: str | None = None
    grace: float | None = None
    pending = memoryview(stdin)
    buffer = bytearray()
    sock.setblocking(False)
    if half_close and not pending:
        _shutdown_write(sock)
    while True:
        now = _now()
        if stopped is None and now >= deadline:
            kill()
            stopped = "timeout"
        if stopped is not None and grace is None:
            grace = now + EXIT_GRACE_SECONDS
        if grace is not None and now >= grace:
            break
        limit = grace if grace is not None else deadline
        readable, writable, _ = select.select([sock], [sock] if pending else [], [], max(0.0, limit - now))
        if writable and pending:
            pending = _send(sock, pending)
        if not readable:
            continue
        try:
            chunk = sock.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            continue
        except ConnectionError:
            chunk = b""
        if not chunk:
            break  # every process holding the container's stdout and stderr is gone
        buffer += chunk
        for kind, payload in _frames(buffer):
            stream = streams.get(kind)
            if stream is not None and not stream.cut and _take(stream, payload, keep, flood_bytes) and not stopped:
                kill()
                stopped = "output"
    return streams[STDOUT], streams[STDERR], stopped


def _send(sock: socket.socket, pending: memoryview) -> memoryview:
    """Write what the connection takes; half-close once everything is written or the reader went away."""
    try:
        pending = pending[sock.send(pending[:CHUNK]) :]
    except (BlockingIOError, InterruptedError):
        return pending
    except ConnectionError:
        pending = pending[:0]
    if not pending:
        _shutdown_write(sock)
    return pending


def _shutdown_write(sock: socket.socket) -> None:
    """End the container's stdin: the engine closes it when the attach connection's write side closes."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def _frames(buffer: bytearray) -> Iterator[tuple[int, bytes]]:
    """Complete frames from the front of ``buffer`` (consumed); a partial frame stays for the next read."""
    while len(buffer) >= FRAME_HEADER.size:
        kind, size = FRAME_HEADER.unpack_from(buffer)
        end = FRAME_HEADER.size + size
        if len(buffer) < end:
            return
        payload = bytes(buffer[FRAME_HEADER.size : end])
        del buffer[:end]
        yield kind, payload


def _take(stream: Stream, payload: bytes, keep: int, flood_bytes: int) -> bool:
    """Keep the head of ``payload``, count the rest; True when the stream just reached the flood limit."""
    room = keep - len(stream.kept)
    if room > 0:
        stream.kept += payload[:room]
    stream.produced += min(len(payload), flood_bytes - stream.produced)
    stream.cut = stream.produced >= flood_bytes
    return stream.cut


def _plain_socket(raw: Any) -> socket.socket:
    """The socket under the SDK's attach object (a ``SocketIO`` for unix and tcp engines)."""
    sock = getattr(raw, "_sock", raw)
    if not isinstance(sock, socket.socket):
        raise SandboxUnavailable(f"unsupported attach connection {type(raw).__name__}: use a unix:// or tcp:// engine")
    return sock


def _close(raw: Any) -> None:
    """Close the attach connection: its HTTP response, the socket object, the socket (the SDK pools none)."""
    response = getattr(raw, "_response", None)
    sock = getattr(raw, "_sock", raw)
    for closable in (response, raw, sock):
        if closable is not None:
            with contextlib.suppress(OSError, ValueError):  # already closed through another of them
                closable.close()


def _remove(api: Any, container: str) -> None:
    """Remove the container (killing it if it still runs); a failure here is an engine failure."""
    from docker.errors import NotFound

    try:
        api.remove_container(container, force=True)
    except NotFound:
        return


def _result(code: int, out: Stream, err: Stream, stopped: str | None, *, oom: bool) -> RunResult:
    """Name the limit that ended the run, the way bwrap does, plus the memory cgroup's OOM kill."""
    killed = stopped
    tail = bytes(err.kept[-4096:])
    if killed is None and code != 0:
        if code == 128 + signal.SIGXCPU:
            killed = KILLED_CPU
        elif code == 128 + signal.SIGXFSZ or any(m in tail for m in FILE_SIZE_MARKERS):
            killed = KILLED_FILE_SIZE
        elif oom or any(m in tail for m in MEMORY_MARKERS):
            killed = KILLED_MEMORY
    return RunResult(
        exit_code=code,
        stdout=render_output(bytes(out.kept), out.produced, killed=out.cut),
        stderr=render_output(bytes(err.kept), err.produced, killed=err.cut),
        timed_out=stopped == "timeout",
        killed_by=killed,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
