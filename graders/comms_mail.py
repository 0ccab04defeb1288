"""The mail checks' verdicts from the mail log, and their per-step evaluators (``mail_sent``, ``mail_not_sent``).

Why a module of its own: ``graders.progress`` asks these after every step that writes a mail, most of which
are a coworker's mail to the agent, which no check on what the agent sent can count. The ``on_step``
evaluators index a rubric's checks once by the sender they watch, ask whether each new mail is that
sender's once per sender (not once per check), and re-decide only the checks of a sender who sent one. A
change to the mailboxes or employees (a new generation of the mail log) re-decides them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from graders.base import ChangeRow, GradingContext
from graders.checks_common import Who, employee_id, listing, rx, snippet, who_label
from graders.comms_log import Followed, MailLog, followed, mail_log, reached, sent_by, show_mail, warm_mailboxes
from graders.registry import LATER, Later

Verdict = tuple[float, str, dict[str, Any]]


_ANYWHERE = "(?=[\\s\\S]*"  # a lookahead that may look at any later position: ``(?=[\s\S]*...)``
_DOTALL_ANYWHERE = "(?=.*"  # the same under a global ``(?s)`` flag
_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def _lookaheads_only(pattern: str) -> bool:
    r"""Whether ``pattern`` is nothing but ``(?=[\s\S]*...)`` groups (a "says all of these" pattern).

    Global inline flags may lead (``(?s)``: then ``(?=.*...)`` groups are read the same way).

    Such a pattern matches somewhere iff it matches at the start: each group holding at a later position also
    holds at 0, where ``[\s\S]*`` may skip to the same place. ``re.search`` of one that does not match tries
    every position and scans to the end from each (~90 us for a 100-character mail); ``re.match`` scans once.
    Groups are read with their escapes, classes and nested groups; anything else at the top (an alternation,
    a literal) makes it an ordinary pattern.
    """
    i, n = 0, len(pattern)
    flags = _FLAGS.match(pattern)
    starts: tuple[str, ...] = (_ANYWHERE,)
    if flags is not None:  # global inline flags: with ``s``, ``(?=.*...)`` may look anywhere later too
        i = flags.end()
        starts = (_ANYWHERE, _DOTALL_ANYWHERE) if "s" in flags.group(1) else starts
    if i == n:
        return False
    while i < n:
        start = next((s for s in starts if pattern.startswith(s, i)), None)
        if start is None:
            return False
        depth, i, in_class = 1, i + len(start), False
        while depth:
            if i >= n:
                return False
            c = pattern[i]
            if c == "\\":
                i += 1
            elif in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
                if pattern.startswith("^", i + 1):
                    i += 1
                if pattern.startswith("]", i + 1):
                    i += 1  # a ']' first in a class is a literal
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            i += 1
    return True


def finder(pattern: str) -> Callable[[str], object]:
    """``rx(pattern).search``, or its ``match`` when that gives the same truth (``_lookaheads_only``)."""
    compiled = rx(pattern)
    return compiled.match if _lookaheads_only(pattern) else compiled.search


class _Sent(NamedTuple):
    """What one ``mail_sent`` check compares, worked out once per distinct params (not per mail, per check)."""

    key: tuple[Any, ...]  # its ``Followed`` state's key
    wanted: tuple[str, ...]
    lowered: tuple[tuple[str, str], ...]  # each recipient and its lower case
    tests: tuple[tuple[str, Callable[[str], object]], ...]  # ("subject" | "body", whether a text matches)
    reaches: str  # " reaches a, b": how the evidence names the recipients
    tail: str  # " mails sent by <sender> reaches a, b as required"


@lru_cache(maxsize=1024)
def _sent(wanted: tuple[str, ...], subject_pattern: str | None, body_pattern: str | None, sender: Who | None) -> _Sent:
    """The ``_Sent`` of a check's params (the patterns compiled here, at the first verdict: the first step)."""
    given = (("subject", subject_pattern), ("body", body_pattern))
    tests = tuple((what, finder(p)) for what, p in given if p is not None)
    reaches = f" reaches {', '.join(wanted)}"
    return _Sent(
        ("mail_sent", wanted, subject_pattern, body_pattern, sender),
        wanted,
        tuple((t, t.lower()) for t in wanted),
        tests,
        reaches,
        f" mails sent by {who_label(sender)}{reaches} as required",
    )


