"""The chat checks' verdicts from the post log, and their per-step evaluators (``post_in_channel`` and kin).

Why a module of its own: ``graders.progress`` asks these after every step that writes a post, and what keeps
that cheap is the routing here, not the checks' database path (``graders.checks_comms``). The ``on_step``
evaluators index a rubric's checks once by the channel they watch, hand each new post only to the checks of
its channel and author, and re-score one only when a new post of its own matches its pattern: the score
alone, as a float, its evidence built when the results are asked for (nothing in an episode reads it; else only
the posts its evidence lists moved: ``LATER``). A check with no posts of
its own is told ``LATER`` when a post lands in a channel nobody had posted to this episode (its evidence names
where posts went; its score stays 0). A step with a mention re-decides the checks that ask for one. The
``touches``/``on_changes`` hooks stay for a caller that asks one check at a time; the verdicts are the same
functions either way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from graders.base import ChangeRow, GradingContext
from graders.checks_common import Who, employee_id, listing, rx, who_label
from graders.comms_log import (
    Followed,
    LoggedPost,
    PostLog,
    followed,
    post_channel,
    post_log,
    show_post,
    warm_channels,
    went_to,
)
from graders.registry import LATER, Later
from graders.text_match import _earliest, _lowered, _plain, _plan, planned_hit

Verdict = tuple[float, str, dict[str, Any]]
Plan = tuple[Callable[..., Any], "tuple[str, ...] | None", "tuple[str, ...] | None"]
"""A pattern's search, start texts and needles (``text_match._plan``): what ``planned_hit`` matches a post by."""
_NONE: frozenset[int] = frozenset()


def _channel_name(ctx: GradingContext, channel: str) -> str | None:
    """``~eng``/``#eng``/``eng`` -> ``eng``; ``@bob`` -> the direct channel of the agent and bob."""
    if channel.startswith("@"):
        other = employee_id(ctx, channel[1:])
        return None if other is None else "__".join(str(i) for i in sorted((ctx.actor_id, other)))
    return channel.lstrip("~#")


def _mentions(ctx: GradingContext, post_id: int, who: int, username: str, message: str) -> bool:
    """A mention row was written for the post, or the text says ``@username`` as a whole word."""
    rows = ctx.changed_rows("mentions")
    if any(
        r.op == "insert" and r.changes.get("post_id") == post_id and r.changes.get("employee_id") == who for r in rows
    ):
        return True
    return re.search(rf"(?<![\w@])@{re.escape(username)}\b", message, re.IGNORECASE) is not None


def _mention_rule(ctx: GradingContext, username: str) -> tuple[int, Callable[[str], Any]] | None:
    """What ``_mentions`` asks of a post for ``username``: the employee's id and the text's search (None: unknown).

    Worked out once per index (``_PostIndex``): ``_mentions`` builds the pattern anew for every post it reads.
    """
    who = employee_id(ctx, username)
    if who is None:
        return None
    return who, re.compile(rf"(?<![\w@])@{re.escape(username)}\b", re.IGNORECASE).search


def _target(ctx: GradingContext, channel: str, author: Who | None) -> tuple[str, int | None] | str:
    """(channel name, author id) a post check looks for, or the evidence saying why it cannot be resolved.

    Kept until the employees change (a ``@bob`` channel is named by ids): the touches hook asks it for every
    post of a step, for every check, so it is one dict lookup.
    """
    targets = _targets(ctx)
    found = targets.get((channel, author))
    if found is None:
        name = _channel_name(ctx, channel)
        author_id = employee_id(ctx, author) if author is not None else None
        if name is None:
            found = f"unknown employee in channel {channel!r}"
        elif author is not None and author_id is None:
            found = f"unknown employee {author!r}"
        else:
            found = (name, author_id)
        targets[(channel, author)] = found
    return found


