"""``companysim view`` and ``companysim export``: look at recorded episodes, or turn them into a dataset.

``view`` renders traces into a report directory (``index.html``, self-contained, and the plots as PNG and SVG
files); ``export --parquet`` writes one row per episode. Both check every input before writing anything and
write under a temporary name, so a bad trace or an unwritable directory leaves the disk as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sim.cli.common import DataDir, UsageError, console, output_file
from worlds.store import WorldStore

Traces = Annotated[list[Path], typer.Argument(help="Trace files (JSONL from run/campaign --trace).")]


def register(app: typer.Typer) -> None:
    """Add ``view`` and ``export`` to the application."""
    app.command("view")(view)
    app.command("export")(export)


def _check_traces(traces: list[Path]) -> None:
    for path in traces:
        if path.is_dir():
            raise UsageError(f"{path} is a directory; expected a trace file")
        if not path.is_file():
            raise UsageError(f"no trace file at {path}")


def view(
    traces: Traces,
    out: Annotated[
        Path | None, typer.Option(help="Report directory (default: <first trace>-report beside the first trace).")
    ] = None,
    replay: Annotated[
        bool, typer.Option("--replay/--no-replay", help="Replay episodes for state diffs and coworker actions.")
    ] = True,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing report directory.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Render traces as a static HTML report: timelines, scores with evidence, state diffs, comparisons, plots."""
    from sim.view import report, report_files
    from sim.view.output import check_report_dir, write_dir

    _check_traces(traces)
    target = out if out is not None else traces[0].with_name(f"{traces[0].stem}-report")
    check_report_dir(target, overwrite=overwrite, names=report_files())
    done = report(traces, replay=replay, store=WorldStore(data_dir) if replay else None)
    write_dir(target, done.files)
    console.print(
        f"{len(done.episodes)} episode(s), {done.compared} comparison(s): {target / 'index.html'}", markup=False
    )


def export(
    traces: Traces,
    parquet: Annotated[Path, typer.Option("--parquet", help="The Parquet file to write (one row per episode).")],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing file.")] = False,
) -> None:
    """Write the episodes of traces as a dataset: one Parquet row per episode, steps as a nested column."""
    from sim.view.export import export as write_parquet

    _check_traces(traces)
    output_file(parquet, "--parquet", overwrite=overwrite)
    count = write_parquet(traces, parquet)
    console.print(f"wrote {count} episode(s) to {parquet}", markup=False)
