"""Checks that follow one case across apps: the ticket filed for a reference, its reply, its incident post.

A case is identified by a reference the task gives (``REF-4821`` in a customer's mail), not by a ticket key,
because keys depend on the order the agent files things. Each check starts from this episode's inserted
tickets (change log), so it costs O(rows changed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks import FieldValue, TicketField, _mismatch, _tickets, field_columns
from graders.checks_common import (
    inserted_ids,
    listing,
    logged_mail,
    mailboxes,
    name_ahead,
    named_ahead,
    rows_in,
    usernames,
)
from graders.checks_comms import new_posts
from graders.comms_log import MailLog, boxes_of, mail_log, post_log, warm_channels, warm_mailboxes
from worlds.rawsql import Sql


class CaseTicket(NamedTuple):
    """A ticket this episode filed, as the case checks read it."""

    id: int
    key: str
    title: str
    description: str | None
    project: str


class CaseMail(NamedTuple):
    """A recipient of a mail this episode sent."""

    id: int
    body: str
    in_reply_to_id: int | None
    address: str


class CasePost(NamedTuple):
    """A post this episode made, with its channel's name."""

    id: int
    message: str
    author_id: int
    deleted_at: Any
    name: str


_NEW_TICKETS = (
    "SELECT t.id, t.key, t.title, t.description, p.key FROM tickets t JOIN projects p ON p.id = t.project_id"
    " WHERE t.id IN ({}) ORDER BY t.id"
)
_SENT_TO = (
    "SELECT m.id, m.body, m.in_reply_to_id, b.address FROM mail_messages m"
    " JOIN mail_recipients r ON r.message_id = m.id JOIN mailboxes b ON b.id = r.mailbox_id"
    " WHERE m.id IN ({}) ORDER BY m.id, b.address"
)
_POSTS = (
    "SELECT p.id, p.message, p.author_id, p.deleted_at, c.name FROM posts p JOIN channels c ON c.id = p.channel_id"
    " WHERE p.id IN ({}) ORDER BY p.id"
)
_QUERIES: dict[str, tuple[str, str, tuple[str, ...], Callable[..., Any]]] = {
    "case_tickets": (_NEW_TICKETS, "tickets", ("tickets", "projects"), CaseTicket),
    "case_mails": (_SENT_TO, "mail_messages", ("mail_messages", "mail_recipients", "mailboxes"), CaseMail),
    "case_posts": (_POSTS, "posts", ("posts", "channels"), CasePost),
}


def _memo(ctx: GradingContext, name: str) -> list[Any]:
    """The final state of this episode's new tickets, mails or posts (``name`` in ``_QUERIES``), once per grade.

    Every case's checks read the same new tickets, mails and posts: one query each, not one per check, and
    the per-step progress score re-queries one only after a step that changed a table it reads.
    """
    sql, table, reads, make = _QUERIES[name]

    def read() -> list[Any]:
        if name == "case_mails" and (logged := _logged_mails(ctx)) is not None:
            return logged
        if name == "case_tickets" and (filed := _logged_tickets(ctx)) is not None:
            return filed
        if name == "case_posts":  # the same rows as ``post_in_channel``'s, read from the log when it can
            return [
                CasePost(p["id"], p["message"], p["author_id"], p["deleted_at"], p["channel"]) for p in new_posts(ctx)
            ]
        return [make(*r) for r in rows_in(ctx, sql, inserted_ids(ctx, table))]

    return ctx.kept(name, reads, read)


def _logged_mails(ctx: GradingContext) -> list[CaseMail] | None:
    """``_SENT_TO``'s rows from the change log (``logged_mail``): no query after each mail the agent sends."""
    logged = logged_mail(ctx)
    if logged is None:
        return None
    messages, to = logged
    boxes = mailboxes(ctx, [b for i in messages for b in to.get(i, ())])
    out = []
    for i in sorted(messages):
        m = messages[i]
        addresses = sorted(found[0] for b in to.get(i, ()) if (found := boxes.get(b)) is not None)
        out += [CaseMail(i, m["body"], m.get("in_reply_to_id"), address) for address in addresses]
    return out


_TICKET_IMAGE = frozenset({"key", "title", "description", "project_id"})
_PROJECT_KEYS = "SELECT id, key FROM projects WHERE id IN ({})"