def _targets(ctx: GradingContext) -> dict[Any, Any]:
    """The resolved post-check targets, dropped when a change to the employees is logged (their ``None`` stamp)."""
    employees = len(ctx.changed_rows("employees"))
    targets: dict[Any, Any] | None = ctx.lasting.get("post_targets")
    if targets is None or targets[None] != employees:
        targets = ctx.lasting["post_targets"] = {None: employees}
    return targets


def _post_row(ctx: GradingContext, row: ChangeRow) -> tuple[ChangeRow, PostLog | None, str | None, bool]:
    """What every post check's hook asks of one inserted post: the log, the post's channel, first one there.

    Worked out once per row and kept until the next row is asked about (a step's post reaches every check).
    """
    log = post_log(ctx)
    where = post_channel(ctx, row) if log is not None else None
    seen = (row, log, where, log is not None and where is not None and log.first.get(where) == row.key[0])
    _targets(ctx)
    ctx.lasting["post_row"] = seen
    return seen


def _post_reads(mention: str | None = None, **_: Any) -> tuple[str, ...]:
    """A check asking for no mention reads no mention row (a step's mentions need not reach its hook).

    The employees are read too: a channel ``@bob`` and an author are named by username, so a rename or a new
    employee can change which posts are the check's (the ``on_step`` index is then built again).
    """
    return ("employees", "posts", "mentions") if mention is not None else ("employees", "posts")


def _post_touches(
    ctx: GradingContext,
    row: ChangeRow,
    channel: str,
    author: Who | None = "actor",
    mention: str | None = None,
    **_: Any,
) -> bool:
    """Whether a changed row may change a ``post_in_channel`` verdict (for ``graders.progress``).

    A new post can when it is the check's (its channel, its author); any other post only while the check has
    no posts of its own (its evidence then names where new posts went) and only the first post in a channel
    (the list of channels grows). A mention row can only when it names one of the check's posts (a check
    asking for no mention reads none: ``_post_reads``). Edits and deletions, and a log the fold cannot
    follow, are left to the check.
    """
    if row.table == "mentions":
        return _mention_touches(ctx, row, channel, author)
    if row.table != "posts" or row.op != "insert":
        return True
    seen = ctx.lasting.get("post_row")
    if seen is None or seen[0] is not row:
        seen = _post_row(ctx, row)
    log, where, first = seen[1:]
    if log is None or where is None:
        return True
    target = ctx.lasting["post_targets"].get((channel, author)) or _target(ctx, channel, author)
    if isinstance(target, str):
        return False  # the channel or author is unknown: the verdict says so whatever is posted
    name, author_id = target
    if where == name and author_id in (None, row.changes.get("author_id")):
        return True
    authors = log.authors.get(name)
    if authors and (author_id is None or author_id in authors):
        return False  # the check has posts of its own: the others are not in its evidence
    return bool(first)


def _mention_touches(ctx: GradingContext, row: ChangeRow, channel: str, author: Who | None) -> bool:
    """Whether a mention row may change a check asking for a mention: only one naming a post of the check's."""
    log = post_log(ctx)
    if row.op != "insert" or log is None:
        return True
    post = log.by_id.get(row.changes.get("post_id", -1))
    if post is None:
        return False  # not a post this episode made: no check counts it
    target = _target(ctx, channel, author)
    return not isinstance(target, str) and post.channel == target[0] and target[1] in (None, post.author_id)


def _followed_posts(ctx: GradingContext, log: PostLog, key: Any, name: str, author_id: int | None) -> Followed:
    """The check ``key``'s posts in ``name`` by ``author_id`` (None: anyone), the log's new ones folded in."""
    state = followed(ctx, key, (name, author_id))
    for post in log.posts[state.seen :]:
        if post.channel == name and author_id in (None, post.author_id):
            state.items.append(post)
            state.outcome = None
    state.seen = len(log.posts)
    return state


