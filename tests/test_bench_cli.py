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


def test_progress_steps__an_unknown_or_missing_family_is_one_error_line_and_exit_2(tmp_path):
    for argv in (["triage-tickets-v0", "no-such-family"], []):
        done = subprocess.run(
            [sys.executable, "-m", "bench.progress_steps", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "TMPDIR": str(tmp_path)},
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and done.stderr.splitlines() == [done.stderr.strip()]
        assert "usage: python -m bench.progress_steps FAMILY" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no world was built


def test_progress_steps__every_step_after_the_first_is_counted_under_its_tool(monkeypatch, capsys):
    import bench.progress_steps as steps
    from sim.agents import run_agent
    from sim.episode import Episode
    from worlds.store import WorldStore

    monkeypatch.setattr(steps, "ROUNDS", 1)
    monkeypatch.setattr(steps, "SEEDS", range(2))
    by_tool = steps.main(["triage-tickets-v0"])["triage-tickets-v0"]
    want: dict[str, int] = {}
    with Episode("triage-tickets-v0", store=WorldStore()) as ep:
        for seed in range(2):
            run_agent(ep, "oracle", seed, {"difficulty": 1 + seed % 3})
            for record in ep.steps[1:]:  # the first update grades everything: left out
                want[record["action"]["name"]] = want.get(record["action"]["name"], 0) + 1
    assert {name: len(spent) for name, spent in by_tool.items()} == want
    assert all(s >= 0 for spent in by_tool.values() for s in spent)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("triage-tickets-v0: ") and f"over {sum(want.values())} steps" in out[0]
    assert {line.split()[0] for line in out[1:]} == set(want)