class _TicketFold:
    """The episode's filed tickets folded from the log a step at a time (``_logged_tickets``' source).

    Why: the cases' checks read the filed tickets after every ticket step, and walking the whole ticket log
    (every insert image copied, every edit applied again) each time cost more than deciding the checks. Only
    the rows appended since the last fold are read; ``out`` (the case tickets in id order, with their text in
    lower case) is built again only when a row changed a ticket's key, text or project. ``images`` are the
    tickets' insert images with their later logged edits (``_logged_fields`` reads a ticket's fields there);
    ``gone`` the ids the log saw deleted or edited before an insert, whose fields the log cannot give. An image
    is the logged insert's own ``changes`` until an edit of its ticket is folded in, and a copy (kept in
    ``edited``) from then on: why, copying every filed ticket's image cost a dict of its every column on the
    step that files it, and most tickets are never edited; the log's rows are never changed, so the copy is
    made before the first edit is applied.
    """

    __slots__ = ("at", "bad", "edited", "gone", "images", "lowered", "out", "projects_seen", "seen")

    def __init__(self) -> None:
        self.at = -1  # how long the context's change log was when the fold was last brought up to date
        self.seen = 0
        self.projects_seen = 0
        self.bad = False  # an insert image without a case column, or a project's key changed: read the database
        self.images: dict[int, Mapping[str, Any]] = {}
        self.edited: dict[int, dict[str, Any]] = {}  # the images that are the fold's own copy (an edit applied)
        self.gone: set[int] = set()
        self.out: list[CaseTicket] | None = None
        self.lowered: list[str] = []  # each of ``out``'s title and description in lower case, as the case reads it


_new = tuple.__new__
"""Builds a named tuple from its fields in one call (as ``graders.changes`` builds a ``ChangeRow``)."""
_NO_ROWS: list[ChangeRow] = []
"""What ``ctx.changed_rows`` gives a table with no changes (read only: never appended to)."""


def _ticket_fold(ctx: GradingContext) -> _TicketFold:
    """The kept fold with the ticket and project rows logged since the last call folded in."""
    fold: _TicketFold | None = ctx.lasting.get("ticket_fold")
    if fold is None:
        fold = ctx.lasting["ticket_fold"] = _TicketFold()
    elif fold.at == len(ctx.log):  # asked again in the same step (a filed row, then its fields): nothing new
        return fold
    by_table = ctx._by_table  # ``ctx.changed_rows``, read from its index directly (two frames a ticket step less)
    rows = by_table.get("tickets", _NO_ROWS)
    if len(rows) != fold.seen:
        images, gone = fold.images, fold.gone
        for row in rows[fold.seen :]:
            tid = row.key[0]
            if row.op == "insert":
                if not row.changes.keys() >= _TICKET_IMAGE:
                    fold.bad = True
                images[tid] = row.changes  # the log's row: copied before an edit is applied (``edited``)
                fold.out = None
            elif row.op == "delete":
                if images.pop(tid, None) is not None:
                    fold.out = None
                fold.edited.pop(tid, None)  # (an id filed again after this starts from its new insert's row)
                gone.add(tid)
            else:
                image = images.get(tid)
                if image is None:
                    gone.add(tid)  # edited before it was filed (or after its deletion): the log cannot tell
                    continue
                edited = fold.edited.get(tid)
                if edited is None:  # the insert's own row until now: copied first (the log's rows never change)
                    edited = images[tid] = fold.edited[tid] = dict(image)
                for column, change in row.changes.items():
                    if column in edited:
                        edited[column] = change[1]
                        if column in _TICKET_IMAGE:
                            fold.out = None
        fold.seen = len(rows)
    projects = by_table.get("projects", _NO_ROWS)
    if len(projects) != fold.projects_seen:  # (each ticket filed bumps its project's number: an update)
        for row in projects[fold.projects_seen :]:
            if row.op == "delete" or (row.op == "update" and "key" in row.changes):
                fold.bad = True
            elif row.op == "insert":
                if "key" not in row.changes:
                    fold.bad = True
                else:  # the kept keys fetched here only: a ticket step's bump builds no empty dict for them
                    keys: dict[int, str | None] = ctx.lasting.setdefault("project_keys", {})
                    keys[row.key[0]] = row.changes["key"]
                    fold.out = None
        fold.projects_seen = len(projects)
    fold.at = len(ctx.log)
    return fold


def _logged_tickets(ctx: GradingContext) -> list[CaseTicket] | None:
    """``_NEW_TICKETS``' rows from the change log: no query after each ticket the agent files.

    A ticket the episode filed is, now, its insert image with its later logged edits (``_TicketFold``); its
    project's key comes from one lookup per project, kept for the episode (no project's key change is logged).
    None when an image lacks a column or a project key changed: then the database is read.
    """
    fold = _ticket_fold(ctx)
    if fold.bad:
        return None
    if fold.out is not None:
        return fold.out
    keys: dict[int, str | None] = ctx.lasting.setdefault("project_keys", {})
    images = fold.images
    wanted = sorted({t["project_id"] for t in images.values()} - keys.keys())
    if wanted:
        keys.update(dict.fromkeys(wanted))
        keys.update({int(i): str(k) for i, k in rows_in(ctx, _PROJECT_KEYS, wanted)})
    out, lowered = [], []
    for tid in sorted(images):
        t = images[tid]
        project = keys[t["project_id"]]
        if project is not None:  # the query's inner join drops a ticket whose project does not exist
            out.append(CaseTicket(tid, t["key"], t["title"], t["description"], project))
            lowered.append(f"{t['title']}\n{t['description']}".lower())
    fold.out, fold.lowered = out, lowered
    return out


