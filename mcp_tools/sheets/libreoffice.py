"""A long-lived headless LibreOffice driven over UNO: recalculation and conversion (PDF) of in-memory files.

Why long-lived: a ``soffice --convert-to`` run costs 1.3-2.9 s; loading a document into a running office over
UNO costs ~0.1-0.2 s. So one ``soffice`` is started lazily, on the first use in this process, and reused.

Confinement: everything LibreOffice may write goes under one private directory (``mkdtemp``, mode 0700): its
user profile, ``TMPDIR`` and ``HOME``; the directory is removed at shutdown. A process that dies without running
``atexit`` (SIGKILL, or SIGTERM from ``timeout`` or a scheduler, whose default action skips it) cannot clean up
itself, so each office has a guard: a shell that outlives us, waiting on a pipe only this process holds; when the
pipe closes, however we ended, it kills the office's process group (``soffice`` execs ``oosplash``, which forks
``soffice.bin``: a parent-death signal on the child we start would not reach ``soffice.bin``) and removes the
directory. A clean shutdown stops the guard first. Documents never touch the disk:
they are loaded from and stored to UNO memory streams (``private:stream``), macros are never executed
(``MacroExecutionMode`` NEVER, ``UpdateDocMode`` NO_UPDATE: no external links fetched). The UNO socket is bound
to 127.0.0.1 on a free port. The profile sets ``OOXMLRecalcMode`` and ``ODFRecalcMode`` to 0 (always
recalculate on load), so stale cached values in a file are never trusted even before ``calculateAll()``.

UNO from the virtualenv: python3-uno targets the system Python, so a shim directory with symlinks to
``/usr/lib/python3/dist-packages/uno.py`` and ``unohelper.py`` is put on ``sys.path`` (``uno.py`` itself adds
``/usr/lib/libreoffice/program``, where ``pyuno.so`` lives); nothing else of Debian's Python path is imported.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mcp_tools.errors import Unavailable
from worlds.office.model import Err, Value, Workbook

DIST = Path("/usr/lib/python3/dist-packages")
START_TIMEOUT = 60.0
FILTERS = {"xlsx": "Calc Office Open XML", "ods": "calc8", "docx": "MS Word 2007 XML", "odt": "writer8"}
PDF_FILTERS = {
    "xlsx": "calc_pdf_Export",
    "ods": "calc_pdf_Export",
    "docx": "writer_pdf_Export",
    "odt": "writer_pdf_Export",
}
# LibreOffice error numbers (ScErrorCodes) -> the spreadsheet error values files carry.
ERRORS = {
    501: "#VALUE!",
    502: "#NUM!",
    503: "#NUM!",
    504: "#VALUE!",
    519: "#VALUE!",
    522: "#REF!",
    523: "#NUM!",
    524: "#REF!",
    525: "#NAME?",
    532: "#DIV/0!",
    32767: "#N/A",
}
_SETTINGS = [  # (path, property, value): recalculate on load always, never run macros, no first-run or backups
    ("/org.openoffice.Office.Calc/Formula/Load", "OOXMLRecalcMode", "0"),
    ("/org.openoffice.Office.Calc/Formula/Load", "ODFRecalcMode", "0"),
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "false"),
    ("/org.openoffice.Office.Common/Save/Document", "CreateBackup", "false"),
]
_REGISTRY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
    'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
    + "".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>\n'
        for path, name, value in _SETTINGS
    )
    + "</oor:items>\n"
)


def soffice_path() -> str | None:
    """The ``soffice`` executable, or None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def unavailable_reason() -> str:
    """Why LibreOffice cannot be used here ("" when it can, as far as can be told without starting it)."""
    if soffice_path() is None:
        return "soffice is not installed (apt-get install libreoffice-calc-nogui libreoffice-writer-nogui)"
    if not (DIST / "uno.py").exists() or not (DIST / "unohelper.py").exists():
        return f"python3-uno is not installed ({DIST}/uno.py missing)"
    if _OFFICE.broken:
        return _OFFICE.broken
    return ""


def available() -> bool:
    """Whether LibreOffice looks usable (installed, and not failed to start in this process)."""
    return unavailable_reason() == ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_GUARD = 'read -r _ || :; kill -9 "-$1" 2>/dev/null; rm -rf -- "$2"; rm -f -- "$3" "$4"'
"""Blocks until its stdin reaches end of file (every holder of the pipe's write end has exited), then cleans up."""


def ipc_pipes(profile: Path) -> tuple[Path, Path]:
    """Where the office's single-instance pipe lives: a socket a killed office leaves behind.

    LibreOffice names it after its profile, ignoring ``TMPDIR``: ``OSL_PIPE_<uid>_SingleOfficeIPC_`` then the MD5 of
    the profile URL in UTF-16, in hex without zero padding, in ``/tmp`` (``/var/tmp`` when ``/tmp`` is missing). Our
    profile directory is private and fresh, so no other program's pipe can bear this name.
    """
    digest = "".join(format(b, "x") for b in hashlib.md5(profile.as_uri().encode("utf-16-le")).digest())  # noqa: S324
    name = f"OSL_PIPE_{os.getuid()}_SingleOfficeIPC_{digest}"
    return Path("/tmp") / name, Path("/var/tmp") / name  # noqa: S108 - LibreOffice's fixed places, not ours


