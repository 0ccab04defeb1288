"""Git repository metadata (the objects live in real repositories on disk, made by the code workspace)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, UTCDateTime, intpk, json_dict, text, utc_ts


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


class RepositoryRef(Base):
    """A branch or tag of a generated repository and the commit it pointed at when generated.

    Rows exist only for worlds whose repositories were generated (``worlds.repos.generate_repos``), so worlds
    without real repositories dump exactly as before. Graders read episode changes from the repositories
    themselves; these rows are the base state to diff against.
    """

    __tablename__ = "repository_refs"
    __table_args__ = (UniqueConstraint("repository_id", "name"),)

    id: Mapped[intpk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), index=True)
    name: Mapped[str] = mapped_column(String(200), doc="Full ref name such as refs/heads/main or refs/tags/v0.1.0.")
    commit_sha: Mapped[str] = mapped_column(String(64))


class MergeRequest(Base):
    """A forge-style merge request from one branch into another of the same repository.

    ``number`` counts per repository (as forges show it). ``pipeline`` is filled by a CI runner through
    ``mcp_tools.git.mr.set_pipeline``; until one runs it is ``{"status": "not_run"}``.
    """

    __tablename__ = "merge_requests"
    __table_args__ = (UniqueConstraint("repository_id", "number"),)

    id: Mapped[intpk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(300))
    description: Mapped[text]
    author_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    source_branch: Mapped[str] = mapped_column(String(200))
    target_branch: Mapped[str] = mapped_column(String(200))
    state: Mapped[str] = mapped_column(String(20), doc="open, merged or closed.")
    source_head: Mapped[str] = mapped_column(String(64), doc="Source branch commit when opened or last merged.")
    merge_commit: Mapped[str | None] = mapped_column(String(64))
    pipeline: Mapped[json_dict]
    created_at: Mapped[utc_ts]
    updated_at: Mapped[utc_ts]
    merged_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    merged_by_id: Mapped[int | None] = mapped_column(ForeignKey("employees.id"))


class MergeRequestNote(Base):
    """A comment or review verdict on a merge request (``kind``: comment, approve, request_changes)."""

    __tablename__ = "merge_request_notes"

    id: Mapped[intpk]
    merge_request_id: Mapped[int] = mapped_column(ForeignKey("merge_requests.id"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    body: Mapped[text]
    commit_sha: Mapped[str | None] = mapped_column(String(64), doc="Source head the verdict applies to.")
    created_at: Mapped[utc_ts]


class GitActivity(Base):
    """One change an actor made to a repository (write, edit, branch, switch, commit) or a command run in it.

    The objects stay on disk, but every git write is also a row here, so the change log, the episode's state
    hash chain, graders and replays see git work as they see any other app's: a different file content or
    commit changes the hash.
    """

    __tablename__ = "git_activity"

    id: Mapped[intpk]
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), index=True)
    actor_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    op: Mapped[str] = mapped_column(
        String(20), doc="write_file, edit_file, create_branch, switch_branch, commit, shell_run."
    )
    branch: Mapped[str | None] = mapped_column(String(200))
    path: Mapped[str | None] = mapped_column(String(1000))
    commit_sha: Mapped[str | None] = mapped_column(String(64))
    content_sha256: Mapped[str | None] = mapped_column(String(64), doc="SHA-256 of the file's new content.")
    at: Mapped[utc_ts]