_PROJECT_ID = "SELECT id, key FROM projects WHERE key = ?"


def _warm_project(ctx: GradingContext, project: str) -> None:
    """Put ``project``'s id and key in ``_logged_tickets``' project keys (once per episode, on the first step)."""
    done: set[str] = ctx.lasting.setdefault("warm_projects", set())
    if project in done:
        return
    done.add(project)
    keys: dict[int, str | None] = ctx.lasting.setdefault("project_keys", {})
    for i, key in Sql.of(ctx.session).all(_PROJECT_ID, (project.upper(),)):
        keys.setdefault(int(i), str(key))


def _new_tickets_for(ctx: GradingContext, reference: str) -> list[CaseTicket]:
    """This episode's new tickets that mention ``reference`` (kept: every check and hook of a case asks)."""
    ref = reference.lower()
    return ctx.kept(("case", ref), _QUERIES["case_tickets"][2], lambda: _tickets_naming(ctx, ref))


def _tickets_naming(ctx: GradingContext, ref: str) -> list[CaseTicket]:
    """``_new_tickets_for`` worked out: from the fold's lowered texts when the tickets came from it."""
    filed = _memo(ctx, "case_tickets")
    fold: _TicketFold | None = ctx.lasting.get("ticket_fold")
    if fold is not None and filed is fold.out:
        return [t for t, text in zip(filed, fold.lowered, strict=True) if ref in text]
    return [r for r in filed if ref in f"{r.title}\n{r.description}".lower()]


_CASE_COLUMNS = frozenset({"key", "title", "description", "project_id"})
"""What a case check reads of its ticket besides the ``fields`` it compares."""
_POST_COLUMNS = frozenset({"message", "author_id", "deleted_at", "channel_id"})
"""What a case check reads of a post (an edit of anything else, e.g. a reaction count, cannot matter)."""


def _lowered(ctx: GradingContext, row: ChangeRow, text: str) -> str:
    """``text`` of a logged row in lower case, worked out once per row of a step for every case check's hook.

    A step's new ticket or mail reaches the hook of every case check that reads its table; its text (a mail
    body, a ticket's title and description) is lowered once, not once per check.
    """
    step = ctx.log[-1].seq if ctx.log else 0
    cache: tuple[int, dict[int, str]] | None = ctx.lasting.get("case_text")
    if cache is None or cache[0] != step:
        cache = ctx.lasting["case_text"] = (step, {})
    found = cache[1].get(row.seq)
    if found is None:
        found = cache[1][row.seq] = text.lower()
    return found


def _case_touches(
    ctx: GradingContext,
    row: ChangeRow,
    reference: str,
    fields: dict[TicketField, FieldValue] | None = None,
    **_: Any,
) -> bool:
    """Whether a changed row may change a check on ``reference``'s case (for ``graders.progress``).

    A ticket filed for another reference, an edit of such a ticket that leaves its text alone, or an edit of
    the case's own ticket that changes none of the columns the check reads (its text, project and ``fields``)
    cannot. Mail and posts are read only once exactly one ticket is filed for the case, and then only one
    that carries the ticket's key can count: a new mail or post without the key cannot change the verdict.
    """
    if row.table == "tickets":
        if row.op == "delete":
            return True
        if row.op == "insert":
            text = _lowered(ctx, row, f"{row.changes.get('title')}\n{row.changes.get('description')}")
            return reference.lower() in text
        if _CASE_COLUMNS.intersection(row.changes):
            return True
        if fields and not field_columns(fields).intersection(row.changes):
            return False
        return bool(fields) and any(t.id == row.key[0] for t in _new_tickets_for(ctx, reference))
    if row.table not in ("mail_messages", "mail_recipients", "posts"):
        return True
    found = _new_tickets_for(ctx, reference)
    if len(found) != 1:
        return False  # the check fails on the ticket count before it reads any mail or post
    key = found[0].key.lower()
    if row.table == "posts":
        if row.op == "update":
            return not _POST_COLUMNS.isdisjoint(row.changes)
        return row.op == "delete" or key in _lowered(ctx, row, str(row.changes.get("message")))
    if row.table == "mail_messages" and row.op == "insert":
        return key in _lowered(ctx, row, str(row.changes.get("body")))
    if row.table == "mail_messages" and row.op == "update":
        return "body" in row.changes
    if row.table == "mail_recipients" and row.op == "insert":  # its message, as the check will read it
        message = row.changes.get("message_id")
        logged = logged_mail(ctx)
        if logged is not None:  # the message's logged insert: no lookup of where the mail went
            image = logged[0].get(message) if isinstance(message, int) else None
            return image is None or key in str(image["body"]).lower()
        return any(m.id == message and key in m.body.lower() for m in _memo(ctx, "case_mails"))
    return True