def _guard(group: int, root: Path) -> subprocess.Popen[bytes]:
    """Start the shell that kills process group ``group`` and removes ``root`` once this process is gone.

    It also removes the office's pipe socket (see ``ipc_pipes``): a clean office removes it itself, a killed one
    cannot.

    In its own session, so a Ctrl-C at the terminal (sent to the foreground group) reaches us, not it: only the
    end of our life ends its wait. The pipe's write end is close-on-exec, so no other program we start holds it.
    """
    pipes = [str(p) for p in ipc_pipes(root / "profile")]
    return subprocess.Popen(  # noqa: S603 - fixed argv, no shell interpolation of the arguments
        ["/bin/sh", "-c", _GUARD, "companysim-office-guard", str(group), str(root), *pipes],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


class Office:
    """One headless LibreOffice process and its UNO connection, started on first use; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.root: Path | None = None
        self.desktop: Any = None
        self.ctx: Any = None
        self.uno: Any = None
        self.broken = ""
        self.starts = 0
        self.guard: subprocess.Popen[bytes] | None = None

    def _import_uno(self) -> Any:
        if self.uno is None:
            shim = Path(tempfile.mkdtemp(prefix="companysim-uno-"))
            for name in ("uno.py", "unohelper.py"):
                (shim / name).symlink_to(DIST / name)
            sys.path.insert(0, str(shim))
            original = builtins.__import__
            try:
                self.uno = importlib.import_module("uno")
                importlib.import_module("unohelper")
            finally:
                # uno.py replaces the global __import__ (for ``from com.sun.star... import``, unused here) with
                # a hook that turns ModuleNotFoundError into plain ImportError, breaking unrelated code that
                # probes optional modules; put the original back.
                builtins.__import__ = original
                sys.path.remove(str(shim))
                shutil.rmtree(shim, ignore_errors=True)
        return self.uno

    def _start(self) -> None:
        uno = self._import_uno()
        exe = soffice_path()
        if exe is None:
            raise Unavailable(unavailable_reason())
        self.root = Path(tempfile.mkdtemp(prefix="companysim-lo-"))
        profile, tmp, home = self.root / "profile", self.root / "tmp", self.root / "home"
        (profile / "user").mkdir(parents=True)
        tmp.mkdir()
        home.mkdir()
        (profile / "user" / "registrymodifications.xcu").write_text(_REGISTRY)
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
        env.update(TMPDIR=str(tmp), HOME=str(home), SAL_USE_VCLPLUGIN="svp")
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            [
                exe,
                "--headless",
                "--invisible",
                "--nologo",
                "--norestore",
                "--nolockcheck",
                "--nodefault",
                f"-env:UserInstallation={profile.as_uri()}",
                f"--accept=socket,host=127.0.0.1,port={port},tcpNoDelay=1;urp;StarOffice.ComponentContext",
            ],
            env=env,
            cwd=str(tmp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.guard = _guard(self.proc.pid, self.root)
        local = uno.getComponentContext()
        resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                self.ctx = resolver.resolve(f"uno:socket,host=127.0.0.1,port={port};urp;StarOffice.ComponentContext")
                break
            except Exception as exc:  # noqa: BLE001 - UNO raises its own NoConnectException while starting
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self._stop()
                    raise Unavailable(f"LibreOffice did not start ({type(exc).__name__})") from None
                time.sleep(0.1)
        self.desktop = self.ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", self.ctx)
        self.starts += 1

    def _ensure(self) -> None:
        if self.desktop is not None and self.proc is not None and self.proc.poll() is None:
            return
        self._stop()
        try:
            self._start()
        except Unavailable as exc:
            self.broken = exc.message
            raise

    def _stop(self) -> None:
        if self.guard is not None:  # stopped first: it would kill a process group id the office no longer holds
            self.guard.kill()
            self.guard.wait()
            if self.guard.stdin is not None:
                self.guard.stdin.close()
            self.guard = None
        if self.desktop is not None:
            try:
                self.desktop.terminate()
            except Exception:  # noqa: BLE001, S110 - the office may already be gone; the process is killed below
                pass
        self.desktop = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if self.root is not None:
            for pipe in ipc_pipes(self.root / "profile"):  # left when the office was killed above
                pipe.unlink(missing_ok=True)
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def shutdown(self) -> None:
        """Terminate the office process and remove its private directory."""
        with self.lock:
            self._stop()

    @property
    def pid(self) -> int | None:
        """The soffice process id while it runs."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def _props(self, **values: Any) -> tuple[Any, ...]:
        out = []
        for k, v in values.items():
            pv = self.uno.createUnoStruct("com.sun.star.beans.PropertyValue")
            pv.Name, pv.Value = k, v
            out.append(pv)
        return tuple(out)

    def _load(self, data: bytes, fmt: str) -> Any:
        smgr = self.ctx.ServiceManager
        stream = smgr.createInstanceWithContext("com.sun.star.io.SequenceInputStream", self.ctx)
        stream.initialize((self.uno.ByteSequence(data),))
        props = self._props(
            InputStream=stream, FilterName=FILTERS[fmt], Hidden=True, MacroExecutionMode=0, UpdateDocMode=0
        )
        doc = self.desktop.loadComponentFromURL("private:stream", "_blank", 0, props)
        if doc is None:
            raise Unavailable(f"LibreOffice could not load the {fmt} file")
        return doc

    def _run(self, fn: Any) -> Any:
        """Run ``fn()`` with a live office; one restart if the connection died."""
        with self.lock:
            for attempt in (1, 2):
                self._ensure()
                try:
                    return fn()
                except Unavailable:
                    raise
                except Exception as exc:  # noqa: BLE001 - a dead bridge raises DisposedException/RuntimeException
                    self._stop()
                    if attempt == 2:
                        raise Unavailable(f"LibreOffice failed: {type(exc).__name__}: {str(exc)[:200]}") from None
            raise AssertionError("unreachable")

    def recalculate(
        self, data: bytes, fmt: str, cells: list[tuple[int, int, int]]
    ) -> dict[tuple[int, int, int], Value]:
        """Load a spreadsheet, ``calculateAll()``, and read the value of each (sheet, row, col) in ``cells``."""

        def work() -> dict[tuple[int, int, int], Value]:
            doc = self._load(data, fmt)
            try:
                doc.calculateAll()
                sheets = doc.Sheets
                out: dict[tuple[int, int, int], Value] = {}
                for si, r, c in cells:
                    cell = sheets.getByIndex(si).getCellByPosition(c, r)
                    code = cell.getError()
                    if code:
                        out[(si, r, c)] = Err(ERRORS.get(int(code), "#VALUE!"))
                    elif int(cell.FormulaResultType2) == 2:
                        out[(si, r, c)] = str(cell.getString())
                    else:
                        shown = str(cell.getString())
                        number = float(cell.getValue())
                        out[(si, r, c)] = (number != 0) if shown in ("TRUE", "FALSE") else number + 0.0
                return out
            finally:
                doc.close(True)

        return self._run(work)  # type: ignore[no-any-return]

    def convert(self, data: bytes, fmt: str, target: str = "pdf") -> bytes:
        """The file converted by LibreOffice (``pdf``, or another of the four formats), in memory."""
        uno = self._import_uno()
        unohelper = importlib.import_module("unohelper")
        x_output = uno.getClass("com.sun.star.io.XOutputStream")

        class Sink(unohelper.Base, x_output):  # type: ignore[misc, name-defined, valid-type]
            def __init__(self) -> None:
                self.chunks: list[bytes] = []

            def writeBytes(self, seq: Any) -> None:  # noqa: N802 - UNO interface name
                self.chunks.append(bytes(seq.value))

            def flush(self) -> None:
                pass

            def closeOutput(self) -> None:  # noqa: N802 - UNO interface name
                pass

        def work() -> bytes:
            doc = self._load(data, fmt)
            try:
                if fmt in ("xlsx", "ods"):
                    doc.calculateAll()
                sink = Sink()
                name = PDF_FILTERS[fmt] if target == "pdf" else FILTERS[target]
                doc.storeToURL("private:stream", self._props(OutputStream=sink, FilterName=name))
                return b"".join(sink.chunks)
            finally:
                doc.close(True)

        assert uno is not None
        return self._run(work)  # type: ignore[no-any-return]


_OFFICE = Office()
atexit.register(_OFFICE.shutdown)


def office() -> Office:
    """The process's office (not started until first used)."""
    return _OFFICE


class LibreOfficeEngine:
    """Recalculation by the long-lived LibreOffice."""

    name = "libreoffice"

    def recalculate(self, book: Workbook, fmt: str) -> dict[tuple[int, int, int], Value]:
        """Write the workbook with our writer, let LibreOffice recalculate it, read every formula cell back."""
        from worlds.office import files

        cells = [
            (si, r, c)
            for si, sheet in enumerate(book.sheets)
            for (r, c), cell in sorted(sheet.cells.items())
            if cell.formula is not None
        ]
        if not cells:
            return {}
        return _OFFICE.recalculate(files.write_workbook(book, fmt), fmt, cells)


_ENGINE = LibreOfficeEngine()


def engine() -> LibreOfficeEngine:
    """The LibreOffice engine (shares the process's office)."""
    return _ENGINE