def _matched(state: Followed, pattern: str) -> list[LoggedPost]:
    """``state``'s posts that ``pattern`` matches, each new one searched once (a check asking for no mention)."""
    items = state.items
    if state.searched != len(items):
        plan = _plan(pattern)
        hits = state.hits
        for p in items[state.searched :]:
            if planned_hit(plan, p.message, _lowered(p.message)):
                hits.append(p)
        state.searched = len(items)
    found: list[LoggedPost] = state.hits
    return found


def _post_verdict(
    ctx: GradingContext,
    log: PostLog,
    channel: str,
    pattern: str,
    author: Who | None,
    min_count: int,
    mention: str | None,
    state: Followed | None = None,
) -> tuple[float, str, dict[str, Any]]:
    """``post_in_channel``'s outcome from the post log, rebuilt only when its posts, mentions or channels moved.

    ``state`` is the check's followed posts when ``_post_step`` has just folded them (its target then stands).
    Every call is counted in ``log.asked`` (it may move the state's ``marks``, which ``_PostIndex.moved`` reads).
    """
    log.asked += 1
    if state is None:
        target = _target(ctx, channel, author)
        if isinstance(target, str):
            return 0.0, target, {}
        state = _followed_posts(ctx, log, ("post_in_channel", channel, pattern, author, min_count, mention), *target)
    name = state.target[0]
    mention_id = employee_id(ctx, mention) if mention is not None else None
    if mention is not None and mention_id is None:
        return 0.0, f"unknown employee {mention!r} in mention", {}
    posts: list[LoggedPost] = state.items
    marks = (len(ctx.changed_rows("mentions")) if mention is not None else 0, 0 if posts else len(log.first))
    if state.outcome is not None and state.marks == marks:
        return state.outcome
    want = f"/{pattern}/" + (f" mentioning @{mention}" if mention else "")
    if not posts and state.note:  # only where other posts went moved: the same head, kept
        state.marks = marks
        state.outcome = (0.0, f"{state.note}: {went_to(log)}", {"post_ids": []})
        return state.outcome
    search = rx(pattern).search  # compiled by the first verdict (the first step), not by a later step's
    if not log.posts and not channel.startswith("@"):
        warm_channels(ctx, [name])
    if mention is None:
        hits = _matched(state, pattern)
    else:
        hits = [p for p in posts if search(p.message) and _mentions(ctx, p.id, mention_id or 0, mention, p.message)]
        state.hits, state.searched = hits, len(posts)  # where ``_post_step`` goes on from
    head = f"{len(hits)} of {len(posts)} new posts in ~{name} by {who_label(author)} match {want}"
    head += f" (need {min_count})"
    shown = listing([show_post(log, p) for p in (hits or posts)])
    if not posts:
        shown, state.note = went_to(log), head
    state.marks = marks
    state.outcome = (
        min(1.0, len(hits) / min_count),
        head + (f": {shown}" if shown else ""),
        {"post_ids": [p.id for p in hits]},
    )
    return state.outcome


def _post_on_changes(
    ctx: GradingContext,
    rows: list[ChangeRow],
    channel: str,
    pattern: str,
    author: Who | None = "actor",
    min_count: int = 1,
    mention: str | None = None,
) -> tuple[float, str, dict[str, Any]] | None:
    """``post_in_channel``'s verdict after a step, from the post log (None: the log cannot tell, re-run)."""
    log = post_log(ctx)
    return None if log is None else _post_verdict(ctx, log, channel, pattern, author, min_count, mention)


def _no_post_touches(ctx: GradingContext, row: ChangeRow, channel: str, author: Who | None = "actor", **_: Any) -> bool:
    """Whether a changed row may change a ``no_post_in_channel`` verdict: a new post of its own, or an edit."""
    if row.table != "posts" or row.op != "insert" or post_log(ctx) is None:
        return True
    target = _target(ctx, channel, author)
    if isinstance(target, str):
        return False
    where = post_channel(ctx, row)
    return where is None or (where == target[0] and target[1] in (None, row.changes.get("author_id")))


