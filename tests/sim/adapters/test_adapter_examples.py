"""The adapter examples run as a user runs them (a fresh interpreter, no GPU) and reach reward 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = {"trl_env.py": "transformers", "verl_tool.py": None, "skyrl_env.py": "skyrl_gym"}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_example_prints_reward_1(example, store):
    if EXAMPLES[example]:
        pytest.importorskip(EXAMPLES[example], reason=f"{EXAMPLES[example]} is not installed (it is in '.[dev]')")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": str(store.data_dir)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].endswith("reward: 1.00"), done.stdout
