"""Text-document matching for the document checks: a parse's sections and the literal prefilters of a pattern.

What ``checks_docs``' text checks (and ``graders.text_step``, which keeps their verdicts across writes) ask of
a document's text: ``Sections`` (a parse's sections with their lowered forms, the sections changed since the
parse before, each pattern's answers per section, carried over from that parse), the literal texts every
match of a pattern must contain (``_needles``) or start with (``_prefix``), read from the pattern's parse by
``re``'s own parser; and what each text check concludes from a parse (``VERDICTS``: its score and evidence,
the very strings its function returns, which it builds by calling these). Pure text: no database, no context.
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from itertools import compress
from operator import itemgetter, ne
from typing import Any

from graders.checks_common import listing, rx, snippet
from graders.text_blocks import _plain_sections as _plain_sections  # what checks_docs and tests import

_sre_parser: Any = importlib.import_module("re._parser")  # what ``re.compile`` parses a pattern with
_LITERAL, _BRANCH, _SUBPATTERN, _ASSERT = (
    _sre_parser.LITERAL,
    _sre_parser.BRANCH,
    _sre_parser.SUBPATTERN,
    _sre_parser.ASSERT,
)
_ZERO_WIDTH = (_sre_parser.AT, _sre_parser.ASSERT, _sre_parser.ASSERT_NOT)
_NOT_LITERAL, _ANY, _IN, _AT, _ASSERT_NOT = (
    _sre_parser.NOT_LITERAL,
    _sre_parser.ANY,
    _sre_parser.IN,
    _sre_parser.AT,
    _sre_parser.ASSERT_NOT,
)
_NEWLINE_CATEGORIES = frozenset(
    {
        _sre_parser.CATEGORY_SPACE,
        _sre_parser.CATEGORY_NOT_DIGIT,
        _sre_parser.CATEGORY_NOT_WORD,
        _sre_parser.CATEGORY_LINEBREAK,
    }
)
_LINE_CATEGORIES = frozenset(
    {
        _sre_parser.CATEGORY_DIGIT,
        _sre_parser.CATEGORY_WORD,
        _sre_parser.CATEGORY_NOT_SPACE,
        _sre_parser.CATEGORY_NOT_LINEBREAK,
    }
)
"""The character classes a set may name that hold a newline, and those that hold none (any other: unknown)."""
_REPEATS = (_sre_parser.MAX_REPEAT, _sre_parser.MIN_REPEAT, _sre_parser.POSSESSIVE_REPEAT)


class Sections(list[tuple[str, str]]):
    r"""A text document's sections (heading, text), with what the checks' literal prefilter reads.

    ``texts``: each section's text; ``texts_low``: each section's text lowercased, None when that could hide
    a match (``_lowered``);
    ``joined`` each section as ``heading\ntext`` (what the whole-document checks search) and ``joined_low`` the
    same lowercased.

    Its attributes are slots: a parse is built at every write, and an instance dictionary would be one more
    object (grown twice, to eleven keys) made and then read, cold, by every check of the step.
    """

    __slots__ = (
        "texts",
        "texts_low",
        "joined",
        "joined_low",
        "heads",
        "under",
        "found",
        "whole",
        "prev",
        "changed",
        "same_heads",
    )

    texts: list[str]
    texts_low: list[str | None]
    joined: list[str]
    joined_low: list[str | None]
    heads: tuple[str, ...]
    """Each section's heading, in order (what ``_named`` reads)."""
    under: dict[str, tuple[bool, ...]]
    """Which sections a heading pattern names, by pattern: a report's checks share a handful of headings."""
    found: dict[tuple[str, bool], list[bool]]
    """Which sections' texts (or ``joined`` forms) a pattern matches, by (pattern, joined): see ``matching``."""
    whole: dict[bool, tuple[str, list[int]]]
    """By ``joined``: the sections' lowercased forms joined by NUL and where each starts (``_scan``)."""
    prev: Sections | None
    """The document's parse before this one (only one back: its own ``prev`` is dropped), or None."""
    changed: list[int] | None
    """Which sections differ from ``prev``'s (heading or text), or None when the count differs or no ``prev``."""
    same_heads: bool
    """Whether ``prev`` had the same headings in the same order (so ``under`` carries over)."""

    @classmethod
    def of(cls, sections: list[tuple[str, str]], previous: Sections | None = None) -> Sections:
        """The sections with their lowercase forms, worked out once per parse for every check.

        ``previous`` is the document's last parse: a write changes a section or two, and a pattern's verdict
        on a section whose text did not change is the one found then (it depends on the pattern and the
        text alone). The sections that changed are found here once (``changed``), which lets
        ``graders.text_step`` keep the verdict of every check none of them can move.
        """
        out = cls(sections)
        out.under, out.found, out.prev, out.changed, out.same_heads = {}, {}, previous, None, False
        out.whole = {}
        if previous is None or len(previous) != len(sections):
            return out._fresh(sections)
        previous.prev = None  # one parse back is all a check compares with: no chain over the episode
        out.heads = heads = tuple(map(_HEAD, sections))  # by C calls: no generator or comprehension frame
        out.texts = list(map(_TEXT, sections))
        out.changed = changed = list(compress(range(len(sections)), map(ne, previous, sections)))  # same length
        out.same_heads = heads == previous.heads
        if out.same_heads:
            out.under = dict(previous.under)
        # an unchanged section's forms are the previous parse's: only the changed ones are lowered
        out.texts_low, out.joined, out.joined_low = (
            list(previous.texts_low),
            list(previous.joined),
            list(previous.joined_low),
        )
        for i in changed:
            h, t = sections[i]
            out.texts_low[i] = _lowered(t)
            out.joined[i] = joined = f"{h}\n{t}"
            out.joined_low[i] = _lowered(joined)
        return out

    def _fresh(self, sections: list[tuple[str, str]]) -> Sections:
        r"""A parse with no previous one to diff: every section's forms, and both ``whole`` texts, in one pass.

        Every check on it is decided now, and each function's batch reads one of the whole texts (the sections'
        lowered forms joined by NUL, ``_whole``), so they are built here with the forms rather than by a loop each.
        ``_lowered`` is inlined for ASCII text (a report's): a section's ``heading\ntext`` is ASCII only if both are.
        """
        if self.prev is not None:
            self.prev.prev = None  # one parse back is all a check compares with: no chain over the episode
        heads: list[str] = []
        texts: list[str] = []
        lows: list[str | None] = []
        joined: list[str] = []
        joined_lows: list[str | None] = []
        self.texts, self.texts_low, self.joined, self.joined_low = texts, lows, joined, joined_lows
        offsets: list[int] = []
        joined_offsets: list[int] = []
        at = joined_at = 0
        for h, t in sections:
            j = f"{h}\n{t}"
            heads.append(h)
            texts.append(t)
            joined.append(j)
            if j.isascii():
                lows.append(t.lower())
                joined_lows.append(j.lower())
            else:
                lows.append(_lowered(t))
                joined_lows.append(_lowered(j))
            offsets.append(at)
            joined_offsets.append(joined_at)
            at += len(t) + 1
            joined_at += len(j) + 1
        self.heads = tuple(heads)
        if None not in lows:
            self.whole[False] = ("\0".join(lows), offsets)  # type: ignore[arg-type]
        if None not in joined_lows:
            self.whole[True] = ("\0".join(joined_lows), joined_offsets)  # type: ignore[arg-type]
        return self

    def matching(self, pattern: str, joined: bool = False) -> list[bool]:
        """Whether ``pattern`` (case-insensitive) matches each section's text (``joined``: heading and text).

        Once per parse and pattern; a section the previous parse held with the same text keeps its answer
        (by position when only some sections changed, else by text).
        """
        key = (pattern, joined)
        hits = self.found.get(key)
        if hits is None:
            texts = self.joined if joined else self.texts
            lowered = self.joined_low if joined else self.texts_low
            prev = self.prev
            old = prev.found.get(key) if prev is not None else None
            if old is None or prev is None:
                hits = self._scan(pattern, joined) or _matching(pattern, texts, lowered)
            elif self.changed is not None:
                hits = list(old)
                for i in self.changed:
                    hits[i] = _hit(pattern, texts[i], lowered[i])
            else:
                known = dict(zip(prev.joined if joined else prev.texts, old, strict=True))
                new = [i for i, t in enumerate(texts) if t not in known]
                rest = iter(_matching(pattern, [texts[i] for i in new], [lowered[i] for i in new]))
                hits = [known[t] if t in known else next(rest) for t in texts]
            self.found[key] = hits
        return hits

    def _whole(self, joined: bool) -> tuple[str, list[int]] | None:
        """``whole[joined]``, built: None when a section's lowered form could hide a match (``_lowered``)."""
        lowered = self.joined_low if joined else self.texts_low
        if None in lowered:
            return None
        offsets, at = [], 0
        for low in lowered:
            offsets.append(at)
            at += len(low) + 1  # type: ignore[arg-type]
        whole = self.whole[joined] = ("\0".join(lowered), offsets)  # type: ignore[arg-type]
        return whole

    def _scan(self, pattern: str, joined: bool) -> list[bool] | None:
        """``_matching`` over every section at once, by the occurrences of the pattern's start texts.

        A fresh parse asks every check's pattern of every section; a pattern's start text (``_prefix``) occurs
        in one or two of them, so it is found in the whole document's lowercased text (sections joined by a
        NUL) and the regex runs from its first occurrence in each section that holds it (for several start
        texts, from each one's: a match begins at one of them), rather than a search per section. None when a
        section's lowered form could hide a match (``_lowered``) or the pattern has no start text: the caller asks
        section by section.
        """
        search, starts, _ = _plan(pattern)
        return None if starts is None else self._scan_from(joined, search, starts)

    def _scan_from(self, joined: bool, search: Callable[..., Any], starts: tuple[str, ...]) -> list[bool] | None:
        """``_scan`` of a pattern whose plan (``_plan``: its search and start texts) the caller holds."""
        whole = self.whole.get(joined) or self._whole(joined)
        if whole is None:
            return None
        text, offsets = whole
        texts = self.joined if joined else self.texts
        hits = [False] * len(texts)
        last = len(texts) - 1
        for start in starts:
            pos = text.find(start)
            while pos >= 0:
                i = bisect_right(offsets, pos) - 1
                local = pos - offsets[i]
                if local + len(start) > len(texts[i]):  # across the NUL between two sections: look on
                    pos = text.find(start, pos + 1)
                    continue
                if not hits[i] and search(texts[i], local) is not None:
                    hits[i] = True
                pos = text.find(start, offsets[i + 1]) if i < last else -1
        return hits


