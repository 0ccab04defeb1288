"""``companysim cache show|prune|clear``: the base-world cache, its size limit and its contents."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.table import Table

from sim.cli.common import DataDir, check_count, console
from worlds.cache import clear, entries, prune
from worlds.store import WorldStore

cache_app = typer.Typer(help="The base-world cache: show it, prune it to a size, clear it.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``cache ...`` to the application."""
    app.add_typer(cache_app, name="cache")


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


@cache_app.command("show")
def show(data_dir: DataDir = None) -> None:
    """Where the cache is, its size against the limit, and its worlds by last use."""
    store = WorldStore(data_dir)
    found = entries(store.worlds_dir)
    total = sum(e.size for e in found)
    console.print(f"cache {store.worlds_dir}", markup=False)
    console.print(f"{len(found)} world(s), {_mb(total)} of {_mb(store.max_bytes)} (COMPANYSIM_CACHE_MAX_MB)")
    table = Table(title="Worlds, most recently used first")
    for col in ("world file", "size", "last used"):
        table.add_column(col)
    for e in found[:50]:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.last_used))  # allow-nondeterminism: a file date
        table.add_row(e.name, _mb(e.size), used)
    if found:
        console.print(table)


@cache_app.command("prune")
def prune_command(
    max_mb: Annotated[int | None, typer.Option(help="Size to prune to (default: the cache's limit).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Evict the least recently used worlds until the cache fits the size."""
    store = WorldStore(data_dir)
    limit = store.max_bytes if max_mb is None else check_count("--max-mb", max_mb, minimum=0) * 2**20
    removed = prune(store.worlds_dir, limit)
    console.print(f"removed {len(removed)} world(s), {_mb(sum(e.size for e in removed))}")


@cache_app.command("clear")
def clear_command(data_dir: DataDir = None) -> None:
    """Remove every cached world (they are generated again when next needed)."""
    store = WorldStore(data_dir)
    removed = clear(store.worlds_dir)
    console.print(f"removed {len(removed)} world(s), {_mb(sum(e.size for e in removed))}")
