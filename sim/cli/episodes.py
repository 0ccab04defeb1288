"""``companysim run|replay|demo|mcp``: run agents on scenarios, record and replay traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from graders.base import Score
from scenarios.base import ToolFailed
from sim.agents import AGENTS, run_agent
from sim.cli.common import (
    NPCS_HELP,
    DataDir,
    Db,
    UsageError,
    check_count,
    check_difficulty,
    console,
    output_dir,
    output_file,
)
from sim.episode import Episode
from sim.errors import SimError
from sim.trace import TraceWriter
from worlds.store import WorldStore

Overwrite = Annotated[bool, typer.Option("--overwrite", help="Replace an existing --trace file.")]


def register(app: typer.Typer) -> None:
    """Add ``run``, ``replay``, ``demo`` and ``mcp`` to the application."""
    for name, fn in (("run", run), ("replay", replay), ("demo", demo), ("mcp", mcp)):
        app.command(name)(fn)


def _results_table(title: str, scores: list[tuple[str, int, Score]]) -> Table:
    table = Table(title=title)
    table.add_column("agent")
    table.add_column("seed", justify="right")
    table.add_column("reward", justify="right")
    table.add_column("checks passed", justify="right")
    table.add_column("failed checks (score)")
    for agent, seed, score in scores:
        failed = [f"{c.id} ({c.score:.2f})" for c in score.checks if not c.passed]
        passed = sum(c.passed for c in score.checks)
        table.add_row(agent, str(seed), f"{score.value:.3f}", f"{passed}/{len(score.checks)}", ", ".join(failed))
    return table


def check_agent(agent: str, allowed: tuple[str, ...] = AGENTS) -> str:
    """A built-in agent's name (or, where ``allowed`` lists it, ``openai``)."""
    if agent not in allowed:
        raise UsageError(f"--agent must be one of {', '.join(allowed)}; got {agent!r}")
    return agent


def run_many(
    scenario: str,
    agents: list[str],
    seeds: list[int],
    store: WorldStore,
    trace: Path | None,
    difficulty: int,
    noise: str = "none",
    npcs: str | None = None,
    verdicts: dict[tuple[str, int], str] | None = None,
    options: dict[str, Any] | None = None,
) -> list[tuple[str, int, Score]]:
    """Run each agent on each seed with a progress bar; returns (agent, seed, score) rows.

    With ``verdicts`` (a dict to fill), the family's independent verifier judges each episode beside grading;
    ``options`` are more reset options (e.g. ``npc_llm``).
    """
    # A bad scenario, noise profile or NPC preset fails here, before a trace exists.
    episode = Episode(scenario, store=store, noise=noise, npcs=npcs)
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    results: list[tuple[str, int, Score]] = []
    try:
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"{scenario}", total=len(agents) * len(seeds))
            for agent in agents:
                for seed in seeds:
                    opts = {**(options or {}), "difficulty": difficulty}
                    results.append((agent, seed, run_agent(episode, agent, seed, opts)))
                    if verdicts is not None:
                        verdicts[(agent, seed)] = _verdict(episode)
                    bar.advance(task)
    except ToolFailed as exc:
        if exc.code != "unavailable":
            raise
        raise SimError(
            f"{scenario} needs something this machine lacks: {exc.message} (see `companysim sandbox status`)"
        ) from None
    finally:
        episode.close()
        if writer is not None:
            writer.close()
    return results


def _verdict(episode: Episode) -> str:
    from sim.calibrate import verify

    verdict = verify(episode)
    if verdict is None:
        return "no verifier"
    return "solved" if verdict.solved else "not solved: " + "; ".join(verdict.reasons[:3])