_HEAD, _TEXT = itemgetter(0), itemgetter(1)
"""A section's heading and text: read by ``map`` in C."""

_HIDES_ASCII = ("\u0130", "\u0131", "\u017f")
"""The characters a case-insensitive pattern matches to an ASCII letter that ``str.lower`` does not turn into
that letter in place (İ lowers to two characters, ı and ſ stay): the only ones, with the Kelvin sign (which
lowers to k), that ``re.IGNORECASE`` matches to ASCII letters."""


def _lowered(text: str) -> str | None:
    """``text`` lowercased for the literal prefilters, or None when lowercasing could hide a match.

    On such a form every case-insensitive match of an ASCII literal is that literal lowercased, at the same
    position (no other character lowers to more than one): a report with an em dash or an accented name is
    prefiltered as plain ASCII is.
    """
    if text.isascii():
        return text.lower()
    for c in _HIDES_ASCII:  # a loop, not ``any`` over a generator: a report with an em dash is lowered per write
        if c in text:
            return None
    return text.lower()


@lru_cache(maxsize=4096)
def _needles(pattern: str) -> tuple[str, ...] | None:
    r"""Lowercase ASCII texts one of which every case-insensitive match of ``pattern`` contains; None if unknown.

    The longest run of plain characters the pattern's top level requires (``SEA-3`` of ``\bSEA\-3\b``), or
    one per branch of a top-level alternation. On ASCII text a case-insensitive match of ASCII letters is a
    match of their lowercase forms, so a section whose lowercased text holds none of them cannot match, and a
    check skips the regex there (a scan of every character) for one substring search. Anything the parse
    does not show plainly gives None, and the regex runs everywhere.
    """
    try:
        return _required(list(_sre_parser.parse(pattern, re.IGNORECASE)))
    except Exception:  # a pattern the private parser reads differently: no prefilter, never a wrong one
        return None


