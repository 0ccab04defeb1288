"""Validation of every value the agent hands to git: repository names, refs, revisions, paths, patterns.

The agent is adversarial, so nothing it sends reaches ``argv`` or the file system unchecked. The rules are
stricter than git's own (``git check-ref-format``): a value git would accept but that is unusual (a ref with
``+`` or non-ASCII, a path component starting with ``-``) is refused with a stable code, because a clear
refusal costs the agent one retry while a clever value that slips through can cost the host. In addition:

- nothing starts with ``-`` (it could be read as an option), and paths always follow ``--`` in argv;
- revisions are resolved to a full object id first, so later commands only ever see hex;
- paths are relative, normalised, free of ``..``, ``.git`` and control characters, and on disk every
  component is checked with ``lstat`` so a symlink is never followed (inside or outside the repository).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from mcp_tools.errors import InvalidArgument, InvalidPath, InvalidRef, NotFound

MAX_REF = 200
MAX_PATH = 1000
MAX_PATH_BYTES = 3000
"""Longest path in UTF-8 bytes: with the workspace root in front it stays under PATH_MAX (4096)."""
MAX_NAME_BYTES = 255
"""Longest path component a Linux file system stores (NAME_MAX), in UTF-8 bytes."""
REPO_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
_REF_CHARS = re.compile(r"^[A-Za-z0-9._/-]+$")
_REV = re.compile(r"^(?P<name>[A-Za-z0-9._/-]+?)(?P<suffix>(?:~[0-9]{0,4}|\^[0-9]?)*)$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def repo_name(value: str) -> str:
    """A repository name: lowercase letters, digits, ``.``, ``_``, ``-``; no slash, no leading punctuation."""
    if not REPO_NAME.fullmatch(value) or value.endswith(".git"):
        raise InvalidArgument(f"expected a repository name such as 'platform-service'; got {value[:60]!r}")
    return value


def ref_name(value: str, what: str = "ref") -> str:
    """A ref name by ``git check-ref-format`` rules, restricted to ASCII letters, digits, ``._/-``.

    Raises:
        InvalidRef: with the rule the value breaks.
    """
    shown = value[:60]
    if not value or len(value) > MAX_REF:
        raise InvalidRef(f"{what}: expected 1-{MAX_REF} characters; got {len(value)}")
    if value.startswith("-"):
        raise InvalidRef(f"{what}: may not start with '-'; got {shown!r}")
    if not _REF_CHARS.fullmatch(value):
        raise InvalidRef(f"{what}: only letters, digits, '.', '_', '/' and '-' are allowed; got {shown!r}")
    if ".." in value or value.endswith((".", "/")) or value.startswith("/") or "//" in value or value == "@":
        raise InvalidRef(f"{what}: may not contain '..' or '//' or end with '.' or '/'; got {shown!r}")
    for part in value.split("/"):
        if part.startswith((".", "-")) or part.endswith(".lock"):
            raise InvalidRef(f"{what}: components may not start with '.' or '-' or end with '.lock'; got {shown!r}")
    return value


def branch_name(value: str) -> str:
    """A new branch's short name (``feature/login-fix``): a valid ref that is not HEAD and not a hash."""
    ref_name(value, "branch")
    if value == "HEAD" or value.startswith(("refs/", "HEAD/")) or re.fullmatch(r"[0-9a-f]{7,64}", value):
        raise InvalidRef(f"branch: expected a short branch name such as 'feature/x'; got {value[:60]!r}")
    if len(value) > 100:
        raise InvalidRef(f"branch: expected at most 100 characters; got {len(value)}")
    return value


def revision(value: str) -> str:
    """A revision: a ref name or (abbreviated) commit hash, optionally followed by ``~N`` / ``^N`` steps.

    Raises:
        InvalidRef: anything else (``@{...}``, ``:path``, ranges, options).
    """
    if not value or len(value) > MAX_REF:
        raise InvalidRef(f"ref: expected 1-{MAX_REF} characters; got {len(value)}")
    m = _REV.fullmatch(value)
    if m is None:
        raise InvalidRef(f"ref: expected a branch, tag or commit, optionally with ~N or ^N; got {value[:60]!r}")
    ref_name(m.group("name"))
    return value


