"""Campaigns: a sequence of episodes on one persistent world, so what an agent did yesterday shapes today.

Episode k+1 starts from the state episode k ended in (tickets, messages, documents, NPC memory: everything
is rows), on the next working morning of the simulated calendar. At every boundary the campaign keeps a
snapshot; with a snapshot directory it writes ``episode-KKKK.snap`` (``worlds.store.Snapshot``, checksummed)
and then ``campaign.json``, a manifest naming the world, every boundary's scenario, seed, score, state hash
and next start time, and the SHA-256 of the snapshot's image. The manifest is replaced atomically after the
snapshot file is complete (and after the trace is flushed), so a crash leaves the previous boundary resumable
and nothing half-written is ever named. Resuming checks the last snapshot's image against the hash the
manifest recorded for it (an older boundary's file copied over it, or another campaign's file on the same
world, is refused), and cuts the trace back to the episodes the snapshots hold (``continue_trace``): a killed
run's unsaved episodes are played again, so they must not stay in the trace twice.

Determinism: the task seed of episode k is ``seed * 10_000 + k``; the world seed is ``seed``. Every episode's
trace header carries ``options.campaign`` (index, start time), and the state-hash chain runs through the
whole campaign, so ``sim.replay`` re-runs a campaign trace episode after episode from the same states.

With a ``sim.curriculum.Curriculum`` the campaign asks it, at every boundary, which of its scenarios to play
next and at which difficulty, and feeds the episode's reward back as a group of one, so the work follows what
the agent can do: a pass moves the family a difficulty up, a failure one down, and the draw weights favour
families still inside the band. The curriculum's state is saved in the manifest with every boundary, so a
resumed campaign draws exactly what the uninterrupted one would have; the difficulty is in each episode's
options, so the trace replays without the curriculum.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sim.agents import AGENTS, run_agent
from sim.curriculum import Curriculum, CurriculumError
from sim.episode import Episode, StartState, next_workday_morning
from sim.errors import SimError
from sim.trace import TraceWriter
from worlds.cache import sweep_temps, temp_name
from worlds.spec import WorldSpec
from worlds.store import Snapshot, WorldStore
from worlds.version import GENERATOR_VERSION, SCHEMA_VERSION

MANIFEST = "campaign.json"
MANIFEST_FORMAT = 1


class CampaignError(SimError):
    """A campaign cannot start or resume: bad scenarios, agent, or a missing, corrupt or foreign snapshot."""

    code = "bad_campaign"


@dataclass(frozen=True, kw_only=True)
class Boundary:
    """The end of one campaign episode."""

    index: int
    scenario: str
    seed: int
    reward: float
    state_hash: str
    next_start: str
    snapshot: str | None = None
    image_sha256: str | None = None  # of the snapshot's image; absent in manifests written before it existed
    difficulty: int | None = None  # the curriculum's choice (None: the scenario's default difficulty)


def task_seed(seed: int, index: int) -> int:
    """The task seed of episode ``index`` of the campaign on world ``seed``."""
    return seed * 10_000 + index


class Campaign:
    """Runs scenarios in turn on one world; episode k+1 starts where episode k ended.

    Args:
        scenarios: Scenario ids, used in order and cycled (``[a, b]`` gives a, b, a, b, ...).
        seed: The world seed (the company) and the root of every task seed.
        store: Where the base world is cached.
        noise: Fault-injection profile for every episode (see ``sim.noise``).
        npcs: Coworker option for every episode (off, ``sampled``, a trait preset; see ``sim.coworkers``).
        trace: Optional trace writer; every episode appends its records.
        curriculum: Optional sampler choosing each episode's scenario (among ``scenarios``) and difficulty.
        snapshots: Optional directory for the boundary snapshots and the manifest.
        world: Options naming the world (``employees``, ``history_days``); defaults are the first scenario's.
    """

    def __init__(
        self,
        scenarios: Sequence[str],
        *,
        seed: int,
        store: WorldStore | None = None,
        noise: str = "none",
        npcs: Any = None,
        trace: TraceWriter | None = None,
        snapshots: Path | None = None,
        world: dict[str, int] | None = None,
        curriculum: Curriculum | None = None,
    ) -> None:
        if not scenarios:
            raise CampaignError("a campaign needs at least one scenario id")
        if curriculum is not None and set(curriculum.families) != set(scenarios):
            raise CampaignError("the curriculum must draw from exactly the campaign's scenarios")
        self.curriculum = curriculum
        self.store = store or WorldStore()
        self.episodes = {
            sid: Episode(sid, store=self.store, trace=trace, noise=noise, npcs=npcs) for sid in dict.fromkeys(scenarios)
        }
        self.scenarios = list(scenarios)
        self.seed = seed
        self.snapshots = snapshots
        first = self.episodes[self.scenarios[0]].family.world
        self.world = {"employees": first.employees, "history_days": first.history_days, **(world or {})}
        self.spec = WorldSpec.parse(seed=seed, **self.world)
        self.boundaries: list[Boundary] = []
        self._start: StartState | None = None
        if snapshots is not None:
            sweep_temps(Path(snapshots))  # what a killed run was writing (a snapshot, a manifest)

    def close(self) -> None:
        """Close every episode and free its world."""
        for ep in self.episodes.values():
            ep.close()

    def run(self, agent: str, episodes: int, on_episode: Callable[[Boundary], None] | None = None) -> list[Boundary]:
        """Play ``episodes`` more episodes with a built-in agent; returns the boundaries reached so far."""
        if agent not in AGENTS:
            raise CampaignError(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")
        if episodes < 1:
            raise CampaignError(f"a campaign needs at least one episode, got {episodes}")
        for _ in range(episodes):
            index = len(self.boundaries)
            task = self.curriculum.next() if self.curriculum is not None else None
            scenario = task.scenario if task is not None else self.scenarios[index % len(self.scenarios)]
            ep = self.episodes[scenario]
            seed = task_seed(self.seed, index)
            start_at = self._start.clock_at if self._start is not None else None
            options: dict[str, Any] = {
                "world_seed": self.seed,
                **self.world,
                "campaign": {"index": index, "start": start_at.isoformat() if start_at else None},
            }
            if task is not None:
                options["difficulty"] = task.difficulty
            score = run_agent(ep, agent, seed, options, start=self._start)
            if task is not None and self.curriculum is not None:
                self.curriculum.update(task, [score.value])
            self._start = ep.final_state()
            if ep.trace is not None:
                ep.trace.flush()  # the episode is on disk before any manifest names its boundary
            boundary = Boundary(
                index=index,
                scenario=scenario,
                seed=seed,
                reward=score.value,
                state_hash=self._start.state_hash,
                next_start=self._start.clock_at.isoformat(),
                difficulty=task.difficulty if task is not None else None,
            )
            if self.snapshots is not None:
                boundary = self._save(boundary)
            self.boundaries.append(boundary)
            if on_episode is not None:
                on_episode(boundary)
        return list(self.boundaries)

    # -- snapshots ---------------------------------------------------------------------------------------

    def _save(self, boundary: Boundary) -> Boundary:
        assert self.snapshots is not None and self._start is not None
        self.snapshots.mkdir(parents=True, exist_ok=True)
        name = f"episode-{boundary.index:04d}.snap"
        Snapshot(
            spec_hash=self.spec.spec_hash,
            schema_version=SCHEMA_VERSION,
            generator_version=GENERATOR_VERSION,
            image=self._start.image,
        ).save(self.snapshots / name)
        digest = hashlib.sha256(self._start.image).hexdigest()
        saved = Boundary(**{**asdict(boundary), "snapshot": name, "image_sha256": digest})
        manifest = {
            "format": MANIFEST_FORMAT,
            "world": {"seed": self.seed, **self.world, "spec_hash": self.spec.spec_hash},
            "scenarios": self.scenarios,
            "boundaries": [asdict(b) for b in [*self.boundaries, saved]],
        }
        if self.curriculum is not None:
            manifest["curriculum"] = {"config": self.curriculum.config(), "state": self.curriculum.get_state()}
        tmp = temp_name(self.snapshots / MANIFEST)  # names this process, so a killed run's file is swept
        try:
            with tmp.open("x") as fh:
                json.dump(manifest, fh, indent=1, sort_keys=True)
            os.replace(tmp, self.snapshots / MANIFEST)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return saved

    @classmethod
    def resume(
        cls,
        snapshots: Path,
        *,
        store: WorldStore | None = None,
        noise: str = "none",
        npcs: Any = None,
        trace: TraceWriter | None = None,
    ) -> Campaign:
        """Continue the campaign whose manifest and snapshots are in ``snapshots``.

        Raises:
            CampaignError: the directory, manifest or last snapshot is missing or corrupt, or the snapshot
                belongs to another world than the manifest names (the message says which).
        """
        path = Path(snapshots) / MANIFEST
        if not path.is_file():
            raise CampaignError(f"no campaign to resume: {path} does not exist")
        try:
            manifest = json.loads(path.read_text())
            world = dict(manifest["world"])
            spec_hash = str(world.pop("spec_hash"))
            seed = int(world.pop("seed"))
            boundaries = [Boundary(**b) for b in manifest["boundaries"]]
            scenarios = [str(s) for s in manifest["scenarios"]]
            if manifest.get("format") != MANIFEST_FORMAT or not boundaries:
                raise ValueError("unsupported format or no boundary")
            curriculum = None
            if "curriculum" in manifest:
                curriculum = Curriculum.from_config(manifest["curriculum"]["config"])
                curriculum.set_state(manifest["curriculum"]["state"])
        except (ValueError, KeyError, TypeError, CurriculumError) as exc:
            raise CampaignError(f"{path} is not a valid campaign manifest ({exc})") from None
        camp = cls(
            scenarios,
            seed=seed,
            store=store,
            noise=noise,
            npcs=npcs,
            trace=trace,
            snapshots=Path(snapshots),
            world=world,
            curriculum=curriculum,
        )
        if camp.spec.spec_hash != spec_hash:
            camp.close()
            raise CampaignError(f"{path} names world {spec_hash[:12]} but its settings give {camp.spec.spec_hash[:12]}")
        last = boundaries[-1]
        try:
            snap = Snapshot.load(Path(snapshots) / str(last.snapshot))
        except SimError:
            camp.close()
            raise
        except Exception as exc:  # noqa: BLE001 - SnapshotError and friends: one clear campaign error
            camp.close()
            raise CampaignError(f"cannot resume from {last.snapshot}: {exc}") from None
        if snap.spec_hash != spec_hash:
            camp.close()
            raise CampaignError(
                f"snapshot {last.snapshot} belongs to world {snap.spec_hash[:12]}, not this campaign's {spec_hash[:12]}"
            )
        if last.image_sha256 is not None and hashlib.sha256(snap.image).hexdigest() != last.image_sha256:
            camp.close()
            raise CampaignError(
                f"snapshot {last.snapshot} is not the state the manifest recorded after episode {last.index} "
                "(another boundary's or another campaign's file?); refusing to resume from it"
            )
        camp.boundaries = boundaries
        camp._start = StartState(
            spec_hash=spec_hash,
            image=snap.image,
            state_hash=last.state_hash,
            clock_at=datetime.fromisoformat(last.next_start),
        )
        return camp


def continue_trace(path: Path, boundaries: Sequence[Boundary]) -> int:
    """Cut a resumed campaign's trace back to the episodes its snapshots hold; returns the records dropped.

    A run killed between a boundary and the next leaves, after the last saved episode, records of episodes
    the manifest does not name (complete or cut off mid-line). They are played again on resume, so they are
    dropped; the saved episodes must be there, in order, each ending in the state its boundary recorded.

    Raises:
        CampaignError: the trace is missing or does not hold the saved episodes (nothing is changed then).
    """
    if not path.is_file():
        raise CampaignError(
            f"--trace {path} does not exist; a resumed campaign's trace continues the one it started with "
            "(run without --trace, or pass that file)"
        )
    kept, cut, offset = 0, 0, 0
    header: dict[str, Any] | None = None
    last_hash: Any = None
    with path.open("rb") as fh:
        for raw in fh:
            offset += len(raw)
            try:
                record = json.loads(raw) if raw.endswith(b"\n") else None
            except ValueError:
                record = None
            if not isinstance(record, dict):
                break  # a line cut off by the kill, or garbage after it
            kind = record.get("type")
            if kind == "header":
                if kept == len(boundaries):
                    break  # the first episode no snapshot holds
                header, last_hash = record, record.get("start_state_hash")
            elif kind == "step" and header is not None:
                last_hash = record.get("state_hash")
            elif kind == "score" and header is not None:
                saved = boundaries[kept]
                index = ((header.get("options") or {}).get("campaign") or {}).get("index")
                found = (index, header.get("scenario"), header.get("seed"), last_hash)
                if found != (saved.index, saved.scenario, saved.seed, saved.state_hash):
                    raise CampaignError(
                        f"--trace {path}: its episode {kept} is not the saved campaign's (another campaign's trace?)"
                    )
                kept, cut, header = kept + 1, offset, None
    if kept < len(boundaries):
        raise CampaignError(
            f"--trace {path} holds {kept} complete episode(s) of this campaign, but its snapshots reach "
            f"{len(boundaries)}; pass the trace the campaign started with"
        )
    with path.open("rb") as fh:
        fh.seek(cut)
        dropped = sum(1 for _ in fh)
    if dropped:
        os.truncate(path, cut)
    return dropped


__all__ = ["Boundary", "Campaign", "CampaignError", "continue_trace", "next_workday_morning", "task_seed"]