def run(
    scenario: Annotated[str, typer.Argument(help="Scenario id, e.g. triage-tickets-v0.")],
    seed: Annotated[int, typer.Option(help="First seed.")] = 0,
    agent: Annotated[str, typer.Option(help="oracle | noop | random | cheat-* | openai (see --model)")] = "oracle",
    episodes: Annotated[int, typer.Option(help="Episodes to run (seeds seed..seed+K-1).")] = 1,
    difficulty: Annotated[int, typer.Option(help="Scenario difficulty 0-3.")] = 1,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace here.")] = None,
    overwrite: Overwrite = False,
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    npcs: Annotated[str | None, typer.Option(help=NPCS_HELP)] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Also ask the family's independent verifier.")] = False,
    data_dir: DataDir = None,
    db: Db = None,
    model: Annotated[str | None, typer.Option(help="openai: the model name the server serves.")] = None,
    base_url: Annotated[str | None, typer.Option(help="openai: the server, e.g. http://127.0.0.1:8000/v1.")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="openai: the environment variable holding the key (must be set).")
    ] = None,
    max_turns: Annotated[int, typer.Option(help="openai: model calls per episode.")] = 50,
    max_context_tokens: Annotated[int, typer.Option(help="openai: conversation size (chars/4).")] = 32_000,
    temperature: Annotated[float, typer.Option(help="openai: sampling temperature.")] = 0.0,
    llm_cache: Annotated[Path | None, typer.Option(help="openai: record completions here (a directory).")] = None,
    llm_offline: Annotated[
        bool, typer.Option("--llm-offline", help="openai: answer only from --llm-cache; a miss is an error.")
    ] = False,
    llm_retries: Annotated[int, typer.Option(help="openai: retries of a failed model call.")] = 2,
    npc_llm: Annotated[
        str | None,
        typer.Option(help="Coworkers' text through an LLM realiser at this OpenAI-compatible server (needs --npcs)."),
    ] = None,
    npc_llm_cache: Annotated[
        Path | None, typer.Option(help="The realiser's recording (JSONL); alone, replays it offline (misses fail).")
    ] = None,
    npc_llm_model: Annotated[str, typer.Option(help="The realiser's model name.")] = "npc-realiser",
) -> None:
    """Run an agent (built-in, or a model with --agent openai) on a scenario and print the rewards per check."""
    check_agent(agent, (*AGENTS, "openai"))
    check_count("--episodes", episodes)
    check_difficulty(difficulty)
    output_file(trace, "--trace", overwrite=overwrite)
    seeds = list(range(seed, seed + episodes))
    reset: dict[str, Any] = {"difficulty": difficulty}
    if npc_llm is not None or npc_llm_cache is not None:
        if npc_llm_cache is None:
            raise UsageError("--npc-llm needs --npc-llm-cache, the file its answers are recorded in")
        reset["npc_llm"] = {"cache": str(npc_llm_cache), "model": npc_llm_model, "base_url": npc_llm}
    verdicts: dict[tuple[str, int], str] | None = {} if verify else None
    store = WorldStore(data_dir, db=db)
    if agent == "openai":
        from sim.cli.llm import ModelOptions, run_llm_episodes
        from sim.llm_agent import LLMAgentConfig

        config = LLMAgentConfig(max_turns=max_turns, max_context_tokens=max_context_tokens, temperature=temperature)
        opts = ModelOptions(
            model=model, base_url=base_url, api_key_env=api_key_env, cache=llm_cache, offline=llm_offline,
            retries=llm_retries, config=config,
        )  # fmt: skip
        results = run_llm_episodes(scenario, seeds, opts, store, trace, reset, noise, npcs)
    else:
        results = run_many(scenario, [agent], seeds, store, trace, difficulty, noise, npcs, verdicts, reset)
    console.print(_results_table(f"{scenario} ({agent})", results))
    for (who, at), said in sorted((verdicts or {}).items()):
        console.print(f"verifier, {who} seed {at}: {said}", markup=False)
    mean = sum(s.value for _, _, s in results) / len(results)
    console.print(f"mean reward {mean:.3f} over {len(results)} episode(s)")
    if trace is not None:
        console.print(f"trace {trace}", markup=False)


def replay(
    trace: Annotated[Path, typer.Argument(help="A JSONL trace written by run or demo.")],
    data_dir: DataDir = None,
) -> None:
    """Re-run a trace on fresh forks; exit 1 and name the first step that differs."""
    from sim.replay import replay as replay_trace

    report = replay_trace(trace, store=WorldStore(data_dir), stop_at_first=False)
    if report.ok:
        console.print(f"replay ok: {report.episodes} episode(s), {report.steps} step(s) identical")
        return
    console.print(f"replay differs: {report.mismatches[0]}", markup=False)
    raise typer.Exit(1)


def demo(
    seed: Annotated[int, typer.Option(help="Seed of the demo company and tasks.")] = 0,
    episodes: Annotated[int, typer.Option(help="Episodes per agent.")] = 3,
    out: Annotated[Path, typer.Option(help="Directory for the traces (its demo traces are replaced).")] = Path("out"),
    data_dir: DataDir = None,
) -> None:
    """A seeded company, the first scenario, the oracle, no-op and random agents, a table and traces."""
    from scenarios.registry import make
    from sim.cli.world import print_world_summary
    from worlds.spec import WorldSpec

    check_count("--episodes", episodes)
    output_dir(out, "--out")
    scenario = "triage-tickets-v0"
    store = WorldStore(data_dir)
    family = make(scenario)
    spec = WorldSpec.parse(seed=seed, employees=family.world.employees, history_days=family.world.history_days)
    world = store.base(spec)
    try:
        print_world_summary(world)
    finally:
        world.close()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, int, Score]] = []
    for agent in AGENTS:
        trace = out / f"{scenario}-{agent}.jsonl"
        rows += run_many(scenario, [agent], list(range(seed, seed + episodes)), store, trace, 1)
        console.print(f"trace {trace}", markup=False)
    console.print(_results_table(f"{scenario}: built-in agents", rows))
    for agent in AGENTS:
        vals = [s.value for a, _, s in rows if a == agent]
        console.print(f"{agent:>7}: mean reward {sum(vals) / len(vals):.3f}")


def mcp(
    scenario: Annotated[str, typer.Option(help="Scenario id.")] = "triage-tickets-v0",
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    difficulty: Annotated[int, typer.Option(help="Scenario difficulty 0-3.")] = 1,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace here.")] = None,
    overwrite: Overwrite = False,
    data_dir: DataDir = None,
) -> None:
    """Serve one episode over stdio to any MCP client (the task prompt is the server's instructions)."""
    import logging

    from sim.mcp_server import episode_server

    handler = logging.StreamHandler()  # stderr: stdout carries the protocol
    handler.setFormatter(logging.Formatter("companysim mcp: %(message)s"))
    log = logging.getLogger("companysim.mcp")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    check_difficulty(difficulty)
    output_file(trace, "--trace", overwrite=overwrite)
    episode = Episode(scenario, store=WorldStore(data_dir))
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    prompt, info = episode.reset(seed=seed, options={"difficulty": difficulty})
    server = episode_server(episode, info["tools"])
    server.instructions = prompt
    try:
        server.run(transport="stdio", show_banner=False)
    finally:
        episode.close()
        if writer is not None:
            writer.close()
