"""This episode's new posts and sent mail, folded from the change log a step at a time (for the comms checks).

Why: the per-step progress score asks the chat and mail checks after every step that wrote a post or a mail,
and rebuilding the episode's posts or mails for each of a rubric's notice checks costs more than a step's
budget. ``post_log``/``mail_log`` keep in ``ctx.lasting`` what the log said so far and fold in only the rows
appended since; each check keeps its own matches the same way (``Followed``), so a post in another channel
decides a check with a comparison and no query. A fold holds only while every row is a plain insert, which is
then exactly what the final state holds: an edited or deleted post, a renamed channel, an edited mail turn it
off for the episode (the function returns None) and the checks read the database as they always did. A full
grade builds the same fold from its whole log at once, so progress and grade share one path. A fold brought up
to date is stamped with the length of the context's change log (which only grows, by ``extend``): every other
check of the same step that asks for it then costs one comparison, not four table lookups.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from graders.base import ChangeRow, GradingContext
from graders.checks_common import mailboxes, rows_in, snippet
from worlds.rawsql import Sql

_MAIL_IMAGE = frozenset({"subject", "body", "sender_mailbox_id"})  # as ``logged_mail`` reads a message
_CHANNEL_NAME = "SELECT id, name FROM channels WHERE id IN ({})"
_CHANNEL_IDS = "SELECT id, name FROM channels WHERE name IN ({}) ORDER BY id"
_NO_ROWS: list[ChangeRow] = []
"""What ``ctx.changed_rows`` gives a table with no changes (read only: never appended to)."""


class LoggedPost(NamedTuple):
    """A post this episode made, as its insert logged it, with its channel's name."""

    id: int
    channel: str
    author_id: int
    message: str


_post = tuple.__new__  # a ``LoggedPost`` made from its fields' tuple, without the named tuple's ``__new__`` frame


class PostLog:
    """The episode's new posts in id order, and per channel name the first one and who posted there."""

    __slots__ = (
        "asked",
        "at",
        "authors",
        "by_id",
        "channels_seen",
        "clean",
        "first",
        "indexes",
        "last",
        "names",
        "posts",
        "posts_seen",
        "shown",
        "went",
    )

    def __init__(self) -> None:
        self.at = -1  # how long the context's change log was when the fold was last brought up to date
        self.posts_seen = 0  # how many rows of the log's posts changes are folded in
        self.channels_seen = 0
        self.clean = True
        self.posts: list[LoggedPost] = []
        self.last: int | None = None  # the last folded post's id (the fold reads it without touching that post)
        self.by_id: dict[int, LoggedPost] = {}
        self.first: dict[str, int] = {}  # channel name -> the id of the episode's first post there
        self.authors: dict[str, set[int]] = {}  # channel name -> who posted there this episode
        self.went = (-1, "")  # went_to's text and how many channels it names
        self.shown: dict[int, str] = {}  # how evidence shows each post (``show_post``), made once per post
        # the channel names by id: ``ctx.lasting["channel_names"]`` itself (shared with ``warm_channels`` and the
        # query path), held here so a fold reads it without a lookup in the context's lasting answers
        self.names: dict[int, str | None] = {}
        # the post checks' indexes over this log (``comms_posts._PostIndex``), by the id of their params list
        self.indexes: dict[int, Any] = {}
        # how many times a post check's verdict was built the generic way (``comms_posts._post_verdict``): while it
        # stands, no bare check's ``Followed.marks`` moved, so the index need not read them again (``moved``)
        self.asked = 0


def show_post(log: PostLog, post: LoggedPost) -> str:
    """``#id 'snippet'``: a post as every check's evidence lists it, built once for all of them."""
    found = log.shown.get(post.id)
    if found is None:
        found = log.shown[post.id] = f"#{post.id} {snippet(post.message)}"
    return found