def _required(items: list[Any]) -> tuple[str, ...] | None:
    """Needles for the sequence ``items`` of a parsed pattern (see ``_needles``), or None if none is plain.

    Every item of a sequence must match, so each one yields a candidate: a run of plain characters, a group's
    or a lookaround's own needles, one needle per alternative of a branch, the body of a repeat that must
    occur at least once. The candidate kept is the one whose shortest needle is longest (the rarest text).
    """
    options: list[tuple[str, ...]] = []
    run: list[str] = []
    for op, av in items:
        if op is _LITERAL:
            run.append(chr(av))
            continue
        if run:
            options.append(("".join(run),))
            run = []
        sub: tuple[str, ...] | None = None
        if op is _SUBPATTERN:
            sub = _required(list(av[3]))
        elif op is _ASSERT:
            sub = _required(list(av[1]))
        elif op in _REPEATS and av[0] >= 1:
            sub = _required(list(av[2]))
        elif op is _BRANCH:
            alternatives = [_required(list(branch)) for branch in av[1]]
            if all(a is not None for a in alternatives):
                sub = tuple(n for a in alternatives if a is not None for n in a)
        if sub:
            options.append(sub)
    if run:
        options.append(("".join(run),))
    plain = [o for o in options if all(n and n.isascii() for n in o)]
    if not plain:
        return None
    return tuple(n.lower() for n in max(plain, key=lambda o: min(len(n) for n in o)))


def _matching(pattern: str, texts: list[str], lowered: list[str | None]) -> list[bool]:
    """Whether ``pattern`` (case-insensitive) finds a match in each of ``texts`` (``lowered``: their ASCII forms)."""
    return [_hit(pattern, t, low) for t, low in zip(texts, lowered, strict=True)]


@lru_cache(maxsize=512)
def _plan(pattern: str) -> tuple[Callable[..., re.Match[str] | None], tuple[str, ...] | None, tuple[str, ...] | None]:
    """What a search for ``pattern`` reads, worked out once: its search, start texts (``_prefix``), needles."""
    return _search(pattern), _prefix(pattern), _needles(pattern)


@lru_cache(maxsize=512)
def _line_match(pattern: str) -> Callable[..., re.Match[str] | None] | None:
    r"""``rx(pattern).match`` if every match of ``pattern`` lies on one line with the text it looks ahead at, else None.

    So for a timeline check, ``(?im)^(?=.*14:24)(?=.*alert).*$``: it starts with ``^`` under MULTILINE (a match
    starts at a line's start), and nothing it consumes or looks ahead at can be a newline (no DOTALL, no ``\s``,
    no ``[^x]``, no lookbehind, nothing the parse does not show plainly), so its needles (``_needles``) lie on
    the line a match starts. Such a pattern matches a text iff it matches at the start of a line holding one
    of its needles (``_line_hit``): one anchored try per such line instead of a search over every line.
    """
    try:
        parsed = _sre_parser.parse(pattern, re.IGNORECASE)
    except Exception:  # a pattern the private parser reads differently: searched as it is, never wrongly
        return None
    flags = parsed.state.flags
    items = list(parsed)
    if not flags & re.MULTILINE or flags & re.DOTALL or not items or items[0] != (_AT, _sre_parser.AT_BEGINNING):
        return None
    return rx(pattern).match if _on_one_line(items[1:]) else None


