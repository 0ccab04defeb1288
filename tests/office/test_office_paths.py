"""Hostile document paths never leave the world: 300+ inputs against every path argument, proven by canaries.

Canary files sit where a naive ``os.path.join(root, path)`` would land (next to and above the working
directory, behind a symlink, at absolute paths). Every call must be refused with a stable code, or (for an odd
but harmless name) create a document inside the world; no canary is read, changed or added to, no file appears
anywhere under the test directory, and a Python audit hook sees no ``open`` of any of those places.
"""

import itertools
import os
import sys
from pathlib import Path

import pytest
from officekit import OfficeApp

from mcp_tools.errors import AppError

SECRET = "CANARY-7f3a9c-do-not-read"
REFUSED = {"invalid_path", "not_found", "invalid_argument", "conflict", "unsupported_format"}  # plain odd names
_AUDIT: dict[str, list[str] | None] = {"opened": None}


def _hook(event: str, args: tuple) -> None:
    seen = _AUDIT["opened"]
    if seen is not None and event in ("open", "os.symlink", "os.rename", "os.remove", "shutil.copyfile"):
        seen.append(str(args[0]))


sys.addaudithook(_hook)

DOTS = ["..", "%2e%2e", "%2E%2E", "%252e%252e", "%c0%ae%c0%ae", "%e0%80%ae%e0%80%ae", "\uff0e\uff0e", "\u2025"]
DOTS += [".%2e", "%2e.", "\ufe52\ufe52", "\u2024\u2024", "...", "....", "\u2026", ". .", ".\u200b."]
SEPS = ["/", "\\", "%2f", "%2F", "%5c", "%c0%af", "%e0%80%af", "\uff0f", "\uff3c", "%252f", "//", "/./"]
TARGETS = ["canary.txt", "etc/passwd"]


def hostile_paths(tmp: Path) -> list[str]:
    """Traversals in every spelling, absolute paths, NUL bytes, overlong forms, long names, symlink tricks."""
    out: list[str] = []
    for dots, sep, target in itertools.product(DOTS, SEPS, TARGETS):
        out.append(f"{dots}{sep}{dots}{sep}{target}")
    for dots, prefix in itertools.product(DOTS, ["Shared/", "Shared/Engineering/", "/", "Shared/Engineering/../"]):
        out += [f"{prefix}{dots}/canary.txt", f"{prefix}{dots}", f"{prefix}{dots}/{dots}/{dots}/outside/canary.txt"]
    canary = str(tmp / "outside" / "canary.txt")
    out += [
        canary,
        str(tmp / "outside"),
        str(tmp / "world" / "canary.txt"),
        "/etc/passwd",
        "/etc",
        "//etc/passwd",
        "/../../etc/passwd",
        "C:\\Windows\\win.ini",
        "C:/Windows/win.ini",
        "\\\\server\\share\\canary.txt",
        "\\\\?\\C:\\canary.txt",
        "file:///etc/passwd",
        "file://" + canary,
        "~/canary.txt",
        "~root/.ssh/id_rsa",
        "$HOME/canary.txt",
        "Shared/Engineering/\x00../../canary.txt",
        "canary.txt\x00.odt",
        "\x00",
        "Shared\x00",
        "Shared/\udcc0\udcae\udcc0\udcae/canary.txt",
        "\udcc0\udcae\udcc0\udcae",
        "Shared/\u202e\u2066..",
        "Shared/\u200b..\u200b/canary.txt",
        "Shared/Engineering/\r\n..",
        "Shared/\t../canary.txt",
        "Shared/Engineering/ ../canary.txt",
        "Shared/Engineering/.. /canary.txt",
        "..\\..\\..\\canary.txt",
        "Shared\\Engineering\\..\\..\\canary.txt",
        "Shared/Engineering\\..\\..\\outside\\canary.txt",
        "link/canary.txt",
        "link",
        "Shared/Engineering/link/canary.txt",
        "world/link/canary.txt",
        "./link/canary.txt",
        "a" * 201,
        "Shared/" + "a" * 201,
        "Shared/" + "a/" * 600,
        "../" * 400 + "canary.txt",
        "x" * 5000,
        "x" * 25_000,
        "/" * 50,
        "",
        " ",
        ".",
        "/.",
        "./",
        "Shared/./Engineering",
        "Shared//Engineering",
        "Shared/Engineering/.",
        "%00",
        "%2e%2e%2f%2e%2e%2fcanary.txt",
        "..%00/canary.txt",
        "..%u2215canary.txt",
        "\u2215..\u2215canary.txt",
        "\ue000private",
    ]
    return out


