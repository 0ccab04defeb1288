"""Text-document checks settled once a step per function (branch text2) agree with a fresh run after every write.

``graders.text_step`` keeps the verdict of every check a write's changed sections cannot move (the quick
literal test, then the pattern on the changed sections) and runs the function for the rest; the share checks
are decided from the folded shares. These tests play what ``graders.progress`` does with those hooks over a
document an agent edits section by section (and renames, extends, writes in German, deletes), and compare
every held verdict with the function run on a fresh context; they also count the verdicts kept, so a hook
that silently re-ran everything (or kept nothing) fails too.
"""

from __future__ import annotations

from typing import Any

from graders.checks_docs import Sections
from graders.registry import LATER, check_fn_spec
from tests.graders.test_progress_pdocs import _doc
from tests.graders.test_progress_rows import _step_ctx
from worlds.schema import DocFolder, DocumentShare

PATH = "Shared/Reports/Weekly.odt"
START = [[1, "Done"], [0, "ENG-1 shipped the login fix"], [1, "Blocked"], [0, "ENG-2 waits on legal"], [1, "Next"]]
TEXT_ASKS: dict[str, list[dict[str, Any]]] = {
    "doc_section_contains": [
        {"heading": "^done$", "pattern": r"\bENG\-1\b"},
        {"heading": "^done$", "pattern": r"\bENG\-3\b", "only_there": False},
        {"heading": "^blocked$", "pattern": r"\bENG\-2\b"},
        {"heading": "^blocked$", "pattern": "legal", "only_there": False, "label": "reason"},
        {"heading": "^next$", "pattern": r"review|retro"},
        {"heading": "^waiting$", "pattern": r"ENG-\d+"},
        {"heading": "done|next", "pattern": r"\bENG\-(1|4)\b"},
    ],
    "doc_mentions_none": [{"pattern": r"\bENG\-9\b"}, {"pattern": "secret"}, {"pattern": r"J.rgen"}],
    "doc_lacks": [{"pattern": "legal"}, {"pattern": r"\bENG\-4\b"}],
    "doc_mentions_once": [{"pattern": r"\bENG\-1\b"}, {"pattern": "retro"}],
}
SHARE_ASKS: dict[str, list[dict[str, Any]]] = {
    "doc_shared_with": [{"username": u, "permission": p} for u in ("bob", "carol") for p in ("view", "edit")],
    "doc_not_shared": [{}],
    "doc_shared_only_with": [{"usernames": ["bob"]}],
}


def _verdict(fn: str, ctx: Any, params: dict[str, Any]) -> tuple[float, str, dict[str, Any]]:
    out = check_fn_spec(fn).fn(ctx, document=PATH, **params)
    return out.score, out.evidence, dict(out.details)


def test_text_and_share_checks_kept_or_re_asked_equal_a_fresh_run_after_every_write(world):
    folder = DocFolder(parent_id=None, name="Shared", owner_id=1, created_at=world.clock.now())
    world.add(folder)
    reports = DocFolder(parent_id=folder.id, name="Reports", owner_id=1, created_at=world.clock.now())
    world.add(reports)
    doc = _doc(reports.id, "Weekly.odt", START)
    world.add(doc)
    seq = world.log_count()
    world.start_seq = seq
    ctx = world.ctx()
    params = {fn: [{"document": PATH, **p} for p in asks] for fn, asks in {**TEXT_ASKS, **SHARE_ASKS}.items()}
    held = {
        (fn, i): _verdict(fn, ctx, p) for fn, asks in {**TEXT_ASKS, **SHARE_ASKS}.items() for i, p in enumerate(asks)
    }
    kept, ran, decided = 0, 0, 0

    def write(blocks: list[list[Any]]) -> None:
        doc.content = {"blocks": [list(b) for b in blocks]}  # a new value: the column sees the change
        doc.version += 1

    def step(edit: Any) -> None:
        nonlocal ctx, seq, kept, ran, decided
        edit()
        before = seq
        ctx, seq = _step_ctx(world, ctx, seq)
        new = [r for r in ctx.changed_rows("documents") if r.seq > before]
        if new:
            for fn in TEXT_ASKS:
                verdicts = check_fn_spec(fn).on_step(ctx, new, params[fn])
                for i, p in enumerate(TEXT_ASKS[fn]):
                    if i not in verdicts:
                        kept += 1
                    elif verdicts[i] is None:
                        held[(fn, i)] = _verdict(fn, ctx, p)
                    elif verdicts[i] is LATER:  # round ten: the score stands, the evidence is the function's
                        now = _verdict(fn, ctx, p)  # (as ``graders.progress`` asks it when results are asked)
                        assert now[0] == held[(fn, i)][0], (fn, i, doc.content)
                        held[(fn, i)], ran = now, ran + 1
                    else:
                        held[(fn, i)], ran = verdicts[i], ran + 1
        shares = [r for t in ("documents", "document_shares") for r in ctx.changed_rows(t) if r.seq > before]
        for fn, asks in SHARE_ASKS.items():
            for i, p in enumerate(asks):
                if shares:
                    found = check_fn_spec(fn).on_changes(ctx, sorted(shares, key=lambda r: r.seq), document=PATH, **p)
                    decided += found is not None
                    held[(fn, i)] = found if found is not None else _verdict(fn, ctx, p)
        fresh = world.ctx()
        for (fn, i), got in held.items():
            want = _verdict(fn, fresh, {**SHARE_ASKS, **TEXT_ASKS}[fn][i])
            assert got == want, (fn, i, doc.content)

    body = [list(b) for b in START]
    body[1] = [0, "ENG-1 shipped the login fix\nENG-3 shipped the export"]
    step(lambda: write(body))  # the first write after progress started: kept on the start's parse
    body[3] = [0, "ENG-2 waits on legal; ENG-1 needs a second look"]
    step(lambda: write(body))  # ENG-1 in two sections now
    body[1] = [0, "nothing shipped"]
    step(lambda: write(body))  # Done names no ENG-1: its checks quote Done's text
    body[1] = [0, "nothing shipped this week"]
    step(lambda: write(body))  # only the quoted text moved
    step(lambda: world.add(DocumentShare(document_id=doc.id, employee_id=2, permission="view")))
    step(lambda: setattr(doc, "owner_id", 2))  # the same content: nothing to re-ask
    body.append([0, "the review and the retro on Friday"])
    step(lambda: write(body))  # Next gets a body: the section count is the same, Next's text changed
    body[2] = [1, "Waiting"]
    step(lambda: write(body))  # a heading renamed: the heading checks cannot carry over
    body.insert(2, [0, "ENG-4 reverted"])
    step(lambda: write(body))  # under Done, a paragraph more
    body += [[1, "Notes"], [0, "ENG-9 stays secret"]]
    step(lambda: write(body))  # a section added: answers found again by text
    body[-1] = [0, "Jürgen kept the retro short"]
    step(lambda: write(body))  # a section that is not ASCII: never quiet
    body[-1] = [0, "Jurgen kept it short"]
    step(lambda: write(body))
    step(lambda: setattr(doc, "name", "Old.odt"))  # renamed away: the path names nothing now
    step(lambda: setattr(doc, "name", "Weekly.odt"))
    body[-1] = [0, "ENG-1 again"]
    step(lambda: write(body))
    step(lambda: world.session.delete(doc))
    assert kept >= 102 and ran >= 20, (kept, ran)  # most checks kept at a write (103 of 189); the rest re-asked
    assert decided >= 20, decided