def _on_one_line(items: list[Any]) -> bool:
    """Whether nothing the parsed ``items`` consume or look ahead at can be a newline (see ``_line_match``)."""
    for op, av in items:
        if op is _LITERAL:
            if av == 10:
                return False
        elif op is _NOT_LITERAL:
            if av != 10:
                return False
        elif op is _IN:
            if not _set_without_newline(av):
                return False
        elif op is _SUBPATTERN:
            if av[1] & re.DOTALL or not _on_one_line(list(av[3])):
                return False
        elif op is _BRANCH:
            if not all(_on_one_line(list(branch)) for branch in av[1]):
                return False
        elif op in _REPEATS:
            if not _on_one_line(list(av[2])):
                return False
        elif op is _ASSERT:
            if av[0] < 0 or not _on_one_line(list(av[1])):  # a lookbehind's text may lie on the line before
                return False
        elif op is not _ANY and op is not _AT and op is not _ASSERT_NOT:  # ANY: no DOTALL here
            return False
    return True


def _set_without_newline(items: list[tuple[Any, Any]]) -> bool:
    """Whether a parsed character set (``[...]``) cannot match a newline; False when that is not plain."""
    negate = bool(items) and items[0][0] is _sre_parser.NEGATE
    has, unknown = False, False
    for op, av in items[1:] if negate else items:
        if op is _LITERAL:
            has = has or av == 10
        elif op is _sre_parser.RANGE:
            has = has or av[0] <= 10 <= av[1]
        elif op is _sre_parser.CATEGORY and (av in _NEWLINE_CATEGORIES or av in _LINE_CATEGORIES):
            has = has or av in _NEWLINE_CATEGORIES
        else:
            unknown = True
    return has if negate else not has and not unknown


def _line_hit(match: Callable[..., re.Match[str] | None], text: str, low: str, needles: tuple[str, ...]) -> bool:
    """Whether a ``_line_match`` pattern matches ``text``: tried at the start of each line holding a needle."""
    for n in needles:
        at = low.find(n)
        while at >= 0:
            if match(text, low.rfind("\n", 0, at) + 1) is not None:
                return True
            end = low.find("\n", at)
            at = low.find(n, end + 1) if end >= 0 else -1
    return False


def _hit(pattern: str, text: str, low: str | None) -> bool:
    r"""Whether ``pattern`` (case-insensitive) finds a match in ``text`` (``low``: its lowered form, ``_lowered``).

    ``planned_hit`` on the pattern's plan, except that a pattern starting otherwise than with plain text but
    matched within one line is answered line by line (``_line_match``).
    """
    plan = _plan(pattern)
    if low is not None and plan[1] is None and plan[2] is not None:
        line = _line_match(pattern)
        if line is not None:
            return _line_hit(line, text, low, plan[2])
    return planned_hit(plan, text, low)


def planned_hit(
    plan: tuple[Callable[..., re.Match[str] | None], tuple[str, ...] | None, tuple[str, ...] | None],
    text: str,
    low: str | None,
) -> bool:
    r"""Whether the pattern whose ``_plan`` is ``plan`` matches ``text`` (``low``: its lowered form, ``_lowered``).

    A pattern that starts with plain text (after zero-width assertions: ``\bSEA\-3``) can only match where
    that text starts, so the regex starts at its first occurrence (``search(text, pos)`` still sees the
    characters before ``pos`` for ``\b``, lookbehinds and ``^``) rather than scanning the text from the top;
    one that holds plain text (``_needles``) cannot match a text without it. A text whose lowered form could
    hide a match (``low`` None) is searched whole. The document checks (``_hit``) and the post checks
    (``graders.comms_posts``, which keep each pattern's plan) share this one rule.
    """
    search, starts, needles = plan
    if low is None:
        return search(text) is not None
    if starts is not None:
        at = low.find(starts[0]) if len(starts) == 1 else _earliest(starts, low)  # one start: the common case
        return at >= 0 and search(text, at) is not None
    if needles is not None:
        for n in needles:
            if n in low:
                break
        else:
            return False
    return search(text) is not None


def _first_at(pattern: str, low: str | None) -> int:
    r"""Where in a text (``low``: its lowered form) a match of ``pattern`` may start first: 0 unless it is known.

    A pattern's matches start with one of its start texts (``_prefix``), so none starts before the first of
    them in the lowered text; ``finditer(text, pos)`` from there finds the same matches as from the top (it
    still sees the characters before ``pos`` for ``\b`` and lookbehinds) without scanning what comes before.
    """
    starts = _plan(pattern)[1]
    if starts is None or low is None:
        return 0
    return max(_earliest(starts, low), 0)


def _earliest(texts: tuple[str, ...], low: str) -> int:
    """Where the first of ``texts`` occurs in ``low``, or -1 (a loop: a generator costs more for two or three)."""
    at = -1
    for text in texts:
        i = low.find(text)
        if i >= 0 and (at < 0 or i < at):
            at = i
    return at


@lru_cache(maxsize=512)
def _search(pattern: str) -> Callable[..., re.Match[str] | None]:
    """``rx(pattern).search``, cached here: ``re.compile``'s own cache costs more than the search on a short text.

    As many as ``re`` keeps (512): a long run of episodes should not keep more compiled patterns alive than it.
    """
    return rx(pattern).search


@lru_cache(maxsize=4096)
def _prefix(pattern: str) -> tuple[str, ...] | None:
    r"""Plain ASCII texts (lowercased) one of which every match of ``pattern`` starts with, or None.

    Only zero-width items (anchors, lookarounds) may come before the text, so a match begins where one of
    them does; a leading group or alternation gives its alternatives' (``\bSEA\-3\b...|Review...``).
    """
    try:
        return _starts(list(_sre_parser.parse(pattern, re.IGNORECASE)))
    except Exception:  # a pattern the private parser reads differently: no prefix, never a wrong one
        return None