def _mail_sent_verdict(
    ctx: GradingContext,
    log: MailLog,
    wanted: list[str],
    subject_pattern: str | None,
    body_pattern: str | None,
    sender: Who | None,
) -> tuple[float, str, dict[str, Any]]:
    """``mail_sent``'s outcome from the mail log: each new mail judged once, the first that fits kept."""
    spec = _sent(tuple(wanted), subject_pattern, body_pattern, sender)
    if not log.mails:
        warm_mailboxes(ctx, [*wanted, *([sender] if sender not in (None, "actor") else [])])
        return 0.0, "no mail was sent during the episode", {}
    sender_id = employee_id(ctx, sender) if sender is not None else None
    if sender is not None and sender_id is None:
        return 0.0, f"unknown employee {sender!r}", {}
    return _sent_fold(ctx, log, spec, followed(ctx, spec.key, (log.generation, sender_id)), sender_id)


def _sent_fold(ctx: GradingContext, log: MailLog, spec: _Sent, state: Followed, sender_id: int | None) -> Verdict:
    """Fold the mails sent since ``state`` last looked into one ``mail_sent`` check's verdict (kept as it stands).

    The first mail in id order that fits is the one named: once one fits (``marks``), later mails are passed
    over. A failing verdict lists a note per mail of the sender's, so each of its mails builds it again.
    """
    mails = log.mails
    notes: list[str] = state.items
    for m in mails[state.seen :]:
        if state.marks:
            break  # a mail fits already (the first in id order is the one named)
        if not sent_by(ctx, log, m, sender_id):
            continue
        to = reached(ctx, log, m)
        missing = [t for t, low in spec.lowered if low not in to]
        bad = [what for what, found in spec.tests if not found(m.subject if what == "subject" else m.body)]
        state.outcome = None
        if not missing and not bad:
            state.marks = (m.id,)
            state.outcome = (1.0, f"mail #{m.id} {show_mail(log, m)}{spec.reaches}", {"message_id": m.id})
            break
        why = ", ".join([f"missing {', '.join(missing)}"] * bool(missing) + [f"{w} does not match" for w in bad])
        notes.append(f"#{m.id} {show_mail(log, m)}: {why}")
    state.seen = len(mails)
    if state.outcome is None:
        head = f"none of {len(notes)}{spec.tail}"
        state.outcome = (0.0, head + (f": {listing(notes)}" if notes else ""), {})
    return state.outcome


def _mail_sent_on_changes(
    ctx: GradingContext,
    rows: list[ChangeRow],
    to: Sequence[str] | str,
    subject_pattern: str | None = None,
    body_pattern: str | None = None,
    sender: Who | None = "actor",
) -> tuple[float, str, dict[str, Any]] | None:
    """``mail_sent``'s verdict after a step, from the mail log (None: the log cannot tell, re-run)."""
    log = mail_log(ctx)
    if log is None:
        return None
    wanted = [to] if isinstance(to, str) else list(to)
    return _mail_sent_verdict(ctx, log, wanted, subject_pattern, body_pattern, sender)


def _mail_not_sent_verdict(
    ctx: GradingContext, log: MailLog, banned: set[str], sender: Who | None
) -> tuple[float, str, dict[str, Any]]:
    """``mail_not_sent``'s outcome from the mail log: the sender's mails counted, those reaching ``banned`` kept."""
    sender_id = employee_id(ctx, sender) if sender is not None else None
    if sender is not None and sender_id is None:
        return 0.0, f"unknown employee {sender!r}", {}
    if not log.mails:
        warm_mailboxes(ctx, sorted(banned))
    state = followed(ctx, ("mail_not_sent", tuple(sorted(banned)), sender), (log.generation, sender_id))
    for m in log.mails[state.seen :]:
        if sent_by(ctx, log, m, sender_id):
            state.marks = (state.marks[0] + 1,) if state.marks else (1,)
            state.outcome = None
            to = reached(ctx, log, m) & banned
            if to:
                state.items.append((m.id, m.subject, to))
    state.seen = len(log.mails)
    if state.outcome is None:
        named = listing(sorted(banned))
        hits: list[tuple[int, str, set[str]]] = state.items
        if not hits:
            mine = state.marks[0] if state.marks else 0
            state.outcome = (1.0, f"none of {mine} mails sent by {who_label(sender)} reaches {named}", {})
        else:
            shown = listing([f"#{i} {snippet(subject)} to {', '.join(sorted(to))}" for i, subject, to in hits])
            state.outcome = (0.0, f"{len(hits)} mails reach {named}: {shown}", {"message_ids": [i for i, _, _ in hits]})
    return state.outcome