_CASE_TABLES = ("mail_messages", "mail_recipients", "posts", "tickets")


def _case_reads(**_: Any) -> tuple[str, ...]:
    """Every table a case reads (its ticket, the replies, the posts), whichever part of it a check asks about.

    Why every check names all of them: ``graders.progress`` asks an ``on_step`` function once per step for each
    distinct set of tables its checks read, and a case's parts read different ones (a plain filing its ticket, a
    reply the mail too, an incident check the posts). With one set a step is one call for every part of every
    case (the step that files a ticket reads the case's tickets once, not once per set, and decides its parts
    together); ``_case_moved`` routes each row to the parts it may move, so a mail reaches only the reply checks.
    """
    return _CASE_TABLES


_FIELD_COLUMN = {"status": "status", "priority": "priority", "type": "type", "title": "title"}
_FIELD_COLUMN |= {"story_points": "story_points", "assignee": "assignee_id"}
"""The tickets column each field the log can give is read from (``sprint`` is a name behind an id: queried)."""


def _logged_fields(ctx: GradingContext, ticket_id: int, fields: Mapping[Any, Any]) -> dict[str, Any] | None:
    """``fields`` of a ticket this episode filed, as ``_tickets`` reads them, from its logged insert and edits.

    Why: the step that files a case's ticket re-decides every check of the case, and ``_tickets`` (kept until
    a ticket changes) would be read again right after that write. Read from the ticket fold (its insert image
    with its edits applied); None when a field or column is not logged, or the ticket was deleted.
    """
    fold: _TicketFold | None = ctx.lasting.get("ticket_fold")
    if fold is None or fold.at != len(ctx.log):  # ``_ticket_fold``'s own test: the filed row folded it this step
        fold = _ticket_fold(ctx)
    image = fold.images.get(ticket_id)
    if image is None or ticket_id in fold.gone:
        return None
    out: dict[str, Any] = {}
    for f in fields:
        column = _FIELD_COLUMN.get(f)
        if column is None or column not in image:
            return None
        out[f] = image[column]
    if "assignee" in out and out["assignee"] is not None:
        want = fields.get("assignee")
        if named_ahead(ctx, "assignee", want, out["assignee"]):  # the expected one: named with no lookup
            out["assignee"] = want
        else:
            out["assignee"] = usernames(ctx, [int(out["assignee"])]).get(int(out["assignee"]))
    return out


def _case_verdict(
    ctx: GradingContext,
    ticket_row: Callable[[CaseTicket], Mapping[str, Any] | None],
    project: str,
    reference: str,
    fields: dict[TicketField, FieldValue] | None,
    reply_to: str | None,
    incident_channel: str | None,
    in_title: bool,
) -> tuple[float, str, dict[str, Any]] | None:
    """``ticket_for_reference``'s outcome, its ticket's fields read by ``ticket_row`` (None: it cannot tell).

    ``_case_step`` asks its two halves (``_case_head`` once per case, ``_case_rest`` per check) itself.
    """
    if reply_to is not None and not ctx.changed_rows("mail_messages"):
        warm_mailboxes(ctx, [reply_to])  # nothing sent yet (the first step): the reply then needs no lookup
    if incident_channel is not None and not ctx.changed_rows("posts"):
        warm_channels(ctx, [incident_channel])  # nor posted: the incident post then folds without one
    if not ctx.changed_rows("tickets"):
        _warm_project(ctx, project)  # nor filed: the case's ticket then needs no lookup of its project's key
        if fields and "assignee" in fields:  # and its expected assignee's id, kept while no employee changes
            name_ahead(ctx, "assignee", fields["assignee"])
    found = _new_tickets_for(ctx, reference)
    head = _case_head(found, project, reference)
    if not isinstance(head, CaseTicket):
        return head
    return _case_rest(ctx, ticket_row, head, reference, fields, reply_to, incident_channel, in_title)


