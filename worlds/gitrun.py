"""Running the git CLI safely and reproducibly: one fixed environment, hardened config, no shell.

Every git process of the project starts here, whether it builds a world's repositories or serves an agent's
tool call. Why so strict:

- Reproducible: ``LANG=C``, ``TZ=UTC`` and no user or system config mean output and commit hashes never depend
  on the host (a developer's ``~/.gitconfig`` with ``commit.gpgsign`` or ``core.autocrlf`` would change them).
- Safe: the agent is adversarial. Hooks are disabled (``core.hooksPath=/dev/null``), fsmonitor is off, no
  transport may run (``protocol.allow=never``), pathspecs are literal, pagers and editors are ``false``/``cat``
  and nothing goes through a shell. Values are validated by the callers before they reach ``argv``.
- Bounded: a timeout kills a runaway process (a regex that backtracks), and ``limit`` stops reading output
  past a cap instead of buffering a huge diff.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

NO_HOME = "/nonexistent/companysim-git-home"
"""HOME and XDG_CONFIG_HOME for git: a path that does not exist, so no per-user file is ever read."""

GIT_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C",
    "LC_ALL": "C",
    "TZ": "UTC",
    "HOME": NO_HOME,
    "XDG_CONFIG_HOME": NO_HOME,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "false",
    "GIT_ASKPASS": "false",
    "SSH_ASKPASS": "false",
}
"""The whole environment of a git process (nothing is inherited from ours)."""

SAFE_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.pager=cat",
    "core.editor=false",
    "core.sshCommand=false",
    "core.untrackedCache=false",
    "core.quotePath=false",
    "protocol.allow=never",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "color.ui=false",
    "diff.external=",
    "advice.detachedHead=false",
    "init.defaultBranch=main",
)
"""``-c`` settings on every command line: they override anything a repository's own config could say."""

REPO_CONFIG = (
    "[core]\n"
    "\trepositoryformatversion = 0\n"
    "\tfilemode = true\n"
    "\tbare = {bare}\n"
    "\tlogallrefupdates = false\n"
    "\tautocrlf = false\n"
    "\thooksPath = /dev/null\n"
    "\tfsmonitor = false\n"
    "[gc]\n"
    "\tauto = 0\n"
)
"""The exact config file of every repository we create; tools restore it if anything changed it."""

DEFAULT_TIMEOUT = 30.0


class GitCommandError(Exception):
    """A git process failed (non-zero exit) or ran out of time.

    Attributes:
        returncode: The exit status (-1 on timeout).
        stderr: What git printed on stderr (decoded, trimmed).
    """

    def __init__(self, returncode: int, stderr: str) -> None:
        super().__init__(f"git exited {returncode}: {stderr}")
        self.returncode = returncode
        self.stderr = stderr


def git_argv(repo: Path, args: Sequence[str]) -> list[str]:
    """The full argv: ``git -C <repo> -c ... <args>``; ``safe.directory`` names only this repository."""
    argv = ["git", "-C", str(repo), "-c", f"safe.directory={repo}"]
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    return argv + list(args)


def run_git(
    repo: Path,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    ok_codes: tuple[int, ...] = (0,),
) -> tuple[int, bytes]:
    """Run git in ``repo``; returns (exit code, stdout).

    Raises:
        GitCommandError: the exit code is not in ``ok_codes``, or the process timed out (it is killed).
    """
    full_env = {**GIT_ENV, **(env or {})}
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv, validated values, no shell
            git_argv(repo, args), input=input, capture_output=True, env=full_env, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise GitCommandError(-1, f"timed out after {timeout:g} s") from None
    if proc.returncode not in ok_codes:
        raise GitCommandError(proc.returncode, proc.stderr.decode("utf-8", "replace").strip()[:2000])
    return proc.returncode, proc.stdout


def git(repo: Path, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None) -> bytes:
    """Run git in ``repo`` and return stdout; any failure raises GitCommandError."""
    return run_git(repo, args, input=input, env=env)[1]


def git_capped(
    repo: Path, args: Sequence[str], limit: int, *, timeout: float = DEFAULT_TIMEOUT, ok_codes: tuple[int, ...] = (0,)
) -> tuple[bytes, bool]:
    """Run git and read at most ``limit`` bytes of stdout; returns (output, whether it was cut).

    Past the cap the process is killed instead of buffered: a diff of a huge generated file costs no memory.

    Raises:
        GitCommandError: the process failed before the cap was reached, or timed out.
    """
    proc = subprocess.Popen(  # noqa: S603 - fixed argv, validated values, no shell
        git_argv(repo, args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(GIT_ENV),
    )
    assert proc.stdout is not None and proc.stderr is not None
    chunks: list[bytes] = []
    size = 0
    cut = False
    try:
        while size <= limit:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            cut = True
            proc.kill()
        err = proc.stderr.read()
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise GitCommandError(-1, f"timed out after {timeout:g} s") from None
    finally:
        proc.stdout.close()
        proc.stderr.close()
    if not cut and code not in ok_codes:
        raise GitCommandError(code, err.decode("utf-8", "replace").strip()[:2000])
    return b"".join(chunks)[:limit], cut


def write_repo_config(git_dir: Path, bare: bool) -> None:
    """Write the fixed config of a repository (see ``REPO_CONFIG``)."""
    (git_dir / "config").write_text(REPO_CONFIG.format(bare="true" if bare else "false"), encoding="ascii")


def ensure_repo_config(git_dir: Path) -> bool:
    """Restore the fixed config if something (code run in a sandbox) changed it; returns whether it did.

    ``-c`` overrides cover the dangerous keys we know; restoring the whole file also removes the ones we do
    not (filter drivers, aliases, url rewrites), so a planted config never reaches a later git call.
    """
    path = git_dir / "config"
    want = REPO_CONFIG.format(bare="false").encode("ascii")
    try:
        if path.read_bytes() == want and not path.is_symlink():
            return False
    except OSError:
        pass
    if path.is_symlink() or path.is_dir():
        path.unlink() if path.is_symlink() else os.rename(path, git_dir / "config.removed")
    write_repo_config(git_dir, bare=False)
    return True
