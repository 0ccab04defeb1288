"""Where an episode's world comes from: base worlds, post-setup images of tasks, the warm world, start states.

A reset needs a private world holding "this task, before the agent". ``TaskWorlds.open`` gets one by the
cheapest of four paths, all giving the same bytes (setup is a pure function of scenario, world, seed and
difficulty; a test compares them step by step):

1. ``start`` given (a campaign's next episode): fork that state and run the setup on it;
2. the same task as the episode just ended (a GRPO group): roll that world back to its committed post-setup
   state and reuse it, with its open session and prepared statements (no fork at all);
3. a task in the process-wide ``SETUP_CACHE`` (LRU by image bytes): fork its post-setup image;
4. otherwise fork the base world and run the scenario's setup, then commit it (the fork is private, so its
   setup becomes its base and an image can capture it) and cache the image.

Base worlds are generated once per spec by the ``WorldStore`` and kept open per process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from mcp_tools.base import Actor
from scenarios.base import ScenarioFamily, ScenarioInstance
from sim.clock import SimClock
from sim.errors import SimError
from worlds.changelog import ChangeContext, track
from worlds.rawsql import Sql, iso
from worlds.seeding import Seeds
from worlds.spec import WorldSpec
from worlds.store import Snapshot, World, WorldStore

if TYPE_CHECKING:
    from sim.workspace import CodeBases, EpisodeCode

TaskKey = tuple[str, str, int, int]
"""(scenario id, world spec hash, seed, difficulty): what determines a task's post-setup state."""


@dataclass(frozen=True, kw_only=True)
class StartState:
    """Where an episode of a campaign starts: a world image, the state-hash chain so far, and the clock."""

    spec_hash: str
    image: bytes
    state_hash: str
    clock_at: datetime


def next_workday_morning(at: datetime) -> datetime:
    """09:00 UTC of the first Monday-to-Friday day after ``at``."""
    day = at.date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return datetime.combine(day, time(9, 0), tzinfo=UTC)


@dataclass(frozen=True)
class TaskSetup:
    """What a scenario setup produced, kept so the same task can be reset without running the setup again."""

    image: bytes | None
    instance: ScenarioInstance
    rows: list[dict[str, Any]]
    clock_at: datetime
    actor: Actor
    base_seq: int = 0
    """The last change-log seq before the setup ran (a campaign's later episodes start after earlier ones' rows)."""


