"""The README's examples work as written: the Python block runs, and every command it shows exists."""

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme__the_python_example_runs_and_grades(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANYSIM_DATA_DIR", str(tmp_path))
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README.md", "exec"), {})  # noqa: S102 - the README's own example
    assert "value=" in out.getvalue() and "error [" not in out.getvalue()


def test_readme__every_cli_command_it_shows_exists():
    commands = sorted(
        {tuple(m.group(1).split()[:2]) for m in re.finditer(r"^companysim ([a-z][a-z -]*)", README.read_text(), re.M)}
    )
    assert len(commands) >= 12
    for words in commands:
        words = words if words[0] in ("world", "scenarios", "sandbox", "cache") else words[:1]
        done = subprocess.run(
            [sys.executable, "-m", "sim.cli", *words, "--help"], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, (words, done.stderr[-500:])