TOOLS = [
    ("docs_read", lambda p: {"document": p}),
    ("docs_list_folder", lambda p: {"folder": p}),
    ("docs_versions", lambda p: {"document": p}),
    ("docs_append", lambda p: {"document": p, "text": "x"}),
    ("docs_share", lambda p: {"document": p, "username": "dev.one", "permission": "view"}),
    ("docs_create", lambda p: {"name": "ok.odt", "folder": p, "text": "x"}),
    ("docs_create", lambda p: {"name": p, "folder": "Shared/Engineering", "text": "x"}),
    ("docs_create_folder", lambda p: {"name": p, "parent": "Shared"}),
    ("docs_create_folder", lambda p: {"name": "ok", "parent": p}),
    ("sheets_read_range", lambda p: {"document": p}),
    ("sheets_write_cell", lambda p: {"document": p, "cell": "A1", "value": "1"}),
    ("sheets_create", lambda p: {"name": p, "folder": "Shared/Engineering"}),
]


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            st = path.stat()
            out[str(path)] = (path.read_bytes(), st.st_mtime_ns)
        else:
            out[str(path)] = (b"", 0)
    return out


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Canary files around a working directory standing for the world, and a symlink pointing out of it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "canary.txt").write_text(SECRET)
    (tmp_path / "canary.txt").write_text(SECRET)
    world = tmp_path / "world"
    (world / "Shared" / "Engineering").mkdir(parents=True)
    (world / "canary.txt").write_text(SECRET)
    (world / "link").symlink_to(tmp_path / "outside")
    (world / "Shared" / "Engineering" / "link").symlink_to(tmp_path / "outside")
    monkeypatch.chdir(world / "Shared" / "Engineering")
    monkeypatch.setenv("COMPANYSIM_RECALC", "python")
    return tmp_path


def test_hostile_paths__there_are_more_than_300(tmp_path):
    assert len(set(hostile_paths(tmp_path))) >= 300


def test_hostile_paths__never_touch_files_outside_the_world(sandbox):
    office = OfficeApp()
    office.call("docs_create", name="Real.odt", folder="Shared/Engineering", text="# Real\n\ninside")
    office.call("sheets_create", name="Real.ods", folder="Shared/Engineering", values='[["=1+1"]]')
    before_tree = _tree(sandbox)
    codes: dict[str, int] = {}
    created: list[str] = []
    _AUDIT["opened"] = opened = []
    try:
        for path in hostile_paths(sandbox):
            for tool, make in TOOLS:
                count = office.log_count()
                try:
                    result = office.call(tool, **make(path))
                except AppError as exc:
                    assert exc.code in REFUSED, (tool, path[:80], exc.code, exc.message)
                    assert SECRET not in exc.message
                    assert office.log_count() == count, (tool, path[:80])
                    codes[exc.code] = codes.get(exc.code, 0) + 1
                    continue
                text = repr(result)
                assert SECRET not in text
                if tool in ("docs_create", "docs_create_folder", "sheets_create"):
                    # An odd but harmless literal name (or a top-level folder for an empty parent): in the world.
                    parts = result["path"].split("/")
                    assert "\\" not in result["path"] and all(p.strip(". ") for p in parts), result
                    created.append(result["path"])
                else:  # reads and edits of a hostile path can only have resolved to a real document or folder
                    assert tool == "docs_list_folder" and result["folder"] in ("/", "Shared", "Shared/Engineering")
    finally:
        _AUDIT["opened"] = None
    office.session.close()
    assert _tree(sandbox) == before_tree
    root = str(sandbox)
    touched = [p for p in opened if root in p or p.startswith(("/etc", "C:", "\\\\", "file:", "~"))]
    assert touched == []
    assert codes.get("invalid_path", 0) > 2000 and codes.get("not_found", 0) > 0
    assert len(created) < 20, created  # only the few spellings that are plain names (e.g. '..%u2215canary.txt')


@pytest.mark.parametrize(
    "name",
    ["../canary.txt", "..\\canary.txt", "%2e%2e", "\uff0e\uff0e", "\u2025", "..\x00", "a" * 201, "x/y", "\u202e.."],
)
def test_hostile_names__are_refused_with_invalid_path_and_change_nothing(sandbox, name):
    office = OfficeApp()
    before = office.hash()
    for tool, args in [
        ("docs_create", {"name": name, "folder": "Shared/Engineering", "text": "x"}),
        ("sheets_create", {"name": name, "folder": "Shared/Engineering"}),
        ("docs_create_folder", {"name": name, "parent": "Shared"}),
    ]:
        with pytest.raises(AppError) as err:
            office.call(tool, **args)
        assert err.value.code == ("invalid_argument" if "\x00" in name else "invalid_path")
    assert office.hash() == before
    assert sorted(os.listdir(sandbox / "world")) == ["Shared", "canary.txt", "link"]
    office.session.close()
