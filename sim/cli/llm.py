"""``companysim run --agent openai``: a model behind an OpenAI-compatible server plays the episodes.

The command checks everything it can before any model call (the key's variable, the cache directory, the trace
path), records every completion into ``--llm-cache DIR`` and, with ``--llm-offline``, answers only from it, so a
recorded run can be replayed with the server gone. A failed model call (server down, a refused key, a cache
miss offline) is one line and exit 2, and the trace it was writing is removed: a half-played episode is not a
trace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from graders.base import Score
from sim.cli.common import UsageError, console, output_dir
from sim.episode import Episode
from sim.llm_agent import LLMAgentConfig, LLMRun, run_llm_agent
from sim.trace import TraceWriter
from worlds.errors import LLMError
from worlds.llm import ChatModel
from worlds.store import WorldStore

CACHE_FILE = "completions.jsonl"
"""The file inside ``--llm-cache DIR`` that holds the recorded completions."""


@dataclass(frozen=True, kw_only=True)
class ModelOptions:
    """The command line's model options, checked."""

    model: str | None
    base_url: str | None
    api_key_env: str | None
    cache: Path | None
    offline: bool
    retries: int
    config: LLMAgentConfig


def build_model(opts: ModelOptions) -> ChatModel:
    """The chat model the options describe.

    Raises:
        UsageError: no model name; neither an endpoint nor a cache; offline without a cache; a key variable
            that is not set; a cache path that is a file.
    """
    if not opts.model:
        raise UsageError("--agent openai needs --model NAME (the model the server serves)")
    if opts.base_url is None and opts.cache is None:
        raise UsageError("--agent openai needs --base-url URL, or --llm-cache DIR holding a recorded run")
    if opts.offline and opts.cache is None:
        raise UsageError("--llm-offline replays from --llm-cache DIR; give the directory of the recorded run")
    if opts.base_url is not None and not opts.base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url must be an http:// or https:// URL; got {opts.base_url!r:.80}")
    api_key = None
    if opts.api_key_env is not None:
        api_key = os.environ.get(opts.api_key_env)
        if not api_key:
            raise UsageError(f"--api-key-env {opts.api_key_env}: that environment variable is not set")
    if opts.retries < 0:
        raise UsageError(f"--llm-retries must be at least 0; got {opts.retries}")
    cfg = opts.config
    if cfg.max_turns < 1 or cfg.max_context_tokens < 1:
        raise UsageError("--max-turns and --max-context-tokens must be at least 1")
    if not 0.0 <= cfg.temperature <= 2.0:
        raise UsageError(f"--temperature must be between 0 and 2; got {cfg.temperature}")
    output_dir(opts.cache, "--llm-cache")
    return ChatModel(
        opts.model,
        cache=opts.cache / CACHE_FILE if opts.cache is not None else None,
        base_url=None if opts.offline else opts.base_url,
        api_key=api_key,
        replay_only=opts.offline,
        max_retries=opts.retries,
    )


def run_llm_episodes(
    scenario: str,
    seeds: list[int],
    opts: ModelOptions,
    store: WorldStore,
    trace: Path | None,
    options: dict[str, object],
    noise: str = "none",
    npcs: str | None = None,
) -> list[tuple[str, int, Score]]:
    """Play each seed with the model; returns (agent, seed, score) rows and prints the model's figures."""
    model = build_model(opts)
    episode = Episode(scenario, store=store, noise=noise, npcs=npcs)  # a bad scenario fails before a trace exists
    writer = TraceWriter(trace) if trace is not None else None
    episode.trace = writer
    runs: list[tuple[int, LLMRun]] = []
    try:
        for seed in seeds:
            runs.append((seed, run_llm_agent(episode, model, seed, dict(options), opts.config)))
    except LLMError:
        episode.trace = None  # closing must not grade the half-played episode into a file about to go
        if writer is not None:
            writer.close()
            writer.path.unlink(missing_ok=True)
            writer = None
        raise
    finally:
        episode.close()
        if writer is not None:
            writer.close()
    for seed, run in runs:
        tokens = run.usage.get("total_tokens", 0)
        console.print(
            f"seed {seed}: {run.turns} model turn(s), {run.cached} from the cache, {tokens} tokens"
            + (", submitted by the runner" if run.submitted_by_runner else "")
        )
    return [("openai", seed, run.score) for seed, run in runs]