def post_log(ctx: GradingContext) -> PostLog | None:
    """The episode's new posts so far (``new_posts``' rows), or None once a logged change makes the log unsure."""
    log: PostLog | None = ctx.lasting.get("post_log")
    if log is None:
        log = ctx.lasting["post_log"] = PostLog()
        log.names = ctx.lasting.setdefault("channel_names", {})
    elif not log.clean:
        return None
    elif log.at == len(ctx.log):  # asked again in the same step (every post check asks): nothing to fold
        return log
    # ``ctx.changed_rows`` of the two tables, read from its index directly (as ``mail_log`` does): two frames a step
    by_table = ctx._by_table
    posts, channels = by_table.get("posts", _NO_ROWS), by_table.get("channels", _NO_ROWS)
    if (len(posts) != log.posts_seen or len(channels) != log.channels_seen) and not _fold_posts(
        ctx, log, posts, channels
    ):
        log.clean = False
        return None
    log.at = len(ctx.log)
    return log


def _fold_posts(ctx: GradingContext, log: PostLog, posts: list[ChangeRow], channels: list[ChangeRow]) -> bool:
    """Fold the rows appended since the last fold; False when one is not a plain insert of a live post.

    Written for the step that adds one post (and maybe its direct channel): one pass over the rows, no
    comprehension or named-tuple constructor frames, the channel ids looked up only when one is unknown.
    """
    names = log.names  # ``ctx.lasting["channel_names"]``, shared with ``_logged_posts`` and ``warm_channels``
    if len(channels) != log.channels_seen:
        for row in channels[log.channels_seen :]:
            if row.op == "delete" or (row.op == "update" and "name" in row.changes):
                return False
            if row.op == "insert":
                if "name" not in row.changes:
                    return False
                names[row.key[0]] = row.changes["name"]
        log.channels_seen = len(channels)
    new = posts[log.posts_seen :]
    last = log.last
    authors, by_id, folded = log.authors, log.by_id, log.posts
    # each row checked and folded in one pass: a row that is not a plain insert turns the fold off for the
    # episode (``post_log`` then never reads the log again), so what was folded before it does not matter
    for row in new:
        if row.op != "insert":
            return False
        changes = row.changes
        try:  # the four columns the fold keeps, each read once (no superset test of the image's keys first)
            deleted, channel, author, message = (
                changes["deleted_at"],
                changes["channel_id"],
                changes["author_id"],
                changes["message"],
            )
        except KeyError:
            return False  # an image without one of them: the query reads the row
        if deleted is not None:
            return False
        key = row.key[0]
        if last is not None and key <= last:
            return False  # out of id order: the query's ORDER BY would differ from the log's
        last = key
        if channel not in names:  # the ids of every channel not known yet among the rows left, in one lookup
            wanted = sorted({c for r in new if (c := r.changes.get("channel_id")) is not None and c not in names})
            names.update(dict.fromkeys(wanted))
            names.update({int(i): str(n) for i, n in rows_in(ctx, _CHANNEL_NAME, wanted)})
        name = names[channel]
        if name is None:
            return False  # a post in no known channel: leave it to the query's join
        post = _post(LoggedPost, (last, name, author, message))
        folded.append(post)
        by_id[last] = post
        who = authors.get(name)
        if who is None:  # the channel's first post this episode (no empty set made for every later one)
            log.first[name] = last
            authors[name] = {author}
        else:
            who.add(author)
    log.posts_seen = len(posts)
    log.last = last
    return True


def went_to(log: PostLog) -> str:
    """Where the episode's new posts went, as a check without posts of its own says it (one text for all)."""
    if log.went[0] != len(log.first):
        elsewhere = sorted(log.first)
        text = f"new posts went to: {', '.join('~' + c for c in elsewhere)}" if elsewhere else "no new posts at all"
        log.went = (len(log.first), text)
    return log.went[1]


def warm_channels(ctx: GradingContext, names: list[str]) -> None:
    """Put the ids of channels ``names`` in the fold's channel names while nothing has been posted (first step).

    The step that makes the first post in one of them then folds it without a lookup; a channel that does
    not exist yet (a direct channel) is named by its own logged insert when it is created.
    """
    done: set[str] = ctx.lasting.setdefault("warm_channels", set())
    wanted = sorted(set(names) - done)
    if not wanted:
        return
    done.update(wanted)
    known: dict[int, str | None] = ctx.lasting.setdefault("channel_names", {})
    for i, name in rows_in(ctx, _CHANNEL_IDS, wanted):
        known.setdefault(int(i), str(name))