def _case_head(found: list[CaseTicket], project: str, reference: str) -> CaseTicket | tuple[float, str, dict[str, Any]]:
    """The case's one ticket in ``project``, or the verdict every check of the case gives without one."""
    if len(found) != 1:
        keys = ", ".join(r.key for r in found)
        return 0.0, f"{len(found)} tickets filed for {reference} (want exactly 1){': ' + keys * bool(keys)}", {}
    ticket = found[0]
    if ticket.project != project.upper():
        return 0.0, f"{ticket.key} for {reference} is in {ticket.project}, not {project}", {}
    return ticket


def _case_rest(
    ctx: GradingContext,
    ticket_row: Callable[[CaseTicket], Mapping[str, Any] | None] | None,
    ticket: CaseTicket,
    reference: str,
    fields: dict[TicketField, FieldValue] | None,
    reply_to: str | None,
    incident_channel: str | None,
    in_title: bool,
) -> tuple[float, str, dict[str, Any]] | None:
    """The rest of ``_case_verdict`` once the case has its one ticket: its fields, title, reply and post.

    ``ticket_row`` None reads the fields from the log (``_logged_fields``, the per-step path: no closure a check).
    """
    wrong = []
    if fields:  # the ticket exists (it was found above): its row is read only for the fields compared
        row = _logged_fields(ctx, ticket.id, fields) if ticket_row is None else ticket_row(ticket)
        if row is None:
            return None
        for f, v in sorted(fields.items()) if len(fields) > 1 else fields.items():  # a loop: no frame of its own
            if row[f] != v:  # ``_mismatch`` words only a field that differs: a frame less for each that matches
                m = _mismatch(ticket.key, row, f, v)
                if m:
                    wrong.append(m)
    if wrong:
        return 0.0, listing(wrong), {}
    said = [f"{ticket.key} filed for {reference}"]
    if in_title:
        if reference.lower() not in ticket.title.lower():
            return 0.0, f"{ticket.key} names {reference} only in its description: {ticket.title!r}", {}
        said.append("its title names it")
    if reply_to is not None:
        reply = _reply(ctx, ticket.key, reply_to)
        if reply is None:
            return 0.0, f"{ticket.key} filed, but no mail to {reply_to} gives its key", {}
        said.append(f"mail #{reply} to {reply_to} gives the key")
    if incident_channel is not None:
        hit = _incident_posts(ctx, ticket.key.lower(), reference.lower(), incident_channel)
        if not hit:
            return 0.0, f"{ticket.key} filed, but no post in ~{incident_channel} names it and {reference}", {}
        said.append(f"post #{hit[0]} in ~{incident_channel}")
    return 1.0, "; ".join(said), {"key": ticket.key}


def _incident_posts(ctx: GradingContext, key: str, ref: str, channel: str) -> list[int]:
    """The agent's live posts in ``channel`` that give ``key`` and ``ref`` (lower case), in id order.

    Read from the post log while it folds (``graders.comms_log``: its posts are live, as inserted), only the
    posts in ``channel`` by the agent; else from ``case_posts``.
    """
    log = post_log(ctx)
    if log is None:
        posts = _memo(ctx, "case_posts")
        return [
            p.id
            for p in posts
            if p.name == channel
            and p.author_id == ctx.actor_id
            and p.deleted_at is None
            and key in p.message.lower()
            and ref in p.message.lower()
        ]
    return [
        p.id
        for p in log.posts
        if p.channel == channel
        and p.author_id == ctx.actor_id
        and key in p.message.lower()
        and ref in p.message.lower()
    ]


def _reply(ctx: GradingContext, key: str, reply_to: str) -> int | None:
    """The first mail sent this episode to ``reply_to`` that gives ``key`` (``_SENT_TO``'s rows), or None.

    Read from the mail log while it folds (``graders.comms_log``): only the mailboxes of the mails that give
    the key are looked up, so a mail to a new outside address does not make every mail's recipients read
    again; else from ``case_mails``.
    """
    log: MailLog | None = ctx.lasting.get("mail_log")
    if log is None or log.at != len(ctx.log) or not log.clean:  # not folded this step yet (``mail_log``'s test)
        log = mail_log(ctx)
    key, to = key.lower(), reply_to.lower()
    if log is None:
        hits = [m.id for m in _memo(ctx, "case_mails") if m.address.lower() == to and key in m.body.lower()]
        return hits[0] if hits else None
    # kept per key and address for the log's generation: the first hit stays first (the log's ids only grow),
    # and a miss is looked for again only in the mails sent since
    kept: list[Any] | None = ctx.lasting.get(("case_reply", key, to))
    if kept is None or kept[0] != log.generation:
        kept = ctx.lasting["case_reply", key, to] = [log.generation, 0, None]
    if kept[2] is None:
        hit: int | None = None
        for mail in log.mails[kept[1] :]:
            if key in mail.text:
                boxes = log.boxes  # the log's kept mailboxes when it knows them all (``comms_log.reached``'s test)
                for b in mail.to_boxes:
                    if b not in boxes:
                        boxes = boxes_of(ctx, log, mail.to_boxes)
                        break
                for b in mail.to_boxes:  # a loop, not ``any`` over a generator: a frame less per mail
                    found = boxes.get(b)
                    if found is not None and found[0].lower() == to:
                        hit = mail.id
                        break
                if hit is not None:
                    break
        kept[1], kept[2] = len(log.mails), hit
    found_id: int | None = kept[2]
    return found_id