def _starts(items: list[Any]) -> tuple[str, ...] | None:
    run: list[str] = []
    for op, av in items:
        if op is _LITERAL:
            run.append(chr(av))
            continue
        if run:
            break
        if op in _ZERO_WIDTH:
            continue
        found: list[tuple[str, ...] | None] = []
        if op is _SUBPATTERN:
            found = [_starts(list(av[3]))]
        elif op is _BRANCH:
            found = [_starts(list(branch)) for branch in av[1]]
        if found and all(f is not None for f in found):
            return tuple(t for f in found if f is not None for t in f)
        return None
    text = "".join(run)
    return (text.lower(),) if text and text.isascii() else None


def _may_match(pattern: str, lowered: list[str | None]) -> list[bool]:
    """For each text (by its lowered form, None if ``_lowered`` gives none), False if ``pattern`` cannot match it."""
    needles = _needles(pattern)
    if needles is None:
        return [True] * len(lowered)
    if len(needles) == 1:
        n = needles[0]
        return [low is None or n in low for low in lowered]
    return [low is None or any(n in low for n in needles) for low in lowered]


@lru_cache(maxsize=4096)
def _named(heading: str, heads: tuple[str, ...]) -> tuple[bool, ...]:
    """Which of the headings ``heads`` the heading pattern ``heading`` names (an empty heading never is).

    Kept by the headings themselves: a family's documents share an outline (Done, In progress, Blocked), so a
    new document's sections are named without a search per heading and section.
    """
    search = rx(heading).search
    return tuple(bool(h) and search(h) is not None for h in heads)


@lru_cache(maxsize=4096)
def _heads_naming(pattern: str, heads: tuple[str, ...]) -> tuple[str, ...]:
    """The headings of ``heads`` in which ``pattern`` (case-insensitive) finds a match, in order.

    Kept by the headings themselves, as ``_named`` is: a new document of a family's outline costs no search.
    """
    search = rx(pattern).search
    return tuple(h for h in heads if search(h))


Verdict = tuple[float, str, dict[str, Any]]
"""A check's (score, evidence, details), as ``graders.progress`` keeps it (a text check has no details)."""


def contains_verdict(sections: Sections, document: str, kw: dict[str, Any]) -> Verdict:
    """``doc_section_contains``' verdict on a text document's parse (``kw``: the check's params).

    The function itself returns this (so the evidence is one code's), and ``graders.text_step`` asks it for
    every check on a document a step created or rewrote, without the function's frames and lookups.
    """
    pattern, heading = kw["pattern"], kw["heading"]
    name = kw.get("label") or pattern
    # one pass: which sections the heading names (once per heading and parse), which sections' text matches
    under = sections.under.get(heading)
    if under is None:
        under = sections.under[heading] = _named(heading, sections.heads)
    only_there = kw.get("only_there", True)
    if not only_there and True in under and (pattern, False) not in sections.found:
        # the first named section that matches is all a pass reads: ask the others only if none does
        texts, lowered = sections.texts, sections.texts_low
        for i in compress(range(len(under)), under):
            if _hit(pattern, texts[i], lowered[i]):
                return 1.0, f"{name}: in section {sections[i][0]!r}", {}
    return _contains_rest(sections, pattern, heading, only_there, name)


def _contains_rest(sections: Sections, pattern: str, heading: str, only_there: bool, name: str) -> Verdict:
    """``contains_verdict`` past its quick pass: the verdict from the pattern's answer on every section.

    The heading names a section (``sections.under`` holds its answer), and with ``only_there`` off none it
    names matches unless the pattern's answers are known already.
    """
    under = sections.under[heading]
    if True not in under:
        shown = listing([repr(h) for h, _ in sections if h], 6) or "none"
        return 0.0, f"{name}: no section heading matches /{heading}/ (headings: {shown})", {}
    said = sections.matching(pattern)
    first, others = -1, False  # the first named section that matches, and whether another section does
    for i in compress(range(len(said)), said):  # only the sections that match: one or two of a dozen
        if not under[i]:
            others = True
        elif first < 0:
            first = i
    if first >= 0 and not (only_there and others):  # a pass names the first section: no list is built
        return 1.0, f"{name}: in section {sections[first][0]!r}", {}
    hits = [h for (h, _), u, m in zip(sections, under, said, strict=True) if u and m]
    elsewhere = [
        h or "(before the first heading)" for (h, _), u, m in zip(sections, under, said, strict=True) if m and not u
    ]
    if not hits:
        where = f"found under {listing([repr(h) for h in elsewhere])}" if elsewhere else "found in no section"
        text = snippet(" ".join(t for (_, t), u in zip(sections, under, strict=True) if u), 80)
        named = sections[under.index(True)][0]
        return 0.0, f"{name}: not in section {named!r} ({where}; it holds {text})", {}
    if only_there and elsewhere:
        return 0.0, f"{name}: in {hits[0]!r} but also in {listing([repr(h) for h in elsewhere])}", {}
    return 1.0, f"{name}: in section {hits[0]!r}", {}


