"""How varied a world's text is: rows, distinct skeletons and distinct word trigrams per kind of text.

A *skeleton* is a text with everything that names a particular thing masked: people (first names, last names,
usernames, @mentions), teams, departments, projects and the company, ticket keys, emails, URLs, dates, times
and numbers. Two texts with the same skeleton differ only in who or what they name, so the count of distinct
skeletons says how many *different things* a kind of text says; an agent trained on 21 skeletons learns the
skeletons. The trigram ratio (distinct word trigrams over all trigrams, taken on the skeletons) says how much
the wording repeats inside and across texts.

Masking is token-based (a set lookup per capitalised word) rather than one big regex alternation, so a
1,000-employee world is measured in about a second. It masks generously (a capitalised word that is also a
team word, such as "Search", is masked wherever it appears), which can only lower the counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, text

__all__ = [
    "KINDS",
    "KindStats",
    "Masker",
    "kind_stats",
    "mail_key_agreement",
    "masker_for",
    "skeleton",
    "world_text_stats",
]

KINDS: tuple[str, ...] = (
    "ticket_titles",
    "ticket_descriptions",
    "ticket_comments",
    "chat_posts",
    "mail_subjects",
    "mail_bodies",
    "document_paragraphs",
)

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_KEY = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b")
_MENTION = re.compile(r"@[\w.\-]+")
_DOTTED = re.compile(r"\b[a-z][a-z0-9]*(?:\.[a-z0-9]+)+\b")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b")
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_WORD_DATE = re.compile(rf"\b(?:(?:{_MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?|\d{{1,2}} (?:{_MONTHS})\b)")
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?:\s?[ap]m)?\b", re.IGNORECASE)
_NUMBER = re.compile(r"[$€£]?\d[\d,.]*%?[kKmM]?\b")
_WORD = re.compile(r"[A-Za-zÀ-ÿ][\w'’-]*")
_SAME = re.compile(r"(<[A-Z]+>)(?:[\s,&/]+(?:and\s+)?\1)+")
# A run of names and entities ("Harris PLC", "Acme-Smith Group") is one mention of one thing.
_NAMED_RUN = re.compile(r"<(?:NAME|ENT)>(?:[\s,&/-]+(?:and\s+)?<(?:NAME|ENT)>)+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class Masker:
    """The names of one world to mask: capitalised words that name a person or an entity, and usernames.

    Usernames are masked where they appear dotted (``ada.lovelace``) or after an ``@``; a lowercase word that
    happens to be a one-word username stays, since it is far more often the ordinary word.
    """

    people: frozenset[str]
    entities: frozenset[str]
    usernames: frozenset[str]

    def mask(self, value: str) -> str:
        """The skeleton of ``value`` (whitespace collapsed, case kept)."""
        s = _EMAIL.sub("<EMAIL>", value)
        s = _URL.sub("<URL>", s)
        s = _KEY.sub("<KEY>", s)
        s = _MENTION.sub("<USER>", s)
        s = _DOTTED.sub(lambda m: "<USER>" if m.group(0) in self.usernames else m.group(0), s)
        s = _ISO_DATE.sub("<DATE>", s)
        s = _WORD_DATE.sub("<DATE>", s)
        s = _TIME.sub("<TIME>", s)
        s = _WORD.sub(self._word, s)
        s = _NUMBER.sub("<N>", s)
        s = _NAMED_RUN.sub("<NAME>", s)
        s = _SAME.sub(r"\1", s)
        return _SPACE.sub(" ", s).strip()

    def _word(self, m: re.Match[str]) -> str:
        word = m.group(0)
        bare = word.rstrip("'’-").removesuffix("'s").removesuffix("’s")
        if bare[:1].isupper():
            if bare in self.people:
                return "<NAME>"
            if bare in self.entities:
                return "<ENT>"
        return word


def skeleton(value: str, masker: Masker) -> str:
    """The skeleton of one text under a world's masker."""
    return masker.mask(value)


def _words(name: str) -> set[str]:
    return {w for w in re.findall(r"[^\W\d_][\w'’-]*", name) if w[:1].isupper()}


def masker_for(conn: Connection) -> Masker:
    """Collect the names a world's text can mention (people, teams, projects, departments, company, mailboxes)."""
    people: set[str] = set()
    usernames: set[str] = set()
    for first, last, username in conn.execute(text("SELECT first_name, last_name, username FROM employees")):
        people |= _words(first) | _words(last)
        usernames.add(username)
    entities: set[str] = set()
    for sql in (
        "SELECT name FROM teams",
        "SELECT name FROM departments",
        "SELECT name FROM projects",
        "SELECT key FROM projects",
        "SELECT name FROM companies",
        "SELECT name FROM locations",
        "SELECT display_name FROM mailboxes WHERE employee_id IS NULL",
    ):
        for (name,) in conn.execute(text(sql)):
            entities |= _words(str(name))
    return Masker(people=frozenset(people), entities=frozenset(entities - people), usernames=frozenset(usernames))


