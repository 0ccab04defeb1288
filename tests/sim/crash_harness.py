"""Kill -9 a traced campaign at random moments, resume it, and check what it leaves (run by test_campaign_crash).

Usage: python crash_harness.py WORKDIR TRIALS SEED

The harness imports companysim once and forks a child per command (the CLI's own code path, in-process),
so a trial costs the campaign's work, not Python's start-up. Per trial: start the campaign, SIGKILL it after a
random moment inside a random episode (a share of that episode's length in the uninterrupted run, scaled by how
fast this trial has gone so far), resume it with ``--resume`` (or start it again with ``--overwrite`` when no
boundary was saved), replay the trace, and compare the final boundary with the uninterrupted run's. Prints one
JSON object: the reference, and per trial the delay, what the kill left (boundaries saved, trace lines), the
resume's and the replay's exit codes
and the final state hash.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

SCENARIOS = ["triage-tickets-v0", "customer-escalation-v0"]
EPISODES = 4


def _child(argv: list[str], log: Path) -> int:
    """Fork a child running ``companysim ARGV`` with its output in ``log``; returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    code = 1
    try:
        from sim.cli import main

        sys.argv = ["companysim", *argv]
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os._exit(code)


def _run(argv: list[str], log: Path) -> int:
    _, status = os.waitpid(_child(argv, log), 0)
    return os.waitstatus_to_exitcode(status)


def _wait_or_kill(pid: int, deadline: float) -> int:
    """Wait for the child until ``deadline`` (monotonic), SIGKILL it if it is still running; returns its status."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1]
        time.sleep(min(left, 0.005))


def _wait_for_boundaries(pid: int, work: Path, count: int, deadline: float) -> int | None:
    """Wait until the campaign in ``work`` has saved ``count`` boundaries; its status if it ended first."""
    while _last_hash(work)[0] < count and time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.002)
    return None


def _campaign(workdir: Path, *extra: str) -> list[str]:
    return [
        "campaign", *SCENARIOS, "--episodes", str(EPISODES), "--seed", "3",
        "--snapshots", str(workdir / "snap"), "--trace", str(workdir / "trace.jsonl"), *extra,
    ]  # fmt: skip


def _last_hash(workdir: Path) -> tuple[int, str | None]:
    manifest = workdir / "snap" / "campaign.json"
    if not manifest.is_file():
        return 0, None
    boundaries = json.loads(manifest.read_text())["boundaries"]
    return len(boundaries), boundaries[-1]["state_hash"]


def main() -> None:
    root, trials, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    import sim.cli.app  # noqa: F401 - import everything once, before the first fork

    warm, ref = root / "warm", root / "reference"
    warm.mkdir(parents=True)
    ref.mkdir()
    _run(_campaign(warm), root / "warm.log")  # generates the base world, so the timed run is a trial's length
    began = time.monotonic()
    pid = _child(_campaign(ref), root / "reference.log")
    marks = [0.0]  # seconds from the start to each boundary of the uninterrupted run
    while len(marks) <= EPISODES:
        status = _wait_for_boundaries(pid, ref, len(marks), began + 600)
        if status is not None:
            break
        marks.append(time.monotonic() - began)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    length = time.monotonic() - began
    reference = {"exit": code, "seconds": round(length, 3), "final": _last_hash(ref)}
    rng = np.random.default_rng(seed)
    results = []
    for n in range(trials):
        work = root / f"trial-{n:03d}"
        work.mkdir()
        log = work / "log.txt"
        # A kill moment inside episode ``episode``: a share of that episode's length in the uninterrupted run
        # (episodes differ: a garbage collection or a first import lands in one of them), scaled by this
        # trial's pace so far against the reference's over the same boundaries, so neither a machine whose load
        # changed since the reference run (the other test worker starting a heavy file) nor one long episode
        # pushes the kill past the campaign's end.
        episode, share = int(rng.integers(0, EPISODES)), rng.uniform(0.0, 0.9)
        pid = _child(_campaign(work), log)
        started = time.monotonic()
        status = _wait_for_boundaries(pid, work, episode, started + 6 * length) if episode else None
        if status is None:
            now = time.monotonic()
            took = now - started
            pace = took / marks[episode] if episode and marks[episode] > 0 else 1.0
            delay = took + share * (marks[episode + 1] - marks[episode]) * pace
            status = _wait_or_kill(pid, started + delay)
        else:
            delay = time.monotonic() - started
        saved, _ = _last_hash(work)
        trace = work / "trace.jsonl"
        lines = len(trace.read_bytes().splitlines()) if trace.exists() else 0
        if saved == EPISODES:
            resumed = 0  # killed after the last boundary: nothing left to play
        elif saved:
            resumed = _run([*_campaign(work, "--resume"), "--episodes", str(EPISODES - saved)], log)
        else:
            resumed = _run(_campaign(work, "--overwrite"), log)
        replayed = _run(["replay", str(trace)], log) if resumed == 0 else None
        results.append(
            {
                "delay": round(delay, 3),
                "killed": os.WIFSIGNALED(status),
                "saved_before_resume": saved,
                "trace_lines_at_kill": lines,
                "resume_exit": resumed,
                "replay_exit": replayed,
                "final": _last_hash(work),
                "log": log.read_text()[-400:] if resumed or replayed else "",
            }
        )
    print(json.dumps({"reference": reference, "trials": results}))


if __name__ == "__main__":
    main()
