"""No wall clock or unseeded randomness in world, tool, NPC, grader, scenario or sim code.

An AST scan (not a regex): names are resolved through the module's imports, so aliases are caught
(``from datetime import datetime as dt; dt.now()``) and unrelated names are not (a local dict called
``secrets``). Passing a banned function without calling it is flagged too (``default_factory=datetime.now``).
A line ending in ``# allow-nondeterminism: <reason>`` is exempt; the reason is required.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worlds", "mcp_tools", "npcs", "graders", "scenarios", "sim")
EXEMPT = re.compile(r"#\s*allow-nondeterminism:\s*\S")

# Every name under these modules is banned, and so is importing them.
BANNED_MODULES = frozenset({"random", "secrets"})
# Banned whether called or only referenced.
BANNED_NAMES = frozenset(
    {
        "uuid.uuid1",
        "uuid.uuid4",
        "os.urandom",
        "os.getrandom",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.localtime",  # depends on TZ even when given a timestamp
        "time.ctime",
        "time.mktime",
    }
)
# Banned when called with no arguments (they read the wall clock or the OS entropy pool).
BANNED_WITHOUT_ARGS = frozenset(
    {"time.gmtime", "time.asctime", "numpy.random.default_rng", "numpy.random.SeedSequence", "numpy.random.RandomState"}
)
# numpy.random names that are seeded explicitly; anything else there uses numpy's global RNG state.
NUMPY_SEEDED = frozenset(
    {"Generator", "SeedSequence", "BitGenerator", "PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"}
    | {"default_rng", "RandomState"}
)
# SQL functions evaluated by the database: the wall clock or its RNG.
SQL_FUNCS = frozenset({"sqlalchemy.func", "sqlalchemy.sql.func", "sqlalchemy.sql.expression.func"})
SQL_BANNED = frozenset(
    {"now", "current_timestamp", "current_date", "current_time", "localtime", "localtimestamp", "sysdate"}
    | {"random", "gen_random_uuid", "uuid_generate_v4"}
)


def is_banned(qualified: str) -> bool:
    """Whether a fully qualified name (``datetime.datetime.now``) may not appear in scanned code."""
    parts = qualified.split(".")
    if parts[0] in BANNED_MODULES and len(parts) > 1:
        return True
    if qualified in BANNED_NAMES:
        return True
    if qualified.startswith("numpy.random.") and parts[2] not in NUMPY_SEEDED:
        return True
    owner, _, attr = qualified.rpartition(".")
    return owner in SQL_FUNCS and attr.lower() in SQL_BANNED


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> qualified name for every absolute import in the module (at any depth)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _resolve(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The qualified name of ``x`` or ``x.y.z`` when ``x`` was imported; None otherwise."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, aliases)
        return f"{owner}.{node.attr}" if owner else None
    return None


def _exempt_lines(source: str) -> set[int]:
    """Lines whose trailing comment is ``# allow-nondeterminism: <reason>``."""
    lines = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT and EXEMPT.match(tok.string):
                lines.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - ast.parse already accepted the source
        pass
    return lines