def _no_post_verdict(
    ctx: GradingContext, log: PostLog, channel: str, pattern: str, author: Who | None
) -> tuple[float, str, dict[str, Any]]:
    """``no_post_in_channel``'s outcome from the post log, rebuilt only when the check's posts moved."""
    target = _target(ctx, channel, author)
    if isinstance(target, str):
        return 0.0, target, {}
    state = _followed_posts(ctx, log, ("no_post_in_channel", channel, pattern, author), *target)
    if state.outcome is not None:
        return state.outcome
    posts: list[LoggedPost] = state.items
    search = rx(pattern).search  # compiled by the first verdict (the first step)
    if not log.posts and not channel.startswith("@"):
        warm_channels(ctx, [target[0]])
    hits = [p for p in posts if search(p.message)]
    where = f"new posts in ~{target[0]} by {who_label(author)}"
    if not hits:
        state.outcome = (1.0, f"none of {len(posts)} {where} match /{pattern}/", {})
    else:
        shown = listing([show_post(log, p) for p in hits])
        state.outcome = (0.0, f"{len(hits)} {where} match /{pattern}/: {shown}", {"post_ids": [p.id for p in hits]})
    return state.outcome


def _no_post_on_changes(
    ctx: GradingContext, rows: list[ChangeRow], channel: str, pattern: str, author: Who | None = "actor"
) -> tuple[float, str, dict[str, Any]] | None:
    """``no_post_in_channel``'s verdict after a step, from the post log (None: re-run)."""
    log = post_log(ctx)
    return None if log is None else _no_post_verdict(ctx, log, channel, pattern, author)