def _case_on_changes(
    ctx: GradingContext,
    rows: list[ChangeRow],
    project: str,
    reference: str,
    fields: dict[TicketField, FieldValue] | None = None,
    reply_to: str | None = None,
    incident_channel: str | None = None,
    in_title: bool = False,
) -> tuple[float, str, dict[str, Any]] | None:
    """``ticket_for_reference``'s verdict after a step, its ticket's fields from the log (None: re-run)."""

    def logged(ticket: CaseTicket) -> Mapping[str, Any] | None:
        return _logged_fields(ctx, ticket.id, fields or {})

    return _case_verdict(ctx, logged, project, reference, fields, reply_to, incident_channel, in_title)


class _CaseIndex:
    """A rubric's case checks by reference, with the tickets filed for each (``_case_step``'s index).

    ``filed`` holds, per reference (lower case), the (id, key) of the tickets this episode filed that mention
    it, followed from the step's ticket inserts; an edit of a ticket's text, key or project, or a deletion,
    builds it again from the case's tickets (``_new_tickets_for``) and re-decides every check. ``passed`` are
    the reply and incident checks this index last decided as passing: their evidence names the first mail or
    post that gives the key, which a later one (a higher id) cannot change, so a new mail or post skips them.
    ``busy`` stays set if a call failed half-way (the progress then re-ran the checks): the index is rebuilt.
    """

    __slots__ = ("busy", "by_ref", "columns", "filed", "params", "passed", "posts", "refs", "replies", "specs")

    def __init__(self, ctx: GradingContext, params: list[Mapping[str, Any]], rows: list[ChangeRow]) -> None:
        self.params = params
        self.busy = False
        self.by_ref: dict[str, list[int]] = {}
        self.columns: dict[int, frozenset[str]] = {}  # the ticket columns each check's ``fields`` read
        self.replies: list[int] = []  # the checks that read the mail
        self.posts: list[int] = []  # the checks that read the posts
        self.passed: set[int] = set()
        self.refs: list[str] = []  # each check's reference in lower case (``filed``'s key), lowered once
        # each check's params as ``_case_rest`` takes them, read out of its dict once (not at every step)
        self.specs: list[tuple[str, str, Any, str | None, str | None, bool]] = []
        for pos, kw in enumerate(params):
            self.refs.append(kw["reference"].lower())
            self.specs.append(
                (kw["reference"], kw["project"], kw["fields"], kw["reply_to"], kw["incident_channel"], kw["in_title"])
            )
            self.by_ref.setdefault(self.refs[-1], []).append(pos)
            if kw["fields"]:
                self.columns[pos] = field_columns(kw["fields"])
            if kw["reply_to"] is not None:
                self.replies.append(pos)
            if kw["incident_channel"] is not None:
                self.posts.append(pos)
        self.filed: dict[str, list[CaseTicket]] = {}
        # as they were before the step (the verdicts the progress holds): its new tickets are routed after
        self.refile(ctx, {r.key[0] for r in rows if r.table == "tickets" and r.op == "insert"})

    def refile(self, ctx: GradingContext, leave: set[Any] | frozenset[Any] = frozenset()) -> None:
        """Read each reference's tickets again (after an edit that may change which tickets mention it)."""
        self.passed.clear()
        for ref, positions in self.by_ref.items():
            reference = self.params[positions[0]]["reference"]
            self.filed[ref] = [t for t in _new_tickets_for(ctx, reference) if t.id not in leave]

    def keyed(self, positions: list[int], text: str) -> set[int]:
        """Those of ``positions`` not passing whose case has one ticket and whose key ``text`` (lower case) gives."""
        out = set()
        filed, refs, passed = self.filed, self.refs, self.passed
        for pos in positions:
            if pos in passed:
                continue
            found = filed[refs[pos]]
            if len(found) == 1 and found[0].key.lower() in text:
                out.add(pos)
        return out