def path(value: str, *, allow_root: bool = False) -> str:
    """A normalised relative path inside a repository (``""`` for the root when ``allow_root``).

    Raises:
        InvalidPath: absolute, ``..``, ``.`` or empty components, ``.git``, control characters, a backslash
            or a component starting with ``-``.
    """
    shown = value[:80]
    if len(value) > MAX_PATH or len(value.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise InvalidPath(f"path: expected at most {MAX_PATH} characters and {MAX_PATH_BYTES} bytes; got {len(value)}")
    if _CONTROL.search(value) or "\\" in value:
        raise InvalidPath(f"path: control characters and backslashes are not allowed; got {shown!r}")
    if value.startswith("/"):
        raise InvalidPath(f"path: expected a path relative to the repository root; got absolute {shown!r}")
    norm = value[:-1] if value.endswith("/") and len(value) > 1 else value
    if norm in ("", "."):
        if allow_root:
            return ""
        raise InvalidPath("path: expected a file path; got the repository root")
    for part in norm.split("/"):
        if part in ("", ".", ".."):
            raise InvalidPath(f"path: empty, '.' and '..' components are not allowed; got {shown!r}")
        if part.startswith("-"):
            raise InvalidPath(f"path: components may not start with '-'; got {shown!r}")
        if part.lower().rstrip(". ") == ".git":
            raise InvalidPath(f"path: the .git directory is not part of the repository's files; got {shown!r}")
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise InvalidPath(
                f"path: a file name may be at most {MAX_NAME_BYTES} bytes; {part[:40]!r}... is"
                f" {len(part.encode('utf-8', 'surrogateescape'))}"
            )
    return norm


def glob(value: str) -> str:
    """A path glob for grep filtering (matched in Python, never passed to git)."""
    if not value or len(value) > 200 or _CONTROL.search(value):
        raise InvalidArgument(f"path_glob: expected 1-200 printable characters; got {value[:60]!r}")
    return value


def pattern(value: str) -> str:
    """A grep pattern: one line, 1-500 characters (it is passed after ``-e``, so a leading ``-`` is literal)."""
    if not value or len(value) > 500 or "\n" in value or "\r" in value:
        raise InvalidArgument("pattern: expected one line of 1-500 characters")
    return value


def on_disk(root: Path, rel: str, *, must_exist: bool = True) -> Path:
    """The file system path of ``rel`` (already checked by ``path``) under ``root``, following no symlink.

    Every existing component is ``lstat``-ed: a symlink anywhere on the way is refused, so neither a planted
    link to ``/etc`` nor a link between the repository's own files is ever followed. The result is also checked
    to stay under ``root`` after resolution.

    Raises:
        InvalidPath: a component is a symlink or not a directory where one is needed.
        NotFound: ``must_exist`` and a component is missing.
    """
    current = root
    parts = rel.split("/") if rel else []
    for i, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            if must_exist:
                raise NotFound(f"path: no file or directory {rel!r} in the working tree") from None
            break
        except NotADirectoryError:
            raise InvalidPath(f"path: {'/'.join(parts[:i])!r} is a file, not a directory") from None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise InvalidPath(f"path: {rel[:80]!r} is longer than the file system allows") from None
            raise
        if stat.S_ISLNK(st.st_mode):
            raise InvalidPath(f"path: {'/'.join(parts[: i + 1])!r} is a symbolic link; links are not followed")
        if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            raise InvalidPath(f"path: {'/'.join(parts[: i + 1])!r} is a file, not a directory")
    full = root.joinpath(*parts) if parts else root
    if not full.resolve().is_relative_to(root.resolve()):
        raise InvalidPath(f"path: {rel!r} resolves outside the repository")
    return full
