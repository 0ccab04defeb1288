"""Writing outputs so that a failure leaves nothing behind: a temporary name beside the target, then a rename.

A report directory is filled under a hidden temporary name in the same parent directory and renamed into
place; a report it replaces is moved aside first and removed only once the new one is in place. A single file
(the Parquet export) is written to a temporary file and ``os.replace``-d. Either way a reader sees the old
output or the new one, never a half-written one, and an error removes the temporary copy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from sim.errors import SimError

REPORT_MARK = "index.html"


class OutputError(SimError):
    """An output the command cannot write: a directory it may not replace, or one the OS refuses."""

    code = "bad_output"


def _os_error(target: Path, exc: OSError) -> OutputError:
    return OutputError(f"cannot write {target}: {exc.strerror or type(exc).__name__}")


def check_report_dir(target: Path, *, overwrite: bool, names: set[str] | None = None) -> None:
    """Refuse before any work: a file in the way, a report without ``overwrite``, or a directory of other files.

    Why the last: ``--overwrite`` replaces the whole directory, so it must never be pointed at one holding
    anything but a report (``names``: the files a report may hold).
    """
    if target.exists() and not target.is_dir():
        raise OutputError(f"{target} is a file; expected a directory for the report")
    if target.parent.exists() and not target.parent.is_dir():
        raise OutputError(f"cannot write {target}: {target.parent} is a file, not a directory")
    if not target.parent.is_dir():
        raise OutputError(f"cannot write {target}: the directory {target.parent} does not exist")
    if target.is_dir():
        held = {p.name for p in target.iterdir()}
        if not held:
            return
        if REPORT_MARK not in held or (names is not None and not held <= names):
            raise OutputError(f"{target} exists and is not a companysim report; choose another --out")
        if not overwrite:
            raise OutputError(f"{target} already holds a report; pass --overwrite to replace it")


def write_dir(target: Path, files: Mapping[str, bytes]) -> None:
    """Create (or replace) directory ``target`` holding exactly ``files``, all at once.

    Raises:
        OutputError: the parent directory cannot be written (nothing is left behind).
    """
    parent = target.parent
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=parent))
    except OSError as exc:
        raise _os_error(target, exc) from None
    old: Path | None = None
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; a report is meant to be read
        for name, data in sorted(files.items()):
            (tmp / name).write_bytes(data)
        if target.exists():
            old = tmp.with_suffix(".old")
            os.rename(target, old)
        os.rename(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and old.exists() and not target.exists():
            os.rename(old, target)
        raise _os_error(target, exc) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_file(target: Path, write: Callable[[Path], None]) -> None:
    """Have ``write`` fill a temporary file beside ``target``, then rename it into place.

    Raises:
        OutputError: the directory cannot be written (nothing is left behind).
    """
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except OSError as exc:
        raise _os_error(target, exc) from None
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        tmp.chmod(0o644)  # mkstemp makes it private; a dataset is meant to be shared
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _os_error(target, exc) from None
        raise
