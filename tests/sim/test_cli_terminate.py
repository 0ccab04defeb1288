"""A command ended by SIGTERM (``timeout``, a scheduler, ``docker stop``) cleans up as one ended by an error does.

SIGTERM's default action kills Python without unwinding, so an episode's code checkout stayed in $TMPDIR; the
CLI turns it into ``SystemExit(143)``. The real ``companysim`` runs in a subprocess with a private $TMPDIR and
is signalled once its checkout exists (mid-episode), so the test sees the case the bug needed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def test_sigterm_mid_episode__exits_143_and_leaves_no_checkout(tmp_path: Path) -> None:
    # not under tmp_path: checkouts go to a $TMPDIR the host git user can pass through (else to /tmp)
    scratch = Path(tempfile.mkdtemp(prefix="companysim-test-term-"))
    scratch.chmod(0o711)
    try:
        _signalled_mid_episode(scratch, tmp_path / "data")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _signalled_mid_episode(scratch: Path, data: Path) -> None:
    env = dict(os.environ, TMPDIR=str(scratch), COMPANYSIM_DATA_DIR=str(data))
    cmd = [sys.executable, "-m", "sim.cli", "run", "code-review-v0", "--agent", "oracle", "--episodes", "200"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not list(scratch.glob("companysim-code-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(scratch.glob("companysim-code-*")), "no episode checkout appeared"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err[-2000:]
    assert "Traceback" not in err
    assert sorted(p.name for p in scratch.iterdir()) == []