def post_channel(ctx: GradingContext, row: ChangeRow) -> str | None:
    """The channel name of a logged post insert, if the post log knows it (None: unknown)."""
    names: dict[int, str | None] = ctx.lasting.get("channel_names", {})
    return names.get(row.changes.get("channel_id", -1))


class LoggedMail(NamedTuple):
    """A mail this episode sent, as its insert logged it: its sender's and recipients' mailbox ids.

    The mailboxes are looked up only for the mails a check reads (``sent_by``, ``reached``): a coworker's
    mail to the agent costs no lookup in a check on what the agent sent.
    """

    id: int
    subject: str
    body: str
    sender_box: int
    to_boxes: tuple[int, ...]
    text: str  # the body in lower case: the case checks look for a ticket's key in every mail's


class MailLog:
    """The episode's sent mails in id order; ``generation`` moves when who a mailbox is may have changed.

    That is any mailbox or employee change but a new outside address's mailbox (``_outside_boxes``).
    """

    __slots__ = (
        "at",
        "box_of",
        "boxes",
        "boxes_seen",
        "clean",
        "generation",
        "mails",
        "messages_seen",
        "reach",
        "recipients_seen",
        "shown",
    )

    def __init__(self) -> None:
        self.at = -1  # how long the context's change log was when the fold was last brought up to date
        self.messages_seen = 0
        self.recipients_seen = 0
        self.boxes_seen = (0, 0)
        self.clean = True
        self.generation = 0
        self.mails: list[LoggedMail] = []
        self.reach: dict[int, set[str]] = {}  # who each mail reaches (``reached``), for this generation
        self.box_of: dict[int, int | None] = {}  # each sender employee's mailbox (``sent_by``), for this generation
        self.boxes: dict[int, tuple[str, int | None, str | None] | None] = {}  # ``boxes_of``, for this generation
        self.shown: dict[int, str] = {}  # each mail's subject as evidence shows it (``show_mail``), made once


def show_mail(log: MailLog, mail: LoggedMail) -> str:
    """``snippet(subject)``: a mail's subject as every mail check's evidence quotes it, built once per mail."""
    found = log.shown.get(mail.id)
    if found is None:
        found = log.shown[mail.id] = snippet(mail.subject)
    return found


_new = tuple.__new__
"""Builds a ``LoggedMail`` from its fields in one call (as ``graders.changes`` builds a ``ChangeRow``)."""


def mail_log(ctx: GradingContext) -> MailLog | None:
    """The episode's sent mails so far (``_sent_mail``'s rows), or None once a logged change makes the log unsure.

    A change to the mailboxes or employees (who an address belongs to) starts a new generation, so every
    check's verdict built on the old lookups is built again.
    """
    log: MailLog | None = ctx.lasting.get("mail_log")
    if log is None:
        log = ctx.lasting["mail_log"] = MailLog()
    elif not log.clean:
        return None
    elif log.at == len(ctx.log):  # asked again in the same step (every mail check asks): nothing to fold
        return log
    # ``ctx.changed_rows`` of the four tables, read from its index directly: four frames a write step less
    by_table, none = ctx._by_table, _NO_ROWS
    messages, recipients = by_table.get("mail_messages", none), by_table.get("mail_recipients", none)
    boxes = (len(by_table.get("mailboxes", none)), len(by_table.get("employees", none)))
    if boxes != log.boxes_seen:
        if not _outside_boxes(ctx, log, boxes):
            log.reach, log.box_of, log.boxes = {}, {}, {}
            log.generation += 1
        log.boxes_seen = boxes
    if (len(messages) != log.messages_seen or len(recipients) != log.recipients_seen) and not _fold_mail(
        ctx, log, messages, recipients
    ):
        log.clean = False
        return None
    log.at = len(ctx.log)
    return log