Only = tuple[int, tuple[str, bool], str, Callable[..., Any], "str | None", int, "tuple[str, ...] | None", str]
"""A ``doc_section_contains`` check with ``only_there`` as ``contains_verdicts`` reads it: its position in its
function's params, its answers' key in ``Sections.found`` (pattern, False), the head of its passing evidence, its
pattern's search, its one start text (None for several or none) and that text's length, its start texts, its
name in evidence."""

First = tuple[
    int,
    tuple[str, bool],
    str,
    Callable[..., Any],
    "tuple[str, ...] | None",
    "tuple[str, ...] | None",
    "Callable[..., Any] | None",
    bool,
    str,
]
"""A ``doc_section_contains`` check without ``only_there``: position, answers' key, passing evidence's head,
search, start texts, needles, its ``_line_match`` when it has needles and no start text (a timeline line's
pattern: ``_hit`` would try it at the lines holding a needle), whether its pattern is one plain text
(``_plain``: found is matched) and name."""

Planned = tuple[str, list[Only], list[First]]
"""The checks of one heading pattern, as ``contains_verdicts`` reads them: the heading, its checks with
``only_there``, its others. Worked out once per episode (``contains_plan``)."""


def contains_plan(positions: list[int], params: list[dict[str, Any]]) -> list[Planned]:
    """``contains_verdicts``' reading of the checks at ``positions``, by heading: params and patterns' plans, once."""
    by_heading: dict[str, tuple[list[Only], list[First]]] = {}
    for pos in positions:
        kw = params[pos]
        pattern = kw["pattern"]
        name = kw.get("label") or pattern
        search, starts, needles = _plan(pattern)
        only, first = by_heading.setdefault(kw["heading"], ([], []))
        passing = f"{name}: in section "
        if kw.get("only_there", True):
            start = starts[0] if starts is not None and len(starts) == 1 else None
            only.append((pos, (pattern, False), passing, search, start, len(start or ""), starts, name))
        else:
            line = _line_match(pattern) if starts is None and needles is not None else None
            first.append((pos, (pattern, False), passing, search, starts, needles, line, _plain(pattern), name))
    return [(heading, only, first) for heading, (only, first) in by_heading.items()]


@lru_cache(maxsize=4096)
def _plain(pattern: str) -> bool:
    """Whether ``pattern`` is one run of plain ASCII text (no anchor, class or repeat), read case-insensitively.

    On a section whose lowered form is known (``_lowered``), such a pattern matches where its lowered text
    occurs, so finding that text (its one start text, ``_prefix``) is the match and no regex is run. A pattern
    with ``(?a)`` is never plain: it folds only ASCII letters, where the lowered form folds the Kelvin sign too.
    """
    try:
        parsed = _sre_parser.parse(pattern, re.IGNORECASE)
    except Exception:  # a pattern the private parser reads differently: searched, never wrongly
        return False
    items = list(parsed)
    return (
        bool(items)
        and not parsed.state.flags & re.ASCII
        and all(op is _LITERAL and chr(av).isascii() for op, av in items)
    )


def contains_verdicts(sections: Sections, planned: list[Planned], out: dict[int, Verdict | None]) -> None:
    """``contains_verdict`` of every check of ``planned`` on a new parse, by position into ``out``, in one frame.

    A new report is a dozen or more checks on one parse, each a few string searches: the frames, lookups and
    plan look-ups per check cost more than the searches. Here each heading is named once for all its checks and
    each section's heading quoted once, and a pass is decided inline: with ``only_there`` off, the first named
    section that matches (a plain pattern, ``_plain``, by finding its text alone); on, the pattern's answer on
    every section (found as ``Sections._scan`` finds it, by its start text in the whole document, and kept in
    ``found`` as ``matching`` keeps it) matching one named section only, or only named sections. Anything else
    (a failing check, a pattern with no start text) takes ``contains_verdict``'s own path, the same code, so
    the same evidence.
    """
    unders, heads, texts, lows, found = (
        sections.under,
        sections.heads,
        sections.texts,
        sections.texts_low,
        sections.found,
    )
    quoted = [repr(h) for h in heads]  # each heading as a passing evidence quotes it
    whole = sections.whole.get(False) or sections._whole(False)
    count = len(texts)
    if whole is not None:
        text, offsets = whole
        find = text.find
        # where each section's text ends in the whole text (an occurrence past it runs into the NUL after it),
        # and where the next section starts (past the end for the last: nothing is found from there)
        ends = [at + len(t) for at, t in zip(offsets, texts, strict=True)]
        nexts = [*offsets[1:], len(text) + 1]
    for heading, only, first in planned:
        under = unders.get(heading)
        if under is None:
            under = unders[heading] = _named(heading, heads)
        if True not in under:
            for check in only:
                out[check[0]] = _contains_rest(sections, check[1][0], heading, True, check[7])
            for other in first:
                out[other[0]] = _contains_rest(sections, other[1][0], heading, False, other[8])
            continue
        for pos, key, passing, search, start, size, starts, name in only:
            said = found.get(key)
            if said is None and whole is not None and starts is not None:  # ``_scan_from``, inlined
                said = [False] * count
                if start is not None:  # one start text: from its first occurrence in each section
                    p = find(start)
                    while p >= 0:
                        i = bisect_right(offsets, p) - 1
                        if p + size > ends[i]:  # across the NUL between two sections: look on
                            p = find(start, p + 1)
                            continue
                        if search(texts[i], p - offsets[i]) is not None:
                            said[i] = True
                        p = find(start, nexts[i])
                else:
                    for s in starts:
                        p = find(s)
                        while p >= 0:
                            i = bisect_right(offsets, p) - 1
                            if p + len(s) > ends[i]:
                                p = find(s, p + 1)
                                continue
                            if not said[i] and search(texts[i], p - offsets[i]) is not None:
                                said[i] = True
                            p = find(s, nexts[i])
                found[key] = said
            if said is not None:
                hits = said.count(True)
                if hits == 1:  # the common case: one section matches, a pass if it is named
                    i = said.index(True)
                    if under[i]:
                        out[pos] = 1.0, passing + quoted[i], {}
                        continue
                elif hits and all(u for u, m in zip(under, said, strict=True) if m):
                    out[pos] = 1.0, passing + quoted[said.index(True)], {}
                    continue
            out[pos] = _contains_rest(sections, key[0], heading, True, name)
        for pos, key, passing, search, starts, needles, line, plain, name in first:
            if key not in found:  # as ``contains_verdict``: the first named section that matches
                for i in compress(range(count), under):
                    low = lows[i]
                    if low is None:
                        hit = search(texts[i]) is not None
                    elif starts is not None:
                        begin = low.find(starts[0])
                        if len(starts) == 2:  # ``_earliest`` of two (a title either side of its key), inline
                            second = low.find(starts[1])
                            if second >= 0 and (begin < 0 or second < begin):
                                begin = second
                        elif len(starts) > 2:
                            begin = _earliest(starts, low)
                        hit = begin >= 0 and (plain or search(texts[i], begin) is not None)
                    elif needles is not None:
                        hit = _line_hit(line, texts[i], low, needles) if line else _hit(key[0], texts[i], low)
                    else:
                        hit = search(texts[i]) is not None
                    if hit:
                        out[pos] = 1.0, passing + quoted[i], {}
                        break
                else:
                    hit = False
                if hit:
                    continue
            out[pos] = _contains_rest(sections, key[0], heading, False, name)


