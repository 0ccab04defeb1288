"""``python -m bench`` with a bench name it does not know: one line on stderr and exit 2, nothing run."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench__an_unknown_name_is_one_error_line_and_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "bench", "grading", "no-such-bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stdout == ""  # grading, named first, did not run either
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert "unknown bench 'no-such-bench'" in done.stderr and "grading" in done.stderr