def _outside_boxes(ctx: GradingContext, log: MailLog, now: tuple[int, int]) -> bool:
    """Whether the mailbox and employee rows logged since ``seen`` are only new outside addresses' mailboxes.

    Mailing a new outside address creates its mailbox (no employee): no earlier lookup changes with it (who
    an existing mailbox is, an employee's mailbox), so the verdicts built so far stand (no new generation),
    and the new mailbox is put in ``mailboxes``' kept answers from its logged insert (no lookup when the mail
    that made it is read).
    """
    seen = log.boxes_seen
    if now[1] != seen[1]:
        return False
    rows = ctx.changed_rows("mailboxes")[seen[0] :]
    if any(r.op != "insert" or r.changes.get("employee_id", 0) is not None or "address" not in r.changes for r in rows):
        return False
    known = mailboxes(ctx, ())
    for r in rows:
        known.setdefault(r.key[0], (str(r.changes["address"]), None, None))
        log.boxes.setdefault(r.key[0], (str(r.changes["address"]), None, None))
    return True


def boxes_of(
    ctx: GradingContext, log: MailLog, ids: tuple[int, ...]
) -> dict[int, tuple[str, int | None, str | None] | None]:
    """``mailboxes``, kept in the log for its generation.

    A new outside mailbox makes ``mailboxes`` forget what it read, but changes none of the mailboxes read
    before, so they are not looked up again.
    """
    known = log.boxes
    for i in ids:  # most asks find every mailbox known: a loop, not a list built to be empty
        if i not in known:
            break
    else:
        return known
    missing = [i for i in ids if i not in known]
    if missing:
        found = mailboxes(ctx, missing)
        for i in missing:
            known[i] = found.get(i)
    return known


def _fold_mail(ctx: GradingContext, log: MailLog, messages: list[ChangeRow], recipients: list[ChangeRow]) -> bool:
    """Fold the rows appended since the last fold, reading only those (not the episode's whole mail log).

    False when one is not a plain insert (``logged_mail``'s rule: an edit or deletion, an image without a
    column) or a recipient row names a message not among the new ones (an earlier mail, one sent before).
    """
    new = messages[log.messages_seen :]
    last = log.mails[-1].id if log.mails else None
    to: dict[int, list[int]] = {}
    for row in new:
        if row.op != "insert" or not row.changes.keys() >= _MAIL_IMAGE or (last is not None and row.key[0] <= last):
            return False  # out of id order too: the query's ORDER BY would differ from the log's
        last = row.key[0]
        to[last] = []
    for row in recipients[log.recipients_seen :]:
        boxes = to.get(row.changes.get("message_id", -1)) if row.op == "insert" else None
        if boxes is None or "mailbox_id" not in row.changes:
            return False  # a recipient added to an earlier message (or one sent before the episode)
        boxes.append(row.changes["mailbox_id"])
    for row in new:
        image = row.changes
        fields = (
            row.key[0],
            image["subject"],
            image["body"],
            image["sender_mailbox_id"],
            tuple(to[row.key[0]]),
            str(image["body"]).lower(),
        )
        log.mails.append(_new(LoggedMail, fields))  # ``LoggedMail(*fields)`` without its generated ``__new__``'s frame
    log.messages_seen, log.recipients_seen = len(messages), len(recipients)
    return True


_BOX_OF = "SELECT id FROM mailboxes WHERE employee_id = ?"


def sent_by(ctx: GradingContext, log: MailLog, mail: LoggedMail, employee: int | None) -> bool:
    """Whether ``mail``'s sender mailbox is ``employee``'s (None: any mailbox that exists), as the join reads it.

    An employee has at most one mailbox (a unique column), looked up once and kept for the log's generation
    (a new outside address's mailbox is no one's: it does not make the lookup again).
    """
    if employee is None:
        return boxes_of(ctx, log, (mail.sender_box,)).get(mail.sender_box) is not None
    if employee not in log.box_of:
        log.box_of[employee] = Sql.of(ctx.session).scalar(_BOX_OF, (employee,))
    return mail.sender_box == log.box_of[employee]