def _filed_row(ctx: GradingContext, row: ChangeRow) -> tuple[str, CaseTicket | None]:
    """A ticket insert's title and description in lower case, and the case ticket it files (None: read again).

    Worked out once per row for every ``_CaseIndex`` of the rubric (one per set of tables a case check reads:
    a plain filing, a reply, an incident post), not once per index. The ticket is as ``_new_tickets_for``
    reads it, its project's key warmed at the first step; None when the fold cannot follow the log or does
    not know the project.
    """
    cache: dict[int, tuple[str, CaseTicket | None]] | None = ctx.memo.get("case_filed")
    if cache is None:  # kept in ``memo``, which every step that changed a row starts empty: no step key to test
        cache = ctx.memo["case_filed"] = {}
    found = cache.get(row.seq)
    if found is None:
        image = row.changes
        text = f"{image['title']}\n{image['description']}".lower()
        fold = _ticket_fold(ctx)  # first: it folds in a project the step created (its key)
        keys: dict[int, str | None] | None = ctx.lasting.get("project_keys")
        project = None if keys is None else keys.get(image["project_id"])
        ticket = None
        if project is not None and not fold.bad:  # ``CaseTicket(...)`` without its generated ``__new__``'s frame
            ticket = _new(CaseTicket, (row.key[0], image["key"], image["title"], image["description"], project))
        found = cache[row.seq] = (text, ticket)
    return found


def _case_moved(ctx: GradingContext, index: _CaseIndex, rows: list[ChangeRow]) -> set[int] | None:
    """The checks a step's rows may move, or None for all of them (after ``refile``).

    A passing reply or incident check is skipped by a new mail or post only while the mail or post log folds
    (its ids then only grow); an edit or a recipient added to an earlier mail re-decides every such check.
    """
    moved: set[int] = set()
    sent: set[Any] = set()  # the messages this step inserted: their recipients were routed with them
    for row in rows:
        table = row.table
        if table == "tickets":
            if (
                row.op == "delete"
                or (row.op == "update" and not _CASE_COLUMNS.isdisjoint(row.changes))
                or (row.op == "insert" and not row.changes.keys() >= _TICKET_IMAGE)
            ):
                index.refile(ctx)
                return None
            if row.op == "insert":
                text, ticket = _filed_row(ctx, row)
                for ref, positions in index.by_ref.items():
                    if ref in text:
                        if ticket is None:  # a project the fold does not know (or a log it cannot follow)
                            index.refile(ctx)
                            return None
                        filed = index.filed[ref]
                        if filed and filed[-1].id >= ticket.id:
                            index.refile(ctx)
                            return None
                        filed.append(ticket)
                        moved.update(positions)
                continue
            for pos, columns in index.columns.items():  # an edit of a case's ticket: its ``fields`` checks
                if not columns.isdisjoint(row.changes):
                    filed = index.filed[index.refs[pos]]
                    if any(t.id == row.key[0] for t in filed):
                        moved.add(pos)
        elif table == "posts":
            if not index.posts:
                continue  # no check of this rubric's cases reads a post
            if row.op == "insert" and post_log(ctx) is not None:
                moved |= index.keyed(index.posts, str(row.changes.get("message")).lower())
            elif row.op != "update" or not _POST_COLUMNS.isdisjoint(row.changes):
                moved.update(index.posts)
        elif not index.replies:
            continue  # a mail: no check of this rubric's cases reads one
        elif table == "mail_messages" and row.op == "insert" and mail_log(ctx) is not None:
            sent.add(row.key[0])
            moved |= index.keyed(index.replies, str(row.changes.get("body")).lower())
        elif table == "mail_recipients" and row.op == "insert" and row.changes.get("message_id") in sent:
            continue
        elif table in ("mail_messages", "mail_recipients"):
            moved.update(index.replies)  # an edit, a recipient of a mail sent before this step, a log that stopped
    return moved


def _case_decide(
    ctx: GradingContext, index: _CaseIndex, positions: Any
) -> dict[int, tuple[float, str, Mapping[str, Any]] | None]:
    """The verdicts of ``positions``, each case's tickets read once for all of its checks."""
    specs, passed, filed, refs = index.specs, index.passed, index.filed, index.refs
    out: dict[int, tuple[float, str, Mapping[str, Any]] | None] = {}
    heads: dict[tuple[str, str], Any] = {}  # per case and project: its ticket, or the verdict all its checks give
    for pos in positions:
        ref, project, fields, reply_to, incident_channel, in_title = specs[pos]
        head = heads.get((ref, project))
        if head is None:
            head = heads[ref, project] = _case_head(filed[refs[pos]], project, ref)
        if not isinstance(head, CaseTicket):
            out[pos] = verdict = head
        else:  # its fields (if any) from the log
            out[pos] = verdict = _case_rest(ctx, None, head, ref, fields, reply_to, incident_channel, in_title)
        if verdict is not None and verdict[0] == 1.0:
            passed.add(pos)
        else:
            passed.discard(pos)
    return out