class SetupCache:
    """Post-setup states by (scenario, world spec hash, seed, difficulty), least recently used evicted first.

    Process-wide so every Episode (and every env of a vector) shares one copy of a task's state; bounded by
    ``max_bytes`` of images (a 40-employee world is about 0.7 MB). Thread-safe: vectorised envs may reset in
    threads.
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[TaskKey, TaskSetup] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: TaskKey) -> TaskSetup | None:
        """The cached state of ``key`` (marked recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is not None:
                self._items.move_to_end(key)
            return item

    def put(self, key: TaskKey, item: TaskSetup) -> None:
        """Keep ``item``, evicting the least recently used states beyond ``max_bytes``."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old.image or b"")
            self._items[key] = item
            self._bytes += len(item.image or b"")
            while self._bytes > self.max_bytes and len(self._items) > 1:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= len(evicted.image or b"")

    def clear(self) -> None:
        """Forget every cached state."""
        with self._lock:
            self._items.clear()
            self._bytes = 0


SETUP_CACHE = SetupCache()
_BASES: dict[tuple[str, str], World] = {}
_BASES_LOCK = threading.Lock()


def shared_base(store: WorldStore, spec: WorldSpec) -> World:
    """The base world of ``spec`` in ``store``, opened once per process and shared by every episode.

    Why shared: each ``Episode`` opening its own copy held another connection, engine and page cache per live
    episode; forks only read the base's image, so one open base serves them all (threads included).
    """
    key = (str(store.db or store.data_dir), spec.spec_hash)
    with _BASES_LOCK:
        world = _BASES.get(key)
        if world is None or world.closed:
            world = _BASES[key] = store.base(spec)
        return world


@dataclass(kw_only=True)
class OpenTask:
    """A reset's world: the fork, its session, the clock, the change-log context and the task's setup."""

    key: TaskKey
    world: World
    session: Session
    clock: SimClock
    change: ChangeContext
    setup: TaskSetup


def log_since(session: Any, seq: int) -> list[dict[str, Any]]:
    """The change-log rows after ``seq``, in order, as plain dicts (the form traces and the hash chain use)."""
    rows = Sql.of(session).all(
        "SELECT seq, table_name, row_key, op, changes, actor_id, at, tag FROM change_log WHERE seq > ? ORDER BY seq",
        (seq,),
    )
    import json

    return [
        {
            "seq": r[0],
            "table": r[1],
            "key": r[2],
            "op": r[3],
            "changes": json.loads(r[4]) if isinstance(r[4], str) else r[4],
            "actor": r[5],
            "at": iso(r[6]),
            "tag": r[7],
        }
        for r in rows
    ]


def _fork_at(base: World, image: bytes | None) -> World:
    """A fork of ``base`` holding ``image`` (a later state of one of its forks).

    SQLite: an in-memory copy of the image. PostgreSQL: a template copy of the base with the image's rows loaded.
    """
    if base.backend != "postgresql" or image is None:
        return base.fork(image=image)
    world = base.fork()
    try:
        snap = Snapshot(
            spec_hash=base.spec.spec_hash,
            schema_version=base.schema_version,
            generator_version=base.generator_version,
            image=image,
        )
        world.restore(snap)
    except BaseException:
        world.close()
        raise
    return world


class TaskWorlds:
    """The worlds of one scenario family's episodes (one per ``Episode``).

    Args:
        family: The scenario family whose setup runs.
        store: Where base worlds are generated and cached.
        use_cache: Keep post-setup images in ``SETUP_CACHE``.
    """

    def __init__(self, family: ScenarioFamily, store: WorldStore, *, use_cache: bool = True) -> None:
        self.family = family
        self.store = store
        self.use_cache = use_cache
        self._warm: OpenTask | None = None
        self._code: CodeBases | None = None

    def code_for(self, spec: WorldSpec, task: OpenTask, instance: ScenarioInstance) -> EpisodeCode:
        """The code workspace of a task with repositories (git and the sandbox are imported only then)."""
        if self._code is None:
            from sim.workspace import CodeBases

            self._code = CodeBases(self.store)
        return self._code.for_task(spec, task.session, task.key, instance)

    def base(self, spec: WorldSpec) -> World:
        """The base world of ``spec`` (generated on first use, then shared by the process's episodes)."""
        return shared_base(self.store, spec)

    def open(self, spec: WorldSpec, seed: int, difficulty: int, start: StartState | None) -> OpenTask:
        """A private world with the task set up (see the module docstring for the four paths).

        Raises:
            SimError: ``start`` belongs to another world than ``spec``.
        """
        if start is not None and start.spec_hash != spec.spec_hash:
            raise SimError(
                f"start state belongs to world {start.spec_hash[:12]}, not to this reset's world {spec.spec_hash[:12]}"
            )
        base = self.base(spec)
        key: TaskKey = (self.family.id, spec.spec_hash, seed, difficulty)
        if start is not None:
            self.drop_warm()
            world = _fork_at(base, start.image)
            session = world.session()
            before = int(Sql.of(session).scalar("SELECT max(seq) FROM change_log") or 0)
            return self._setup(key, world, session, SimClock(start.clock_at), seed, difficulty, before)
        warm = self._warm
        if warm is not None and warm.key == key:
            # The same task as the last episode, whose changes were rolled back: its world and session stay
            # open (parsed schema, prepared statements), so this reset costs no fork at all.
            clock = SimClock(warm.setup.clock_at)
            opened = replace(warm, clock=clock, change=track(warm.session, clock=clock))
        else:
            self.drop_warm()
            cached = SETUP_CACHE.get(key) if self.use_cache else None
            if cached is None:
                world = base.fork()
                # The instant the generated history ends; the setup moves it on to its actor's morning.
                clock = SimClock(datetime.combine(spec.start_date, time(9, 0), tzinfo=UTC))
                opened = self._setup(key, world, world.session(), clock, seed, difficulty, 0)
                image = world.image()  # None on PostgreSQL: its forks are template copies, not images
                if self.use_cache and image is not None and not clock.pending():
                    SETUP_CACHE.put(key, replace(opened.setup, image=image))
            else:  # a task seen recently (e.g. the group of a GRPO step): fork the state its setup left
                world = _fork_at(base, cached.image)
                session = world.session()
                clock = SimClock(cached.clock_at)
                opened = OpenTask(
                    key=key, world=world, session=session, clock=clock, change=track(session, clock=clock), setup=cached
                )
        if not opened.clock.pending():
            self._warm = opened
        return opened

    def _setup(
        self, key: TaskKey, world: World, session: Session, clock: SimClock, seed: int, difficulty: int, before: int
    ) -> OpenTask:
        change = track(session, clock=clock, tag="setup")
        instance = self.family.build(session, Seeds(seed), clock, difficulty)
        session.commit()  # the fork is private: its setup becomes its base (and an image can capture it)
        session.expunge_all()  # tools write raw SQL from here on; no ORM object may go stale
        setup = TaskSetup(
            None,
            instance,
            log_since(session, before),
            clock.now(),
            Actor.load(session, instance.actor),
            base_seq=before,
        )
        return OpenTask(key=key, world=world, session=session, clock=clock, change=change, setup=setup)

    def release(self, world: World, session: Session) -> None:
        """An episode on ``world`` ended: roll it back to its post-setup state if it is the warm one, else close."""
        warm = self._warm
        if warm is not None and warm.world is world:
            try:  # back to the committed post-setup state, ready for the same task again
                session.rollback()
                session.expunge_all()
                return
            except Exception:  # noqa: BLE001 - a world that cannot roll back is simply not reused
                self._warm = None
        session.close()
        world.close()

    def keep(self, world: World) -> None:
        """``world``'s committed state moves on (a campaign continues it): it can no longer be the warm task."""
        if self._warm is not None and self._warm.world is world:
            self._warm = None

    def drop_warm(self) -> None:
        """Close the warm world, if any."""
        warm, self._warm = self._warm, None
        if warm is not None:
            warm.session.close()
            warm.world.close()

    def close(self) -> None:
        """Close the warm world (base worlds stay open for the process's other episodes)."""
        self.drop_warm()