@dataclass(frozen=True, kw_only=True)
class KindStats:
    """The variety figures of one kind of text."""

    kind: str
    rows: int
    distinct_texts: int
    distinct_skeletons: int
    skeleton_ratio: float
    trigrams: int
    distinct_trigrams: int
    trigram_ratio: float
    top_skeletons: list[tuple[str, int]]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures (top skeletons as [text, count] pairs)."""
        out = asdict(self)
        out["top_skeletons"] = [[s, n] for s, n in self.top_skeletons]
        return out


def kind_stats(kind: str, texts: Iterable[str], masker: Masker, top: int = 5) -> KindStats:
    """Rows, distinct skeletons and distinct word trigrams over all trigrams of some texts."""
    counts: dict[str, int] = {}
    raw: set[str] = set()
    trigrams = 0
    seen: set[tuple[str, str, str]] = set()
    rows = 0
    for value in texts:
        rows += 1
        raw.add(value)
        sk = masker.mask(value)
        counts[sk] = counts.get(sk, 0) + 1
        words = sk.lower().split()
        for i in range(len(words) - 2):
            trigrams += 1
            seen.add((words[i], words[i + 1], words[i + 2]))
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return KindStats(
        kind=kind,
        rows=rows,
        distinct_texts=len(raw),
        distinct_skeletons=len(counts),
        skeleton_ratio=round(len(counts) / rows, 4) if rows else 0.0,
        trigrams=trigrams,
        distinct_trigrams=len(seen),
        trigram_ratio=round(len(seen) / trigrams, 4) if trigrams else 0.0,
        top_skeletons=ordered,
    )


def _column(conn: Connection, sql: str) -> list[str]:
    return [str(v) for (v,) in conn.execute(text(sql)) if v is not None and str(v).strip()]


def _paragraphs(conn: Connection) -> list[str]:
    """Paragraphs (not headings) of text documents."""
    import json

    out: list[str] = []
    for (content,) in conn.execute(text("SELECT content FROM documents WHERE kind = 'text' ORDER BY id")):
        data = json.loads(content) if isinstance(content, str) else content
        # Stored content is a list of blocks [level, text]: level 0 is a paragraph, others are headings.
        for block in (data or {}).get("blocks", []):
            if isinstance(block, list) and len(block) == 2 and block[0] == 0 and str(block[1]).strip():
                out.append(str(block[1]).strip())
    return out


def world_text_stats(conn: Connection, top: int = 5) -> dict[str, KindStats]:
    """The variety figures of every kind of text a world holds (a kind with no rows is left out)."""
    masker = masker_for(conn)
    sources: dict[str, list[str]] = {
        "ticket_titles": _column(conn, "SELECT title FROM tickets ORDER BY id"),
        "ticket_descriptions": _column(conn, "SELECT description FROM tickets ORDER BY id"),
        "ticket_comments": _column(conn, "SELECT body FROM ticket_comments ORDER BY id"),
        "chat_posts": _column(conn, "SELECT message FROM posts ORDER BY id"),
        # Replies repeat their thread's subject with "Re: "; a subject is counted once per thread.
        "mail_subjects": _column(conn, "SELECT subject FROM mail_threads ORDER BY id"),
        "mail_bodies": _column(conn, "SELECT body FROM mail_messages ORDER BY id"),
        "document_paragraphs": _paragraphs(conn),
    }
    return {kind: kind_stats(kind, values, masker, top) for kind, values in sources.items() if values}


def mail_key_agreement(conn: Connection) -> dict[str, int]:
    """Of the mails naming a ticket key in both subject and body, how many name the same key in both.

    A mail about ticket K should discuss K: a subject naming one ticket and a body naming only others is the
    incoherence this counts.
    """
    both = agree = 0
    for subject, body in conn.execute(text("SELECT subject, body FROM mail_messages ORDER BY id")):
        in_subject = set(_KEY.findall(str(subject)))
        in_body = set(_KEY.findall(str(body)))
        if in_subject and in_body:
            both += 1
            agree += bool(in_subject & in_body)
    return {"mails_with_keys_in_subject_and_body": both, "same_key_in_both": agree}
