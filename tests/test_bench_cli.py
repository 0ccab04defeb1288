"""``python -m bench`` with a bench name it does not know: one line on stderr and exit 2, nothing run."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench__an_unknown_name_is_one_error_line_and_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "bench", "grading", "no-such-bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stdout == ""  # grading, named first, did not run either
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert "unknown bench 'no-such-bench'" in done.stderr and "grading" in done.stderr


def test_progress_steps__an_unknown_or_missing_family_is_one_error_line_and_exit_2(tmp_path):
    for argv in (["triage-tickets-v0", "no-such-family"], [], ["--twin"], ["--twin", "no-such-family"]):
        done = subprocess.run(
            [sys.executable, "-m", "bench.progress_steps", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "TMPDIR": str(tmp_path)},
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and done.stderr.splitlines() == [done.stderr.strip()]
        assert "usage: python -m bench.progress_steps [--twin] FAMILY" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no world was built


def _steps_by_tool(family: str, seeds: int) -> dict[str, int]:
    """How many steps after each episode's first the oracle takes with each tool over ``range(seeds)``."""
    from sim.agents import run_agent
    from sim.episode import Episode
    from worlds.store import WorldStore

    want: dict[str, int] = {}
    with Episode(family, store=WorldStore()) as ep:
        for seed in range(seeds):
            run_agent(ep, "oracle", seed, {"difficulty": 1 + seed % 3})
            for record in ep.steps[1:]:  # the first update grades everything: left out
                want[record["action"]["name"]] = want.get(record["action"]["name"], 0) + 1
    return want


def test_progress_steps__every_step_after_the_first_is_counted_under_its_tool(monkeypatch, capsys):
    import bench.progress_steps as steps

    monkeypatch.setattr(steps, "ROUNDS", 1)
    monkeypatch.setattr(steps, "SEEDS", range(2))
    by_tool = steps.main(["triage-tickets-v0"])["triage-tickets-v0"]
    want = _steps_by_tool("triage-tickets-v0", 2)
    assert {name: len(spent) for name, spent in by_tool.items()} == want
    assert all(s >= 0 for spent in by_tool.values() for s in spent)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("triage-tickets-v0: ") and f"over {sum(want.values())} steps" in out[0]
    assert {line.split()[0] for line in out[1:]} == set(want)


def test_progress_steps_twin__both_updates_of_every_step_are_timed_and_agree(monkeypatch, capsys):
    import bench.progress_steps as steps

    monkeypatch.setattr(steps, "ROUNDS", 1)
    monkeypatch.setattr(steps, "SEEDS", range(2))
    assert steps.main(["--twin", "triage-tickets-v0"]) == {}
    out = capsys.readouterr().out.splitlines()
    want = _steps_by_tool("triage-tickets-v0", 2)
    assert out[0].startswith("triage-tickets-v0: ") and f"over {sum(want.values())} steps" in out[0]
    assert "run first" in out[0] and "second" in out[0] and "outside progress" in out[1]
    rows = {line.split()[0]: line.split() for line in out[3:]}
    assert {name: int(row[1]) for name, row in rows.items()} == want  # every step after the first, by its tool
    assert all(float(row[3]) >= 0 and float(row[5]) >= 0 and float(row[7]) > 0 for row in rows.values())


def test_progress_steps_twin__updates_that_disagree_stop_the_run_naming_the_step(monkeypatch):
    import bench.progress_steps as steps
    import graders.progress as progress

    class Off(progress.Progress):
        """A twin whose value is off by a half once the episode has a few steps."""

        def update(self, rows):
            value = super().update(rows)
            return value + 0.5 if len(self.ctx.steps) > 3 else value

    monkeypatch.setattr(steps, "ROUNDS", 1)
    monkeypatch.setattr(steps, "SEEDS", range(1))
    monkeypatch.setattr(steps.progress, "Progress", Off)  # what _Twin builds its twin from
    with pytest.raises(RuntimeError, match=r"the twin updates disagree after step 4 \(\w+\)"):
        steps.main(["--twin", "triage-tickets-v0"])
