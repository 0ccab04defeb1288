"""NPC coworkers inside an episode: which population, with which traits, and when their turns run.

The ``npcs`` option of an episode (``Episode(npcs=...)``, ``reset(options={"npcs": ...})``, ``--npcs`` on the
CLI) chooses them:

- ``None`` or ``"off"``: no coworkers act (the default; scenarios that need none stay as cheap as before),
  except for a scenario with ``needs_npcs``, which then runs ``"sampled"`` (see ``effective_option``);
- ``"sampled"``: coworkers with the traits sampled per employee from the world seed, plus the scenario's pins;
- a preset name (``cooperative``, ``adversarial``, ``chaotic``, ``absent``, ``neutral``): every coworker of
  the population gets that preset, overriding the scenario's pins (the preset is the experiment's knob);
- a dict ``{username: trait spec}``: the sampled traits, the scenario's pins, then these overrides.

Turns run on the simulated clock: after each agent step the population is poked (new DMs, mentions,
assignments, invites, mail) and a clock event is armed at the earliest pending turn; when the clock passes it,
every due turn runs, inside its own savepoint so a failing NPC action never corrupts the agent's world.

Under a noise profile with ``npc_no_show`` (``realistic``, ``harsh``), a coworker whose turn falls due may be
away instead (``sim.noise.npc_absence``: seeded by the episode seed, the NPC and its due-turn count); each
absence is a fault of the step during which it began. The ``npc_llm`` reset option (``Episode(npc_llm=...)``,
``--npc-llm``) rephrases NPC text through ``npcs.realiser.Realiser``, whose recording replays offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from npcs.errors import NpcError, UnknownPreset
from npcs.traits import PRESETS, TraitVector
from scenarios.base import ScenarioInstance
from sim.clock import SimClock
from sim.errors import BadOption
from sim.noise import NoiseProfile, npc_absence
from worlds.rawsql import Sql

OFF = ("off", "none")


def check_npcs_option(value: Any) -> None:
    """Validate an ``npcs`` option before anything changes.

    Raises:
        NpcError: an unknown preset or a bad trait (the message names the value).
    """
    if value is None or value in OFF or value == "sampled":
        return
    if isinstance(value, str):
        if value not in PRESETS:
            raise UnknownPreset(
                f"npcs must be off, sampled or a preset ({', '.join(sorted(PRESETS))}), or a dict; got {value!r:.60}"
            )
        TraitVector.parse(value)
        return
    if not isinstance(value, Mapping):
        raise NpcError(
            f"npcs must be off, sampled, a preset ({', '.join(sorted(PRESETS))}) or a dict; got {value!r:.60}"
        )
    for spec in value.values():
        TraitVector.parse(spec)


def enabled(value: Any) -> bool:
    """Whether the option turns coworkers on."""
    return value is not None and value not in OFF


def effective_option(value: Any, instance: ScenarioInstance) -> Any:
    """The option an episode actually runs: ``value``, or ``"sampled"`` when it is off and the task needs NPCs.

    Why ``sampled`` and not a preset: it keeps the scenario's own pins (``instance.npcs``), so a scheduling task
    meets the coworkers it was written for (e.g. cooperative) unless the caller explicitly chooses otherwise.
    """
    return "sampled" if instance.needs_npcs and not enabled(value) else value


NPC_LLM_KEYS = ("cache", "model", "base_url")


def check_npc_llm(value: Any) -> None:
    """Validate an ``npc_llm`` option: None, or ``{"cache": path, "model"?: name, "base_url"?: url}``.

    Raises:
        BadOption: not such a mapping (the message names what is wrong).
    """
    if value is None:
        return
    if not isinstance(value, Mapping) or not isinstance(value.get("cache"), str) or not value["cache"]:
        raise BadOption(f"npc_llm must be an object with a 'cache' path (and 'model', 'base_url'); got {value!r:.80}")
    unknown = set(value) - set(NPC_LLM_KEYS)
    if unknown:
        raise BadOption(f"npc_llm has unknown setting(s) {', '.join(sorted(unknown))}; expected {NPC_LLM_KEYS}")
    for key in ("model", "base_url"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise BadOption(f"npc_llm {key} must be a string; got {value[key]!r:.40}")


def realiser_for(value: Mapping[str, Any] | None) -> Any:
    """The NPC text realiser of an ``npc_llm`` option (None: templates only).

    Without ``base_url`` the realiser reads its recording only (a miss fails the NPC turn, listed in
    ``npc_failures``): how a replay proves it called no model.
    """
    if value is None:
        return None
    from npcs.realiser import Realiser

    return Realiser(value["cache"], base_url=value.get("base_url"), model=str(value.get("model") or "npc-realiser"))


class Coworkers:
    """An episode's NPC population bound to its clock (built only when the ``npcs`` option is on).

    Args:
        session: The episode's world session.
        world_seed: The world's seed (personas and NPC streams).
        clock: The episode's clock.
        instance: The task (its actor, pinned traits, population).
        option: The effective ``npcs`` option.
        noise: The episode's noise profile (its ``npc_no_show`` rate applies here).
        seed: The episode seed (no-shows, like tool faults, are drawn per episode).
        realiser: Optional LLM realiser for NPC text.
    """

    def __init__(
        self,
        session: Any,
        world_seed: int,
        clock: SimClock,
        instance: ScenarioInstance,
        option: Any,
        *,
        noise: NoiseProfile | None = None,
        seed: int = 0,
        realiser: Any = None,
    ) -> None:
        self.session = session
        self.clock = clock
        self.noise, self.seed = noise, seed
        self.faults: list[dict[str, Any]] = []
        self._step = -1  # the agent step being run (after_step counts them)
        overrides: dict[int | str, Any] = {k: v for k, v in instance.npcs.items()}
        population = list(instance.npc_population) if instance.npc_population is not None else None
        if isinstance(option, str) and option != "sampled":
            names = population or Sql.of(session).column(
                "SELECT username FROM employees WHERE active = ? AND username <> ? ORDER BY id",
                (True, instance.actor),
            )
            overrides = {name: option for name in names}
        elif isinstance(option, Mapping):
            overrides.update(option)
        from npcs.model import NpcWorld  # lazy: mesa and langgraph load only when an episode has coworkers

        absent = self._absent if noise is not None and noise.npc_no_show > 0 else None
        self.world = NpcWorld(
            session, world_seed, clock, agent=instance.actor, overrides=overrides, population=population,
            realiser=realiser, absent=absent,
        )  # fmt: skip
        self._armed: datetime | None = None
        self.failures: list[dict[str, Any]] = []

    def after_step(self) -> None:
        """Poke the population with what the agent's step changed and arm the next turn on the clock."""
        self._step += 1
        self.world.poke(self.clock.now())
        self._arm()

    def _absent(self, npc: str, attempt: int) -> float | None:
        assert self.noise is not None
        minutes = npc_absence(self.noise, self.seed, npc, attempt)
        if minutes is not None:
            self.faults.append(
                {"step": max(self._step, 0), "type": "npc_no_show", "npc": npc, "attempt": attempt,
                 "at": self.clock.now().isoformat(), "minutes": minutes}
            )  # fmt: skip
        return minutes

    def stats(self) -> dict[str, Any]:
        """The episode's coworker figures (``npcs.model.NpcWorld.stats``: DataCollector rows summed up)."""
        return self.world.stats()

    def _arm(self) -> None:
        nxt = self.world.next_wakeup()
        if nxt is None:
            return
        at = max(nxt, self.clock.now())
        if self._armed is not None and self._armed <= at:
            return  # an earlier event is already queued; it re-arms when it fires
        self._armed = at
        self.clock.schedule(at, self._fire, "npcs")

    def _fire(self) -> None:
        self._armed = None
        sql = Sql.of(self.session)
        sql.execute("SAVEPOINT npc_turns")
        try:
            self.world.run_due(self.clock.now())
            sql.execute("RELEASE SAVEPOINT npc_turns")
        except Exception as exc:  # noqa: BLE001 - an NPC bug must not end the agent's episode; it is reported
            sql.execute("ROLLBACK TO SAVEPOINT npc_turns")
            sql.execute("RELEASE SAVEPOINT npc_turns")
            if self.session.identity_map:
                self.session.expunge_all()
            self.failures.append({"at": self.clock.now().isoformat(), "error": f"{type(exc).__name__}: {exc}"[:300]})
        self._arm()
