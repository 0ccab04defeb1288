"""The front process's view of the worker processes: send a request, await its answer, notice a death.

Each worker has one pipe. The event loop writes requests straight into it (they are small, and the worker
drains its pipe between operations); one reader thread per worker blocks on the pipe and hands each answer
to the waiting future on the loop. When the pipe breaks (the worker was killed, even with SIGKILL), the
reader fails every pending request of that worker with ``EpisodeFailed`` at once, calls ``on_death`` so the
episode table can mark that worker's episodes failed, and a fresh worker is started in the same slot (a new
``generation``), so capacity comes back and nothing waits forever.

Workers are started with the ``spawn`` method: the front process runs threads and an event loop, which a
``fork`` would copy in an undefined state.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from sim.server.errors import EpisodeFailed, ServerError
from sim.server.worker import worker_main

log = logging.getLogger("companysim.server")


@dataclass
class Slot:
    """One worker slot: its process, pipe and pending requests (a slot keeps its index across restarts)."""

    index: int
    generation: int
    process: BaseProcess
    conn: Connection
    pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    alive: bool = True
    stopping: bool = False


class WorkerPool:
    """N worker processes, each answering requests in the order it receives them.

    Args:
        workers: How many processes.
        data_dir: The base-world cache every worker uses.
        on_death: Called on the event loop with (slot index, old generation) when a worker dies.
    """

    def __init__(self, workers: int, data_dir: str | None, on_death: Callable[[int, int], None] | None = None) -> None:
        self.size = workers
        self.data_dir = data_dir
        self.on_death = on_death
        self.slots: list[Slot] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ids = itertools.count(1)
        self._ctx = multiprocessing.get_context("spawn")
        self._closing = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start every worker; answers are delivered on ``loop``."""
        self.loop = loop
        self.slots = [self._spawn(i, 0) for i in range(self.size)]

    def _spawn(self, index: int, generation: int) -> Slot:
        ours, theirs = self._ctx.Pipe(duplex=True)
        process = self._ctx.Process(
            target=worker_main, args=(theirs, self.data_dir), name=f"companysim-worker-{index}", daemon=True
        )
        process.start()
        theirs.close()
        slot = Slot(index=index, generation=generation, process=process, conn=ours)
        threading.Thread(target=self._read, args=(slot,), name=f"companysim-reader-{index}", daemon=True).start()
        return slot

    def _read(self, slot: Slot) -> None:
        """Reader thread: deliver answers; on a broken pipe, fail what is pending and report the death."""
        assert self.loop is not None
        while True:
            try:
                rid, ok, payload = slot.conn.recv()
            except (EOFError, OSError):
                break
            self.loop.call_soon_threadsafe(self._deliver, slot, rid, ok, payload)
        self.loop.call_soon_threadsafe(self._died, slot)

    @staticmethod
    def _deliver(slot: Slot, rid: int, ok: bool, payload: Any) -> None:
        future = slot.pending.pop(rid, None)
        if future is None or future.done():
            return
        if ok:
            future.set_result(payload)
        else:
            future.set_exception(ServerError(payload["message"], code=payload["code"], status=_status(payload["code"])))

    def _died(self, slot: Slot) -> None:
        if not slot.alive:
            return
        slot.alive = False
        failure = EpisodeFailed(f"worker {slot.index} stopped; its episodes are lost")
        for future in slot.pending.values():
            if not future.done():
                future.set_exception(failure)
        slot.pending.clear()
        slot.conn.close()
        slot.process.join(timeout=1)
        if slot.stopping or self._closing:
            return
        log.warning("worker %d (pid %s) died with exit code %s; starting a new one", slot.index, slot.process.pid,
                    slot.process.exitcode)  # fmt: skip
        if self.on_death is not None:
            self.on_death(slot.index, slot.generation)
        self.slots[slot.index] = self._spawn(slot.index, slot.generation + 1)

    async def call(self, index: int, op: str, **args: Any) -> Any:
        """Run ``op`` on worker ``index`` and return its payload.

        Raises:
            ServerError: the worker refused the operation (its code and message).
            EpisodeFailed: the worker died before answering.
        """
        slot = self.slots[index]
        if not slot.alive:
            raise EpisodeFailed(f"worker {index} is restarting")
        assert self.loop is not None
        rid = next(self._ids)
        future: asyncio.Future[Any] = self.loop.create_future()
        slot.pending[rid] = future
        try:
            slot.conn.send((rid, op, args))
        except (BrokenPipeError, OSError):
            slot.pending.pop(rid, None)
            raise EpisodeFailed(f"worker {index} stopped; its episodes are lost") from None
        return await future

    def generation(self, index: int) -> int:
        """The current generation of slot ``index`` (bumped on every restart)."""
        return self.slots[index].generation

    def pids(self) -> list[int | None]:
        """The worker pids, by slot."""
        return [s.process.pid for s in self.slots]

    async def stop(self, timeout: float = 10.0) -> None:
        """Ask every worker to close its episodes and exit; kill those that do not within ``timeout``."""
        self._closing = True
        waits = []
        for slot in self.slots:
            slot.stopping = True
            if slot.alive:
                waits.append(self.call(slot.index, "stop"))
        if waits:
            await asyncio.wait([asyncio.ensure_future(w) for w in waits], timeout=timeout)
        for slot in self.slots:
            slot.process.join(timeout=1)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=1)


def _status(code: str) -> int:
    """The HTTP status of a worker's refusal code."""
    return {"internal": 500, "unknown_scenario": 404}.get(code, 400)
