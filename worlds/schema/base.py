"""Declarative base and column types shared by every bounded context.

Types are chosen so that the canonical dump is identical on SQLite and PostgreSQL: timestamps are stored as
naive UTC and always read back timezone-aware (``UTCDateTime``); money is integer cents; JSON columns hold only
lists and dicts of primitives and are canonicalised on dump.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any

from sqlalchemy import JSON, BigInteger, Date, DateTime, Integer, MetaData, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, mapped_column
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as naive UTC, returned timezone-aware; naive input is refused.

    Why: SQLite has no time zones and PostgreSQL's ``timestamptz`` prints in the session zone; storing naive
    UTC on both keeps the dump byte-identical, and refusing naive input keeps local time out of the world.
    """

    impl = DateTime(timezone=False)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert an aware datetime to naive UTC for storage."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()} refused: world times are UTC-aware")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Attach UTC to a stored naive value."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


class JSONValue(TypeDecorator[Any]):
    """Plain JSON (not JSONB) on every backend, so key order and spacing never depend on the server."""

    impl = JSON
    cache_ok = True


intpk = Annotated[int, mapped_column(Integer, primary_key=True)]
utc_ts = Annotated[datetime, mapped_column(UTCDateTime())]
day = Annotated[date, mapped_column(Date)]
name_str = Annotated[str, mapped_column(String(200))]
text = Annotated[str, mapped_column(Text)]
cents = Annotated[int, mapped_column(BigInteger)]
json_list = Annotated[list[Any], mapped_column(JSONValue(), default=list)]
json_dict = Annotated[dict[str, Any], mapped_column(JSONValue(), default=dict)]


class Base(DeclarativeBase):
    """Root of every world table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
