"""Content-addressed bytes inside a world (the ``blobs`` table), shared by every app that stores files.

A blob's address is the SHA-256 of its bytes, so identical uploads share one row and a changed byte is a
different blob. The change log records the address and size, never the bytes: the address identifies them.
"""

from __future__ import annotations

import hashlib

from worlds.rawsql import Sql


def put_blob(sql: Sql, data: bytes) -> str:
    """Store ``data`` once (later identical bytes reuse the row); returns its SHA-256 address."""
    sha = hashlib.sha256(data).hexdigest()
    if sql.one("SELECT 1 FROM blobs WHERE sha256 = ?", (sha,)) is None:
        sql.execute("INSERT INTO blobs (sha256, size, data) VALUES (?, ?, ?)", (sha, len(data), data))
        sql.log("blobs", [sha], "insert", {"sha256": sha, "size": len(data)})
    return sha


def read_blob(sql: Sql, sha: str) -> bytes | None:
    """The bytes at ``sha``, or None when the row is missing or its bytes no longer hash to the address."""
    data = sql.scalar("SELECT data FROM blobs WHERE sha256 = ?", (sha,))
    if data is None:
        return None
    out = bytes(data)
    return out if hashlib.sha256(out).hexdigest() == sha else None
