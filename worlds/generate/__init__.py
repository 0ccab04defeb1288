"""The company generator: a WorldSpec becomes rows for every table, deterministically.

Stages run in a fixed order (org, its reorg and leavers, work, chat, mail with receipts and the reorg's announcement,
calendar, documents with the budget cycles, and their office files), each drawing
from its own named stream, so changing one stage never shifts another's numbers. Nothing reads the wall clock:
every timestamp is placed inside the history window that ends at the spec's start date.
"""

from __future__ import annotations

from collections.abc import Callable

from worlds.generate.budgets import build_budget_cycles, build_receipts
from worlds.generate.code import build_code
from worlds.generate.common import Gen
from worlds.generate.comms import build_calendar, build_chat, build_mail
from worlds.generate.documents import build_documents
from worlds.generate.incidents import build_incidents
from worlds.generate.leavers import build_leavers, settle_leavers
from worlds.generate.office_files import build_office_files
from worlds.generate.org import build_org
from worlds.generate.releases import build_releases
from worlds.generate.reorg import announce_reorg, build_reorg
from worlds.generate.work import build_work
from worlds.rows import WorldRows
from worlds.seeding import Seeds
from worlds.spec import WorldSpec

__all__ = ["generate"]


def generate(spec: WorldSpec, progress: Callable[[str, int, int], None] | None = None) -> WorldRows:
    """Generate every row of the world described by ``spec``."""
    g = Gen(spec=spec, seeds=Seeds(spec.seed))
    stages = ["org", "work", "chat", "mail", "calendar", "documents"]

    def step(i: int) -> None:
        if progress is not None:
            progress(stages[i], i + 1, len(stages))

    build_org(g)
    build_reorg(g)  # today's reporting lines, and the lines before the reorg for the stages below
    build_leavers(g)  # who leaves and when: the stages below place nothing of theirs after their last day
    step(0)
    tickets = build_work(g)
    if g.has("git"):
        build_code(g)  # merge requests of the tickets that went through review (issue 12 item 1)
    step(1)
    if g.has("chat"):
        build_chat(g, tickets)
    step(2)
    if g.has("mail"):
        build_mail(g, tickets)
        if g.has("docs") or g.has("sheets"):
            build_receipts(g)  # booked in the actuals sheets, so only where there are sheets to book them in
    announce_reorg(g)
    settle_leavers(g)  # goodbyes, the manager's mail, open tickets handed over, channels left
    step(3)
    if g.has("calendar"):
        build_calendar(g)
    step(4)
    if g.has("docs") or g.has("sheets"):
        build_documents(g)
        build_incidents(g)
        build_releases(g)
        build_budget_cycles(g)
        build_office_files(g)
    step(5)
    return g.rows
