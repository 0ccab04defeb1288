"""The text verdicts that walk only the matching sections (branch text4), held to exact evidence.

``once_verdict`` counts a pattern's matches only in the sections ``Sections.matching`` says match, and
``contains_verdict`` reads only those to find the first named one and whether another matches: a walk that
skipped a section, counted a section once however many times it matches, named the wrong heading or lost a
heading that names the pattern would change these strings. Pure text: no world, so they cost nothing.
"""

from __future__ import annotations

from graders.text_match import Sections, contains_verdict, once_verdict

DOC = "Shared/Notes.odt"


def _parse() -> Sections:
    return Sections.of(
        [
            ("", "ENG-1 intro"),
            ("Done", "nothing here"),
            ("Fixed", "ENG-1 and again ENG-1"),
            ("Misc", "no ticket"),
            ("ENG-1 follow-up", "ENG-1 once more"),
        ]
    )


def test_once_counts_every_match_of_each_matching_section_and_the_headings() -> None:
    # 1 before the first heading, 2 in Fixed, 1 in the follow-up's body, 1 in its heading: five, in order
    assert once_verdict(_parse(), DOC, {"pattern": r"\bENG\-1\b", "label": "ENG-1"}) == (
        0.0,
        "ENG-1: named 5 times in Shared/Notes.odt (under (before the first heading); Fixed; Fixed; ENG-1 follow-up"
        " (+1 more))",
        {},
    )
    once = once_verdict(Sections.of([("Done", "x"), ("Fixed", "ENG-1 shipped")]), DOC, {"pattern": r"\bENG\-1\b"})
    assert once == (1.0, r"\bENG\-1\b: named once in Shared/Notes.odt, under Fixed", {})
    none = once_verdict(Sections.of([("Done", "x")]), DOC, {"pattern": r"\bENG\-1\b", "label": "ENG-1"})
    assert none == (0.0, "ENG-1: not named in Shared/Notes.odt", {})


def test_contains_takes_the_first_named_matching_section_and_sees_one_elsewhere() -> None:
    sections = _parse()
    kw = {"heading": "^Fixed$", "pattern": r"\bENG\-1\b", "label": "ENG-1"}
    assert contains_verdict(sections, DOC, kw) == (
        0.0,
        "ENG-1: in 'Fixed' but also in '(before the first heading)'; 'ENG-1 follow-up'",
        {},
    )
    assert contains_verdict(sections, DOC, {**kw, "only_there": False}) == (1.0, "ENG-1: in section 'Fixed'", {})
    alone = Sections.of([("Done", "nothing"), ("Misc", "ENG-1 here"), ("Fixed", "ENG-1 too")])
    assert contains_verdict(alone, DOC, {**kw, "heading": "^(Fixed|Misc)$"}) == (1.0, "ENG-1: in section 'Misc'", {})
    assert contains_verdict(alone, DOC, kw) == (
        0.0,
        "ENG-1: in 'Fixed' but also in 'Misc'",
        {},
    )