def _mail_not_sent_on_changes(
    ctx: GradingContext, rows: list[ChangeRow], to: Sequence[str] | str, sender: Who | None = "actor"
) -> tuple[float, str, dict[str, Any]] | None:
    """``mail_not_sent``'s verdict after a step, from the mail log (None: re-run)."""
    log = mail_log(ctx)
    if log is None:
        return None
    return _mail_not_sent_verdict(ctx, log, {t.lower() for t in ([to] if isinstance(to, str) else to)}, sender)


def _recipients(to: Sequence[str] | str) -> list[str]:
    return [to] if isinstance(to, str) else list(to)


class _MailIndex:
    """A rubric's checks of one mail function by the employee id of the sender they watch (None: anyone)."""

    __slots__ = ("by_sender", "generation", "params", "seen")

    def __init__(
        self, ctx: GradingContext, log: MailLog, params: list[Mapping[str, Any]], rows: list[ChangeRow]
    ) -> None:
        self.params = params
        self.generation = log.generation
        self.seen = len(log.mails) - sum(1 for r in rows if r.table == "mail_messages")  # those before the step
        self.by_sender: dict[int | None, list[int]] = {}
        for pos, kw in enumerate(params):
            sender = kw.get("sender", "actor")
            sender_id = employee_id(ctx, sender) if sender is not None else None
            if sender is None or sender_id is not None:  # an unknown sender's verdict says so, whatever is sent
                self.by_sender.setdefault(sender_id, []).append(pos)

    def moved(self, ctx: GradingContext, log: MailLog) -> list[int]:
        """The checks of a sender who sent one of the mails since the last call, in rubric order."""
        if self.seen == 0 and log.mails:  # the episode's first mail, whoever sent it: "no mail was sent" no more
            self.seen = len(log.mails)
            return sorted({pos for positions in self.by_sender.values() for pos in positions})
        moved: set[int] = set()
        for mail in log.mails[self.seen :]:
            for sender_id, positions in self.by_sender.items():
                if sent_by(ctx, log, mail, sender_id):
                    moved.update(positions)
        self.seen = len(log.mails)
        return sorted(moved)


def _mail_positions(
    ctx: GradingContext, params: list[Mapping[str, Any]], rows: list[ChangeRow], name: str
) -> tuple[MailLog | None, Any]:
    """The mail log and the checks of ``params`` to decide: those of a sender who sent, or all of them.

    The index is built on the first call from what the log held before the step (the verdicts the progress
    holds are the ones its first grade gave then), unless a mailbox or employee has changed: then, as after
    any later such change (a new generation), every check is decided again.
    """
    log = mail_log(ctx)
    if log is None:
        return None, range(len(params))
    index: _MailIndex | None = ctx.lasting.get((name, id(params)))
    if index is None or index.params is not params or index.generation != log.generation:
        ctx.lasting[(name, id(params))] = fresh = _MailIndex(ctx, log, params, rows)
        if index is not None or log.generation != 0:
            return log, range(len(params))
        index = fresh
    return log, index.moved(ctx, log)


def _mail_sent_general(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | None]:
    """``_mail_sent_step``'s general path: the index and checks built (or rebuilt), each moved check decided."""
    log, positions = _mail_positions(ctx, params, rows, "mail_sent_step")
    if log is None:
        return dict.fromkeys(positions)
    checks = _sent_checks(ctx, log, params)
    out: dict[int, Verdict | Later | None] = {}
    mails = log.mails
    for pos in positions:
        found = checks.get(pos)
        if found is None:  # an unknown sender: its verdict says so (or that nothing was sent yet)
            kw = params[pos]
            wanted = _recipients(kw["to"])
            out[pos] = _mail_sent_verdict(ctx, log, wanted, kw["subject_pattern"], kw["body_pattern"], kw["sender"])
            continue
        spec, sender_id, state, tried = found
        if state.marks:
            continue  # a mail fits: the first one stays the one named
        if tried[0] < 0:
            tried[0] = len(mails)
            out[pos] = _sent_fold(ctx, log, spec, state, sender_id)
            continue
        fits = _fits_any(ctx, log, spec, sender_id, mails[max(tried[0], state.seen) :])
        tried[0] = len(mails)
        if fits is None:
            out[pos] = LATER  # still failing: only the list of mails in its evidence moved
            continue
        # the first mail that fits (none before it did): the verdict ``_sent_fold`` gives, without the notes
        # on the mails before it, which a passing check never reads again
        state.marks, state.seen = (fits.id,), len(mails)
        state.outcome = out[pos] = (
            1.0,
            f"mail #{fits.id} {show_mail(log, fits)}{spec.reaches}",
            {"message_id": fits.id},
        )
    return out