def _case_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, tuple[float, str, Mapping[str, Any]] | None]:
    """``ticket_for_reference``'s ``on_step``: the verdicts of the cases a step's rows concern.

    A ticket goes to the cases its text names, a mail or post to the cases whose one ticket's key it gives
    (and whose check does not pass yet), an edit of a ticket to the checks on its fields; the step that files
    a case's ticket re-decides that case's checks only, reading the case's tickets once for all of them. The
    index is built on the first call from the case's tickets before that step.
    """
    index: _CaseIndex | None = ctx.lasting.get(("case_step", id(params)))
    if index is None or index.params is not params or index.busy:  # busy: the last call failed, checks re-ran
        index = ctx.lasting[("case_step", id(params))] = _CaseIndex(ctx, params, rows)
    index.busy = True
    found = _case_moved(ctx, index, rows)
    if found is not None and not found:  # most steps: a row no part of any case reads (a reply already counted)
        index.busy = False
        return {}
    out = _case_decide(ctx, index, range(len(params)) if found is None else sorted(found))
    index.busy = False
    return out


@check_fn(
    "ticket_for_reference", reads=_case_reads, touches=_case_touches, on_changes=_case_on_changes, on_step=_case_step
)
def ticket_for_reference(
    ctx: GradingContext,
    project: str,
    reference: str,
    fields: dict[TicketField, FieldValue] | None = None,
    reply_to: str | None = None,
    incident_channel: str | None = None,
    in_title: bool = False,
) -> CheckOutcome:
    """Exactly one ticket filed this episode in ``project`` mentions ``reference``, with ``fields``.

    With ``reply_to``, a mail the agent sent to that address carries the new ticket's key; with
    ``incident_channel``, a live post of the agent's in that channel carries the key and the reference; with
    ``in_title``, the reference is in the ticket's title (a reference only in the description is not).
    """

    def stored(ticket: CaseTicket) -> Mapping[str, Any] | None:
        return _tickets(ctx, [ticket.key])[ticket.key]

    found = _case_verdict(ctx, stored, project, reference, fields, reply_to, incident_channel, in_title)
    assert found is not None  # the ticket exists (it was found): its row does too
    score, evidence, details = found
    return CheckOutcome(score=score, evidence=evidence, details=details)


def _no_ticket_verdict(ctx: GradingContext, rows: list[ChangeRow], reference: str) -> tuple[float, str, dict[str, Any]]:
    """``no_ticket_for_reference``'s outcome from the case's new tickets (read from the log, kept for the step)."""
    found = _new_tickets_for(ctx, reference)
    if found:
        return 0.0, f"duplicate ticket(s) filed for {reference}: {', '.join(r.key for r in found)}", {}
    return 1.0, f"no new ticket mentions {reference}", {}


def _no_ticket_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, tuple[float, str, Mapping[str, Any]] | None]:
    """``no_ticket_for_reference``'s ``on_step``: each new ticket's text lowered once for all the references.

    The same rows move a check as ``_case_touches`` says: a ticket filed whose title or description names the
    reference, an edit of a ticket's key, text or project, a deletion; any other edit moves none.
    """
    kept = ctx.lasting.get(("no_ticket_refs", id(params)))
    if kept is None or kept[0] is not params:
        kept = ctx.lasting["no_ticket_refs", id(params)] = (params, [kw["reference"].lower() for kw in params])
    refs: list[str] = kept[1]
    moved: set[int] = set()
    for row in rows:
        if row.op == "insert":
            if row.changes.keys() >= _TICKET_IMAGE:  # lowered once a step for every case check (``_filed_row``)
                text = _filed_row(ctx, row)[0]
            else:
                text = f"{row.changes.get('title')}\n{row.changes.get('description')}".lower()
            for pos, ref in enumerate(refs):
                if ref in text:
                    moved.add(pos)
        elif row.op == "delete" or not _CASE_COLUMNS.isdisjoint(row.changes):
            moved.update(range(len(params)))
            break
    if not moved:  # most steps: a ticket that names none of the references
        return {}
    return {pos: _no_ticket_verdict(ctx, rows, params[pos]["reference"]) for pos in sorted(moved)}


@check_fn(
    "no_ticket_for_reference",
    reads=("tickets",),
    touches=_case_touches,
    on_changes=_no_ticket_verdict,
    on_step=_no_ticket_step,
)
def no_ticket_for_reference(ctx: GradingContext, reference: str) -> CheckOutcome:
    """No ticket filed this episode mentions ``reference`` (it was already tracked: a duplicate is wrong)."""
    score, evidence, details = _no_ticket_verdict(ctx, [], reference)
    return CheckOutcome(score=score, evidence=evidence, details=details)
