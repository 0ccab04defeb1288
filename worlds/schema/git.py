"""Git repository metadata (the objects live in real repositories on disk, made by the code workspace)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, intpk, text, utc_ts


class Repository(Base):
    """A repository owned by a team."""

    __tablename__ = "repositories"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(100), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), index=True)
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id"), index=True)
    description: Mapped[text]
    default_branch: Mapped[str] = mapped_column(String(100), default="main")
    language: Mapped[str] = mapped_column(String(30))
    created_at: Mapped[utc_ts]
