"""The README's examples work as written: the Python block runs, and every command it shows exists."""

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme__the_python_examples_run_and_the_episode_one_grades(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANYSIM_DATA_DIR", str(tmp_path))
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert any("from sim.episode import Episode" in b for b in blocks)
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, "README.md", "exec"), {})  # noqa: S102 - the README's own example
        assert out.getvalue() and "error [" not in out.getvalue(), block[:200]
        if "from sim.episode import Episode" in block:
            assert "value=" in out.getvalue()


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
