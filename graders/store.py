"""The rubric store: every version of every rubric, immutable, with where each check came from.

A rubric evolves as policies learn to game it (``graders.buffer``), so a trainer must be able to say which
rubric produced a reward and how it came to be. The store keeps each version as one JSON file named by its
content hash, never rewritten::

    <root>/<rubric id>/v0003-<fingerprint[:16]>.json   {"rubric": {...}, "parent": fp | null,
                                                          "origins": {check id: origin}, "note": "..."}

``origins`` says, per check, who or what proposed it (``family`` for the checks a scenario family ships,
``buffer:negative:mass_edit`` for one the buffer added, ``llm:<model>`` for an LLM proposer, ``human``) and
from which rollouts (their trace hashes), and the version that added it. It lives beside the rubric rather
than inside it, so a rubric's fingerprint (which every score record names) depends on its checks alone.

``resolve("triage-tickets@3")``, ``resolve("triage-tickets")`` (the newest) or a path to a rubric file gives
the rubric; ``log``, ``show`` and ``diff`` are what ``companysim rubric log|show|diff`` print.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graders.base import Check, Rubric
from graders.errors import RubricError, RubricNotFound
from graders.rubric import load_rubric

_NAME = re.compile(r"^v(\d{4,})-([0-9a-f]{16})\.json$")
_REF = re.compile(r"^(?P<id>[a-z0-9][a-z0-9._-]*)(?:@(?P<version>\d+))?$")


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where one check came from: the proposer, the rollouts it was learnt from, the version that added it."""

    by: str
    rollouts: tuple[str, ...] = ()
    added_in: int = 1
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored form."""
        return {"by": self.by, "rollouts": list(self.rollouts), "added_in": self.added_in, "why": self.why}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Origin:
        """The inverse of ``to_json``."""
        return cls(
            by=str(data["by"]),
            rollouts=tuple(str(r) for r in data.get("rollouts", ())),
            added_in=int(data.get("added_in", 1)),
            why=str(data.get("why", "")),
        )


@dataclass(frozen=True, kw_only=True)
class StoredRubric:
    """One stored version: the rubric, its parent's fingerprint, each check's origin and a note."""

    rubric: Rubric
    parent: str | None = None
    origins: Mapping[str, Origin] = field(default_factory=dict)
    note: str = ""

    @property
    def ref(self) -> str:
        """``id@version``."""
        return f"{self.rubric.id}@{self.rubric.version}"

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        return {
            "rubric": self.rubric.model_dump(mode="json"),
            "fingerprint": self.rubric.fingerprint,
            "parent": self.parent,
            "origins": {k: v.to_json() for k, v in sorted(self.origins.items())},
            "note": self.note,
        }


@dataclass(frozen=True)
class RubricDiff:
    """What changed between two versions: checks added, removed, and changed (params, weight, must, ...)."""

    old: StoredRubric
    new: StoredRubric
    added: tuple[Check, ...]
    removed: tuple[Check, ...]
    changed: tuple[tuple[Check, Check], ...]

    def lines(self) -> list[str]:
        """Readable lines, one per difference (``+``, ``-``, ``~``)."""
        out = [f"{self.old.ref} -> {self.new.ref}"]
        for c in self.added:
            origin = self.new.origins.get(c.id)
            by = f" [{origin.by}: {origin.why}]" if origin else ""
            out.append(f"+ {c.id} ({c.fn}, weight {c.weight:g}{', must' if c.must else ''}){by}")
        out += [f"- {c.id} ({c.fn})" for c in self.removed]
        for a, b in self.changed:
            fields = [
                k for k in ("fn", "weight", "must", "params", "description", "kind") if getattr(a, k) != getattr(b, k)
            ]
            out.append(f"~ {a.id}: {', '.join(fields)}")
        return out


class RubricStore:
    """Versions of rubrics under ``root``, one immutable JSON file each.

    Args:
        root: The store's directory (created on the first ``put``).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def put(
        self,
        rubric: Rubric,
        *,
        origins: Mapping[str, Origin] | None = None,
        note: str = "",
    ) -> StoredRubric:
        """Store ``rubric`` as the next version of its id; returns what was stored.

        The rubric's version must be one past the newest stored (or any, for a new id) and its checks' origins
        are inherited from the parent unless given. Storing an identical rubric again returns the stored one.

        Raises:
            RubricError: the version does not follow the newest stored version.
        """
        versions = self.log(rubric.id)
        for stored in versions:
            if stored.rubric.fingerprint == rubric.fingerprint:
                return stored
        newest = versions[-1] if versions else None
        if newest is not None and rubric.version != newest.rubric.version + 1:
            raise RubricError(
                f"rubric {rubric.id!r}: expected version {newest.rubric.version + 1} after the stored"
                f" v{newest.rubric.version}; got v{rubric.version}"
            )
        inherited = dict(newest.origins) if newest is not None else {}
        merged = {c.id: inherited.get(c.id, Origin(by="family", added_in=rubric.version)) for c in rubric.checks}
        merged.update({k: v for k, v in (origins or {}).items() if k in merged})
        stored = StoredRubric(
            rubric=rubric, parent=newest.rubric.fingerprint if newest else None, origins=merged, note=note
        )
        directory = self.root / rubric.id
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"v{rubric.version:04d}-{rubric.fingerprint[:16]}.json"
        data = json.dumps(stored.to_json(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return stored

    def ids(self) -> list[str]:
        """Every rubric id with at least one stored version, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and any(_NAME.match(f.name) for f in p.iterdir())
        )

    def log(self, rubric_id: str) -> list[StoredRubric]:
        """Every stored version of ``rubric_id``, oldest first (empty when none)."""
        directory = self.root / rubric_id
        if not directory.is_dir():
            return []
        files = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name)))
        return [self._read(p) for _, p in files]

    def get(self, rubric_id: str, version: int | None = None) -> StoredRubric:
        """Version ``version`` of ``rubric_id`` (the newest when None).

        Raises:
            RubricNotFound: no such id or version, with the versions that exist.
        """
        versions = self.log(rubric_id)
        if not versions:
            known = ", ".join(self.ids()) or "none"
            raise RubricNotFound(f"no rubric {rubric_id!r} in {self.root} (stored: {known})")
        if version is None:
            return versions[-1]
        for stored in versions:
            if stored.rubric.version == version:
                return stored
        have = ", ".join(str(s.rubric.version) for s in versions)
        raise RubricNotFound(f"rubric {rubric_id!r} has no version {version} (stored versions: {have})")

    def resolve(self, ref: str | Path) -> Rubric:
        """A rubric from ``ID``, ``ID@VERSION`` or a rubric file (YAML or JSON, or a stored version's file).

        Raises:
            RubricNotFound: an id or version the store does not have.
            RubricError: a file that is not a valid rubric.
        """
        path = Path(ref)
        if path.suffix in (".json", ".yaml", ".yml") and path.is_file():
            data = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else None
            if isinstance(data, dict) and "rubric" in data and "fingerprint" in data:
                return load_rubric(data["rubric"])
            return load_rubric(path)
        match = _REF.match(str(ref))
        if match is None:
            raise RubricNotFound(f"expected a rubric file or ID[@VERSION] such as 'triage-tickets@2'; got {str(ref)!r}")
        version = match.group("version")
        return self.get(match.group("id"), int(version) if version else None).rubric

    def diff(self, rubric_id: str, old: int, new: int) -> RubricDiff:
        """The differences between two stored versions of ``rubric_id``."""
        a, b = self.get(rubric_id, old), self.get(rubric_id, new)
        before = {c.id: c for c in a.rubric.checks}
        after = {c.id: c for c in b.rubric.checks}
        return RubricDiff(
            old=a,
            new=b,
            added=tuple(after[k] for k in after if k not in before),
            removed=tuple(before[k] for k in before if k not in after),
            changed=tuple((before[k], after[k]) for k in after if k in before and before[k] != after[k]),
        )

    def _read(self, path: Path) -> StoredRubric:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            rubric = load_rubric(data["rubric"])
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise RubricError(f"{path} is not a stored rubric ({exc})") from None
        if rubric.fingerprint != data.get("fingerprint"):
            raise RubricError(f"{path}: the rubric's content does not match its recorded fingerprint")
        origins = {str(k): Origin.from_json(v) for k, v in dict(data.get("origins") or {}).items()}
        return StoredRubric(rubric=rubric, parent=data.get("parent"), origins=origins, note=str(data.get("note", "")))
