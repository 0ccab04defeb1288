"""Real git repositories for a world: generated once per world, checked out per episode without copying objects.

Generation (``generate_repos``): each product team (a team of the Engineering department) owns a repository
(the ``repositories`` rows when the world has the git app; otherwise ``<team>-service``, recorded on request).
Its content is a small Python service that passes its own pytest suite at every commit, and its history is
written by the team's employees with dates inside the world's simulated past: features land on branches and
are merged with merge commits, some branches stay open, releases are annotated tags. All of it comes from the
rows and the stream ``repos/<name>`` of the world seed, written by one ``git fast-import`` per repository (no
process per commit), so the same world and seed give the same commit hashes on any host.

Episodes (``checkout``): a base repository is bare and read-only. An episode's repository is a git directory
kept apart from its work tree (the work tree is agent-writable; the git directory never is), holding hard links
to the base's packs and a copy of its ``packed-refs``: making it costs a few links and small files plus writing
the working tree, however long the history. New objects of the episode go to its own object directory, so
neither the base nor another episode sees them. Packs are never rewritten in place, so linking is safe.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, select, text
from sqlalchemy.orm import Session

from worlds.cache import sweep_temps
from worlds.gitrun import LOCKED_ATTRIBUTES, GitRepo, git, write_repo_config
from worlds.schema import Base, ChangeLog, Employee, MergeRequest, MergeRequestNote
from worlds.seeding import Seeds
from worlds.spec import WorldSpec

PRODUCT_DEPARTMENT = "Engineering"
MIN_HISTORY_DAYS = 60  # repositories are older than the world's recorded history

NOUNS: tuple[str, ...] = ("order", "invoice", "account", "session", "report", "metric", "event", "quota", "batch")
NOUNS += ("token", "payment", "shipment", "profile", "ledger", "alert", "cache", "route", "schedule", "export", "audit")
VERBS = ("scale", "clamp", "round", "weight", "normalize", "discount", "adjust", "score", "rate", "bound")
CHORES = ("Tidy README", "Clarify setup steps", "Document configuration", "Note release process")


@dataclass(frozen=True, kw_only=True)
class RepoInfo:
    """A generated repository: where its bare base lives and what its refs point at."""

    name: str
    team_id: int
    path: Path
    default_branch: str
    head: str
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    commits: int = 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (for the base cache's manifest); ``from_json`` is the inverse."""
        return {**asdict(self), "path": str(self.path)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoInfo:  # noqa: D102
        return cls(**{**data, "path": Path(data["path"])})


@dataclass(frozen=True, kw_only=True)
class _Person:
    name: str
    email: str


@dataclass(frozen=True, kw_only=True)
class HistoryRequest:
    """A merge request of the world's generated history, as its repository writes it.

    Why rows carry no commit ids: the world's rows are generated first and the repositories later, lazily and
    only when a task needs them (``ensure_base_repos``), so a request row cannot know its commits' hashes, and
    writing them back would change the world file whenever a task first touched git. Instead the repository is
    written from the rows: the branch named in the row gets the commits (first at ``opened``, one fix-up per
    note the author wrote after a request for changes), each message naming the key, touching the module the
    description names; a merged request becomes a merge commit on the target at ``merged`` by the merger, and
    its branch is deleted as a forge does; an open or closed request keeps its branch. ``source_head`` stays
    empty in the rows and checks match requests to commits by branch and key.
    """

    number: int
    key: str
    title: str
    branch: str
    target: str
    state: str
    opened: datetime
    merged: datetime | None
    author: _Person
    merger: _Person | None
    module: str
    fixups: tuple[datetime, ...]


KEY_OF_BRANCH = re.compile(r"^([A-Z][A-Z0-9]*-\d+)-")
"""A history request's source branch starts with its ticket's key (``DAT-31-add-the-missing-index``)."""
MODULE_IN_TEXT = re.compile(r"`([a-z0-9_]+)/([a-z0-9_]+)\.py`")
"""The module a request changes, as its description names it (```` `data_service/checkout_api.py` ````)."""
FIXUP_MESSAGES = ("address review comments", "cover the case from review", "apply review feedback")


def request_module(description: str, package: str) -> str | None:
    """The path of the first module of ``package`` named in a request's description, if any."""
    for pkg, mod in MODULE_IN_TEXT.findall(description):
        if pkg == package:
            return f"{pkg}/{mod}.py"
    return None


def _bare(title: str, key: str) -> str:
    """A request title without its key (``DAT-31: Add x``, ``Add x (DAT-31)``, ``[DAT-31] Add x`` -> ``Add x``)."""
    out = title.replace(f"[{key}] ", "").replace(f" ({key})", "")
    return out.removeprefix(f"{key}: ").strip() or title


@dataclass(kw_only=True)
class _Plan:
    """One repository to generate, read from the database."""

    name: str
    team_id: int
    team_name: str
    default_branch: str
    people: list[_Person]
    repo_id: int | None
    requests: list[HistoryRequest] = field(default_factory=list)


# -- content: a small Python service ------------------------------------------------------------------------


def package_name(repo: str) -> str:
    """The Python package of a repository (``data-service`` -> ``data_service``)."""
    return "".join(c if c.isalnum() else "_" for c in repo.lower()).strip("_") or "service"


def module_name(component: str) -> str:
    """The module a ticket's component lives in (``checkout API`` -> ``checkout_api``)."""
    return re.sub(r"[^a-z0-9]+", "_", component.lower()).strip("_") or "core"


def _scaffold(repo: str, team: str, pkg: str) -> dict[str, str]:
    """The first commit's files: a package with models, an in-memory store, an API layer and their tests."""
    return {
        "README.md": f"# {repo}\n\nService owned by the {team} team.\n\n## Development\n\n"
        "```\npip install -e .\npytest\n```\n",
        "CHANGELOG.md": "# Changelog\n",
        ".gitignore": "__pycache__/\n*.pyc\n.pytest_cache/\n",
        "pyproject.toml": f'[project]\nname = "{repo}"\nversion = "0.1.0"\nrequires-python = ">=3.10"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n',
        f"{pkg}/__init__.py": f'"""{team} service."""\n\n__version__ = "0.1.0"\n',
        f"{pkg}/config.py": '"""Settings."""\n\nPAGE_SIZE = 50\n',
        f"{pkg}/models.py": '"""Records kept by the service."""\n\nfrom dataclasses import dataclass\n\n\n'
        "@dataclass(frozen=True)\nclass Item:\n    id: int\n    name: str\n    amount: float = 0.0\n",
        f"{pkg}/store.py": f'"""An in-memory store of items."""\n\nfrom {pkg}.models import Item\n\n\n'
        "class Store:\n    def __init__(self) -> None:\n        self._items: dict[int, Item] = {}\n\n"
        "    def add(self, name: str, amount: float = 0.0) -> Item:\n"
        "        item = Item(id=len(self._items) + 1, name=name, amount=amount)\n"
        "        self._items[item.id] = item\n        return item\n\n"
        "    def get(self, item_id: int) -> Item | None:\n        return self._items.get(item_id)\n\n"
        "    def all(self) -> list[Item]:\n        return [self._items[k] for k in sorted(self._items)]\n",
        f"{pkg}/api.py": f'"""Request handlers."""\n\nfrom {pkg}.config import PAGE_SIZE\n'
        f"from {pkg}.store import Store\n\n\n"
        "def create(store: Store, name: str, amount: float = 0.0) -> dict:\n"
        '    if not name:\n        raise ValueError("name is required")\n'
        "    item = store.add(name, amount)\n"
        '    return {"id": item.id, "name": item.name, "amount": item.amount}\n\n\n'
        "def page(store: Store, offset: int = 0) -> list[dict]:\n"
        '    return [{"id": i.id, "name": i.name} for i in store.all()[offset : offset + PAGE_SIZE]]\n',
        f"{pkg}/util.py": '"""Small numeric helpers."""\n',
        "tests/test_api.py": f"import pytest\n\nfrom {pkg}.api import create, page\n"
        f"from {pkg}.config import PAGE_SIZE\n"
        f"from {pkg}.store import Store\n\n\ndef test_create_and_page():\n    store = Store()\n"
        '    assert create(store, "a", 2.0) == {"id": 1, "name": "a", "amount": 2.0}\n'
        '    assert page(store) == [{"id": 1, "name": "a"}]\n    assert 1 <= PAGE_SIZE <= 500\n\n\n'
        'def test_create_needs_a_name():\n    with pytest.raises(ValueError):\n        create(Store(), "")\n',
        "tests/test_util.py": f"from {pkg} import util\n\n\ndef test_module_imports():\n    assert util.__doc__\n",
    }


def _helper(name: str, k: int, c: int) -> tuple[str, str]:
    """A helper function and its test (the test checks the exact arithmetic, so it always passes)."""
    fn = f"\n\ndef {name}(value: float) -> float:\n    return value * {k} + {c}\n"
    test = f"\n\ndef test_{name}():\n    assert util.{name}(2) == {2 * k + c}\n"
    return fn, test


def _feature(pkg: str, noun: str, k: int) -> dict[str, str]:
    """A feature module and its test, added on a branch."""
    return {
        f"{pkg}/{noun}.py": f'"""{noun.title()} handling."""\n\nLIMIT = {k * 10}\n\n\n'
        f"def within_limit(amount: float) -> bool:\n    return 0 <= amount <= LIMIT\n",
        f"tests/test_{noun}.py": f"from {pkg}.{noun} import LIMIT, within_limit\n\n\n"
        f"def test_within_limit():\n    assert within_limit(LIMIT)\n    assert not within_limit(LIMIT + 1)\n",
    }


# -- the fast-import stream ---------------------------------------------------------------------------------


class _Stream:
    """Builds a ``git fast-import`` stream; marks name commits, branch states are dicts of path -> text."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.marks = 0
        self.commits = 0

    def _data(self, payload: str) -> None:
        raw = payload.encode("utf-8")
        self.parts.append(b"data %d\n" % len(raw) + raw + b"\n")

    def commit(
        self,
        ref: str,
        who: _Person,
        at: datetime,
        message: str,
        changes: dict[str, str],
        parents: list[int],
    ) -> int:
        self.marks += 1
        self.commits += 1
        stamp = f"<{who.email}> {int(at.timestamp())} +0000"
        head = f"commit {ref}\nmark :{self.marks}\nauthor {who.name} {stamp}\ncommitter {who.name} {stamp}\n"
        self.parts.append(head.encode("utf-8"))
        self._data(message)
        if parents:
            self.parts.append(f"from :{parents[0]}\n".encode())
        for extra in parents[1:]:
            self.parts.append(f"merge :{extra}\n".encode())
        for path in sorted(changes):
            self.parts.append(f"M 100644 inline {path}\n".encode())
            self._data(changes[path])
        self.parts.append(b"\n")
        return self.marks

    def tag(self, name: str, mark: int, who: _Person, at: datetime, message: str) -> None:
        stamp = f"<{who.email}> {int(at.timestamp())} +0000"
        self.parts.append(f"tag {name}\nfrom :{mark}\ntagger {who.name} {stamp}\n".encode())
        self._data(message)

    def branch(self, ref: str, mark: int) -> None:
        self.parts.append(f"reset {ref}\nfrom :{mark}\n\n".encode())

    def bytes(self) -> bytes:
        return b"".join(self.parts) + b"done\n"


def _module_text(path: str, funcs: dict[str, tuple[int, int]]) -> str:
    """A ticket component's module: one small function per change merged into it."""
    about = path.rsplit("/", 1)[-1].removesuffix(".py").replace("_", " ")
    body = "".join(
        f"\n\ndef {n}(value: float) -> float:\n    return value * {k} + {c}\n" for n, (k, c) in funcs.items()
    )
    return f'"""Rules of the {about}."""\n{body}'


def _module_test(path: str, funcs: dict[str, tuple[int, int]]) -> str:
    """The module's tests (each checks the exact arithmetic, so the suite passes at every commit)."""
    pkg, mod = path.removesuffix(".py").split("/", 1)
    body = "".join(f"\n\ndef test_{n}():\n    assert {mod}.{n}(2) == {2 * k + c}\n" for n, (k, c) in funcs.items())
    return f"from {pkg} import {mod}\n{body}"


class _Requests:
    """Writes the history merge requests of one repository into the stream, in time order with the rest."""

    def __init__(self, st: _Stream, rng: np.random.Generator, plan: _Plan) -> None:
        self.st, self.rng, self.repo = st, rng, plan.name
        self.main_ref = f"refs/heads/{plan.default_branch}"
        requests = plan.requests
        self.main: dict[str, dict[str, tuple[int, int]]] = {}  # module path -> its functions on the target
        self.tips: dict[int, tuple[int, str, tuple[int, int]]] = {}  # number -> branch tip mark, function, value
        self.used: set[str] = set()
        self.commits = 0
        events = [(r.opened, 0, r.number, r) for r in requests]
        events += [(r.merged, 1, r.number, r) for r in requests if r.state == "merged" and r.merged is not None]
        self.events = sorted(events, key=lambda e: (e[0], e[1], e[2]))
        self.next = 0

    def first_at(self) -> datetime | None:
        """When the first request opens (the repository's first commit must be older)."""
        return self.events[0][0] if self.events else None

    def until(self, at: datetime | None, head: int) -> int:
        """Write every request event up to ``at`` (all of them for None); returns the target's new head."""
        while self.next < len(self.events) and (at is None or self.events[self.next][0] <= at):
            _, kind, _, r = self.events[self.next]
            self.next += 1
            if kind == 0:
                self._open(r, head)
            else:
                head = self._merge(r, head)
        return head

    def _files(self, module: str, funcs: dict[str, tuple[int, int]]) -> dict[str, str]:
        mod = module.rsplit("/", 1)[-1]
        return {module: _module_text(module, funcs), f"tests/test_{mod}": _module_test(module, funcs)}

    def _open(self, r: HistoryRequest, head: int) -> None:
        funcs = dict(self.main.get(r.module, {}))
        name = f"{self.rng.choice(VERBS)}_{self.rng.choice(NOUNS)}"
        while name in self.used:
            name = f"{name}_{r.number}"
        self.used.add(name)
        value = (int(self.rng.integers(1, 9)), int(self.rng.integers(0, 20)))
        funcs[name] = value
        ref = f"refs/heads/{r.branch}"
        self.st.branch(ref, head)
        mark = self.st.commit(
            ref, r.author, r.opened, f"{r.key}: {_bare(r.title, r.key)}\n", self._files(r.module, funcs), [head]
        )
        for at in r.fixups:
            value = (value[0], value[1] + 1)
            funcs[name] = value
            msg = f"{r.key}: {self.rng.choice(FIXUP_MESSAGES)}\n"
            mark = self.st.commit(ref, r.author, at, msg, self._files(r.module, funcs), [mark])
        self.commits += 1 + len(r.fixups)
        self.tips[r.number] = (mark, name, value)

    def _merge(self, r: HistoryRequest, head: int) -> int:
        mark, name, value = self.tips[r.number]
        funcs = self.main.setdefault(r.module, {})
        funcs[name] = value
        msg = f"Merge branch '{r.branch}' into '{r.target}'\n\n{r.title}\n\nSee merge request {self.repo}!{r.number}\n"
        head = self.st.commit(
            self.main_ref, r.merger or r.author, r.merged or r.opened, msg, self._files(r.module, funcs), [head, mark]
        )
        self.st.parts.append(f"reset refs/heads/{r.branch}\nfrom {'0' * 40}\n\n".encode())  # merged: branch deleted
        self.commits += 1
        return head


def _history(plan: _Plan, seed: int, start: datetime, end: datetime, commits: int | None) -> tuple[_Stream, str]:
    """The fast-import stream of one repository and the package name.

    Without history requests (a world without the git app, or a benchmark) features land on untracked
    ``feature/<noun>-limits`` branches; with them, every branch is a request's, so the random work on the
    target is helpers, releases and chores, and the requests' commits are written in time order among them.
    """
    rng = Seeds(seed).rng(f"repos/{plan.name}")
    pkg = package_name(plan.name)
    people = plan.people
    main_ref = f"refs/heads/{plan.default_branch}"
    total = commits if commits is not None else 24 + 6 * len(people)
    span = max(1.0, (end - start).total_seconds())
    times = sorted(start + timedelta(seconds=int(s)) for s in rng.uniform(0, span, size=total + 8))
    clock = iter(times)

    def who() -> _Person:
        return people[int(rng.integers(len(people)))]

    st = _Stream()
    reqs = _Requests(st, Seeds(seed).rng(f"repos/{plan.name}/requests"), plan)
    files = _scaffold(plan.name, plan.team_name, pkg)
    util, util_test = files[f"{pkg}/util.py"], files["tests/test_util.py"]
    first = next(clock)
    earliest = reqs.first_at()
    if earliest is not None and earliest <= first:
        first = earliest - timedelta(hours=1)
    head = st.commit(main_ref, people[0], first, "Initial service skeleton\n", dict(files), [])
    used: set[str] = set()
    version, changelog, readme = 1, files["CHANGELOG.md"], files["README.md"]
    open_branch: tuple[str, int, dict[str, str], str] | None = None  # ref, mark, files, noun
    branches = not plan.requests
    while st.commits - reqs.commits < total:
        left = total - (st.commits - reqs.commits)
        roll = float(rng.random())
        at = next(clock, times[-1])
        head = reqs.until(at, head)
        if open_branch is not None and (roll < 0.35 or left <= 2):
            ref, mark, added, noun = open_branch
            open_branch = None
            if left > 3 or rng.random() < 0.5:  # merge it; otherwise it stays open
                msg = f"Merge branch '{ref.removeprefix('refs/heads/')}'\n\nAdds {noun} limits.\n"
                head = st.commit(main_ref, who(), at, msg, added, [head, mark])
                changelog += f"\n- {noun.title()} limits\n"
        elif branches and open_branch is None and roll < 0.25 and left > 3:
            noun = str(rng.choice([n for n in NOUNS if n not in used] or list(NOUNS)))
            used.add(noun)
            ref = f"refs/heads/feature/{noun}-limits"
            st.branch(ref, head)
            added = _feature(pkg, noun, int(rng.integers(2, 50)))
            mark = st.commit(ref, who(), at, f"Add {noun} limits\n", added, [head])
            open_branch = (ref, mark, added, noun)
        elif open_branch is not None and roll < 0.5:
            ref, mark, added, noun = open_branch
            path = f"{pkg}/{noun}.py"
            added = {**added, path: added[path] + f"\n\ndef describe() -> str:\n    return {noun!r}\n"}
            mark = st.commit(ref, who(), at, f"Describe {noun} module\n", {path: added[path]}, [mark])
            open_branch = (ref, mark, added, noun)
        elif roll < 0.8:
            name = f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
            name = name if name not in used else f"{name}_{st.commits}"
            used.add(name)
            fn, test = _helper(name, int(rng.integers(1, 9)), int(rng.integers(0, 20)))
            util, util_test = util + fn, util_test + test
            changes = {f"{pkg}/util.py": util, "tests/test_util.py": util_test}
            head = st.commit(main_ref, who(), at, f"Add {name} helper\n", changes, [head])
        elif roll < 0.9 and left > 1:
            version += 1
            ver = f"0.{version}.0"
            changelog += f"\n## {ver}\n"
            changes = {
                "CHANGELOG.md": changelog,
                "pyproject.toml": files["pyproject.toml"].replace('version = "0.1.0"', f'version = "{ver}"'),
                f"{pkg}/__init__.py": files[f"{pkg}/__init__.py"].replace('"0.1.0"', f'"{ver}"'),
            }
            releaser = who()
            head = st.commit(main_ref, releaser, at, f"Release {ver}\n", changes, [head])
            st.tag(f"v{ver}", head, releaser, at, f"Release {ver}\n")
        else:
            chore = str(rng.choice(CHORES))
            readme += f"\n{chore}: see the team wiki.\n"
            head = st.commit(main_ref, who(), at, f"{chore}\n", {"README.md": readme}, [head])
    reqs.until(None, head)
    return st, pkg


# -- reading the world --------------------------------------------------------------------------------------


def _now(db: Connection | Session) -> datetime:
    """The world's simulated 'now' (09:00 UTC on the spec's start date) and its history length."""
    row = db.execute(text("SELECT value FROM world_meta WHERE key = 'spec'")).first()
    if row is None:
        raise ValueError("the world has no world_meta spec row; pass now= explicitly")
    spec = WorldSpec.model_validate_json(row[0])
    return datetime.combine(spec.start_date, time(9, 0), tzinfo=UTC)


def history_requests(db: Connection | Session, repo_id: int, package: str) -> list[HistoryRequest]:
    """The generated history's merge requests of one repository (episode-made ones excluded), oldest first.

    A request whose branch does not start with a ticket key or whose description names no module of the
    package is not the generator's and gets no commits.
    """
    episode = {
        int(json.loads(k)[0])
        for k in db.execute(
            select(ChangeLog.row_key).where(ChangeLog.table_name == "merge_requests", ChangeLog.op == "insert")
        ).scalars()
    }
    rows = db.execute(
        select(
            MergeRequest.id, MergeRequest.number, MergeRequest.title, MergeRequest.description,
            MergeRequest.source_branch, MergeRequest.target_branch, MergeRequest.state, MergeRequest.created_at,
            MergeRequest.merged_at, MergeRequest.author_id, MergeRequest.merged_by_id,
        )
        .where(MergeRequest.repository_id == repo_id)
        .order_by(MergeRequest.number)
    ).all()  # fmt: skip
    rows = [r for r in rows if r[0] not in episode]
    if not rows:
        return []
    ids = [r[0] for r in rows]
    notes: dict[int, list[tuple[int, str, datetime]]] = {}
    for mr, author, kind, at in db.execute(
        select(
            MergeRequestNote.merge_request_id,
            MergeRequestNote.author_id,
            MergeRequestNote.kind,
            MergeRequestNote.created_at,
        )
        .where(MergeRequestNote.merge_request_id.in_(ids))
        .order_by(MergeRequestNote.created_at, MergeRequestNote.id)
    ):
        notes.setdefault(mr, []).append((author, kind, at))
    who = {r[9] for r in rows} | {r[10] for r in rows if r[10] is not None}
    people = {
        i: _Person(name=f"{f} {la}", email=e)
        for i, f, la, e in db.execute(
            select(Employee.id, Employee.first_name, Employee.last_name, Employee.email).where(
                Employee.id.in_(sorted(who))
            )
        )
    }
    out: list[HistoryRequest] = []
    for mid, number, title, desc, branch, target, state, opened, merged, author, merger in rows:
        key = KEY_OF_BRANCH.match(branch)
        module = request_module(desc, package)
        if key is None or module is None:
            continue
        fixups: list[datetime] = []
        asked = False
        for by, kind, at in notes.get(mid, []):
            asked = asked or kind == "request_changes"
            if asked and kind == "comment" and by == author and state != "closed":
                fixups.append(at)
        out.append(
            HistoryRequest(
                number=number, key=key[1], title=title, branch=branch, target=target, state=state,
                opened=opened, merged=merged, author=people[author], merger=people.get(merger) if merger else None,
                module=module, fixups=tuple(fixups),
            )
        )  # fmt: skip
    return out


def _plans(db: Connection | Session) -> list[_Plan]:
    """One plan per repository row of a product team, or one ``<team>-service`` per product team."""
    teams = db.execute(
        text(
            "SELECT t.id, t.name, t.slug, t.lead_id FROM teams t JOIN departments d ON d.id = t.department_id"
            " WHERE d.name = :dept ORDER BY t.id"
        ),
        {"dept": PRODUCT_DEPARTMENT},
    ).all()
    repos = db.execute(text("SELECT id, name, team_id, default_branch FROM repositories ORDER BY id")).all()
    plans: list[_Plan] = []
    for team_id, team_name, team_slug, lead_id in teams:
        rows = db.execute(
            text(
                "SELECT first_name, last_name, email FROM employees WHERE (team_id = :t AND active) OR id = :lead"
                " ORDER BY CASE WHEN id = :lead THEN 0 ELSE 1 END, id"
            ),
            {"t": team_id, "lead": lead_id if lead_id is not None else -1},
        ).all()
        people = [_Person(name=f"{f} {la}", email=e) for f, la, e in rows]
        if not people:
            continue
        owned = [(i, n, b) for i, n, t, b in repos if t == team_id]
        if not repos:  # a world without the git app: one service per product team, recorded only on request
            owned = [(None, f"{str(team_slug).removeprefix('engineering-')}-service", "main")]
        for i, n, b in owned:
            requests = history_requests(db, i, package_name(n)) if i is not None else []
            plans.append(
                _Plan(
                    name=n, team_id=team_id, team_name=team_name, default_branch=b, people=people, repo_id=i,
                    requests=requests,
                )
            )  # fmt: skip
    return plans


def _record(db: Connection | Session, plan: _Plan, info: RepoInfo, created: datetime) -> None:
    """Insert the repository row (if the world had none) and its refs."""
    tables = Base.metadata.tables
    if plan.repo_id is None:
        project = db.execute(
            text("SELECT id FROM projects WHERE team_id = :t ORDER BY id LIMIT 1"), {"t": plan.team_id}
        ).first()
        values = {
            "name": plan.name,
            "team_id": plan.team_id,
            "project_id": project[0] if project else None,
            "description": f"Service code of the {plan.team_name} team.",
            "default_branch": plan.default_branch,
            "language": "python",
            "created_at": created,
        }
        db.execute(tables["repositories"].insert().values(**values))
        plan.repo_id = int(db.execute(text("SELECT id FROM repositories WHERE name = :n"), {"n": plan.name}).one()[0])
    if db.execute(text("SELECT 1 FROM repository_refs WHERE repository_id = :r"), {"r": plan.repo_id}).first():
        return
    refs: list[dict[str, Any]] = [
        {"repository_id": plan.repo_id, "name": f"refs/heads/{b}", "commit_sha": c} for b, c in info.branches.items()
    ]
    refs += [{"repository_id": plan.repo_id, "name": f"refs/tags/{t}", "commit_sha": c} for t, c in info.tags.items()]
    db.execute(tables["repository_refs"].insert(), sorted(refs, key=lambda r: str(r["name"])))


# -- public API ---------------------------------------------------------------------------------------------


def build_repo(
    plan_name: str,
    dest: Path,
    *,
    seed: int,
    people: list[tuple[str, str]],
    team_id: int = 0,
    team_name: str = "Core",
    start: datetime,
    end: datetime,
    commits: int | None = None,
    default_branch: str = "main",
    requests: list[HistoryRequest] | None = None,
) -> RepoInfo:
    """Write one bare repository at ``dest`` (which must not exist) from explicit inputs.

    ``people`` is a list of (name, email); the first is the initial author; ``requests`` are the history merge
    requests whose commits the repository holds (``history_requests``). ``generate_repos`` calls this per
    repository; benchmarks call it directly to make a repository of a chosen length.
    """
    plan = _Plan(
        name=plan_name,
        team_id=team_id,
        team_name=team_name,
        default_branch=default_branch,
        people=[_Person(name=n, email=e) for n, e in people],
        repo_id=None,
        requests=list(requests or []),
    )
    stream, _ = _history(plan, seed, start, end, commits)
    dest.mkdir(parents=True)
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (dest / sub).mkdir(parents=True)
    (dest / "HEAD").write_text(f"ref: refs/heads/{default_branch}\n", encoding="ascii")
    write_repo_config(dest, bare=True)
    git(dest, "fast-import", "--quiet", "--date-format=raw", "--done", input=stream.bytes())
    git(dest, "pack-refs", "--all", "--prune")
    branches: dict[str, str] = {}
    tags: dict[str, str] = {}
    out = git(dest, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
    for line in out.decode().splitlines():
        ref, oid = line.split(" ")
        if ref.startswith("refs/heads/"):
            branches[ref.removeprefix("refs/heads/")] = oid
        else:
            tags[ref.removeprefix("refs/tags/")] = oid
    return RepoInfo(
        name=plan_name,
        team_id=team_id,
        path=dest,
        default_branch=default_branch,
        head=branches[default_branch],
        branches=dict(sorted(branches.items())),
        tags=dict(sorted(tags.items())),
        commits=stream.commits,
    )


def generate_repos(
    db: Connection | Session,
    seed: int,
    dest_dir: str | Path,
    *,
    now: datetime | None = None,
    commits: int | None = None,
    record: bool = False,
) -> list[RepoInfo]:
    """Generate every product team's repository as a bare repository ``<dest_dir>/<name>.git``.

    Args:
        db: A connection or session on the world (read: teams, employees, repositories, projects, world_meta).
        seed: The world seed; each repository draws from the stream ``repos/<name>``.
        dest_dir: Where to write; existing repositories of the same name are an error (generate into new dirs).
        now: The world's simulated now (default: 09:00 UTC on the spec's start date, read from world_meta).
        commits: Commits per repository (default: grows with the team's size).
        record: Also write the repository rows (only if the world has none) and ``repository_refs``; the
            caller commits. Off by default so generating repositories never changes a world by surprise.
    """
    end = now or _now(db)
    meta = db.execute(text("SELECT value FROM world_meta WHERE key = 'spec'")).first() if now is None else None
    history = WorldSpec.model_validate_json(meta[0]).history_days if meta else 0
    start = end - timedelta(days=max(history, MIN_HISTORY_DAYS))
    out = Path(dest_dir)
    out.mkdir(parents=True, exist_ok=True)
    infos: list[RepoInfo] = []
    for plan in _plans(db):
        info = build_repo(
            plan.name,
            out / f"{plan.name}.git",
            seed=seed,
            people=[(p.name, p.email) for p in plan.people],
            team_id=plan.team_id,
            team_name=plan.team_name,
            start=start,
            end=end - timedelta(hours=1),
            commits=commits,
            default_branch=plan.default_branch,
            requests=plan.requests,
        )
        infos.append(info)
        if record:
            _record(db, plan, info, start)
    return infos


def base_repos_dir(world_path: str | Path) -> Path:
    """Where the base repositories of a world file live: ``<world>.repos/``."""
    return Path(f"{world_path}.repos")


def ensure_base_repos(world_path: str | Path, db: Connection | Session, seed: int) -> list[RepoInfo]:
    """The world's base repositories, generated on first use and cached beside the world file.

    Built in a temporary directory and renamed into place under a file lock: one generation, never half-used.
    """
    final = base_repos_dir(world_path)
    manifest = final / "manifest.json"
    lock_path = Path(f"{final}.lock")
    final.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not manifest.is_file():
            sweep_temps(final.parent)  # half-written bases of killed processes
            tmp = Path(f"{final}.tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            infos = generate_repos(db, seed, tmp)
            moved = [RepoInfo.from_json({**i.to_json(), "path": str(final / i.path.name)}) for i in infos]
            data = json.dumps([i.to_json() for i in moved], sort_keys=True, indent=1)
            (tmp / "manifest.json").write_text(data, encoding="utf-8")
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        return [RepoInfo.from_json(d) for d in json.loads(manifest.read_text(encoding="utf-8"))]


PACK_SUFFIXES = (".pack", ".idx", ".rev", ".bitmap")


def object_dirs(git_dir: Path) -> list[Path]:
    """``git_dir``'s object directory and every one it borrows from through ``info/alternates``, nearest first."""
    out: list[Path] = []
    todo = [(git_dir / "objects").resolve()]
    while todo:
        objects = todo.pop(0)
        if objects in out or not objects.is_dir():
            continue
        out.append(objects)
        alternates = objects / "info" / "alternates"
        if alternates.is_file():
            for line in alternates.read_text(encoding="utf-8").splitlines():
                if line.strip() and not line.startswith("#"):
                    todo.append((objects / line.strip()).resolve())
    return out


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:  # another file system, or links refused: a copy holds the same immutable bytes
        shutil.copyfile(src, dest)


def checkout(
    base: str | Path, git_dir: str | Path, work_tree: str | Path, *, user: tuple[int, int] | None = None
) -> GitRepo:
    """Give an episode its own repository: a git directory ``git_dir`` apart from the work tree ``work_tree``.

    The git directory gets the base's HEAD and packed refs, the fixed config, the locked attributes and hard
    links to the base's packs (and those of every repository the base borrows from), so it is self-contained:
    no ``alternates`` path is followed at run time, which lets git run as the unprivileged ``user`` even when
    the bases live in a directory only root can enter. Packs are immutable and linked, not copied; a copy is
    made only across file systems. Directories and files written here are given to ``user``; the linked packs
    keep their owner (read-only, world-readable). One ``git reset --hard``, run as ``user``, fills the index and
    the work tree. Cost: a few links and small files plus the current tree's size, whatever the history.

    Raises:
        FileExistsError: ``git_dir`` or ``work_tree`` already exists.
    """
    src = Path(base).resolve()
    gd, tree = Path(git_dir), Path(work_tree)
    for path in (gd, tree):
        if os.path.lexists(path):
            raise FileExistsError(f"{path} already exists")
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info"):
        (gd / sub).mkdir(parents=True)
    (gd / "HEAD").write_bytes((src / "HEAD").read_bytes())
    write_repo_config(gd, bare=False)
    (gd / "info" / "attributes").write_text(LOCKED_ATTRIBUTES, encoding="ascii")
    packed = src / "packed-refs"
    if packed.is_file():
        shutil.copyfile(packed, gd / "packed-refs")
    linked: set[str] = set()
    for objects in object_dirs(src):
        for pack in sorted((objects / "pack").glob("pack-*")):
            if pack.suffix in PACK_SUFFIXES and pack.name not in linked:
                linked.add(pack.name)
                _link_or_copy(pack, gd / "objects" / "pack" / pack.name)
        for loose in sorted(objects.glob("[0-9a-f][0-9a-f]/*")):
            target = gd / "objects" / loose.parent.name / loose.name
            target.parent.mkdir(exist_ok=True)
            if not target.exists():
                _link_or_copy(loose, target)
    tree.mkdir(parents=True)
    if user is not None:
        _give(gd, tree, user, linked)
    repo = GitRepo(git_dir=gd.resolve(), work_tree=tree.resolve(), user=user)
    repo("reset", "-q", "--hard")
    return repo


def _give(git_dir: Path, tree: Path, user: tuple[int, int], packs: set[str]) -> None:
    """Own what ``checkout`` wrote to ``user``, but not the linked packs and objects (they are the base's inodes)."""
    uid, gid = user
    os.chown(tree, uid, gid)
    os.chown(git_dir, uid, gid)
    for top, dirs, files in os.walk(git_dir):
        for name in dirs:
            os.chown(os.path.join(top, name), uid, gid, follow_symlinks=False)
        for name in files:
            path = os.path.join(top, name)
            if os.stat(path, follow_symlinks=False).st_nlink == 1 and name not in packs:
                os.chown(path, uid, gid, follow_symlinks=False)
