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

Two ways in. ``git(path, ...)`` runs on a repository the project wrote itself (world and task bases: nothing an
agent touched). ``GitRepo`` runs on an episode's checkout, whose work tree is agent-writable and therefore
untrusted data: its git directory lives outside the work tree (the sandbox never sees it), every call names
``--git-dir`` and ``--work-tree`` explicitly, ``info/attributes`` in that git directory neutralises every
attribute that could steer git (filters, diff and merge drivers, conversions, export rules), and when this
process is root git runs as an unprivileged uid (``host_git_user``), never as root.
"""

from __future__ import annotations

import functools
import os
import selectors
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Any

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
    "core.attributesFile=/dev/null",
    "core.symlinks=true",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "protocol.file.allow=never",
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
"""The exact config file of every repository we create."""

LOCKED_ATTRIBUTES = (
    "# Written by companysim: the highest-precedence attributes file, so nothing in the work tree can name a\n"
    "# filter, diff or merge driver, a conversion or an export rule for host git.\n"
    "* !filter !diff !merge !text !eol !crlf !ident !working-tree-encoding !export-ignore !export-subst\n"
)
"""``info/attributes`` of every checkout's git directory: unsets what an in-tree ``.gitattributes`` could set."""

DEFAULT_GIT_UID = 64100
"""The uid (and gid) host git runs as on agent-written trees when this process is root: owned by no account and
distinct from the sandbox uids, so no sandboxed process shares it (``COMPANYSIM_GIT_UID`` overrides)."""

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


def git_executable() -> str:
    """The git binary: ``COMPANYSIM_GIT`` when it names an absolute path (an operator's choice), else ``git``."""
    chosen = os.environ.get("COMPANYSIM_GIT", "")
    return chosen if os.path.isabs(chosen) else "git"


def host_git_user() -> tuple[int, int] | None:
    """The (uid, gid) host git drops to on agent-written trees: set when this process is root, else None.

    As a normal user nothing changes (git already runs unprivileged, as that user). ``COMPANYSIM_GIT_UID``
    chooses the uid; 0 or junk falls back to ``DEFAULT_GIT_UID``, since git must never run as root there.
    """
    if os.geteuid() != 0:
        return None
    raw = os.environ.get("COMPANYSIM_GIT_UID", "")
    uid = int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_GIT_UID
    return uid, uid


@functools.cache
def _setpriv() -> str | None:
    return shutil.which("setpriv", path=GIT_ENV["PATH"] + ":/usr/sbin:/sbin")


def _as_user(argv: list[str], user: tuple[int, int] | None) -> tuple[list[str], dict[str, Any]]:
    """``argv`` run as ``user``: through ``setpriv`` when it is installed, else by ``subprocess`` itself.

    Why ``setpriv``: ``subprocess`` cannot use ``vfork`` once it must change the uid, so every call would copy
    the whole page table of this process (tens of milliseconds in a large one); ``setpriv`` drops uid, gid and
    supplementary groups (and with them every capability) in the exec'd child and sets no-new-privileges.
    """
    if user is None:
        return argv, {}
    setpriv = _setpriv()
    if setpriv is None:
        return argv, {"user": user[0], "group": user[1], "extra_groups": []}
    uid, gid = user
    return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs", "--", *argv], {}


def _config_args() -> list[str]:
    out: list[str] = []
    for setting in SAFE_CONFIG:
        out += ["-c", setting]
    return out


def git_argv(repo: Path, args: Sequence[str]) -> list[str]:
    """The full argv on a project-written repository: ``git -C <repo> -c ... <args>``."""
    return [git_executable(), "-C", str(repo), "-c", f"safe.directory={repo}", *_config_args(), *args]


def _run(
    argv: list[str],
    *,
    input: bytes | None,
    env: Mapping[str, str] | None,
    timeout: float,
    ok_codes: tuple[int, ...],
    cwd: Path | None = None,
    user: tuple[int, int] | None = None,
) -> tuple[int, bytes]:
    full_env = {**GIT_ENV, **(env or {})}
    argv, drop = _as_user(argv, user)
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv, validated values, no shell
            argv, input=input, capture_output=True, env=full_env, timeout=timeout, check=False, cwd=cwd, **drop
        )
    except subprocess.TimeoutExpired:
        raise GitCommandError(-1, f"timed out after {timeout:g} s") from None
    if proc.returncode not in ok_codes:
        raise GitCommandError(proc.returncode, proc.stderr.decode("utf-8", "replace").strip()[:2000])
    return proc.returncode, proc.stdout


