"""No wall clock or unseeded randomness in world, tool, NPC, grader, scenario or sim code."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worlds", "mcp_tools", "npcs", "graders", "scenarios", "sim")
EXEMPT = "# allow-nondeterminism"
BANNED_MODULES = {"random", "secrets"}
BANNED_CALLS = {
    ("uuid", "uuid4"),
    ("uuid", "uuid1"),
    ("os", "urandom"),
    ("datetime.datetime", "now"),
    ("datetime.datetime", "utcnow"),
    ("datetime.datetime", "today"),
    ("datetime.date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
}


def scan(source: str, filename: str = "<src>") -> list[str]:
    """file:line: call for every banned use."""
    lines = source.splitlines()
    aliases: dict[str, str] = {}
    hits: list[tuple[int, str]] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                if a.name.split(".")[0] in BANNED_MODULES:
                    hits.append((node.lineno, f"import {a.name}"))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                if node.module.split(".")[0] in BANNED_MODULES:
                    hits.append((node.lineno, f"from {node.module} import {a.name}"))
                if (node.module, a.name) in BANNED_CALLS:
                    hits.append((node.lineno, f"from {node.module} import {a.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                base = func.value
                parts = []
                while isinstance(base, ast.Attribute):
                    parts.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name):
                    root = aliases.get(base.id, base.id)
                    owner = ".".join([root, *reversed(parts)])
                    if (owner, func.attr) in BANNED_CALLS or owner.split(".")[0] in BANNED_MODULES:
                        hits.append((node.lineno, f"{owner}.{func.attr}()"))
            elif isinstance(func, ast.Name):
                full = aliases.get(func.id, "")
                if "." in full and tuple(full.rsplit(".", 1)) in BANNED_CALLS:
                    hits.append((node.lineno, f"{full}()"))
    return [f"{filename}:{ln}: {what}" for ln, what in sorted(set(hits)) if EXEMPT not in lines[ln - 1]]


def test_nondeterminism__no_banned_calls_in_deterministic_layers():
    problems = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            problems += scan(path.read_text(), str(path.relative_to(ROOT)))
    assert not problems, "use seeded streams and the SimClock:\n" + "\n".join(problems)


def test_nondeterminism__scanner_flags_every_banned_form():
    src = "\n".join(
        [
            "import random",
            "from datetime import datetime as dt, date",
            "import uuid, os, time",
            "from uuid import uuid4",
            "dt.now()",
            "date.today()",
            "uuid.uuid4()",
            "uuid4()",
            "os.urandom(8)",
            "time.time()",
            "import datetime",
            "datetime.datetime.utcnow()",
            "time.perf_counter()",
            "time.time()  # allow-nondeterminism: benchmark only",
        ]
    )
    found = scan(src)
    lines = {int(h.split(":")[1]) for h in found}
    assert lines == {1, 4, 5, 6, 7, 8, 9, 10, 12}, found