def absent_verdict(sections: Sections, document: str, kw: dict[str, Any]) -> Verdict:
    """``doc_mentions_none``' verdict on a text document's parse: each match named with its section, or none."""
    pattern = kw["pattern"]
    hit = sections.matching(pattern, joined=True)
    if True not in hit:
        return 1.0, f"{kw.get('label') or pattern}: none in {document}", {}
    finditer = rx(pattern).finditer  # only where ``matching`` found a match (kept per section across writes)
    lowered = sections.joined_low
    found = [
        f"{m.group(0)} under {h!r}" if h else f"{m.group(0)} before the first heading"
        for i, ((h, _), text, yes) in enumerate(zip(sections, sections.joined, hit, strict=True))
        if yes
        for m in finditer(text, _first_at(pattern, lowered[i]))
    ]
    if found:
        return 0.0, f"{kw.get('label') or pattern}: the document mentions {listing(found, 4)}", {}
    return 1.0, f"{kw.get('label') or pattern}: none in {document}", {}


def lacks_verdict(sections: Sections, document: str, kw: dict[str, Any]) -> Verdict:
    """``doc_lacks``' verdict on a text document's parse: the headings of the sections that match, or none."""
    pattern = kw["pattern"]
    name = kw.get("label") or pattern
    hit = sections.matching(pattern, joined=True)
    if True not in hit:
        return 1.0, f"{name}: named nowhere in {document}", {}
    hits = [h or "(before the first heading)" for (h, _), yes in zip(sections, hit, strict=True) if yes]
    return 0.0, f"{name}: found under {listing([repr(h) for h in hits])}", {}


def once_verdict(sections: Sections, document: str, kw: dict[str, Any]) -> Verdict:
    """``doc_mentions_once``' verdict on a text document's parse: every match in a body or a heading, counted."""
    pattern = kw["pattern"]
    name = kw.get("label") or pattern
    may = sections.matching(pattern)  # the sections whose text matches at all (kept per section across writes)
    heads = sections.heads
    where: list[str] = []
    if True in may:  # only the sections that match are searched again, to count (one or two of a dozen)
        finditer, texts, lowered = rx(pattern).finditer, sections.texts, sections.texts_low
        for i in compress(range(len(may)), may):
            heading = heads[i] or "(before the first heading)"
            for _ in finditer(texts[i], _first_at(pattern, lowered[i])):
                where.append(heading)
    named = _heads_naming(pattern, heads)
    if named:
        where += named
    if len(where) == 1:
        return 1.0, f"{name}: named once in {document}, under {where[0]}", {}
    if not where:
        return 0.0, f"{name}: not named in {document}", {}
    return 0.0, f"{name}: named {len(where)} times in {document} (under {listing(where, 4)})", {}


