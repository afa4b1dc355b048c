"""The report stage: traces -> metrics -> tables and figures -> files (Markdown, CSV, LaTeX, HTML, PNG, SVG)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import pandas as pd

from harness.errors import UserInputError
from reports import figures as figs
from reports import tables as tbl
from reports.html import EmbeddedFigure, Section, page
from reports.load import SkippedLine, Traces, load_traces
from reports.metrics import GROUPINGS, Grouping, Metrics, classify_runs, compute, latency_samples

ReportFormat = Literal["md", "csv", "latex", "html"]
FORMATS: tuple[str, ...] = get_args(ReportFormat)
SHOWN_SKIPS = 20  # skipped lines named one by one; the rest are counted
SECTION_TITLES = {"mode": "Per mode", "scenario": "Per mode and scenario", "model": "Per model and mode"}


@dataclass(frozen=True)
class ReportResult:
    """What a report run produced: the terminal's table, the files written, and what had to be skipped."""

    out: Path
    main: tbl.Table
    files: list[Path]
    lines: int
    skipped: list[SkippedLine]
    runs: int
    incomplete: int
    warnings: list[str]


def parse_formats(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in FORMATS:
            raise UserInputError(f"--format: unknown format '{name}'; known: {', '.join(FORMATS)}")
    if not names:
        raise UserInputError(f"--format: give at least one of {', '.join(FORMATS)}")
    return list(dict.fromkeys(names))


def parse_grouping(text: str) -> Grouping:
    if text not in GROUPINGS:
        raise UserInputError(f"--by: unknown grouping '{text}'; known: {', '.join(GROUPINGS)}")
    return text  # type: ignore[return-value]


def default_out(paths: Sequence[Path]) -> Path:
    first = Path(paths[0])
    return (first if first.is_dir() else first.parent) / "report"


def skip_warnings(traces: Traces) -> list[str]:
    """One line per skipped line (the first SHOWN_SKIPS), a count for the rest, and incomplete runs."""
    lines = [f"{s.path} line {s.line}: skipped ({s.reason})" for s in traces.skipped[:SHOWN_SKIPS]]
    if traces.skipped_count > SHOWN_SKIPS:
        lines.append(f"... and {traces.skipped_count - SHOWN_SKIPS} more skipped lines")
    if traces.incomplete_runs:
        lines.append(f"{traces.incomplete_runs} run(s) have events but no summary line; they are not judged")
    return lines


def build_report(paths: Sequence[Path | str], out: Path | None = None, formats: Sequence[str] = FORMATS,
                 by: Grouping = "mode") -> ReportResult:
    """Loads the traces of ``paths``, computes every grouping's metrics and writes the report to ``out``."""
    paths = [Path(p) for p in paths]
    traces = load_traces(paths)
    if traces.events.empty:
        raise UserInputError(f"{paths[0]}: no trace events to report on ({traces.skipped_count} lines skipped)")
    out = out if out is not None else default_out(paths)
    runs = classify_runs(traces)
    groupings: list[Grouping] = ["mode"]
    if by == "scenario" or traces.events["scenario"].nunique() > 1:
        groupings.append("scenario")
    if by == "model" or traces.events["model"].nunique() > 1:
        groupings.append("model")
    metrics = {g: compute(traces, g, runs) for g in groupings}
    plots = figs.all_plots(metrics[by], latency_samples(traces, runs, by))
    rendered = [_render(p) for p in plots]
    mode_tables = [tbl.seed000_table(metrics["mode"]), tbl.spectrum_table(metrics["mode"])]
    sections = [Section("Figures", [], rendered, f"Grouped per {' x '.join(metrics[by].keys)}.")]
    for g in groupings:
        lead = mode_tables if g == "mode" else []
        sections.append(Section(SECTION_TITLES[g], [*lead, tbl.main_table(metrics[g]), *tbl.full_tables(metrics[g])], []))
    warnings = skip_warnings(traces)
    meta = _meta(traces, runs)
    incomplete = traces.incomplete_runs
    files = _write(out, formats, rendered, sections, [tbl.metrics_table(m) for m in metrics.values()], meta, warnings)
    if "html" in formats:  # every run's timeline on a page of its own, linked from report.html
        from reports.run_page import write_run_pages

        files += write_run_pages(traces, out)
    return ReportResult(out=out, main=tbl.main_table(metrics[by]), files=files, lines=traces.lines,
                        skipped=traces.skipped, runs=len(traces.runs), incomplete=incomplete,
                        warnings=warnings)


def _meta(traces: Traces, runs: pd.DataFrame) -> list[str]:
    infra = int(runs["infrastructure"].sum())
    return [f"traces: {', '.join(traces.sources)}",
            f"{len(traces.events)} events from {traces.lines} lines; {traces.skipped_count} lines skipped; "
            f"{len(traces.runs)} complete runs ({infra} ended by infrastructure errors, not judged); "
            f"{traces.incomplete_runs} incomplete runs"]


def _render(plot: figs.Plot) -> EmbeddedFigure:
    png, svg = io.BytesIO(), io.BytesIO()
    plot.figure.savefig(png, format="png", dpi=110)
    plot.figure.savefig(svg, format="svg", metadata={"Date": None})  # no date: same traces, same file
    return EmbeddedFigure(plot.name, plot.title, png.getvalue(), svg.getvalue())


def _write(out: Path, formats: Sequence[str], rendered: list[EmbeddedFigure], sections: list[Section],
           metric_tables: list[tbl.Table], meta: list[str], warnings: list[str]) -> list[Path]:
    written: list[Path] = []

    def put(path: Path, data: str | bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        written.append(path)

    for figure in rendered:
        put(out / "figures" / f"{figure.name}.png", figure.png)
        put(out / "figures" / f"{figure.name}.svg", figure.svg)
    tables = [t for s in sections for t in s.tables]
    if "csv" in formats:
        for table in [*tables, *metric_tables]:
            put(out / "tables" / f"{table.name}.csv", tbl.to_csv(table))
    if "latex" in formats:
        for table in tables:
            put(out / "tables" / f"{table.name}.tex", tbl.to_latex(table))
    if "md" in formats:
        put(out / "report.md", _markdown(sections, meta, warnings))
    if "html" in formats:
        put(out / "report.html", page("bench report", meta, warnings, sections))
    return written


def _markdown(sections: list[Section], meta: list[str], warnings: list[str]) -> str:
    parts = ["# bench report", "", *[f"{line}  " for line in meta], *[f"**warning:** {w}  " for w in warnings], ""]
    for section in sections:
        parts += [f"## {section.title}", ""]
        if section.intro:
            parts += [section.intro, ""]
        parts += [f"![{f.title}](figures/{f.name}.png)\n" for f in section.figures]
        parts += [tbl.to_markdown(t) for t in section.tables]
    return "\n".join(parts)


def metrics_for(paths: Sequence[Path | str], grouping: Grouping = "mode") -> tuple[Traces, Metrics]:
    """Loads and computes one grouping: what ``bench compare`` needs, without writing anything."""
    traces = load_traces([Path(p) for p in paths])
    if traces.events.empty:
        raise UserInputError(f"{paths[0]}: no trace events ({traces.skipped_count} lines skipped)")
    return traces, compute(traces, grouping)
