"""Splits by hash: a task belongs to train, val or test by its company, its family or its source.

Three ways to hold tasks out, each a pure function of one name (SHA-256, not a table), so every tool and every
machine agrees and a split never moves when tasks are added:

- ``world``: by the company (world seed). An evaluation on ``test`` runs on companies a policy never saw in
  training, whatever task it plays.
- ``family``: by the scenario family, version left out (``triage-tickets``), so a new version of a family stays
  where the old one was: held-out kinds of work.
- ``source``: by where a task came from (e.g. a mined task's provenance ``mined/redo/ticket:42``; a generated
  task's source is its family id), so tasks mined from one historical event never straddle splits.

Each kind hashes under its own prefix, so the three are independent of each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from itertools import count, islice

SPLITS: dict[str, float] = {"train": 0.8, "val": 0.1, "test": 0.1}


class SplitError(ValueError):
    """An unknown split name."""


SPLIT_KINDS = ("world", "family", "source")


def _split_of(name: str) -> str:
    draw = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") / 2**64
    edge = 0.0
    for split, share in SPLITS.items():
        edge += share
        if draw < edge:
            return split
    return "test"


def world_split(world_seed: int) -> str:
    """The split the company of ``world_seed`` belongs to."""
    return _split_of(f"companysim/split/{world_seed}")


def family_name(scenario_id: str) -> str:
    """A scenario id without its version suffix: ``triage-tickets-v0`` -> ``triage-tickets``."""
    head, sep, tail = scenario_id.rpartition("-v")
    return head if sep and tail.isdigit() else scenario_id


def family_split(scenario_id: str) -> str:
    """The split a scenario family belongs to (every version of it the same)."""
    return _split_of(f"companysim/split/family/{family_name(scenario_id)}")


def source_split(source: str) -> str:
    """The split of tasks from ``source`` (a mined task's provenance, a generated task's family id)."""
    return _split_of(f"companysim/split/source/{source}")


def split_of(kind: str, *, world_seed: int, scenario_id: str, source: str) -> str:
    """A task's split under ``kind`` (world, family or source).

    Raises:
        SplitError: ``kind`` is not one of ``SPLIT_KINDS``.
    """
    if kind == "world":
        return world_split(world_seed)
    if kind == "family":
        return family_split(scenario_id)
    if kind == "source":
        return source_split(source)
    raise SplitError(f"unknown split kind {kind!r}; expected one of {', '.join(SPLIT_KINDS)}")


def check_split(split: str) -> str:
    """``split`` if it is a split name.

    Raises:
        SplitError: it is not one of train, val, test.
    """
    if split not in SPLITS:
        raise SplitError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split


def seeds_in(split: str, n: int, start: int = 0) -> list[int]:
    """The first ``n`` world seeds >= ``start`` that belong to ``split``.

    Raises:
        SplitError: ``split`` is not one of train, val, test.
    """
    check_split(split)
    matching: Iterator[int] = (s for s in count(start) if world_split(s) == split)
    return list(islice(matching, n))
