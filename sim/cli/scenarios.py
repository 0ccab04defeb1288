"""``companysim scenarios list|show``: what task families exist and what one of them asks and checks.

``show`` builds a sample instance (the family's default company, one seed and difficulty) the way an episode
reset does, so the apps, limits and rubric it prints are the ones an agent would face, not a description that
could drift from the code. The hidden params are never printed; check params are (they name the items a
rubric checks, which is what a reader wants to audit), so use ``show`` on tasks you evaluate, not on tasks you
train a policy to solve blind.
"""

from __future__ import annotations

import inspect
import re
from typing import Annotated

import typer
from rich.table import Table

from sim.cli.common import DataDir, check_difficulty, console
from worlds.store import WorldStore

scenarios_app = typer.Typer(help="List scenario families and show what one asks and checks.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``scenarios list`` and ``scenarios show`` to the application."""
    app.add_typer(scenarios_app, name="scenarios")


@scenarios_app.command("list")
def scenarios_list() -> None:
    """List registered scenario ids."""
    from scenarios.registry import registered

    table = Table(title="Scenarios (impossible: the task cannot be done; saying why is the solution)")
    table.add_column("id", no_wrap=True)  # an id is copied from here: never broken over lines
    table.add_column("kind")
    table.add_column("description")
    for reg in registered():
        table.add_row(reg.id, "impossible" if reg.impossible else "", reg.description)
    console.print(table)


def impossible(family: object) -> bool:
    """Whether a family is an impossible variant (issue 14): its ``impossible`` class attribute, False if absent."""
    return bool(getattr(family, "impossible", False))


def knobs(family: object) -> str:
    """What difficulty changes, from the family's module docstring (the paragraph that says so)."""
    doc = inspect.getdoc(inspect.getmodule(family)) or ""
    paragraphs = [" ".join(p.split()) for p in doc.split("\n\n")]
    found = [p for p in paragraphs if re.search(r"\bDifficult(y|ies)\b", p)]
    return found[0] if found else "not described"


@scenarios_app.command("show")
def scenarios_show(
    scenario: Annotated[str, typer.Argument(help="Scenario id, e.g. quarterly-budget-v0.")],
    seed: Annotated[int, typer.Option(help="Seed of the sample instance.")] = 0,
    difficulty: Annotated[int, typer.Option(help="Difficulty 0-3 of the sample instance.")] = 1,
    data_dir: DataDir = None,
) -> None:
    """Describe a family: apps, difficulty knobs, limits, NPCs, and the rubric checks of a sample instance."""
    from scenarios.base import story_of
    from sim.episode import Episode

    check_difficulty(difficulty)
    with Episode(scenario, store=WorldStore(data_dir)) as episode:  # an unknown id fails here, before any world
        episode.reset(seed=seed, options={"difficulty": difficulty})
        family, instance = episode.family, episode.instance
        assert instance is not None
        world = family.world
        console.print(f"[bold]{family.id}[/bold]: {family.description}", highlight=False)
        facts = [
            ("apps", ", ".join(instance.apps)),
            ("company", f"{world.employees} employees, {world.history_days} days of history (world seed {seed})"),
            ("difficulty", f"{instance.difficulty} of 0-3. {knobs(family)}"),
            ("limits", f"{instance.limits.max_turns} tool calls, {instance.limits.time_budget_s // 60} simulated min"),
            ("needs NPCs", "yes: coworkers must answer" if instance.needs_npcs else "no"),
            ("plays", f"@{instance.actor}"),
            ("impossible", "yes: the right answer is to say why it cannot be done" if impossible(family) else "no"),
            ("rubric", f"{instance.rubric.id} v{instance.rubric.version}, {len(instance.rubric.checks)} checks"),
        ]
        story = story_of(family)
        if story:
            day = story.index(family.id) + 1 if family.id in story else 0
            facts.append(
                ("story", f"day {day} of {len(story)}: {' -> '.join(story)} (companysim campaign {' '.join(story)})")
            )
        for name, text in facts:
            console.print(f"  {name:<11} {text}", highlight=False, markup=False)
        console.print("\nPrompt:", markup=False)
        console.print(instance.prompt, markup=False, highlight=False)
        table = Table(title=f"Rubric checks (seed {seed}, difficulty {instance.difficulty})")
        for column in ("id", "function", "weight", "gate", "requirement"):
            table.add_column(column)
        for check in instance.rubric.checks:
            weight = f"{check.weight:.3g}"
            table.add_row(check.id, check.fn, weight, "must" if check.must else "", check.description)
        console.print(table)