_UNSEEN = object()


def _mail_sent_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | None]:
    """``mail_sent``'s ``on_step``: the verdicts of the checks whose sender sent a mail this step.

    In one loop over the step's mails, once its index and checks are built.

    Why: a reply step asks every ``mail_sent`` check of the rubric, most of which fail and stay failing (a mail
    to someone else); through ``_mail_positions``, ``_MailIndex.moved`` and ``_fits_any`` that was a dozen frames
    a step for two checks. The same verdicts: a check whose sender sent none of the step's mails is left out, a
    passing one too (the first mail that fits stays the one named), a failing one tries the mails since it last
    did and is ``LATER`` while none fits. The general path (``_mail_sent_general``) runs when the log stopped
    folding, an index or the checks are not built yet, a check's sender is unknown or its mails were read with
    lookups of an earlier generation. The log is the one this step folded (``mail_log`` returns it at once
    when the case checks asked first), and the general path is entered only when needed (mail8).
    """
    lasting = ctx.lasting
    log = mail_log(ctx)  # as this step folded it (the case checks ask first): then a length compare
    if log is None:
        return _mail_sent_general(ctx, rows, params)
    kept = lasting.get(("mail_sent_checks", id(params)))
    index: _MailIndex | None = lasting.get(("mail_sent_step", id(params)))
    generation = log.generation
    ready = lasting.get(("mail_sent_ready", id(params)))  # the checks below passed for these kept objects
    if ready is None or ready[0] is not kept or ready[1] is not index or kept[1] != generation:
        if (
            kept is None
            or kept[3] is None
            or kept[0] is not params
            or kept[1] != generation
            or index is None
            or index.params is not params
            or index.generation != generation
        ):
            return _mail_sent_general(ctx, rows, params)
        for _, (_, _, state, tried) in kept[3]:
            if tried[0] < 0 and not state.marks:
                return _mail_sent_general(ctx, rows, params)  # its first verdict reads every mail (``_sent_fold``)
        # they hold while these objects are kept: a check's ``tried`` only grows, its marks stay, and a new
        # generation builds a new index and new checks
        lasting[("mail_sent_ready", id(params))] = (kept, index)
    assert index is not None and kept is not None  # (``ready`` names them)
    every: list[tuple[int, tuple[_Sent, int | None, Followed, list[int]]]] = kept[3]
    mails = log.mails
    # the episode's first mail, whoever sent it, moves every check ("no mail was sent" no more), as
    # ``_MailIndex.moved`` says: each is tried (a failing one is LATER: its score stands)
    prev = index.seen
    first = prev == 0 and bool(mails)
    new = mails[prev:]
    index.seen = n = len(mails)
    box_of = log.box_of
    out: dict[int, Any] = {}
    sent: dict[int | None, bool] = {}  # whether each sender sent one of the step's mails
    fitted: set[int] = set()  # the states a mail of this step fitted (by id): checks of the same params share one
    for pos, (spec, sender_id, state, tried) in every:
        if state.marks:
            if id(state) in fitted:  # an earlier check of the same params just passed: so does this one
                out[pos] = state.outcome
            continue  # a mail fits: the first one stays the one named
        moved = True if first else sent.get(sender_id)
        box = box_of.get(sender_id, _UNSEEN) if sender_id is not None else _UNSEEN  # read once a check
        if moved is None:
            moved = False
            for m in new:  # a loop, not ``any`` over a generator; the sender's mailbox compared where known
                if m.sender_box == box if box is not _UNSEEN else sent_by(ctx, log, m, sender_id):
                    moved = True
                    break
            sent[sender_id] = moved
        if not moved:
            continue
        start, tried[0] = max(tried[0], state.seen), n
        for m in new if start == prev else mails[start:]:  # most checks tried every mail before this step
            if box is _UNSEEN:  # ``sent_by`` keeps the mailbox it reads: the next check compares it
                if not sent_by(ctx, log, m, sender_id):
                    continue
            elif m.sender_box != box:
                continue
            to = log.reach.get(m.id) or reached(ctx, log, m)  # kept after the first check asked: no frame
            for _, low in spec.lowered:
                if low not in to:
                    break
            else:
                for what, found in spec.tests:
                    if not found(m.subject if what == "subject" else m.body):
                        break
                else:  # the first mail that fits: ``_sent_fold``'s verdict, as the general path gives it
                    state.marks, state.seen = (m.id,), n
                    fitted.add(id(state))
                    state.outcome = out[pos] = (
                        1.0,
                        f"mail #{m.id} {show_mail(log, m)}{spec.reaches}",
                        {"message_id": m.id},
                    )
                    break
        else:
            out[pos] = LATER  # still failing: only the list of mails in its evidence moved
    return out