def scan(source: str, filename: str = "<src>") -> list[str]:
    """``file:line: what`` for every banned import, call or reference in ``source``, sorted by line."""
    tree = ast.parse(source, filename)
    aliases = _aliases(tree)
    hits: set[tuple[int, int, str]] = set()  # (line, end line, what)

    def hit(node: ast.stmt | ast.expr, what: str) -> None:
        hits.add((node.lineno, node.end_lineno or node.lineno, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in BANNED_MODULES:
                    hit(node, f"import {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                qualified = f"{node.module}.{a.name}"
                if node.module.split(".")[0] in BANNED_MODULES or is_banned(qualified):
                    hit(node, f"from {node.module} import {a.name}")
        elif isinstance(node, ast.Call):
            qualified = _resolve(node.func, aliases)
            if qualified in BANNED_WITHOUT_ARGS and not node.args and not node.keywords:
                hit(node, f"{qualified}()")
        if isinstance(node, ast.Attribute | ast.Name):
            qualified = _resolve(node, aliases)
            # A bare Name only matters when it was imported from a module (``from uuid import uuid4``).
            if qualified and (isinstance(node, ast.Attribute) or "." in qualified) and is_banned(qualified):
                hit(node, qualified)
    exempt = _exempt_lines(source)
    return [
        f"{filename}:{line}: {what}" for line, end, what in sorted(hits) if line not in exempt and end not in exempt
    ]


def test_nondeterminism__no_banned_calls_in_deterministic_layers():
    problems = []
    scanned = 0
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            scanned += 1
            problems += scan(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert scanned > 20, f"only {scanned} files found under {ROOT}: wrong root?"
    assert not problems, (
        "use seeded streams (worlds.seeding) and the SimClock, or end the line with "
        "'# allow-nondeterminism: <reason>':\n" + "\n".join(problems)
    )


def _lines(found: list[str]) -> set[int]:
    return {int(h.split(":")[1]) for h in found}


def test_nondeterminism__scanner_flags_every_banned_form():
    src = [
        "import random",  # 1
        "from random import choice",  # 2
        "import secrets",  # 3
        "from datetime import datetime as dt, date",  # 4 (not banned: the class is fine)
        "import uuid, os, time",  # 5
        "from uuid import uuid4",  # 6
        "dt.now()",  # 7
        "date.today()",  # 8
        "uuid.uuid4()",  # 9
        "uuid4()",  # 10
        "os.urandom(8)",  # 11
        "time.time()",  # 12
        "import datetime",  # 13
        "datetime.datetime.utcnow()",  # 14
        "time.perf_counter()",  # 15 (allowed)
        "time.time()  # allow-nondeterminism: benchmark only",  # 16 (exempt)
        "secrets.token_hex(8)",  # 17
        "random.Random(1).random()",  # 18
        "time.time_ns()",  # 19
        "time.localtime(0)",  # 20
        "time.gmtime()",  # 21
        "time.gmtime(0)",  # 22 (allowed: a fixed instant, UTC)
        "time.ctime()",  # 23
        "datetime.date.today()",  # 24
        "dt.today()",  # 25
        "import datetime as d2",  # 26
        "d2.datetime.now(tz=d2.UTC)",  # 27
        "from os import urandom as entropy",  # 28
        "entropy(4)",  # 29
        "time.time()  # allow-nondeterminism:",  # 30 (no reason: not exempt)
        "f = Field(default_factory=dt.utcnow)",  # 31 (referenced, not called)
        "import time as t",  # 32
        "t.time()",  # 33
        "uuid.uuid5(uuid.NAMESPACE_DNS, 'x')",  # 34 (allowed: deterministic)
    ]
    found = scan("\n".join(src))
    expected = {1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 14, 17, 18, 19, 20, 21, 23, 24, 25, 27, 28, 29, 30, 31, 33}
    assert _lines(found) == expected, "\n".join(found)


def test_nondeterminism__scanner_flags_unseeded_numpy_and_sql_clock():
    src = [
        "import numpy as np",  # 1
        "from sqlalchemy import func",  # 2
        "np.random.default_rng(7)",  # 3 (seeded: allowed)
        "np.random.Generator(np.random.PCG64(np.random.SeedSequence(7)))",  # 4 (allowed)
        "np.random.default_rng()",  # 5 (OS entropy)
        "np.random.rand(3)",  # 6 (global state)
        "np.random.seed(1)",  # 7 (global state)
        "from numpy.random import shuffle",  # 8
        "created = Column(DateTime, server_default=func.now())",  # 9
        "select(t).order_by(func.random())",  # 10
        "func.count()",  # 11 (allowed)
        "def f(rng: np.random.Generator) -> np.random.SeedSequence: ...",  # 12 (annotations: allowed)
    ]
    assert _lines(scan("\n".join(src))) == {5, 6, 7, 8, 9, 10}


def test_nondeterminism__scanner_ignores_names_that_were_not_imported():
    src = [
        "secrets = {'token': 'x'}",
        "secrets.get('token')",
        "def f(random, time):",
        "    return random.choice([1]), time.time()",
        "self.random.integers(3)",
    ]
    assert scan("\n".join(src)) == []


def test_nondeterminism__scanner_reports_file_line_and_name():
    assert scan("x = 1\nimport time\ny = time.time()\n", "worlds/x.py") == ["worlds/x.py:3: time.time"]
    multi = "import time\nx = (\n    time.time()\n)  # allow-nondeterminism: measured\n"
    assert scan(multi) == ["<src>:3: time.time"]  # the comment must end a line of the flagged expression
