"""Access requests: how an employee gets to see a restricted field of someone else (salary, rating, contact).

The data owner decides: the subject's manager for performance, an HR person for salary and personal contact.
An approval lasts until ``expires_at`` on the simulated clock, or until it is revoked (``expires_at`` then says when).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, text, utc_ts

ACCESS_FIELDS: tuple[str, ...] = ("salary", "performance", "personal_contact")
ACCESS_STATES: tuple[str, ...] = ("pending", "approved", "denied", "revoked")


class AccessRequest(Base):
    """One request by ``requester_id`` to see ``field`` of ``subject_id``, decided by ``owner_id``."""

    __tablename__ = "access_requests"

    id: Mapped[intpk]
    requester_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    subject_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    field: Mapped[str] = mapped_column(String(20))
    reason: Mapped[text]
    status: Mapped[str] = mapped_column(String(10), doc="pending | approved | denied | revoked")
    created_at: Mapped[utc_ts]
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