def _fits_any(
    ctx: GradingContext, log: MailLog, spec: _Sent, sender_id: int | None, mails: Sequence[Any]
) -> Any | None:
    """The first of ``mails`` that is the sender's, reaches every recipient and matches (``_sent_fold``'s test)."""
    for m in mails:
        if not sent_by(ctx, log, m, sender_id):
            continue
        to = reached(ctx, log, m)
        for _, low in spec.lowered:  # loops, not ``all`` over generators: this runs for every check a mail reaches
            if low not in to:
                break
        else:
            for what, found in spec.tests:
                if not found(m.subject if what == "subject" else m.body):
                    break
            else:
                return m
    return None


def _sent_checks(
    ctx: GradingContext, log: MailLog, params: list[Mapping[str, Any]]
) -> dict[int, tuple[_Sent, int | None, Followed, list[int]]]:
    """Each ``mail_sent`` check of a known sender: its ``_Sent``, sender id, ``Followed`` state, mails tried.

    Kept for the mail log's generation (the state's target): the step folds each check's new mails into its
    state directly, with none of the per-call lookups of ``_mail_sent_verdict`` (which shares the states). A
    failing check's new mails are only tried (does one fit?) while none fits: its state, and so its evidence,
    catches up when its results are asked for (``LATER``); ``tried`` counts the mails tried so far.
    """
    kept = ctx.lasting.get(("mail_sent_checks", id(params)))
    if kept is not None and kept[0] is params and kept[1] == log.generation:
        found: dict[int, tuple[_Sent, int | None, Followed, list[int]]] = kept[2]
        return found
    checks: dict[int, tuple[_Sent, int | None, Followed, list[int]]] = {}
    for pos, kw in enumerate(params):
        sender = kw["sender"]
        sender_id = employee_id(ctx, sender) if sender is not None else None
        if sender is not None and sender_id is None:
            continue
        spec = _sent(tuple(_recipients(kw["to"])), kw["subject_pattern"], kw["body_pattern"], sender)
        # -1: mails were read with lookups that may have moved (a new generation), so the first step decides it
        tried = [-1 if log.mails else 0]
        checks[pos] = (spec, sender_id, followed(ctx, spec.key, (log.generation, sender_id)), tried)
    # and the checks by position when every check has a known sender (None: a verdict says the sender is unknown,
    # or that nothing was sent yet: ``_mail_sent_step`` leaves such a rubric to the general path)
    every = list(checks.items()) if len(checks) == len(params) else None
    ctx.lasting[("mail_sent_checks", id(params))] = (params, log.generation, checks, every)
    return checks


