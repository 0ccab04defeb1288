"""The documents tools: thin, documented wrappers over ``mcp_tools.docs.service``.

Folders and documents are named by path from a top-level folder (``Shared/Engineering/Platform spec``);
documents also by id. Text uses Markdown-like headings (``# Title``, ``## Part``). Spreadsheets are sheets_*
tools; listing, folders, sharing and versions here cover both kinds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp_tools.base import READ, WRITE, ToolContext, ToolSet, current_context
from mcp_tools.docs import checkenv, service

docs = ToolSet("docs")


@docs.tool(READ)
def list_folder(folder: str | None = None, query: str | None = None, limit: int = 50) -> dict[str, Any]:
    """List a folder's subfolders and the documents you can open; or find documents by name.

    Args:
        folder: Folder path such as Shared/Finance; the top-level folders when omitted.
        query: Part of a document name to search for (in the folder if given, else everywhere).
        limit: Most documents to return (1-200).
    """
    return service.list_items(current_context(), folder, query, limit)


@docs.tool(WRITE)
def create_folder(name: str, parent: str | None = None) -> dict[str, Any]:
    r"""Create a folder.

    Args:
        name: Folder name (no / or \\).
        parent: Path of the folder to create it in; top level when omitted.
    """
    return service.create_folder(current_context(), name, parent)


@docs.tool(READ)
def read(document: str, heading: str | None = None) -> dict[str, Any]:
    """Read a text document as sections (heading, level, paragraphs) with its comments.

    Args:
        document: Path such as Shared/Engineering/Platform spec, or the document id.
        heading: Only the section with this heading (and its subsections).
    """
    return service.read(current_context(), document, heading)


@docs.tool(WRITE)
def create(name: str, folder: str, text: str = "", format: str | None = None) -> dict[str, Any]:  # noqa: A002
    """Create a text document you own (ODT or DOCX).

    Args:
        name: File name; an .odt or .docx ending picks the format.
        folder: Folder path such as Shared/Engineering.
        text: Content; lines starting with # to ###### are headings, blank lines separate paragraphs.
        format: odt or docx when the name has no ending (default odt).
    """
    return service.create(current_context(), name, folder, text, format)


@docs.tool(WRITE)
def append(document: str, text: str) -> dict[str, Any]:
    """Append paragraphs and headings at the end of a text document.

    Args:
        document: Path or id of a document you can edit.
        text: Text to add; # lines are headings, blank lines separate paragraphs.
    """
    return service.append(current_context(), document, text)


@docs.tool(WRITE)
def replace_section(document: str, heading: str, text: str) -> dict[str, Any]:
    """Replace everything under a heading (up to the next heading of the same or higher level).

    Args:
        document: Path or id of a document you can edit.
        heading: The section's heading text (case-insensitive).
        text: The new body; may contain subheadings (## ...).
    """
    return service.replace_section(current_context(), document, heading, text)


@docs.tool(WRITE)
def comment(document: str, text: str, heading: str | None = None) -> dict[str, Any]:
    """Comment on a section of a text document (needs comment or edit access).

    Args:
        document: Path or id of the document.
        text: The comment.
        heading: Heading of the section to comment on; the start of the document when omitted.
    """
    return service.comment(current_context(), document, text, heading)


@docs.tool(WRITE)
def share(document: str, username: str, permission: str) -> dict[str, Any]:
    """Share a document or spreadsheet with a coworker, change their access, or remove it (owner or editors).

    Args:
        document: Path or id of the document.
        username: Coworker's username.
        permission: view, comment, edit, or none to remove their access.
    """
    return service.share(current_context(), document, username, permission)


@docs.tool(READ)
def versions(document: str, limit: int = 20) -> dict[str, Any]:
    """List a document's versions, newest first: who changed it, when and how.

    Args:
        document: Path or id of a document or spreadsheet you can open.
        limit: How many versions (1-200).
    """
    return service.versions(current_context(), document, limit)


EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "docs_list_folder": [{}, {"folder": checkenv.FOLDER}, {"query": "check"}],
    "docs_create_folder": [{"name": "Check drafts", "parent": checkenv.FOLDER}],
    "docs_read": [{"document": checkenv.TEXT}, {"document": checkenv.TEXT, "heading": "Risks"}],
    "docs_create": [{"name": "Check memo.odt", "folder": checkenv.FOLDER, "text": "# Memo\n\nHello team."}],
    "docs_append": [{"document": checkenv.TEXT, "text": "## Next steps\n\nReview on Friday."}],
    "docs_replace_section": [{"document": checkenv.TEXT, "heading": "Risks", "text": "Vendor delay."}],
    "docs_comment": [{"document": checkenv.TEXT, "text": "Please add dates.", "heading": "Goals"}],
    "docs_share": [{"document": checkenv.TEXT, "username": "{coworker}", "permission": "edit"}],
    "docs_versions": [{"document": checkenv.TEXT}, {"document": checkenv.SHEET}],
}
"""Example calls for ``mcp_tools.check.check_app`` (documents made by ``CHECK_ENV``)."""


@contextmanager
def CHECK_ENV(ctx: ToolContext, scratch: Path) -> Iterator[None]:  # noqa: N802 - the name check_app looks up
    """A folder, a spreadsheet and a text document owned by the checking actor, for the examples."""
    with checkenv.documents(ctx, scratch):
        yield
