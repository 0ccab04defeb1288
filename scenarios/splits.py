"""World-level splits: each company (world seed) belongs to train, val or test by a hash of its seed.

An evaluation on ``test`` then runs on companies a policy never saw in training, whatever task it plays. The
split is a pure function of the seed (SHA-256, not a table), so every tool and every machine agrees on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from itertools import count, islice

SPLITS: dict[str, float] = {"train": 0.8, "val": 0.1, "test": 0.1}


class SplitError(ValueError):
    """An unknown split name."""


def world_split(world_seed: int) -> str:
    """The split the company of ``world_seed`` belongs to."""
    draw = int.from_bytes(hashlib.sha256(f"companysim/split/{world_seed}".encode()).digest()[:8], "big") / 2**64
    edge = 0.0
    for name, share in SPLITS.items():
        edge += share
        if draw < edge:
            return name
    return "test"


def seeds_in(split: str, n: int, start: int = 0) -> list[int]:
    """The first ``n`` world seeds >= ``start`` that belong to ``split``.

    Raises:
        SplitError: ``split`` is not one of train, val, test.
    """
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    matching: Iterator[int] = (s for s in count(start) if world_split(s) == split)
    return list(islice(matching, n))
