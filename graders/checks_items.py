"""Per-item state checks: one verdict per person of a meeting, per file of a fix, so a score says which item failed.

``graders.checks_meetings`` judges the meeting as a whole ("inside every participant's working hours", "no
participant double-booked"): one person out of hours fails one check, and the evidence lists everyone at once.
A rubric that scores per item (issue 14: a task reads like 17/23 with evidence per check) asks the same two
questions of each participant: does the booked time lie in *their* working hours, on one of *their* workdays,
and is *their* calendar free then. These functions answer for one ``username``. The meeting is found as the
meeting checks find it (the latest live event the agent organised during the episode whose title matches), and
their per-grade caches are shared, so a rubric with two checks per person costs one lookup of the meeting, its
attendees and the participants' other events, not one per person.

``merge_request_changes_file`` is the per-file item of a code fix: the request changes the file the bug is in.
It reads the request and its diff as ``graders.checks_code`` does (the same memoised git answers), importing
that module on first use only, so a meeting rubric does not load git. ``doc_shared_only_with`` is the
per-request item of a document request: the document went to whoever asked and to nobody else;
``doc_mentions_once`` the "listed once" of an item in a text document. ``meeting_length`` is the "for 30
minutes" of a booking, judged apart from its time and its invitees.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from pydantic import Field

from graders.base import ChangeRow, CheckOutcome, GradingContext, check_fn
from graders.checks_common import Regex, listing
from graders.checks_meetings import (
    Verdict,
    _clash_touches,
    _invitee_touches,
    _invitees,
    _meetings,
    _own_touches,
    _the_meeting,
    decide_step,
    local_time,
    outcome,
    verdict,
    works,
)
from graders.meeting_log import Calendar, _employee, _expect, _labels, _people
from graders.share_step import share_checks
from graders.text_match import once_verdict
from graders.text_step import shares_decided, text_step

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_TABLES = ("events", "event_attendees", "employees")


def _hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def _participant(ctx: GradingContext, title_pattern: str, username: str) -> tuple[Verdict | None, Any, str, int]:
    """(None, meeting, evidence prefix, the person's employee id), or (why there is none, None, "", 0).

    One shape either way, so a caller unpacks it without a cast (a call each).

    The person is looked up in the meeting checks' directory (``meeting_log._employee``), kept for the episode,
    and named to the kept calendar before the booking (``_expect``), so the booking step reads neither again.
    A participant found is kept for the step (``ctx.memo``): a person's hours and calendar checks both ask.
    """
    key = ("meeting_participant", title_pattern, username)
    kept: tuple[None, Any, str, int] | None = ctx.memo.get(key)
    if kept is not None:
        return kept
    if username not in ctx.lasting.get("meeting_people", ()):  # noted once: no call after that
        _expect(ctx, [username])
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return verdict(False, head), None, "", 0
    emp = _employee(ctx, username)
    if emp is None:
        return verdict(False, f"{head}: no employee @{username}", m.id), None, "", 0
    if emp != m.organizer_id and emp not in _invitees(ctx, m.id)[1]:
        return verdict(False, f"{head}: @{username} is neither its organiser nor invited", m.id), None, "", 0
    found = ctx.memo[key] = (None, m, head, emp)
    return found


@functools.lru_cache(maxsize=1024)
def _week(p: Any) -> str:
    """Someone's working hours and days as the evidence shows them (``09:00-17:00 on MTWTF``), once per person."""
    days = "".join(d[0] if f == "1" else "" for d, f in zip(_DAYS, p.workdays, strict=False))
    return f"{_hhmm(p.work_start_minute)}-{_hhmm(p.work_end_minute)} on {days or 'no day'}"


def _person_in_hours(ctx: GradingContext, title_pattern: str, username: str, *, bare: bool = False) -> Verdict | float:
    """``meeting_person_in_hours``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    failed, m, head, emp = _participant(ctx, title_pattern, username)
    if failed is not None:  # no meeting, no such person, or not theirs
        return failed[0] if bare else failed
    p = _people(ctx, [emp])[emp]
    inside = works(p, m.start_at, m.end_at)
    if bare:
        return 1.0 if inside else 0.0
    where = f"{local_time(m.start_at, p.timezone)} {p.timezone}, {'inside' if inside else 'outside'} {_week(p)}"
    return verdict(inside, f"{head}: for @{username} it is {where}", m.id)


@check_fn(
    "meeting_person_in_hours",
    reads=_TABLES,
    touches=_invitee_touches,
    on_step=decide_step(_invitee_touches, _person_in_hours),
)
def meeting_person_in_hours(ctx: GradingContext, title_pattern: Regex, username: str) -> CheckOutcome:
    """The meeting lies inside ``username``'s working hours, in their own time zone, on one of their workdays.

    Why per person: "the time fits everyone" is what the agent must establish one calendar at a time, and
    the evidence then shows that person's local time beside their hours (``Tue 15:00 Asia/Tokyo, outside
    09:00-17:00 Mon-Fri``). A declined invitee still counts: the agent chose the time, so an answer to the
    invitation re-runs nothing (``_invitee_touches``).
    """
    return outcome(_person_in_hours(ctx, title_pattern, username))


def _busy(ctx: GradingContext, m: Any) -> dict[int, list[str]]:
    """Every committed participant's other events overlapping the meeting, as labels.

    Read through the episode's kept calendar (``checks_meetings.Calendar``), the one the double-booking check
    reads, so the per-person checks and that check share their lookups.
    """
    key = ("meeting_busy", m)  # one answer per step for every person's check (``ctx.memo``: a step's state)
    found: dict[int, list[str]] | None = ctx.memo.get(key)
    if found is None:
        ids_, _, _, declined = _invitees(ctx, m.id)
        going = set(ids_).difference(declined)  # set operations and a loop: no comprehension frames
        going.add(m.organizer_id)
        ids = sorted(going)
        busy, _room = Calendar.of(ctx).clashes(ctx, ids, None, (m.start_at, m.end_at))
        found = ctx.memo[key] = {}
        mid = m.id
        for emp in ids:
            clashes = busy[emp]
            if not clashes or (len(clashes) == 1 and mid in clashes):
                continue  # ``_labels`` of the usual window (nothing, or the meeting alone), without its call
            labels = _labels(clashes, mid)
            if labels:
                found[emp] = labels
    return found


def _free_touches(ctx: GradingContext, row: ChangeRow, title_pattern: str, **kwargs: Any) -> bool:
    """Whether a changed row may change a ``meeting_person_free`` verdict (for ``graders.progress``).

    What it reads is what the double-booking check reads, for one person: the meeting, its invitations and the
    participants' other events at its time, so the double-booking check's hook answers (coworkers accepting
    the invitation, or a meeting booked at another time, re-run nothing; a 1:1 story books a meeting per report
    and every report answers each). That hook gives up on several matching meetings (its verdict names them);
    this check reads the latest, so a new event or invitation then re-runs it.
    """
    if row.op == "insert" and row.table in ("events", "event_attendees") and len(_meetings(ctx, title_pattern)) > 1:
        return True
    return _clash_touches(ctx, row, title_pattern, **kwargs)


def _free(ctx: GradingContext, title_pattern: str, username: str, *, bare: bool = False) -> Verdict | float:
    """``meeting_person_free``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    failed, m, head, emp = _participant(ctx, title_pattern, username)
    if failed is not None:  # no meeting, no such person, or not theirs
        return failed[0] if bare else failed
    if emp != m.organizer_id and emp in _invitees(ctx, m.id)[3]:
        return 1.0 if bare else verdict(True, f"{head}: @{username} declined it, so nothing of theirs clashes", m.id)
    clash = _busy(ctx, m).get(emp)
    if bare:
        return 0.0 if clash else 1.0
    if clash:
        return verdict(False, f"{head}: @{username} is also in {listing(clash, 2)}", m.id)
    return verdict(True, f"{head}: @{username} has nothing else then", m.id)


