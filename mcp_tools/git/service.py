"""Git operations on an episode's checkouts, acting as an Actor.

Every value is validated by ``mcp_tools.git.safety`` before it reaches git; revisions are resolved to full
object ids first; paths go after ``--``. Reads go through git objects when a ref is given and through the
working tree (no symlink followed) when it is not, so the agent sees its own uncommitted edits. Outputs are
sorted and capped: a cut output ends with a ``[... truncated ...]`` marker and sets ``truncated``.

Writes validate everything before touching the repository; a refused call leaves it as it was. Commits use the
actor's name and email from the directory and the simulated clock for both dates, so replays give the same
hashes.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path
from typing import Any

from mcp_tools.base import ToolContext
from mcp_tools.errors import (
    AppError,
    BinaryFile,
    Conflict,
    GitFailed,
    InvalidArgument,
    InvalidPath,
    NotFound,
    TooLarge,
)
from mcp_tools.git import safety, trees
from mcp_tools.git.workspace import Workspace
from worlds.gitrun import GitCommandError, GitRepo
from worlds.rawsql import Sql

MAX_OUTPUT = 30_000
"""Characters of patch, log or file text one call returns; more is cut with a labelled marker."""
MAX_FILE = 1_000_000
"""Largest file read_file / edit_file will load."""
MAX_WRITE = 50_000
"""Largest content (UTF-8 bytes) write_file / edit_file will store."""
MAX_ENTRIES = 2_000
MAX_MATCHES = 200
GREP_TIMEOUT = 10.0
ZERO = "0" * 40


def cap(text: str, label: str, limit: int = MAX_OUTPUT, total: int | None = None) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters with a marker saying what was cut; returns (text, truncated)."""
    if len(text) <= limit and total is None:
        return text, False
    size = f"{total} bytes" if total is not None else f"{len(text)} characters"
    return text[:limit] + f"\n[... {label} truncated: showing {min(limit, len(text))} characters of {size} ...]", True


def _fail(exc: GitCommandError, what: str) -> GitFailed:
    return GitFailed(f"{what}: {exc.stderr.splitlines()[-1] if exc.stderr else 'git failed'}")


def resolve(g: GitRepo, rev: str, kind: str = "commit") -> str:
    """The full object id of a validated revision (peeled to a commit by default).

    Raises:
        InvalidRef: malformed. NotFound: no such ref or commit.
    """
    safety.revision(rev)
    code, out = g.run(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{{kind}}}"], ok_codes=(0, 1, 128)
    )
    if code != 0:
        raise NotFound(f"ref: expected an existing branch, tag or commit; found none called {rev!r}")
    return out.decode().strip()