class _PostIndex:
    """A rubric's checks of one post function, by the channel they watch (``_post_step``'s index).

    Built on the first call from what the log held before that step (the checks' verdicts then are the ones
    the progress holds: it graded every check when it started), so that step costs what any other does.
    ``targets`` is the resolved-target dict the index was built from (``_targets``): a new one (an employee
    changed) means deciding every check again. ``bare`` are the checks with no posts of their own yet, whose
    evidence lists where the episode's posts went. ``plain`` holds, for each ``post_in_channel`` check asking
    for no mention, what ``_post_step`` decides it with: its ``Followed`` state (the one ``followed`` keeps
    for it: the target cannot change while the index stands), its pattern's plan (``planned_hit``), its
    ``min_count``, the mention it asks for (None: none), and whether its pattern is one plain text
    (``text_match._plain``: on a lowered post, finding its start text is the match, no regex run); ``states``
    each ``post_in_channel`` check's state, whose verdict's marks tell whether it was asked since it was last
    told ``LATER`` (``moved``).
    """

    __slots__ = (
        "again",
        "asked",
        "authors",
        "bare",
        "by_name",
        "channels",
        "entries",
        "fresh",
        "mentions",
        "name_of",
        "params",
        "plain",
        "redo",
        "seen",
        "states",
        "targets",
        "wants",
    )

    def __init__(
        self, ctx: GradingContext, log: PostLog, params: list[Mapping[str, Any]], rows: list[ChangeRow]
    ) -> None:
        self.params = params
        self.targets = _targets(ctx)
        self.by_name: dict[str, list[int]] = {}
        self.authors: dict[int, int | None] = {}
        self.name_of: dict[int, str] = {}  # each check's channel name
        self.wants: set[int] = set()  # the checks asking for a mention
        # of those, the ones the last ``moved`` call found a mention of an earlier post for; the mention rows it read
        self.redo: AbstractSet[int] = _NONE
        self.fresh: Sequence[ChangeRow] = ()
        self.states: dict[int, Followed] = {}  # each ``post_in_channel`` check's followed state
        # ``log.asked`` when ``moved`` last read the bare checks' marks (-1: never), and the bare checks it told
        # whatever their marks say (no verdict of the two marks ``moved`` compares)
        self.asked = -1
        self.again: list[int] = []
        self.plain: dict[int, tuple[Followed, Plan, int, tuple[int, Callable[[str], Any]] | None, bool]] = {}
        for pos, kw in enumerate(params):
            channel, author = kw["channel"], kw.get("author", "actor")
            target = _target(ctx, channel, author)
            if isinstance(target, str):
                continue  # an unknown channel or author: the verdict says so whatever is posted
            self.by_name.setdefault(target[0], []).append(pos)
            self.authors[pos] = target[1]
            self.name_of[pos] = target[0]
            if "min_count" in kw:
                pattern, min_count, mention = kw["pattern"], kw["min_count"], kw["mention"]
                # the key and target ``_post_verdict`` follows the check's posts by
                key = ("post_in_channel", channel, pattern, author, min_count, mention)
                state = self.states[pos] = followed(ctx, key, target)
                who = None if mention is None else _mention_rule(ctx, mention)
                if mention is None or who is not None:  # (an unknown person: ``_post_verdict`` says so)
                    self.plain[pos] = (state, _plan(pattern), min_count, who, _plain(pattern))
            else:  # ``no_post_in_channel``: its search planned now (``_plan``'s cache), not by a task's first post
                _plan(kw["pattern"])
            if kw.get("mention") is not None:
                self.wants.add(pos)
        # by channel name, each check's (position, author id, ``plain`` rule or None): what ``_one_post`` routes a
        # step's one post by, with no dict of moved checks built and no second lookup of the rule
        self.entries: dict[str, list[tuple[int, int | None, Any]]] = {
            name: [(pos, self.authors[pos], self.plain.get(pos)) for pos in positions]
            for name, positions in self.by_name.items()
        }
        # the log as it was before this step: its posts less the step's (all plain inserts, or no log at all)
        fresh = sum(1 for r in rows if r.table == "posts")
        self.seen = len(log.posts) - fresh
        before = log.posts[: self.seen]
        self.channels = len({p.channel for p in before})
        self.mentions = len(ctx.changed_rows("mentions")) - sum(1 for r in rows if r.table == "mentions")
        self.bare = set(self.authors)
        for post in before:
            for pos in self.by_name.get(post.channel, ()):
                if self.authors[pos] in (None, post.author_id):
                    self.bare.discard(pos)

    def _mentioned(
        self, log: PostLog, rows: list[ChangeRow], new: list[LoggedPost], moved: dict[int, list[LoggedPost]]
    ) -> None:
        """Route new mention rows to the checks asking for a mention whose verdict they may move (``moved``).

        A mention row counts only for a post of the check's own (``_mentions``): one naming a post of this call
        is searched with that post (``_post_step``), one naming a post this episode did not make moves nothing,
        and one naming an earlier post of a check's and its person (or a row that is no plain insert)
        re-decides it in full (``redo``). Before, every mention re-decided every such check: a DM that mentions
        someone re-built the evidence of the checks on the team channel.
        """
        self.fresh, self.redo = rows, set()
        first = new[0].id if new else None
        wants = self.wants
        for r in rows:
            if r.op != "insert" or "post_id" not in r.changes:
                for pos in wants:
                    moved.setdefault(pos, [])
                self.redo.update(wants)
                return
            post = log.by_id.get(r.changes["post_id"])
            if post is None or (first is not None and post.id >= first):
                continue  # not this episode's post, or one of this call's (searched with its mentions)
            for pos in self.by_name.get(post.channel, ()):
                if pos in wants and self.authors[pos] in (None, post.author_id):
                    rule = self.plain.get(pos)
                    if rule is not None and rule[3] is not None and rule[3][0] != r.changes.get("employee_id"):
                        continue  # it names someone else: the check counts only mentions of its person
                    moved.setdefault(pos, [])
                    self.redo.add(pos)

    def moved(self, ctx: GradingContext, log: PostLog) -> tuple[dict[int, list[LoggedPost]], Sequence[int]]:
        """The checks the posts and mentions since the last call may have moved: (their own, only elsewhere).

        The first, with their new posts (none: a mention moved), are re-decided; the second (checks with no
        posts of their own, after a post in a channel nobody had posted to) only have a new list of where
        posts went, and are left out while the progress still holds them as lagging (told so at an earlier
        new channel, not asked since: the live episode never asks, so a DM per person tells each bare check
        once rather than at every DM).
        """
        moved: dict[int, list[LoggedPost]] = {}
        by_name, authors, bare = self.by_name, self.authors, self.bare
        new = log.posts[self.seen :]
        for post in new:
            for pos in by_name.get(post.channel, ()):
                author_id = authors[pos]
                if author_id is None or author_id == post.author_id:
                    moved.setdefault(pos, []).append(post)
                    bare.discard(pos)
        self.seen = len(log.posts)
        self.redo, self.fresh = _NONE, ()
        if self.wants:
            mentions = ctx.changed_rows("mentions")
            if len(mentions) != self.mentions:
                self._mentioned(log, mentions[self.mentions :], new, moved)
                self.mentions = len(mentions)
        if len(log.first) == self.channels:
            return moved, ()
        return moved, self.elsewhere(log, moved)

    def elsewhere(self, log: PostLog, moved: Container[int]) -> Sequence[int]:
        """The bare checks not in ``moved`` to tell ``LATER`` after a post in a channel nobody had posted to.

        Asked only when the log names more channels than at the last call (``moved``, ``_one_post``).
        """
        had, self.channels = self.channels, len(log.first)
        if not self.states:  # ``no_post_in_channel``'s index: its evidence names no other channel
            return ()
        # a check told ``LATER`` at an earlier new channel and not asked since (its verdict counts fewer channels
        # than there were before this step) is still lagging in the progress: telling it again costs, moves nothing
        if log.asked == self.asked:
            # no verdict built since the bare checks' marks were last read (at the last new channel, ``had`` then
            # fewer than now): each was told then (its marks count the channels before that step, fewer than
            # ``had``) or skipped as lagging (fewer still), and no marks moved since, so each is skipped now;
            # only one told whatever its marks say is told again. A DM to a new person per step reads no marks.
            again, bare = self.again, self.bare
            return [pos for pos in again if pos in bare and pos not in moved] if again else ()
        states, bare = self.states, self.bare
        elsewhere: list[int] = []
        again = self.again = []
        for pos in bare:
            if pos in moved:
                continue
            marks = states[pos].marks if pos in states else ()
            if len(marks) != 2:
                elsewhere.append(pos)
                again.append(pos)
            elif marks[1] >= had:  # its verdict counts every channel there was: tell it
                elsewhere.append(pos)
        self.asked = log.asked
        return elsewhere


