"""Documents: folders, files (structured content or real office files), sharing and versions.

File bytes live in ``blobs``, addressed by SHA-256: versions that share content share a blob, and a fork
copies only the rows that point at them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, JSONValue, intpk, name_str, utc_ts

SHARE_PERMISSIONS: tuple[str, ...] = ("view", "comment", "edit")


class Blob(Base):
    """Immutable bytes addressed by their SHA-256."""

    __tablename__ = "blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class DocFolder(Base):
    """A folder; ``parent_id`` null means a root folder."""

    __tablename__ = "doc_folders"
    __table_args__ = (UniqueConstraint("parent_id", "name"),)

    id: Mapped[intpk]
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("doc_folders.id"), index=True)
    name: Mapped[name_str]
    owner_id: Mapped[int] = mapped_column(ForeignKey("employees.id"))
    created_at: Mapped[utc_ts]


class Document(Base):
    """A file. ``content`` holds the structured form (text with sections, or sheets of cells)."""

    __tablename__ = "documents"
    __table_args__ = (UniqueConstraint("folder_id", "name"),)

    id: Mapped[intpk]
    folder_id: Mapped[int] = mapped_column(ForeignKey("doc_folders.id"), index=True)
    name: Mapped[name_str]
    kind: Mapped[str] = mapped_column(String(20), doc="text | spreadsheet")
    mime_type: Mapped[str] = mapped_column(String(120))
    owner_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    content: Mapped[dict[str, Any]] = mapped_column(JSONValue())
    blob_sha256: Mapped[str | None] = mapped_column(ForeignKey("blobs.sha256"))
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[utc_ts]
    updated_at: Mapped[utc_ts]


class DocumentShare(Base):
    """A grant of access to one person."""

    __tablename__ = "document_shares"
    __table_args__ = (UniqueConstraint("document_id", "employee_id"),)

    id: Mapped[intpk]
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"), index=True)
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    permission: Mapped[str] = mapped_column(String(10))


class DocumentVersion(Base):
    """A past (or the current) version of a document's content."""

    __tablename__ = "document_versions"
    __table_args__ = (UniqueConstraint("document_id", "version"),)

    id: Mapped[intpk]
    document_id: Mapped[int] = mapped_column(ForeignKey("documents.id"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    author_id: Mapped[int] = mapped_column(ForeignKey("employees.id"))
    content: Mapped[dict[str, Any]] = mapped_column(JSONValue())
    blob_sha256: Mapped[str | None] = mapped_column(ForeignKey("blobs.sha256"))
    created_at: Mapped[utc_ts]
