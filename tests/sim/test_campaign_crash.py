"""Kill -9 at random moments of a traced campaign, then resume: the record stays straight (issue 18 item 7)."""

import json
import os
import subprocess
import sys
from pathlib import Path

HARNESS = Path(__file__).with_name("crash_harness.py")
TRIALS = 50


def test_kill_9_at_fifty_random_moments__every_resumed_campaign_replays_and_ends_the_same(tmp_path):
    env = {**os.environ, "COMPANYSIM_DATA_DIR": str(tmp_path / "data"), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    done = subprocess.run(
        [sys.executable, str(HARNESS), str(tmp_path / "runs"), str(TRIALS), "18"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    reference, trials = out["reference"], out["trials"]
    assert reference["exit"] == 0 and reference["final"][0] == 4
    failed = [t for t in trials if t["resume_exit"] != 0 or t["replay_exit"] != 0 or t["final"] != reference["final"]]
    assert failed == [], failed[:3]
    # The kills landed all over the run: before the first boundary and between later boundaries.
    saved = {t["saved_before_resume"] for t in trials if t["killed"]}
    assert len(trials) == TRIALS and 0 in saved and len(saved & {1, 2, 3}) >= 2
    assert sum(t["killed"] for t in trials) >= TRIALS * 0.8
    # Killed writers leave nothing behind once the next run has swept (worlds, snapshots, manifests).
    leftovers = [str(p) for p in tmp_path.rglob("*") if ".tmp" in p.name]
    assert leftovers == []
    assert list((tmp_path / "tmp").iterdir()) == []
