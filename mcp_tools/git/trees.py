"""Reading a commit's tree or the index as data, and the rules a tree must meet before code runs from it.

Committed trees come from an agent, so host code never lets git or tar materialise them with their own rules:
``export`` writes a commit's files itself from ``ls-tree`` and one ``cat-file --batch``, with exact modes, no
attributes (no ``export-ignore``, no ``export-subst``, no filters) and every path checked. Symbolic links are
kept when they resolve inside the tree and refused, with a message the agent can act on, when they point out
of it (absolute targets, ``..`` past the root, or a chain of links that climbs out). The same rule is applied
when committing (``check_index``), so a tree that an export would refuse is never created by the tools.
Nested repositories (gitlinks) are refused at commit and skipped by exports.
"""

from __future__ import annotations

import os
import posixpath
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp_tools.errors import InvalidPath, TooLarge
from worlds.gitrun import GitRepo

MAX_ENTRIES = 20_000
"""Most files an export writes."""
MAX_BYTES = 200_000_000
"""Most bytes an export writes (the sum of its blobs)."""
MAX_LINK_HOPS = 40
LINK = "120000"
GITLINK = "160000"
EXECUTABLE = "100755"


@dataclass(frozen=True)
class Entry:
    """One entry of a recursive tree listing: mode, object id and path (as git stores them)."""

    mode: str
    oid: str
    path: str
    size: int = 0
    """The blob's size in bytes (``tree_entries`` only: ``ls-tree -l`` gives it; 0 for gitlinks and the index)."""


def tree_entries(g: GitRepo, commit: str) -> list[Entry]:
    """Every blob, link and gitlink of ``commit``'s tree (recursive), in git's order.

    Raises:
        TooLarge: more than ``MAX_ENTRIES`` entries.
    """
    return _parse(g("ls-tree", "-r", "-l", "-z", "--full-tree", commit), oid_field=2)


def index_entries(g: GitRepo) -> list[Entry]:
    """Every entry of the index (stage 0 after ``git add``)."""
    return _parse(g("ls-files", "-s", "-z"), oid_field=1)