def current_branch(g: GitRepo) -> str | None:
    """The checked-out branch (read from HEAD in the git directory, no git process), or None when detached."""
    head = (g.git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None


def branch_oid(g: GitRepo, name: str) -> str | None:
    """The commit of local branch ``name`` (validated), or None."""
    safety.ref_name(name, "branch")
    code, out = g.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{name}"], ok_codes=(0, 1, 128))
    return out.decode().strip() if code == 0 else None


def _decode(data: bytes, path: str) -> str:
    if b"\x00" in data[:8000]:
        raise BinaryFile(f"{path} is a binary file; only text files can be shown or edited")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BinaryFile(f"{path} is not UTF-8 text; only text files can be shown or edited") from None


def _kind(mode: int) -> str:
    """What a non-regular file is, in words, for a refusal."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO")):
        if test(mode):
            return name
    return "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special"


def _read_worktree(root: Path, rel: str) -> bytes:
    """A regular file's bytes, opened without following links or blocking, and checked again once open.

    The tree is agent-written: a FIFO, socket or device must be refused, not opened (an open would block or
    touch a device), and the check is repeated on the open descriptor so a swap between the two cannot pass.
    """
    full = safety.on_disk(root, rel)
    st = os.lstat(full)
    if stat.S_ISDIR(st.st_mode):
        raise InvalidPath(f"path: {rel!r} is a directory; use git_tree to list it")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidPath(f"path: {rel!r} is {_kind(st.st_mode)}, not a regular file")
    if st.st_size > MAX_FILE:
        raise TooLarge(f"{rel} is {st.st_size} bytes; files over {MAX_FILE} bytes cannot be read")
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidPath(f"path: {rel!r} is not a regular file")
        data = fh.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise TooLarge(f"{rel} grew past {MAX_FILE} bytes; files that large cannot be read")
    return data


def worktree_bytes(ws: Workspace, repo: str, rel: str) -> bytes:
    """The bytes of a confined working-tree file of ``repo`` (``rel`` already checked by ``safety.path``)."""
    return _read_worktree(ws.repo(repo).tree, rel)


def _read_at(g: GitRepo, oid: str, rel: str) -> bytes:
    out = g("ls-tree", "-z", "--long", oid, "--", rel)
    entry = next((e for e in out.split(b"\x00") if e and e.split(b"\t", 1)[1].decode() == rel), None)
    if entry is None:
        raise NotFound(f"path: no file {rel!r} at {oid[:12]}")
    mode, kind, blob, size = entry.split(b"\t", 1)[0].split()
    if kind != b"blob":
        raise InvalidPath(f"path: {rel!r} is a {kind.decode()}; use git_tree to list it")
    if mode == b"120000":
        raise InvalidPath(f"path: {rel!r} is a symbolic link; links are not followed")
    if int(size) > MAX_FILE:
        raise TooLarge(f"{rel} is {int(size)} bytes; files over {MAX_FILE} bytes cannot be read")
    return g("cat-file", "blob", blob.decode())


# -- read tools -----------------------------------------------------------------------------------------------


def list_repos(ctx: ToolContext, ws: Workspace) -> dict[str, Any]:
    """The episode's repositories with their owning team and, once checked out, the current branch."""
    rows = Sql.of(ctx.session).all(
        "SELECT r.name, t.name, r.default_branch, r.description FROM repositories r"
        " LEFT JOIN teams t ON t.id = r.team_id ORDER BY r.name"
    )
    known = {r[0]: r for r in rows}
    out = []
    for name in ws.names():
        row = known.get(name)
        item: dict[str, Any] = {
            "name": name,
            "team": row[1] if row else None,
            "default_branch": row[2] if row else "main",
            "description": row[3] if row else "",
            "checked_out": ws.is_checked_out(name),
        }
        if item["checked_out"]:
            item["branch"] = current_branch(ws.repo(name))
        out.append(item)
    return {"repos": out}


def status(ws: Workspace, repo: str) -> dict[str, Any]:
    """The current branch, its commit and the uncommitted changes (porcelain codes), sorted by path."""
    g = ws.repo(repo)
    out = g("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    changes = sorted((e[3:].decode("utf-8", "replace"), e[:2].decode()) for e in out.split(b"\x00") if e)
    head = g("rev-parse", "--verify", "HEAD").decode().strip()
    rows = [{"path": p, "status": s} for p, s in changes[:MAX_ENTRIES]]
    return {
        "repo": repo,
        "branch": current_branch(g),
        "head": head,
        "changes": rows,
        "truncated": len(changes) > MAX_ENTRIES,
    }


def tree(ws: Workspace, repo: str, path: str, ref: str | None, recursive: bool) -> dict[str, Any]:
    """Entries under ``path`` at ``ref`` (git objects) or in the working tree (ref None), sorted by path."""
    g = ws.repo(repo)
    rel = safety.path(path, allow_root=True)
    entries: list[dict[str, Any]] = []
    if ref is not None:
        oid = resolve(g, ref)
        args = ["ls-tree", "-z", "--long", *(["-r"] if recursive else []), oid, "--"]
        out = g(*args, *([rel + "/"] if rel else []))
        for e in out.split(b"\x00"):
            if not e:
                continue
            meta, name = e.split(b"\t", 1)
            mode, kind, _, size = meta.split()
            kind_s = "symlink" if mode == b"120000" else {"blob": "file", "tree": "dir"}.get(kind.decode(), "other")
            entries.append(
                {"path": name.decode("utf-8", "replace"), "type": kind_s, "size": None if size == b"-" else int(size)}
            )
        if rel and not entries:
            raise NotFound(f"path: no directory {rel!r} at {ref}")
    else:
        base = safety.on_disk(g.tree, rel)
        if not base.is_dir() or base.is_symlink():
            raise InvalidPath(f"path: {rel!r} is not a directory")
        stack = [base]
        while stack and len(entries) <= MAX_ENTRIES:
            for item in sorted(os.scandir(stack.pop()), key=lambda d: d.name):
                if item.name == ".git" and Path(item.path).parent == g.tree:
                    continue
                what = "symlink" if item.is_symlink() else "dir" if item.is_dir(follow_symlinks=False) else "file"
                st = item.stat(follow_symlinks=False)
                entries.append(
                    {
                        "path": str(Path(item.path).relative_to(g.tree)),
                        "type": what,
                        "size": st.st_size if what == "file" else None,
                    }
                )
                if recursive and what == "dir":
                    stack.append(Path(item.path))
    entries.sort(key=lambda e: e["path"])
    return {
        "repo": repo,
        "ref": ref,
        "path": rel,
        "entries": entries[:MAX_ENTRIES],
        "truncated": len(entries) > MAX_ENTRIES,
    }


def read_file(ws: Workspace, repo: str, path: str, ref: str | None, start_line: int, max_lines: int) -> dict[str, Any]:
    """A text file's lines at ``ref`` or in the working tree; binary files are refused with ``binary_file``."""
    if start_line < 1 or not 1 <= max_lines <= 5000:
        raise InvalidArgument(f"expected start_line >= 1 and max_lines 1-5000; got {start_line}, {max_lines}")
    g = ws.repo(repo)
    rel = safety.path(path)
    data = _read_at(g, resolve(g, ref), rel) if ref is not None else _read_worktree(g.tree, rel)
    lines = _decode(data, rel).splitlines(keepends=True)
    part = "".join(lines[start_line - 1 : start_line - 1 + max_lines])
    content, cut = cap(part, "file")
    more = start_line - 1 + max_lines < len(lines)
    return {
        "repo": repo,
        "path": rel,
        "ref": ref,
        "size": len(data),
        "total_lines": len(lines),
        "start_line": start_line,
        "content": content,
        "truncated": cut or more,
    }


def grep(
    ws: Workspace, repo: str, pattern: str, regex: bool, ignore_case: bool, path_glob: str | None, ref: str | None
) -> dict[str, Any]:
    """Matching lines of tracked text files (``git grep``), filtered by a path glob, at most MAX_MATCHES."""
    g = ws.repo(repo)
    safety.pattern(pattern)
    glob = safety.glob(path_glob) if path_glob is not None else None
    oid = resolve(g, ref) if ref is not None else None
    args = ["grep", "-I", "-n", "-z", "--no-color", "--full-name", "-E" if regex else "-F"]
    args += ["-i"] if ignore_case else []
    args += ["-e", pattern, *([oid] if oid else []), "--"]
    try:
        out, cut = g.capped(args, 400_000, timeout=GREP_TIMEOUT, ok_codes=(0, 1))
    except GitCommandError as exc:
        if exc.returncode == -1:
            raise InvalidArgument("pattern: the search took too long; use a simpler pattern") from None
        raise InvalidArgument(f"pattern: git refused it: {exc.stderr.splitlines()[-1][:200]}") from None
    matches: list[dict[str, Any]] = []
    for line in out.decode("utf-8", "replace").split("\n"):
        fields = line.split("\x00", 2)
        if len(fields) < 3:
            continue
        name = fields[0].removeprefix(f"{oid}:") if oid else fields[0]
        if glob is None or fnmatch.fnmatchcase(name, glob):
            matches.append({"path": name, "line": int(fields[1]), "text": fields[2][:500]})
    matches.sort(key=lambda m: (m["path"], m["line"]))
    return {"repo": repo, "ref": ref, "matches": matches[:MAX_MATCHES], "truncated": cut or len(matches) > MAX_MATCHES}


_LOG_FORMAT = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cI%x1f%s%x1e"


def _commits(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for rec in raw.decode("utf-8", "replace").split("\x1e"):
        f = rec.strip("\n").split("\x1f")
        if len(f) == 7:
            out.append(
                {
                    "commit": f[0],
                    "parents": f[1].split(),
                    "author": f[2],
                    "email": f[3],
                    "authored_at": f[4],
                    "committed_at": f[5],
                    "subject": f[6],
                }
            )
    return out


def log(ws: Workspace, repo: str, ref: str | None, path: str | None, limit: int) -> dict[str, Any]:
    """Commits reachable from ``ref`` (default HEAD), newest first, optionally only those touching ``path``."""
    if not 1 <= limit <= 200:
        raise InvalidArgument(f"limit must be 1-200; got {limit}")
    g = ws.repo(repo)
    oid = resolve(g, ref if ref is not None else "HEAD")
    rel = safety.path(path) if path is not None else None
    raw = g("log", "--no-color", _LOG_FORMAT, f"--max-count={limit + 1}", oid, "--", *([rel] if rel else []))
    commits = _commits(raw)
    return {"repo": repo, "ref": ref or "HEAD", "commits": commits[:limit], "truncated": len(commits) > limit}


def _name_status(raw: bytes) -> list[dict[str, str]]:
    parts = [p.decode("utf-8", "replace") for p in raw.split(b"\x00") if p]
    return sorted(
        ({"status": parts[i], "path": parts[i + 1]} for i in range(0, len(parts) - 1, 2)), key=lambda r: r["path"]
    )


def show(ws: Workspace, repo: str, commit: str) -> dict[str, Any]:
    """One commit: metadata, full message, changed files and the patch (against its first parent)."""
    g = ws.repo(repo)
    oid = resolve(g, commit)
    meta = _commits(g("log", "-1", "--no-color", _LOG_FORMAT, oid, "--"))[0]
    body = g("log", "-1", "--format=%B", oid, "--").decode("utf-8", "replace").rstrip("\n")
    common = ["--no-color", "--no-ext-diff", "--no-textconv", "--diff-merges=first-parent", "--no-renames"]
    files = _name_status(g("show", *common, "--format=", "--name-status", "-z", oid, "--"))
    raw, cut = g.capped(["show", *common, "--format=", "-p", oid, "--"], MAX_OUTPUT * 2)
    patch, trunc = cap(raw.decode("utf-8", "replace"), "patch")
    return {**meta, "repo": repo, "message": body, "files": files, "patch": patch, "truncated": trunc or cut}


def diff(ws: Workspace, repo: str, base: str, head: str | None, path: str | None) -> dict[str, Any]:
    """Changes from ``base`` to ``head`` (a ref) or to the working tree's tracked files (head None)."""
    g = ws.repo(repo)
    a = resolve(g, base)
    b = resolve(g, head) if head is not None else None
    rel = [p for p in [safety.path(path, allow_root=True)] if p] if path else []
    revs = [a, *([b] if b else [])]
    common = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", *revs]
    files = _name_status(g(*common, "--name-status", "-z", "--", *rel))
    raw, cut = g.capped([*common, "-p", "--", *rel], MAX_OUTPUT * 2)
    patch, trunc = cap(raw.decode("utf-8", "replace"), "patch")
    return {
        "repo": repo,
        "base": base,
        "head": head or "(working tree)",
        "files": files,
        "patch": patch,
        "truncated": trunc or cut,
    }


# -- write tools ----------------------------------------------------------------------------------------------


def create_branch(ws: Workspace, repo: str, name: str, start: str | None, switch: bool) -> dict[str, Any]:
    """Create local branch ``name`` at ``start`` (default HEAD) and, by default, switch to it."""
    g = ws.repo(repo)
    safety.branch_name(name)
    oid = resolve(g, start if start is not None else "HEAD")
    if branch_oid(g, name) is not None:
        raise Conflict(f"branch {name!r} already exists")
    try:
        g("update-ref", f"refs/heads/{name}", oid, ZERO)
    except GitCommandError as exc:
        raise Conflict(f"cannot create branch {name!r}: {exc.stderr.splitlines()[-1][:200]}") from None
    if switch:
        try:
            g("checkout", "-q", name, "--")
        except GitCommandError as exc:
            g("update-ref", "-d", f"refs/heads/{name}", oid)
            raise Conflict(f"cannot switch to {name!r} with the current changes: {exc.stderr[:300]}") from None
    return {"repo": repo, "branch": name, "commit": oid, "current_branch": current_branch(g)}


def switch_branch(ws: Workspace, repo: str, name: str) -> dict[str, Any]:
    """Check out an existing local branch (uncommitted changes are carried over when git allows it)."""
    g = ws.repo(repo)
    safety.ref_name(name, "branch")
    oid = branch_oid(g, name)
    if oid is None:
        raise NotFound(f"branch: no local branch called {name!r}")
    try:
        g("checkout", "-q", name, "--")
    except GitCommandError as exc:
        raise Conflict(f"cannot switch to {name!r} with the current changes: {exc.stderr[:300]}") from None
    return {"repo": repo, "branch": name, "commit": oid}


def _store(g: GitRepo, rel: str, content: str) -> bool:
    """Write text to a confined working-tree file without following links; returns whether it was new.

    Only a regular file is ever replaced (a FIFO, socket, device or directory there is refused before any
    open, and the open itself cannot block), and what is written belongs to git's uid like the rest of the tree.
    """
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE:
        raise TooLarge(f"content is {len(data)} bytes; the limit is {MAX_WRITE}")
    root = g.tree
    full = safety.on_disk(root, rel, must_exist=False)
    try:
        st: os.stat_result | None = os.lstat(full)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InvalidPath(f"path: {rel!r} is {_kind(st.st_mode)}; only regular files can be written")
    parent = full.parent
    missing = []
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        os.mkdir(d)
        if g.user is not None:
            os.chown(d, *g.user, follow_symlinks=False)
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidPath(f"path: {rel!r} is not a regular file; only regular files can be written")
        os.ftruncate(fd, 0)
        fh.write(data)
        if g.user is not None:
            os.fchown(fd, *g.user)
    return st is None


def write_file(ws: Workspace, repo: str, path: str, content: str) -> dict[str, Any]:
    """Create or overwrite a text file in the working tree (not committed until git_commit)."""
    g = ws.repo(repo)
    rel = safety.path(path)
    created = _store(g, rel, content)
    return {"repo": repo, "path": rel, "bytes": len(content.encode("utf-8")), "created": created}


def edit_file(ws: Workspace, repo: str, path: str, old_text: str, new_text: str) -> dict[str, Any]:
    """Replace the one exact occurrence of ``old_text`` in a working-tree text file."""
    g = ws.repo(repo)
    rel = safety.path(path)
    if not old_text:
        raise InvalidArgument("old_text: expected the exact text to replace; got an empty string")
    text = _decode(_read_worktree(g.tree, rel), rel)
    count = text.count(old_text)
    if count == 0:
        raise NotFound(f"old_text: not found in {rel}; read the file and copy the text exactly")
    if count > 1:
        raise Conflict(f"old_text: found {count} times in {rel}; include more context so it is unique")
    _store(g, rel, text.replace(old_text, new_text, 1))
    return {"repo": repo, "path": rel, "replaced": 1}


def identity(ctx: ToolContext, when: Any) -> dict[str, str]:
    """GIT_AUTHOR_* / GIT_COMMITTER_* for the actor at simulated time ``when`` (aware datetime)."""
    row = Sql.of(ctx.session).one(
        "SELECT first_name, last_name, email FROM employees WHERE id = ?", (ctx.actor.employee_id,)
    )
    if row is None:
        raise NotFound(f"expected a directory entry for @{ctx.actor.username}; found none")
    name = f"{row[0]} {row[1]}".replace("<", "").replace(">", "").replace("\n", " ")
    email = str(row[2]).replace("<", "").replace(">", "")
    stamp = f"@{int(when.timestamp())} +0000"
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_COMMITTER_DATE": stamp,
    }


def commit(ctx: ToolContext, ws: Workspace, repo: str, message: str) -> dict[str, Any]:
    """Commit every change of the working tree to the current branch as the actor, at the simulated time."""
    g = ws.repo(repo)
    msg = message.strip()
    if not msg or len(msg) > 5000:
        raise InvalidArgument("message: expected a non-empty commit message of at most 5000 characters")
    branch = current_branch(g)
    if branch is None:
        raise Conflict("HEAD is detached; switch to a branch before committing")
    env = identity(ctx, ctx.clock.now())
    try:
        g("add", "-A", "--", ".")
        trees.check_index(g)
    except AppError:
        g("reset", "-q")
        raise
    code, _ = g.run(["diff", "--cached", "--quiet"], ok_codes=(0, 1))
    if code == 0:
        raise Conflict("nothing to commit: the working tree matches the last commit")
    try:
        g(
            "commit",
            "-q",
            "--no-verify",
            "--no-gpg-sign",
            "--cleanup=strip",
            "-F",
            "-",
            input=msg.encode("utf-8") + b"\n",
            env=env,
        )
    except GitCommandError as exc:
        g("reset", "-q")
        raise _fail(exc, "commit") from None
    oid = g("rev-parse", "--verify", "HEAD").decode().strip()
    files = _name_status(g("show", "--no-renames", "--format=", "--name-status", "-z", oid, "--"))
    return {"repo": repo, "branch": branch, "commit": oid, "files": files}