def _once_plan(positions: list[int], params: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """``once_verdicts``' reading of the checks at ``positions``: position, answers' key, plan, name, document.

    With the pattern's one start text (None for several or none) and the head of its passing evidence.
    """
    out: list[tuple[Any, ...]] = []
    for pos in positions:
        kw = params[pos]
        pattern = kw["pattern"]
        search, starts, _ = _plan(pattern)
        start = starts[0] if starts is not None and len(starts) == 1 else None
        name, document = kw.get("label") or pattern, kw["document"]
        passing = f"{name}: named once in {document}, under "
        out.append((pos, (pattern, False), search, starts, start, rx(pattern).findall, name, document, passing))
    return out


def once_verdicts(sections: Sections, planned: list[tuple[Any, ...]], out: dict[int, Verdict | None]) -> None:
    """``once_verdict`` of every check of ``planned`` on a new parse, by position into ``out``, in one frame.

    The pattern's answers are found by its start texts (``Sections._scan``) and kept in ``found`` (a report's
    ``doc_section_contains`` checks have found most of them already); a section that matches is counted by one
    ``findall`` from the pattern's first start text (the matches ``finditer`` walks there, without a match
    object each), each section named as the evidence names it once per parse, and the headings naming the
    pattern are ``_heads_naming``'s.
    """
    found, heads, texts, lows = sections.found, sections.heads, sections.texts, sections.texts_low
    under = [h or "(before the first heading)" for h in heads]  # each section as the evidence names it
    every = range(len(texts))
    for pos, key, search, starts, start, findall, name, document, passing in planned:
        hits = found.get(key)
        if hits is None:
            hits = sections._scan_from(False, search, starts) if starts is not None else None
            if hits is None:
                hits = sections.matching(key[0])
            else:
                found[key] = hits
        where: list[str] = []
        for i in compress(every, hits):
            low = lows[i]
            if low is None or starts is None:
                at = 0
            elif start is not None:  # ``_earliest`` of one start text, without its frame
                at = low.find(start)
                if at < 0:
                    at = 0
            else:
                at = max(_earliest(starts, low), 0)
            where += [under[i]] * len(findall(texts[i], at))
        named = _heads_naming(key[0], heads)
        if named:
            where += named
        if len(where) == 1:
            out[pos] = 1.0, passing + where[0], {}
        elif not where:
            out[pos] = 0.0, f"{name}: not named in {document}", {}
        else:
            out[pos] = 0.0, f"{name}: named {len(where)} times in {document} (under {listing(where, 4)})", {}


VERDICTS: dict[str, Callable[[Sections, str, dict[str, Any]], Verdict]] = {
    "doc_section_contains": contains_verdict,
    "doc_mentions_none": absent_verdict,
    "doc_lacks": lacks_verdict,
    "doc_mentions_once": once_verdict,
}
"""Each text check's verdict on a parse, by function name: what ``graders.text_step`` settles a new parse with."""

Answered = tuple[int, tuple[str, bool], Callable[..., Any], "tuple[str, ...] | None", str | None, dict[str, Any], str]
"""A check that reads one pattern's answers, as ``answered_verdicts`` reads it: its position, its answers' key
in ``Sections.found`` (pattern, joined), its pattern's search and start texts, its passing evidence when no
section matches (None if that is not a pass), its params and its document."""


def _answered_plan(joined: bool, absent: str | None) -> Callable[[list[int], list[dict[str, Any]]], list[Answered]]:
    """How ``answered_verdicts`` reads the checks of a function whose pattern's answers are ``joined`` or not.

    ``absent``: the function's passing evidence when no section matches (``{name}``, ``{document}`` filled in).
    """

    def plan(positions: list[int], params: list[dict[str, Any]]) -> list[Answered]:
        out: list[Answered] = []
        for pos in positions:
            kw = params[pos]
            pattern, document = kw["pattern"], kw["document"]
            search, starts, _ = _plan(pattern)
            passing = absent.format(name=kw.get("label") or pattern, document=document) if absent else None
            out.append((pos, (pattern, joined), search, starts, passing, kw, document))
        return out

    return plan


def _answered_verdicts(verdict: Callable[[Sections, str, dict[str, Any]], Verdict]) -> Callable[..., None]:
    """``verdict`` of every check of a plan (``_answered_plan``) on a new parse, the pattern's answers found first.

    Each pattern's answers are found as ``Sections._scan`` finds them (by its start texts in the whole document)
    with the plan's search, no ``matching`` or ``_plan`` per check, and kept in ``found``, where ``verdict``
    reads them; a check whose pattern matches nowhere and whose function passes then takes its passing
    evidence from the plan, with no frame of its own.
    """

    def verdicts(sections: Sections, planned: list[Answered], out: dict[int, Verdict | None]) -> None:
        found = sections.found
        for pos, key, search, starts, passing, kw, document in planned:
            hits = found.get(key)
            if hits is None and starts is not None:
                hits = sections._scan_from(key[1], search, starts)
                if hits is not None:
                    found[key] = hits
            if hits is not None and passing is not None and True not in hits:
                out[pos] = 1.0, passing, {}
            else:
                out[pos] = verdict(sections, document, kw)

    return verdicts


Batch = tuple[
    Callable[[list[int], list[dict[str, Any]]], Any],
    Callable[[Sections, Any, dict[int, Verdict | None]], None],
]
"""How a function's checks are read once per episode (positions, params -> plan), and decided on a parse."""

BATCHES: dict[str, Batch] = {
    "doc_section_contains": (contains_plan, contains_verdicts),
    "doc_mentions_none": (_answered_plan(True, "{name}: none in {document}"), _answered_verdicts(absent_verdict)),
    "doc_lacks": (_answered_plan(True, "{name}: named nowhere in {document}"), _answered_verdicts(lacks_verdict)),
    "doc_mentions_once": (_once_plan, once_verdicts),
}
"""The text checks whose verdicts on a new parse are taken together, by function name: how the checks at some
positions of the function's params are read once per episode, and how all of them are decided on a parse."""
