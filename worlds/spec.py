"""WorldSpec: everything that determines a generated company.

Two specs with the same fields generate byte-identical worlds (for the same ``GENERATOR_VERSION``). The spec
hash is the cache key of a base world, together with the generator version.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from worlds.errors import SpecError

APPS: tuple[str, ...] = ("chat", "tickets", "mail", "calendar", "directory", "docs", "sheets", "git")
INDUSTRIES: tuple[str, ...] = ("software", "fintech", "healthcare", "retail", "logistics")
LOCALES: tuple[str, ...] = ("en_US", "en_GB", "de_DE", "fr_FR")
MIN_EMPLOYEES = 1
MAX_EMPLOYEES = 20_000
MAX_HISTORY_DAYS = 3_650

Industry = Literal["software", "fintech", "healthcare", "retail", "logistics"]


MIN_START = date(1980, 1, 1)
MAX_START = date(2999, 12, 31)
"""Simulated 'today' stays where history (up to MAX_HISTORY_DAYS back) and plans ahead are valid dates."""


class WorldSpec(BaseModel):
    """The inputs of the company generator (frozen; hashable; JSON round-trips exactly)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = Field(ge=0, lt=2**63, description="Root seed; every random choice derives from it.")
    employees: int = Field(default=100, ge=MIN_EMPLOYEES, le=MAX_EMPLOYEES, description="Headcount, CEO included.")
    history_days: int = Field(
        default=90, ge=0, le=MAX_HISTORY_DAYS, description="Days of history generated before start_date."
    )
    start_date: date = Field(
        default=date(2026, 3, 2), description="The simulated 'today' at 09:00 UTC; history ends here."
    )
    industry: Industry = Field(default="software", description="Shapes department mix and vocabulary.")
    locale: str = Field(default="en_US", description="Faker locale for names and places.")
    apps: tuple[str, ...] = Field(default=APPS, description="Which apps get data (subset of APPS).")

    @field_validator("start_date")
    @classmethod
    def _start_in_range(cls, value: date) -> date:
        if not MIN_START <= value <= MAX_START:
            raise ValueError(f"start_date {value} is out of range; expected {MIN_START} to {MAX_START}")
        return value

    @field_validator("locale")
    @classmethod
    def _known_locale(cls, value: str) -> str:
        if value not in LOCALES:
            raise ValueError(f"unknown locale {value!r}; expected one of {', '.join(LOCALES)}")
        return value

    @field_validator("apps")
    @classmethod
    def _known_apps(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [a for a in value if a not in APPS]
        if unknown:
            raise ValueError(f"unknown app {unknown[0]!r}; expected some of {', '.join(APPS)}")
        # Canonical order so that ("mail", "chat") and ("chat", "mail") hash alike.
        return tuple(a for a in APPS if a in value)

    def canonical_json(self) -> str:
        """The spec as canonical JSON (sorted keys, no spaces): the input of ``spec_hash``."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def spec_hash(self) -> str:
        """SHA-256 of the canonical JSON, hex."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    @classmethod
    def parse(cls, **fields: Any) -> WorldSpec:
        """Build a spec, turning pydantic's multi-line errors into one-line ``SpecError``.

        Raises:
            SpecError: naming the first invalid field, the value given and what is accepted.
        """
        try:
            return cls(**fields)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "spec"
            msg = err["msg"].removeprefix("Value error, ")
            given = err.get("input")
            shown = given.isoformat() if isinstance(given, date) else repr(given)
            raise SpecError(f"invalid {where}={shown}: {msg}") from None