@check_fn(
    "meeting_person_free", reads=_TABLES, touches=_free_touches, on_step=decide_step(_free_touches, _free, "clash")
)
def meeting_person_free(ctx: GradingContext, title_pattern: Regex, username: str) -> CheckOutcome:
    """``username`` has no other commitment at the meeting's time (events they organise or have not declined).

    Recurring events are expanded, as the calendar counts them. An invitee who declined the meeting is not
    double-booked by it: their calendar keeps the other event.
    """
    return outcome(_free(ctx, title_pattern, username))


@check_fn("merge_request_changes_file", reads=("merge_requests",))
def merge_request_changes_file(ctx: GradingContext, repo: str, path: str) -> CheckOutcome:
    """The agent's newest request into ``repo``'s default branch changes ``path`` (against its merge base).

    Why: a reported bug in a module is fixed in that module; hidden cases alone would pass a patch applied to
    the function from another file, which the next reader of the module never sees.
    """
    from graders.checks_code import _base, _changed, _head, _request  # lazy: loads git only for code rubrics

    row = _request(ctx, repo)
    head = _head(ctx, repo, row)
    if row is None or head is None:
        return CheckOutcome.of(False, "no merge request to inspect")
    changed = _changed(ctx, repo, _base(ctx, repo, row, head), head)
    if path in changed:
        return CheckOutcome.of(True, f"!{row.number} changes {path} ({len(changed)} file(s) in all)")
    shown = listing(sorted(changed), 3) if changed else "nothing"
    return CheckOutcome.of(False, f"!{row.number} does not change {path}; it changes {shown}")


