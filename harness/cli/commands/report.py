"""bench's report commands: report (tables, figures, HTML), export (Parquet, inspect_ai logs) and compare."""

from __future__ import annotations

import gc
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Literal

import typer

from harness.cli.common import echo, relative
from harness.errors import UserInputError
from harness.terminal import width

ReportGrouping = Literal["mode", "scenario", "model", "policy", "run"]  # reports.metrics.GROUPINGS (a test: equal)

REPORT_FORMATS = "md,csv,latex,html"  # reports.report.FORMATS (a test keeps them equal)
FigureVenue = Literal["ieee", "acm", "article"]  # reports.figures.VENUES (a test keeps them equal)


def report_command(
    dirs: Annotated[
        list[Path],
        typer.Argument(metavar="DIR", help="Run folders (or traces.jsonl files) to report on.", show_default=False),
    ],
    formats: Annotated[
        str, typer.Option("--format", metavar=REPORT_FORMATS, help="Which of these to write (comma-separated).")
    ] = REPORT_FORMATS,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Output folder (default: the first DIR's report/).")
    ] = None,
    by: Annotated[
        ReportGrouping,
        typer.Option(
            help="Main table and figures per mode, scenario (mode x scenario), model (model x mode), policy "
            "(policy x mode) or run (run folder x mode); the gateway policy is always a key."
        ),
    ] = "mode",
    prices: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="YAML or JSON: per model, USD per 1M input, output and cached input tokens (docs/metrics.md: prices).",
        ),
    ] = None,
    figure_venue: Annotated[
        FigureVenue,
        typer.Option(help="Whose text and column widths the figures are drawn at (docs/metrics.md: figures)."),
    ] = "ieee",
    figure_titles: Annotated[
        bool,
        typer.Option(
            "--figure-titles/--no-figure-titles", help="Title each figure (leave them out where a caption says it)."
        ),
    ] = True,
) -> None:
    """Tables, figures and a self-contained HTML page from the traces of one or more runs."""
    from reports.report_formats import default_out, parse_formats
    from reports.run_links import pages_meanwhile

    wanted = parse_formats(formats)
    price_table = None
    if prices is not None:  # checked before anything is written
        from reports.prices import load_prices

        price_table = load_prices(prices)
    target = out if out is not None else default_out(dirs)
    # The run pages first, in a process of their own that reads the traces itself: it writes them while this one
    # imports pandas and matplotlib and loads the traces (docs/development.md: speed of bench report).
    with pages_meanwhile(dirs, target) if "html" in wanted else nullcontext() as pages:
        from reports.report import build_report, parse_grouping
        from reports.tables import to_terminal

        result = build_report(
            dirs, target, wanted, parse_grouping(by), price_table, venue=figure_venue, figure_titles=figure_titles,
            pages=pages,
        )  # fmt: skip
    for line in result.warnings:
        echo(f"warning: {line}", err=True)
    for line in result.header:
        echo(f"note: {line}")
    echo(to_terminal(result.main, width()))
    echo(
        f"\n{result.lines} lines read, {len(result.skipped)} skipped; {result.runs} runs "
        f"({result.incomplete} incomplete); report in {result.out}"
    )
    # The process ends here and its memory goes with it: frozen, the report's objects are left out of the garbage
    # collection Python makes at exit, which walked them all (about 0.3 s of the recording's report).
    gc.freeze()


def export_command(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="A run folder (or its traces.jsonl).", show_default=False)
    ],
    export_format: Annotated[
        Literal["parquet", "inspect"],
        typer.Option(
            "--format",
            help="parquet: runs.parquet and events.parquet; inspect: one inspect_ai log per model, mode and policy "
            "(needs the [inspect] extra).",
        ),
    ] = "parquet",
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="Output folder (default: DIR/export/).")] = None,
) -> None:
    """Runs and events as Parquet tables, or inspect_ai eval logs for inspect view (docs/running.md)."""
    if export_format == "parquet":
        from reports.export_parquet import export_parquet

        tables = export_parquet(folder, out)
        files, warnings, where = tables.files, tables.warnings, tables.out
        said = f"{tables.runs} runs, {tables.events} events"
    else:
        from reports.export_inspect import export_inspect

        logs = export_inspect(folder, out)
        files, warnings, where = logs.files, logs.warnings, logs.out
        said = f"{logs.runs} runs in {len(logs.files)} logs"
    for line in warnings:
        echo(f"warning: {line}", err=True)
    for file in files:
        echo(relative(file))
    echo(f"{said} exported to {relative(where)}")
    if export_format == "inspect":
        echo(f"open them with: inspect view --log-dir {relative(where)}")


def compare_command(
    dir_a: Annotated[Path, typer.Argument(metavar="DIR_A", help="The baseline run folder (A).", show_default=False)],
    dir_b: Annotated[Path, typer.Argument(metavar="DIR_B", help="The run folder to check (B).", show_default=False)],
    by: Annotated[
        ReportGrouping, typer.Option(help="Compare per mode, scenario, model, policy or run (as bench report --by).")
    ] = "mode",
    alpha: Annotated[
        float | None,
        typer.Option(
            help="Flag a change only if its one-sided exact test (McNemar on twin runs when both sides recorded the "
            "same cells, else Fisher), Holm-corrected over every test, gives p < ALPHA, and print p (for sampled "
            "live runs; default: flag any change)."
        ),
    ] = None,
    formats: Annotated[
        str | None, typer.Option("--format", metavar="md,csv,latex", help="With --out: which to write (default all).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Folder to write the comparison to (compare.md, CSV, LaTeX).")
    ] = None,
) -> None:
    """Verdicts first, then the metrics that changed.

    Exits 1 if stop-correctness dropped or unauthorized side effects rose."""
    from reports.compare import COMPARE_FORMATS, compare, parse_compare_formats, write_comparison
    from reports.report import parse_grouping
    from reports.tables import to_terminal

    if alpha is not None and not 0 < alpha < 1:
        raise UserInputError(f"--alpha must be between 0 and 1, got {alpha}")
    if formats is not None and out is None:
        raise UserInputError("--format needs --out: the folder the comparison is written to")
    chosen = parse_compare_formats(formats) if formats is not None else list(COMPARE_FORMATS)
    comparison = compare([dir_a], [dir_b], parse_grouping(by), alpha)
    for line in comparison.warnings:
        echo(f"warning: {line}", err=True)
    for line in comparison.sides:
        echo(line)
    echo()
    echo(to_terminal(comparison.verdicts(), width()))
    changed = comparison.table()
    echo()
    echo(to_terminal(changed, width()) if changed.rows else "no metric changed")
    if alpha is not None:
        echo()
        echo(comparison.significance)
    if out is not None:
        written = write_comparison(comparison, out, chosen)
        echo()
        echo(f"comparison written to {out} ({len(written)} files)")
    if comparison.regressed:
        echo(err=True)  # bench's own blank line: each echo on stderr is one line, so a newline inside is escaped
        echo(f"{len(comparison.regressed)} regression(s)", err=True)
        raise typer.Exit(1)