def test_a_parse_diffs_its_sections_with_the_one_before_and_carries_the_answers():
    old = Sections.of([("", "intro"), ("Done", "ENG-1 shipped"), ("Next", "retro")])
    assert old.matching(r"\bENG\-1\b") == [False, True, False]
    new = Sections.of([("", "intro"), ("Done", "ENG-1 shipped"), ("Next", "ENG-1 retro")], old)
    assert new.changed == [2] and new.same_heads and new.prev is old
    assert new.matching(r"\bENG\-1\b") == [False, True, True]  # only the changed section asked again
    renamed = Sections.of([("", "intro"), ("Shipped", "ENG-1 shipped"), ("Next", "ENG-1 retro")], new)
    assert renamed.changed == [1] and not renamed.same_heads and new.prev is None  # no chain kept
    grown = Sections.of([("", "intro"), ("Shipped", "ENG-1 shipped")], renamed)
    assert grown.changed is None and grown.matching(r"\bENG\-1\b") == [False, True]


def test_a_fresh_parse_scanned_by_start_text_gives_what_a_search_per_section_gives():
    import re

    texts = [
        ("", "eng-1 at the top"),
        ("Done", "ENG-12 shipped; ENG-1 shipped\nand ENG-1"),
        ("Blocked", "waits on ENG"),  # the start text runs across the NUL into the next section
        ("-1 Next", "ENG-1"),
        ("Notes", "nothing\0ENG-1 after a NUL"),
        ("Empty", ""),
    ]
    patterns = [
        r"\bENG\-1\b",
        r"ENG-1\b[^\n]*shipped|shipped[^\n]*ENG-1\b",
        r"\bENG",
        r"ENG\-1$",
        r"(?:eng|nothing)",
        r"Blocked\nwaits",
        r"^-1",
    ]
    for pattern in patterns:
        for joined in (False, True):
            sections = Sections.of(texts)
            found = sections._scan(pattern, joined)
            assert found is not None, pattern
            want = [
                re.search(pattern, t, re.IGNORECASE) is not None
                for t in (sections.joined if joined else sections.texts)
            ]
            assert found == want, (pattern, joined)
    # lowered non-ASCII text is prefiltered as ASCII is, unless a character that matches an ASCII letter hides it
    odd = [("", "Jürgen — ENG-1"), ("Kelvin", "\u212aelvin and ENG-1"), ("A", "x\u0131n \u017fhip \u0130n")]
    for pattern in (r"\bENG\-1\b", "kelvin", "xin", "ship", "in", r"j.rgen\b"):
        sections = Sections.of(odd)
        want = [re.search(pattern, t, re.IGNORECASE) is not None for t in sections.texts]
        assert sections.matching(pattern) == want, pattern
    assert Sections.of(odd).texts_low[2] is None and Sections.of(odd)._scan("x", False) is None