def _index(
    ctx: GradingContext, log: PostLog, params: list[Mapping[str, Any]], rows: list[ChangeRow]
) -> _PostIndex | None:
    """The kept index of ``params``, or None after building it anew because an employee changed (or had).

    Kept in the post log's ``indexes`` by the id of ``params`` (each group's list, held by the progress for the
    episode). It stands while its ``targets`` is ``_targets(ctx)``'s dict, which is while the count of logged
    employee changes is the one stamped in it: that count only grows, and ``_targets`` makes a new dict only
    when it differs, so comparing the count (``_kept``) is the whole test.
    """
    index: _PostIndex | None = log.indexes.get(id(params))
    if _kept(ctx, params, index):
        return index
    log.indexes[id(params)] = fresh = _PostIndex(ctx, log, params, rows)
    return fresh if index is None and not ctx.changed_rows("employees") else None


def _kept(ctx: GradingContext, params: list[Mapping[str, Any]], index: _PostIndex | None) -> bool:
    """Whether ``index`` (the log's for ``params``' id) is ``params``' and no employee changed since it was built."""
    if index is None or index.params is not params:
        return False
    employees = ctx._by_table.get("employees")  # ``ctx.changed_rows``, read from its index: no frame
    return bool(index.targets[None] == (len(employees) if employees else 0))