def _parse(raw: bytes, oid_field: int) -> list[Entry]:
    """Entries of ``ls-tree -r -l -z`` (mode type oid size TAB path) or ``ls-files -s -z`` (mode oid stage TAB path).

    ``ls-tree -l`` pads the size and gives ``-`` for a gitlink (no blob): 0 then.
    """
    entries: list[Entry] = []
    for item in raw.decode("utf-8", "surrogateescape").split("\x00"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        fields = meta.split()
        size = int(fields[3]) if oid_field == 2 and len(fields) == 4 and fields[3].isdigit() else 0
        entries.append(Entry(mode=fields[0], oid=fields[oid_field], path=path, size=size))
        if len(entries) > MAX_ENTRIES:
            raise TooLarge(f"the tree has more than {MAX_ENTRIES} files; pipelines and checks refuse it")
    return entries


def read_blobs(g: GitRepo, oids: Iterable[str], limit: int = MAX_BYTES) -> dict[str, bytes]:
    """The contents of ``oids`` (blobs), read by one ``cat-file --batch``, at most ``limit`` bytes in all.

    Raises:
        TooLarge: the blobs add up to more than ``limit`` bytes.
    """
    wanted = sorted(set(oids))
    if not wanted:
        return {}
    sizes = g("cat-file", "--batch-check=%(objectname) %(objectsize)", input="\n".join(wanted).encode() + b"\n")
    _refuse_size(sum(int(line.split()[1]) for line in sizes.decode().splitlines() if len(line.split()) == 2), limit)
    return _read_batch(g, wanted)


def _refuse_size(total: int, limit: int) -> None:
    if total > limit:
        raise TooLarge(f"the tree's files add up to {total} bytes; pipelines and checks refuse more than {limit}")


def _read_batch(g: GitRepo, wanted: list[str]) -> dict[str, bytes]:
    """The contents of the sorted, distinct ``wanted`` objects, by one ``cat-file --batch``."""
    if not wanted:
        return {}
    raw = g("cat-file", "--batch", input="\n".join(wanted).encode() + b"\n")
    out: dict[str, bytes] = {}
    pos = 0
    while pos < len(raw):
        end = raw.index(b"\n", pos)
        oid, _kind, size = raw[pos:end].decode().split()
        start = end + 1
        out[oid] = raw[start : start + int(size)]
        pos = start + int(size) + 1
    return out


def escaping_links(links: Mapping[str, str]) -> list[str]:
    """The links (path -> target) of a tree that resolve outside it, or loop; sorted.

    Resolution follows the links of the same tree, component by component, the way the kernel would in a
    checkout of it, so ``a -> b/..`` with ``b -> .`` climbs out exactly as it would on disk.
    """
    return sorted(path for path, target in links.items() if _resolve(path, target, links) is None)


def _resolve(path: str, target: str, links: Mapping[str, str]) -> list[str] | None:
    if target.startswith("/") or "\x00" in target or not target:
        return None
    done: list[str] = path.split("/")[:-1]
    todo = target.split("/")
    hops = 0
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not done:
                return None
            done.pop()
            continue
        done.append(part)
        nested = links.get("/".join(done))
        if nested is not None:
            hops += 1
            if hops > MAX_LINK_HOPS or nested.startswith("/") or not nested:
                return None
            done.pop()
            todo = nested.split("/") + todo
    return done


def link_targets(g: GitRepo, entries: Iterable[Entry]) -> dict[str, str]:
    """Path -> target of the symbolic links among ``entries``."""
    links = [e for e in entries if e.mode == LINK]
    blobs = read_blobs(g, (e.oid for e in links))
    return {e.path: blobs[e.oid].decode("utf-8", "surrogateescape") for e in links}


def refuse_links(links: Mapping[str, str], where: str) -> None:
    """Raise ``InvalidPath`` naming the links of ``where`` that point outside the tree."""
    bad = escaping_links(links)
    if bad:
        shown = ", ".join(f"{p} -> {links[p]}" for p in bad[:5])
        raise InvalidPath(
            f"{where} has symbolic links that point outside the repository ({shown}); links must stay inside"
            " the tree: make them relative, or commit the file itself"
        )


def check_index(g: GitRepo) -> None:
    """Refuse what a commit must not contain: nested repositories and links out of the tree.

    Raises:
        InvalidPath: with what was found, so the agent can fix the tree and commit again.
    """
    entries = index_entries(g)
    nested = sorted(e.path for e in entries if e.mode == GITLINK)
    if nested:
        raise InvalidPath(
            f"the changes include nested git repositories ({', '.join(nested[:5])}); commit their files instead"
        )
    refuse_links(link_targets(g, entries), "the working tree")


def export(g: GitRepo, commit: str, dest: Path) -> Path:
    """Write the tree of ``commit`` (a full object id) into the new directory ``dest``; returns ``dest``.

    Files get mode 0644 or 0755 as committed; links are recreated when they stay inside the tree; gitlinks
    become empty directories. Nothing is taken from attributes. On refusal ``dest`` is removed. Two git
    processes when the tree has no links (``ls-tree -l`` gives the sizes the byte limit needs, then one
    ``cat-file --batch``): each process costs this one about a millisecond, which a check pays per request head.

    Raises:
        InvalidPath: a path git should never have stored, or a link that points outside the tree.
        TooLarge: more than ``MAX_ENTRIES`` files or ``MAX_BYTES`` bytes.
    """
    entries = tree_entries(g, commit)
    links = link_targets(g, entries)
    refuse_links(links, f"commit {commit[:12]}")
    sizes = {e.oid: e.size for e in entries if e.mode not in (LINK, GITLINK)}
    _refuse_size(sum(sizes.values()), MAX_BYTES)
    blobs = _read_batch(g, sorted(sizes))
    dest.mkdir(parents=True)
    made = {""}  # the directories this export made (``dest`` itself is ""): only those are written into
    try:
        for e in entries:
            _write(str(dest), e, blobs, links, made)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest


def _write(dest: str, e: Entry, blobs: Mapping[str, bytes], links: Mapping[str, str], made: set[str]) -> None:
    """Write one entry under ``dest``, making its directories (kept in ``made``, relative to ``dest``).

    ``dest`` is new, so a directory is there only if this export made it: a path whose directory is not in
    ``made`` but exists is a file or link of the same tree, and is refused. Plain strings and ``os`` calls, not
    ``pathlib``: an export writes every file of a tree.
    """
    parts = e.path.split("/")
    if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts) or posixpath.isabs(e.path):
        raise InvalidPath(f"the tree holds a path no checkout may write: {e.path[:200]!r}")
    rel = ""
    for part in parts[:-1]:
        rel = f"{rel}/{part}" if rel else part
        if rel not in made:
            where = f"{dest}/{rel}"
            if os.path.lexists(where):
                raise InvalidPath(f"{e.path[:200]!r} lies under a file or link of the same tree")
            os.mkdir(where)
            made.add(rel)
    full = f"{dest}/{e.path}"
    if e.mode == GITLINK:
        os.mkdir(full)
        made.add(e.path)
    elif e.mode == LINK:
        os.symlink(links[e.path], full)
    else:
        fd = os.open(
            full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if e.mode == EXECUTABLE else 0o644
        )
        with os.fdopen(fd, "wb") as fh:
            fh.write(blobs[e.oid])