def _capped(
    argv: list[str],
    limit: int,
    *,
    timeout: float,
    ok_codes: tuple[int, ...],
    cwd: Path | None = None,
    user: tuple[int, int] | None = None,
) -> tuple[bytes, bool]:
    argv, drop = _as_user(argv, user)
    proc = subprocess.Popen(  # noqa: S603 - fixed argv, validated values, no shell
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(GIT_ENV),
        cwd=cwd,
        **drop,
    )
    try:
        out, err = _read_capped(proc, limit, timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise GitCommandError(-1, f"timed out after {timeout:g} s") from None
    finally:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    cut = len(out) > limit
    code = proc.wait()
    if not cut and code not in ok_codes:
        raise GitCommandError(code, err.decode("utf-8", "replace").strip()[:2000])
    return out[:limit], cut


def _read_capped(proc: subprocess.Popen[bytes], limit: int, timeout: float) -> tuple[bytes, bytes]:
    """Read stdout until EOF or just past ``limit`` (then kill), within ``timeout`` seconds in all."""
    assert proc.stdout is not None and proc.stderr is not None
    deadline = monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        err: list[bytes] = []
        open_streams = 2
        while open_streams and size <= limit:
            left = deadline - monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                elif key.fileobj is proc.stdout:
                    chunks.append(chunk)
                    size += len(chunk)
                elif sum(map(len, err)) < 65536:
                    err.append(chunk)
    if size > limit:
        proc.kill()
    return b"".join(chunks), b"".join(err)


def run_git(
    repo: Path,
    args: Sequence[str],
    *,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    ok_codes: tuple[int, ...] = (0,),
) -> tuple[int, bytes]:
    """Run git in the project-written repository ``repo``; returns (exit code, stdout).

    Raises:
        GitCommandError: the exit code is not in ``ok_codes``, or the process timed out (it is killed).
    """
    return _run(git_argv(repo, args), input=input, env=env, timeout=timeout, ok_codes=ok_codes)


def git(repo: Path, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None) -> bytes:
    """Run git in the project-written repository ``repo`` and return stdout; any failure raises GitCommandError."""
    return run_git(repo, args, input=input, env=env)[1]


@dataclass(frozen=True, kw_only=True)
class GitRepo:
    """An episode's repository as host git sees it: a git directory apart from an untrusted work tree.

    Nothing in the work tree decides what git runs or where it writes: the git directory is named explicitly
    (a ``.git`` planted in the tree, a ``commondir``, hooks or config there are never read), attributes are
    locked by ``info/attributes``, config comes only from ``SAFE_CONFIG`` and the git directory's own file, and
    git runs as ``user`` (never root) with the work tree, or else the git directory, as its working directory.

    Attributes:
        git_dir: The repository's git directory (host-owned; never mounted into a sandbox).
        work_tree: The checkout's files (agent-writable), or None for commands that need no work tree.
        user: (uid, gid) git runs as, from ``host_git_user`` (None: as this process).
    """

    git_dir: Path
    work_tree: Path | None = None
    user: tuple[int, int] | None = None

    @property
    def tree(self) -> Path:
        """The work tree (raises when this handle has none)."""
        if self.work_tree is None:
            raise ValueError(f"{self.git_dir} has no work tree")
        return self.work_tree

    def argv(self, args: Sequence[str]) -> list[str]:
        """``git --git-dir=D [--work-tree=W] -c ... <args>``: no discovery, no ``safe.directory`` exception."""
        where = [f"--git-dir={self.git_dir}"]
        if self.work_tree is not None:
            where.append(f"--work-tree={self.work_tree}")
        return [git_executable(), *where, *_config_args(), *args]

    def run(
        self,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        ok_codes: tuple[int, ...] = (0,),
    ) -> tuple[int, bytes]:
        """Run git; returns (exit code, stdout).

        Raises:
            GitCommandError: the exit code is not in ``ok_codes``, or the process timed out (``failure``
                chooses the exact type).
        """
        cwd = self.work_tree if self.work_tree is not None else self.git_dir
        try:
            return _run(
                self.argv(args), input=input, env=env, timeout=timeout, ok_codes=ok_codes, cwd=cwd, user=self.user
            )
        except GitCommandError as exc:
            raise self.failure(exc) from None

    def __call__(self, *args: str, input: bytes | None = None, env: Mapping[str, str] | None = None) -> bytes:
        """Run git and return stdout; any failure raises GitCommandError."""
        return self.run(args, input=input, env=env)[1]

    def capped(
        self, args: Sequence[str], limit: int, *, timeout: float = DEFAULT_TIMEOUT, ok_codes: tuple[int, ...] = (0,)
    ) -> tuple[bytes, bool]:
        """Run git reading at most ``limit`` bytes of stdout (see ``git_capped``)."""
        cwd = self.work_tree if self.work_tree is not None else self.git_dir
        try:
            return _capped(self.argv(args), limit, timeout=timeout, ok_codes=ok_codes, cwd=cwd, user=self.user)
        except GitCommandError as exc:
            raise self.failure(exc) from None

    def failure(self, exc: GitCommandError) -> GitCommandError:
        """The exception a failed call raises (the error itself; a subclass may say it in its own terms)."""
        return exc


def git_capped(
    repo: Path, args: Sequence[str], limit: int, *, timeout: float = DEFAULT_TIMEOUT, ok_codes: tuple[int, ...] = (0,)
) -> tuple[bytes, bool]:
    """Run git and read at most ``limit`` bytes of stdout; returns (output, whether it was cut).

    Past the cap the process is killed instead of buffered: a diff of a huge generated file costs no memory. The
    timeout covers the whole run, reading included, so a git that stops writing cannot hang the caller.

    Raises:
        GitCommandError: the process failed before the cap was reached, or timed out.
    """
    return _capped(git_argv(repo, args), limit, timeout=timeout, ok_codes=ok_codes)


def write_repo_config(git_dir: Path, bare: bool) -> None:
    """Write the fixed config of a repository (see ``REPO_CONFIG``)."""
    (git_dir / "config").write_text(REPO_CONFIG.format(bare="true" if bare else "false"), encoding="ascii")