def _post_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | float | None]:
    """``post_in_channel``'s ``on_step``: the verdicts of the checks a step's posts and mentions may move.

    Most writing steps add one post (a message, a direct message with its new channel), maybe with mention rows
    naming it: that post is routed here straight to the checks of its channel and author (``_PostIndex.entries``)
    and each is decided from its kept rule, with no dict of moved checks built and no rule looked up twice; any
    other step (several posts, a mention of an earlier post, an edit) takes ``_post_steps``' general path. A
    check a new match moves gets its new score alone (``graders.progress`` builds its evidence when the results
    are asked for: a direct message passing two notice checks wrote two texts nobody read); one whose score
    cannot move (no new match, or one past the count it needs) answers ``LATER``.
    """
    log = post_log(ctx)
    if log is None:
        return dict.fromkeys(range(len(params)))
    index = _index(ctx, log, params, rows)
    if index is None:
        return {pos: _post_verdict(ctx, log, **params[pos]) for pos in range(len(params))}
    before = index.seen
    posts = log.posts
    if len(posts) != before + 1:
        return _post_steps(ctx, log, index, params)
    post = posts[before]
    named: AbstractSet[Any] = _NONE  # who the step's mention rows name (all of them rows of this post)
    fresh: Sequence[ChangeRow] = ()
    if index.wants:
        mentions = ctx._by_table.get("mentions")  # ``ctx.changed_rows``, read from its index: no frame
        count = len(mentions) if mentions else 0
        if count != index.mentions:
            fresh = mentions[index.mentions :] if mentions else ()
            for r in fresh:
                if r.op != "insert" or r.changes.get("post_id") != post.id:
                    return _post_steps(ctx, log, index, params)  # a mention of an earlier post: ``_mentioned``
            named = {r.changes.get("employee_id") for r in fresh}
            index.mentions = count
    index.seen = seen = before + 1
    index.redo, index.fresh = _NONE, fresh
    own: list[tuple[int, int | None, Any]] = []
    entries = index.entries.get(post.channel)
    if entries:
        author, bare = post.author_id, index.bare
        for entry in entries:
            if entry[1] is None or entry[1] == author:
                own.append(entry)
                bare.discard(entry[0])
    out: dict[int, Verdict | Later | float | None] = {}
    if len(log.first) != index.channels:  # the first post in a channel: the bare checks' evidence names it
        if not index.states or (log.asked == index.asked and not index.again):
            index.channels = len(log.first)  # ``elsewhere`` with none to tell (each told before, or lagging)
        else:
            elsewhere = index.elsewhere(log, ())  # the post's own checks have just left ``bare``: none to leave out
            if elsewhere:
                out = dict.fromkeys(elsewhere, LATER)
    if not own:  # a post no check watches (a DM to a coworker no check names): nothing to match
        return out
    text = post.message
    low: str | None = text.lower() if text.isascii() else _lowered(text)  # ``_lowered``, its frame spared on ASCII
    for pos, _, rule in own:
        if rule is not None:
            state, plan, min_count, who, plain = rule
            items = state.items
            if state.seen > before or state.searched != len(items):
                rule = None  # it has seen this post already (a twin's state), or left some unsearched
        if rule is None:
            out[pos] = _post_verdict(ctx, log, **params[pos])
            continue
        items.append(post)  # ``_followed_posts``' fold, and ``_matched``/``_mentions`` of the one post
        state.seen = seen
        state.outcome = None
        state.searched = len(items)
        hits = state.hits
        if plain and low is not None and plan[1] is not None:  # one plain text: its start found is the match
            hit = _earliest(plan[1], low) >= 0
        else:
            hit = planned_hit(plan, text, low)
        if hit and (who is None or who[0] in named or who[1](text)):
            matched = len(hits)
            hits.append(post)
            if matched < min_count:  # the score alone (``min(1.0, found / min_count)``): the text when asked
                out[pos] = (matched + 1) / min_count if matched + 1 < min_count else 1.0
                continue
        out[pos] = LATER  # no new match, or one past the count it needs: only its evidence moved
    return out


