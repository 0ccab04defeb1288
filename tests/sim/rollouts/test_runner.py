"""The local rollout runner: worker processes, rewards and trace bytes independent of the worker count, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.agents import run_agent
from sim.episode import Episode
from sim.errors import RolloutError
from sim.replay import replay
from sim.rollouts import LocalBackend, jobs_for, run_rollouts
from worlds.store import WorldStore

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = "triage-tickets-v0"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rollout-worlds")


def test_runner__same_seeds_give_same_rewards_and_trace_bytes_with_one_or_two_workers(
    data_dir: Path, tmp_path: Path
) -> None:
    runs = {}
    for k in (1, 2):
        out = tmp_path / f"k{k}"
        out.mkdir()
        summary = run_rollouts(jobs_for(SCENARIO, "random", range(5), trace_dir=out), LocalBackend(k, data_dir))
        runs[k] = (summary, {p.name: p.read_bytes() for p in sorted(out.iterdir())})
    (one, traces_one), (two, traces_two) = runs[1], runs[2]
    assert one.rewards == two.rewards and [r.seed for r in two.rollouts] == [0, 1, 2, 3, 4]
    assert sorted(traces_one) == [f"{SCENARIO}.random.d1.seed{s}.jsonl" for s in (0, 1, 2, 3, 4)]
    assert traces_one == traces_two  # every byte, though the seeds met other workers in another order
    assert all(r.steps > 1 for r in one.rollouts)
    # each trace replays step for step, as `companysim replay` does
    report = replay(tmp_path / "k2" / f"{SCENARIO}.random.d1.seed3.jsonl", store=WorldStore(data_dir))
    assert report.ok and report.episodes == 1 and report.steps == one.rollouts[3].steps


def test_runner__workers_fork_from_a_preloaded_server_and_report_their_cost_outside_the_results(
    data_dir: Path,
) -> None:
    import multiprocessing.forkserver as fs

    from sim.rollouts.runner import PRELOAD

    summary = run_rollouts(jobs_for(SCENARIO, "oracle", range(4)), LocalBackend(2, data_dir))
    assert fs._forkserver._forkserver_pid is not None  # the workers came from the fork server, not spawn
    assert fs._forkserver._preload_modules == PRELOAD
    pids = {r.pid for r in summary.rollouts}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert all(r.cpu_s > 0 for r in summary.rollouts)
    first = summary.rollouts[0]
    assert "cpu_s" not in first.to_json() and "pid" not in first.to_json()
    assert first == type(first)(**{**first.to_json(), "cpu_s": 99.0, "pid": 1})  # measurements are not results


def test_runner__rewards_equal_an_in_process_run_and_partial_agents_sit_between(data_dir: Path) -> None:
    seeds = range(2)
    by_agent = {
        a: run_rollouts(jobs_for(SCENARIO, a, seeds), LocalBackend(2, data_dir))
        for a in ("oracle", "partial-no-assignee", "noop")
    }
    with Episode(SCENARIO, store=WorldStore(data_dir)) as episode:
        direct = [run_agent(episode, "oracle", s, {"difficulty": 1}).value for s in seeds]
    assert by_agent["oracle"].rewards == direct == [1.0, 1.0]
    assert by_agent["oracle"].pass_rate == 1.0 and by_agent["noop"].mean == 0.0
    assert 0.0 < by_agent["partial-no-assignee"].mean < 1.0 and by_agent["partial-no-assignee"].pass_rate == 0.0


def test_runner__refuses_unknown_agents_and_repeated_seeds() -> None:
    with pytest.raises(RolloutError, match="partial-no-reply"):
        jobs_for(SCENARIO, "partial-no-reply", range(2))  # another family's partial agent
    with pytest.raises(RolloutError, match="once"):
        jobs_for(SCENARIO, "noop", [1, 1])


def _cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COMPANYSIM_DATA_DIR": str(data_dir), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "sim.cli", "rollouts", *args], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_cli__rollouts_prints_the_results_table_and_writes_one_trace_per_episode(
    data_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "traces"
    out.mkdir()
    done = _cli(SCENARIO, "--episodes", "3", "--workers", "2", "--agent", "oracle", "--seed", "4",
                "--trace-dir", str(out), data_dir=data_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.strip().startswith("│"))
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:4] == ["3", "1.000", "0.000", "100%"]  # episodes, mean, std, pass rate
    assert float(cells[5]) > 0  # episodes/s
    assert sorted(p.name for p in out.iterdir()) == [f"{SCENARIO}.oracle.d1.seed{s}.jsonl" for s in (4, 5, 6)]
    again = _cli(SCENARIO, "--episodes", "3", "--seed", "4", "--trace-dir", str(out), data_dir=data_dir)
    assert again.returncode == 2 and "--overwrite" in again.stderr and "Traceback" not in again.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "cheat-nothing"], "cannot play"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--backend", "slurm"], "--backend must be one of local, ray"),
        (["--address", "127.0.0.1:1"], "--backend ray"),
        (["--trace-dir", "/nonexistent/dir"], "does not exist"),
        (["--difficulty", "9"], "--difficulty"),
    ],
)
def test_cli__bad_input_is_one_line_and_exit_2(args: list[str], message: str, data_dir: Path) -> None:
    done = _cli(SCENARIO, *args, data_dir=data_dir)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