def _mail_not_sent_general(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | None]:
    """``_mail_not_sent_step``'s general path: the index and entries built (or rebuilt), each moved check decided."""
    log, positions = _mail_positions(ctx, params, rows, "mail_not_sent_step")
    if log is None:
        return dict.fromkeys(positions)
    out: dict[int, Verdict | Later | None] = {}
    kept: dict[int, Any] = ctx.lasting.setdefault(("mail_not_sent_kept", id(params)), {})
    mails = log.mails
    for pos in positions:
        kw = params[pos]
        entry = kept.get(pos)
        if entry is None or entry[0] != log.generation:
            banned = {t.lower() for t in _recipients(kw["to"])}
            sender = kw["sender"]
            sender_id = employee_id(ctx, sender) if sender is not None else None
            unknown = sender is not None and sender_id is None
            entry = kept[pos] = [log.generation, banned, sender_id, unknown, 0, False]
            if len(mails) > sum(1 for r in rows if r.table == "mail_messages" and r.op == "insert"):
                # mails before this step, read with lookups that may have moved (a new generation): decide it
                verdict = _mail_not_sent_verdict(ctx, log, banned, sender)
                entry[4], entry[5] = len(mails), verdict[0] == 0.0
                out[pos] = verdict
                continue
        generation, banned, sender_id, unknown, tried, failing = entry
        if unknown:  # its verdict says the sender is unknown (or that nothing was sent yet)
            out[pos] = _mail_not_sent_verdict(ctx, log, banned, kw["sender"])
            continue
        # the score falls only when a first mail of the sender's reaches a banned address: a check that fails
        # already, or whose new mails reach none of them, keeps it (only the count of mails in its evidence moves)
        entry[4] = len(mails)
        if failing or not any(sent_by(ctx, log, m, sender_id) and reached(ctx, log, m) & banned for m in mails[tried:]):
            out[pos] = LATER
            continue
        entry[5] = True
        out[pos] = _mail_not_sent_verdict(ctx, log, banned, kw["sender"])
    return out


def _mail_not_sent_step(
    ctx: GradingContext, rows: list[ChangeRow], params: list[Mapping[str, Any]]
) -> dict[int, Verdict | Later | None]:
    """``mail_not_sent``'s ``on_step``: the verdicts of the checks whose sender sent a mail this step.

    In one loop over the step's mails, once its index and entries are built. The same verdicts as the general
    path (``_mail_positions`` and a loop per check), without its frames: a check whose sender sent none of the
    step's mails is left out; one that fails already, or whose sender's new mails reach none of its addresses,
    is ``LATER``; one that a new mail makes fail is decided. The general path (``_mail_not_sent_general``) runs
    when the log stopped folding, on the first step, for an entry of an earlier generation or a check whose
    sender is unknown. As in ``_mail_sent_step``, the log is taken as this step folded it and a sender's known
    mailbox is compared (no ``sent_by`` per mail): a frame or more less a reply step (mail8).
    """
    lasting = ctx.lasting
    log = mail_log(ctx)  # as this step folded it (the case checks ask first): then a length compare
    if log is None:
        return _mail_not_sent_general(ctx, rows, params)
    index: _MailIndex | None = lasting.get(("mail_not_sent_step", id(params)))
    kept: dict[int, list[Any]] | None = lasting.get(("mail_not_sent_kept", id(params)))
    generation = log.generation
    if (
        index is None
        or index.params is not params
        or index.generation != generation
        or index.seen == 0
        or kept is None
        or len(kept) != len(params)
    ):
        return _mail_not_sent_general(ctx, rows, params)
    for entry in kept.values():
        if entry[0] != generation or entry[3]:
            return _mail_not_sent_general(ctx, rows, params)
    mails = log.mails
    box_of = log.box_of
    new = mails[index.seen :]
    index.seen = n = len(mails)
    out: dict[int, Any] = {}
    sent: dict[int | None, bool] = {}  # whether each sender sent one of the step's mails
    for pos in range(len(params)):
        entry = kept[pos]
        _, banned, sender_id, _, tried, failing = entry
        moved = sent.get(sender_id)
        box = box_of.get(sender_id, _UNSEEN) if sender_id is not None else _UNSEEN
        if moved is None:
            moved = False
            for m in new:  # the sender's mailbox compared where known (``sent_by``'s answer without its frame)
                if m.sender_box == box if box is not _UNSEEN else sent_by(ctx, log, m, sender_id):
                    moved = True
                    break
            sent[sender_id] = moved
        if not moved:
            continue
        entry[4] = n
        hit = False
        if not failing:
            for m in mails[tried:]:
                if (m.sender_box == box if box is not _UNSEEN else sent_by(ctx, log, m, sender_id)) and not (
                    banned.isdisjoint(log.reach.get(m.id) or reached(ctx, log, m))
                ):
                    hit = True
                    break
        if not hit:
            out[pos] = LATER  # fails already, or still reaches none of them: only the count of mails moved
            continue
        entry[5] = True
        out[pos] = _mail_not_sent_verdict(ctx, log, banned, params[pos]["sender"])
    return out