def _post_steps(
    ctx: GradingContext, log: PostLog, index: _PostIndex, params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | float | None]:
    """``_post_step`` for a step that is not one post: every new post and mention routed by ``_PostIndex.moved``.

    A check asking for no mention whose followed state has seen the log up to this step's posts (every check
    of the index has: a step that finds posts of its own folds them, and the others in between are not its
    own) takes exactly the new posts ``moved`` found, searched once each here; a new match below the count it
    needs gives its new score alone, none (or one past the count) answers ``LATER``. A state that has seen this
    step's posts already (two checks with the same parameters share one; an index built anew this step) gives
    the verdict it holds. After an employee changed every check is decided again; a log the fold cannot follow
    (an edit, a deletion) re-runs them all.
    """
    before = index.seen
    own, elsewhere = index.moved(ctx, log)
    out: dict[int, Verdict | Later | float | None] = dict.fromkeys(elsewhere, LATER) if elsewhere else {}
    plain, redo, seen = index.plain, index.redo, index.seen  # ``moved`` has just set it to ``len(log.posts)``
    named: set[Any] | None = None  # who the step's plain mention rows name, by post (built once, when asked)
    for pos, posts in own.items():
        found = plain.get(pos) if posts and pos not in redo else None
        if found is not None:
            state, plan, min_count, who, _ = found
            items = state.items
            if state.seen > before or state.searched != len(items):
                found = None  # it has seen this step's posts already, or left some unsearched: the generic pass
        if found is None:
            out[pos] = _post_verdict(ctx, log, **params[pos])
            continue
        hits = state.hits
        items += posts  # ``_followed_posts``' fold: the posts after ``before`` that are the check's
        state.seen = seen
        state.outcome = None
        matched = len(hits)
        if who is None:
            for p in posts:  # ``_matched``: each post searched once
                if planned_hit(plan, p.message, _lowered(p.message)):
                    hits.append(p)
        else:  # ``_mentions``: a mention row for the post (one of this call's), or the text naming the person
            who_id, said = who
            if named is None:
                named = {
                    (r.changes.get("post_id"), r.changes.get("employee_id")) for r in index.fresh if r.op == "insert"
                }
            for p in posts:
                if planned_hit(plan, p.message, _lowered(p.message)) and ((p.id, who_id) in named or said(p.message)):
                    hits.append(p)
        state.searched = len(items)
        # no new match, or one past the count it needs: the score stands, only the posts its evidence lists moved
        if len(hits) == matched or matched >= min_count:
            out[pos] = LATER
        else:
            count = len(hits)
            out[pos] = count / min_count if count < min_count else 1.0  # the score alone: the text when asked
    return out


def _no_post_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | float | None]:
    """``no_post_in_channel``'s ``on_step``: only a check's own posts move it (no evidence of other channels).

    A new post of its own that matches fails it: the score alone (0), its evidence built when the results are
    asked for; none that matches only moves the count its evidence quotes (``LATER``).
    """
    log = post_log(ctx)
    if log is None:
        return dict.fromkeys(range(len(params)))
    index = _index(ctx, log, params, rows)
    if index is None:
        return {pos: _no_post_verdict(ctx, log, **params[pos]) for pos in range(len(params))}
    out: dict[int, Verdict | Later | float | None] = {}
    for pos, posts in index.moved(ctx, log)[0].items():
        kw = params[pos]
        plan = _plan(kw["pattern"])
        for p in posts:
            if planned_hit(
                plan, p.message, _lowered(p.message)
            ):  # a post of its own matches: it fails (the score alone)
                out[pos] = 0.0
                break
        else:  # none of its new posts matches: only the count in its evidence moved
            out[pos] = LATER if posts else _no_post_verdict(ctx, log, **kw)
    return out
