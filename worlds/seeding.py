"""Named random streams derived from one integer seed.

Every consumer of randomness asks for a stream by name (``org``, ``history/chat``, ``npc/17``, ...). Each name
maps to its own ``numpy.random.SeedSequence`` child, so adding a new consumer never shifts the numbers another
consumer sees, and the order in which streams are requested does not matter. Names are hashed with SHA-256,
never with ``hash()``, so the mapping is the same under every ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from faker import Faker


def _name_key(name: str) -> tuple[int, ...]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


class Seeds:
    """Factory of named, independent random streams for one world or episode seed.

    Args:
        seed: The root integer seed (any non-negative int).
    """

    def __init__(self, seed: int) -> None:
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        self.seed = seed

    def sequence(self, name: str) -> np.random.SeedSequence:
        """The SeedSequence of the stream ``name``."""
        return np.random.SeedSequence(entropy=self.seed, spawn_key=_name_key(name))

    def rng(self, name: str) -> np.random.Generator:
        """A fresh numpy Generator for the stream ``name`` (same name, same numbers)."""
        return np.random.Generator(np.random.PCG64(self.sequence(name)))

    def int_seed(self, name: str) -> int:
        """A 63-bit integer derived from the stream ``name``, for libraries that take an int seed."""
        return int(self.sequence(name).generate_state(2, dtype=np.uint32).astype(np.uint64) @ [1, 1 << 32]) >> 1

    def faker(self, name: str, locale: str = "en_US") -> Faker:
        """A Faker instance seeded from the stream ``name``.

        Faker is pinned exactly in constraints.txt: its output changes between releases. Callers must give its
        date helpers explicit bounds, because the unbounded ones read today's date.
        """
        from faker import Faker  # imported here: episodes never need it, and it costs ~0.2 s to import

        fake = Faker(locale)
        fake.seed_instance(self.int_seed(name))
        return fake

    @cached_property
    def root(self) -> np.random.SeedSequence:
        """The root SeedSequence (no spawn key)."""
        return np.random.SeedSequence(self.seed)
