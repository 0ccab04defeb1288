"""Resource limits for one sandboxed run, and their translation to ``prlimit`` arguments.

Limits are applied with ``prlimit`` (util-linux) wrapped around the sandbox launcher rather than with a
``preexec_fn``: ``preexec_fn`` is unsafe when the calling process has threads (an MCP server does), while an
``exec`` of ``prlimit`` sets the limits in the child and then execs the launcher, inheriting them downwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_tools.errors import InvalidArgument

MIB = 1024 * 1024
FLOOD_FACTOR = 16
"""A stream that produces ``FLOOD_FACTOR`` times ``max_output_bytes`` (at least 1 MiB) gets the run killed.

Reading and discarding an endless flood (``yes``) would otherwise burn a core until the wall timeout; stopping
at an exact byte count keeps the reported ``omitted`` number deterministic.
"""


@dataclass(frozen=True)
class Limits:
    """What one run may use. Every limit is per run; the defaults suit a unit-test run of a small repo.

    Attributes:
        cpu_seconds: CPU time per process (RLIMIT_CPU); SIGXCPU at the limit, SIGKILL one second later.
        memory_mb: Address space per process (RLIMIT_AS); allocations beyond it fail (MemoryError, ENOMEM).
        max_processes: Processes and threads of the sandbox uid (RLIMIT_NPROC, counted per real uid, which is
            why every concurrent sandbox needs a uid of its own); stops fork bombs.
        max_file_mb: Largest file a process may write (RLIMIT_FSIZE); SIGXFSZ / EFBIG beyond it.
        wall_seconds: Wall-clock budget; the whole sandbox is killed when it runs out.
        max_output_bytes: Bytes of stdout and of stderr kept each; the rest is counted and dropped.
        tmp_mb: Size of the private ``/tmp`` tmpfs (and of ``/dev/shm``); tmpfs pages are memory that RLIMIT_AS
            does not see, so they need a cap of their own.
    """

    cpu_seconds: int = 10
    memory_mb: int = 512
    max_processes: int = 64
    max_file_mb: int = 16
    wall_seconds: float = 20
    max_output_bytes: int = 64_000
    tmp_mb: int = 64

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "memory_mb", "max_processes", "max_file_mb", "max_output_bytes", "tmp_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InvalidArgument(f"Limits.{name} must be a positive integer, got {value!r}")
        wall = self.wall_seconds
        if not isinstance(wall, int | float) or isinstance(wall, bool) or not 0 < wall <= 3600:
            raise InvalidArgument(f"Limits.wall_seconds must be in (0, 3600], got {wall!r}")

    @property
    def flood_bytes(self) -> int:
        """Bytes one stream may produce before the run is killed as an output flood."""
        return max(FLOOD_FACTOR * self.max_output_bytes, MIB)

    def prlimit_args(self) -> list[str]:
        """``prlimit`` options setting soft and hard limits (so the sandboxed code cannot raise them).

        The CPU hard limit is one second above the soft one: the soft limit sends SIGXCPU (a clear cause of
        death), the hard one SIGKILLs a process that ignores it.
        """
        return [
            f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 1}",
            f"--as={self.memory_mb * MIB}",
            f"--nproc={self.max_processes}",
            f"--fsize={self.max_file_mb * MIB}",
            "--core=0",
        ]


DEFAULT_LIMITS = Limits()
