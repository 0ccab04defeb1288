"""The layers import one way: worlds -> mcp_tools -> npcs -> graders -> scenarios -> sim."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("worlds", "mcp_tools", "npcs", "graders", "scenarios", "sim")


def upward_imports(source: str, layer: str, filename: str = "<src>") -> list[str]:
    """file:line: imported-module for every import of a layer to the right of ``layer``."""
    rank = LAYERS.index(layer)
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in LAYERS and LAYERS.index(top) > rank:
                found.append(f"{filename}:{node.lineno}: {layer} imports {name}")
    return found


def test_layers__no_upward_imports():
    problems = []
    count = 0
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            count += 1
            problems += upward_imports(path.read_text(), layer, str(path.relative_to(ROOT)))
    assert count > 20
    assert not problems, "\n".join(problems)


def test_layers__checker_flags_upward_and_function_level_imports():
    src = "import worlds.schema\nfrom sim.episode import Episode\ndef f():\n    import scenarios.registry\n"
    assert upward_imports(src, "graders") == [
        "<src>:2: graders imports sim.episode",
        "<src>:4: graders imports scenarios.registry",
    ]
    assert upward_imports(src, "sim") == []


def test_files__every_python_file_stays_under_1000_lines():
    """The style rule: a module past 1,000 lines is split by what it holds (graders' checks_sheets, comms_posts...)."""
    tracked = sorted(p for p in ROOT.rglob("*.py") if not any(x.startswith(".") for x in p.relative_to(ROOT).parts))
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in tracked if (n := len(p.read_text().splitlines())) >= 1000]
    assert len(tracked) > 300
    assert not long, "\n".join(long)