def _share_touches(ctx: GradingContext, row: Any, document: str, **_: Any) -> bool:
    """``checks_docs._share_touches``, imported on first use (a meeting rubric does not load the office readers)."""
    from graders.checks_docs import _share_touches as touches

    return touches(ctx, row, document)


@check_fn(
    "doc_shared_only_with",
    reads=("documents", "document_shares", "employees"),
    touches=_share_touches,
    on_changes=shares_decided(lambda: globals()["doc_shared_only_with"]),
    on_step=share_checks(lambda: _shared_only_with, "only"),
)
def doc_shared_only_with(ctx: GradingContext, document: str, usernames: list[str]) -> CheckOutcome:
    """Every share of ``document`` added or raised during the episode went to one of ``usernames``.

    The per-request item of a data request: the document reaches the coworker who asked, and nobody else on the
    way (a team channel's members, a manager in copy). Shares that existed before the episode do not count.
    Read from the document's kept shares (``checks_docs._grants``), so the step that shares it costs no query.
    """
    score, evidence, _ = _shared_only_with(ctx, document, usernames)
    return CheckOutcome(score=score, evidence=evidence)


def _shared_only_with(ctx: GradingContext, document: str, usernames: list[str]) -> Verdict:
    """``doc_shared_only_with``'s verdict (also its ``on_step``'s, with no outcome built per check)."""
    from graders.checks_docs import _document, _shared_in_episode  # lazy: the office readers load on first use

    row = _document(ctx, document)
    if row is None:
        return 0.0, f"no document {document}", {}
    _, found = _shared_in_episode(ctx, int(row[0]))
    allowed = {u.casefold() for u in usernames}
    others = [f"{u} ({p})" for u, p in found if u.casefold() not in allowed]
    if others:
        return 0.0, f"{document} was also shared with {listing(others)}", {}
    return 1.0, f"{document} was shared with {listing([u for u, _ in found]) or 'nobody'} only", {}


def _doc_touches(ctx: GradingContext, row: Any, document: str, **_: Any) -> bool:
    """``checks_docs._doc_touches`` (a change that may move the document's row), imported on first use."""
    from graders.checks_docs import _doc_touches as touches

    return touches(ctx, row, document)


def _mentions_decided(ctx: GradingContext, rows: Any, **kwargs: Any) -> tuple[float, str, dict[str, Any]] | None:
    """``doc_mentions_once`` on the document row the log leaves (no query), or None when the log cannot tell."""
    from graders.checks_docs import _UNKNOWN, _document

    if _document(ctx, kwargs["document"], query=False) is _UNKNOWN:
        return None
    out = doc_mentions_once(ctx, **kwargs)
    return out.score, out.evidence, dict(out.details)


@check_fn(
    "doc_mentions_once",
    reads=("documents",),
    touches=_doc_touches,
    on_changes=_mentions_decided,
    on_step=text_step("doc_mentions_once", lambda: globals()["doc_mentions_once"]),
)
def doc_mentions_once(ctx: GradingContext, document: str, pattern: Regex, label: str | None = None) -> CheckOutcome:
    """Text document ``document`` matches ``pattern`` exactly once, headings and body alike (any case).

    The per-item "listed once" of a list a reader scans: a ticket merged in two commits, or named by two
    sections, is one change and reads as two. ``label`` names the item in the evidence.
    """
    from graders.checks_docs import _text_sections  # lazy: the office readers load on first use

    sections = _text_sections(ctx, document, label or pattern)
    if isinstance(sections, CheckOutcome):
        return sections
    score, evidence, _ = once_verdict(sections, document, {"pattern": pattern, "label": label})
    return CheckOutcome(score=score, evidence=evidence)


def _length(ctx: GradingContext, title_pattern: str, minutes: int, *, bare: bool = False) -> Verdict | float:
    """``meeting_length``'s verdict (also its ``on_step``'s; ``bare``: the score alone)."""
    m, head = _the_meeting(ctx, title_pattern)
    if m is None:
        return 0.0 if bare else verdict(False, head)
    length = int((m.end_at - m.start_at).total_seconds() // 60)
    if bare:
        return 1.0 if length == minutes else 0.0
    if length == minutes:
        return verdict(True, f"{head}: lasts {length} minutes", m.id)
    return verdict(False, f"{head}: lasts {length} minutes, not {minutes}", m.id)


@check_fn("meeting_length", reads=("events",), touches=_own_touches, on_step=decide_step(_own_touches, _length))
def meeting_length(ctx: GradingContext, title_pattern: Regex, minutes: Annotated[int, Field(ge=1)]) -> CheckOutcome:
    """The meeting lasts exactly ``minutes`` (its end less its start).

    Why its own item: the task names the length ("a 30-minute 1:1"), and an hour booked for a half-hour talk
    takes the other half from everyone's day; the time can be agreed and free while the length is wrong. Read
    from the meeting the meeting checks find (folded from the change log), so it costs no query.
    """
    return outcome(_length(ctx, title_pattern, minutes))