def reached(ctx: GradingContext, log: MailLog, mail: LoggedMail) -> set[str]:
    """Who ``mail`` reaches: its recipients' addresses and usernames in lower case (``_sent_mail``'s sets).

    Worked out once per mail (until a mailbox or employee changes): every check on sent mail asks it. Its
    mailboxes are read from the log's kept ones directly when all are known (most mails: warmed, or replies
    to a sender already read), ``boxes_of`` only for one that is not: a frame or two less per mail (mail8).
    """
    found = log.reach.get(mail.id)
    if found is not None:
        return found
    boxes = log.boxes
    for box in mail.to_boxes:
        if box not in boxes:
            boxes = boxes_of(ctx, log, mail.to_boxes)
            break
    out: set[str] = set()
    for box in mail.to_boxes:
        known = boxes.get(box)
        if known is not None:  # its address, and its owner's username if an employee's (no generator: one a mail)
            address, _, username = known
            if address:
                out.add(address.lower())
            if username:
                out.add(username.lower())
    log.reach[mail.id] = out
    return out


_WARM = (
    "SELECT b.id, b.address, b.employee_id, e.username FROM mailboxes b LEFT JOIN employees e ON e.id = b.employee_id"
    " WHERE b.address IN ({0}) OR b.employee_id IN (SELECT id FROM employees WHERE username IN ({0}))"
    " OR b.employee_id = ? ORDER BY b.id"
)


def warm_mailboxes(ctx: GradingContext, terms: list[str]) -> None:
    """Put the mailboxes of ``terms`` (addresses, usernames) and of the agent in ``mailboxes``' kept answers.

    Called by a mail check while nothing has been sent (the first step): the step that sends the first mail
    to one of them then folds it without a lookup, and tells whose it is (``sent_by``: the agent's mailbox, a
    sender's) without one. Only a cache of rows as they are (kept until a mailbox or
    employee changes); a term whose case differs from the row's is simply looked up later.
    """
    done: set[str] = ctx.lasting.setdefault("warm_mailboxes", set())
    wanted = sorted(set(terms) - done)
    if not wanted:
        return
    done.update(wanted)
    known = mailboxes(ctx, ())
    log = mail_log(ctx)  # and in the log's, which a new outside mailbox does not make forget them
    sql = _WARM.format(", ".join("?" * len(wanted)))
    for box, address, employee, username in Sql.of(ctx.session).all(sql, [*wanted, *wanted, ctx.actor_id]):
        known.setdefault(box, (address, employee, username))
        if log is not None:
            log.boxes.setdefault(box, (address, employee, username))
            if employee is not None:  # an employee's one mailbox (a unique column): ``sent_by`` asks no query
                log.box_of.setdefault(employee, box)


class Followed:
    """One check's share of a log: the entries that concern it so far, and the verdict built from them.

    ``target`` is what the entries were picked by (a channel and author, a sender); a different one (an
    employee renamed) starts over. ``hits`` are the entries the check's pattern matched, searched once each:
    ``items`` only grow, so an entry's match never needs deciding again. ``marks`` is whatever else the verdict
    read (a count of mention rows, of channels posted to), so the check rebuilds it only when one of them moved.
    """

    __slots__ = ("hits", "items", "marks", "note", "outcome", "searched", "seen", "target")

    def __init__(self, target: Any) -> None:
        self.target = target
        self.seen = 0
        self.items: list[Any] = []
        self.searched = 0  # how many of ``items`` were matched against the check's pattern (``hits``' source)
        self.hits: list[Any] = []  # those that matched, in order (a check whose matches depend on nothing else)
        self.marks: tuple[Any, ...] = ()
        self.outcome: tuple[float, str, dict[str, Any]] | None = None
        self.note = ""  # a part of the verdict's text that stays while the entries do (a check's own)


def followed(ctx: GradingContext, key: Any, target: Any) -> Followed:
    """The check ``key``'s ``Followed`` state for ``target`` (a fresh one if the target changed)."""
    state: Followed | None = ctx.lasting.get(key)
    if state is None or state.target != target:
        state = ctx.lasting[key] = Followed(target)
    return state
