"""The report stage: traces -> metrics -> tables and figures -> files (Markdown, CSV, LaTeX, HTML, PNG, PDF)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from harness.errors import UserInputError
from reports import figures as figs
from reports import tables as tbl
from reports.decision_kinds import decision_tallies
from reports.figure_files import Drawn, FigureInputs, Rendering
from reports.html import EmbeddedFigure, Section, page
from reports.latex import latex_files
from reports.load import SkippedLine, Traces, clean_text, load_traces
from reports.metrics import GROUP_KEYS, GROUPINGS, Grouping, Metrics, compute, latency_samples, prepare
from reports.paired import paired_table
from reports.prices import PriceTable
from reports.provenance import provenance_warnings
from reports.report_formats import FORMATS, default_out
from reports.report_formats import parse_formats as parse_formats  # the CLI's and the API's check of --format
from reports.run_links import RunPages, pages_meanwhile
from reports.runs_explorer import runs_table
from reports.spectrum import spectrum_tables
from reports.workers import Workers
from reports.writing import write_whole

SHOWN_SKIPS = 20  # skipped lines named one by one; the rest are counted
SECTION_TITLES = {
    "mode": "Per mode",
    "scenario": "Per mode and scenario",
    "model": "Per model and mode",
    "policy": "Per gateway policy and mode",
    "run": "Per run folder and mode",
}
# The event columns the metrics (reports/metrics.py: classify_runs, looping_runs, prepare) and the groupings read;
# the loader keeps only these, so ten million events report within 2 GiB (docs/scale.md: reports at scale).
EVENT_COLUMNS_READ = (
    "source", "run_id", "scenario", "mode", "model", "gateway_policy", "seq", "decision_maker", "kind", "action",
    "latency_ms", "error_kind", "result",
)  # fmt: skip


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
    header: list[str]  # printed above the terminal table: unfinished runs, schema, prices


def parse_grouping(text: str) -> Grouping:
    if text not in GROUPINGS:
        raise UserInputError(f"--by: unknown grouping '{text}'; known: {', '.join(GROUPINGS)}")
    return text  # type: ignore[return-value]


def skip_warnings(traces: Traces) -> list[str]:
    """One line per skipped line (the first SHOWN_SKIPS), a count for the rest, incomplete runs, load warnings."""
    lines = [f"{s.path} line {s.line}: skipped ({s.reason})" for s in traces.skipped[:SHOWN_SKIPS]]
    if traces.skipped_count > SHOWN_SKIPS:
        lines.append(f"... and {traces.skipped_count - SHOWN_SKIPS} more skipped lines")
    lines += traces.warnings
    lines += provenance_warnings([(info.folder, [info]) for info in traces.run_info])  # folders made differently
    if traces.incomplete_runs:
        lines.append(f"{traces.incomplete_runs} run(s) have events but no valid last summary; they are not judged")
    return lines


def status_lines(traces: Traces) -> list[str]:
    """The report's header facts a reader must not miss: runs that did not finish, old schemas, odd manifests."""
    lines = [
        f"{clean_text(info.folder)}: manifest status '{info.status}': the run did not finish; its numbers "
        "cover only the runs it wrote"
        for info in traces.run_info
        if info.unfinished
    ]
    if traces.schema_version is not None and traces.schema_version < 2:
        lines.append(
            f"trace schema {traces.schema_version}: written before stop verdicts, unauthorized side effects "
            "and blocked reasons were recorded; those columns are blank (re-run or re-record to fill them)"
        )
    if traces.schema_version == 2:
        lines.append(OLDER_VERDICTS)
    return lines


# What a schema 2 trace's numbers mean next to today's (harness/records/trace.py: SCHEMA_VERSION).
OLDER_VERDICTS = (
    "trace schema 2: judged by that schema's rules: its late includes runs that finished without their gate's "
    "approval and attempted nothing the gate guards (skipped approval since schema 3), and its wait marker, went "
    "on counts runs that suspended at the wait and were then decided; re-run or re-record to judge them anew"
)


def trials_text(runs: pd.DataFrame) -> str:
    """How many trials each cell (scenario x mode x model x policy) holds: '5 trials' or '3-5 trials'."""
    if runs.empty:
        return "0 trials"
    sizes = runs.groupby(["scenario", "mode", "model", "gateway_policy"], observed=True).size()
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low} trial{'s' if low != 1 else ''}" if low == high else f"{low}-{high} trials"


def figure_context(runs: pd.DataFrame, metrics: Metrics, titled: bool = True) -> figs.Context:
    models = sorted(runs["model"].astype(str).unique()) if not runs.empty else []
    order = {"enforce": 0, "audit": 1}
    policies = (
        sorted(runs["gateway_policy"].astype(str).unique(), key=lambda p: (order.get(p, 2), p))
        if not runs.empty
        else []
    )
    judged = sum(g.judged for g in metrics.groups)
    return figs.Context(tuple(models), tuple(policies), trials_text(runs), judged, titled)


def build_report(
    paths: Sequence[Path | str],
    out: Path | None = None,
    formats: Sequence[str] = FORMATS,
    by: Grouping = "mode",
    prices: PriceTable | None = None,
    venue: str = figs.VENUE,
    figure_titles: bool = True,
    pages: Callable[[], RunPages] | None = None,
) -> ReportResult:
    """Loads the traces of ``paths``, computes every grouping's metrics and writes the report to ``out``: the
    figures and run pages made by worker processes (reports.workers) while the tables are written here.

    ``venue``: whose text and column widths the figures are drawn at (reports.figures.VENUES); ``figure_titles``:
    False leaves the figures untitled, for a paper whose captions say it. ``pages``: the run pages already started
    for ``out`` (reports.run_links.pages_meanwhile: the CLI starts them before it imports this module); without
    them, and with the html format, they are started here, before the traces are loaded."""
    folders = [Path(p) for p in paths]
    out = out if out is not None else default_out(folders)
    with ExitStack() as started:
        if pages is None and "html" in formats:  # every run's timeline on a page of its own: the longest job, first
            pages = started.enter_context(pages_meanwhile(folders, out))
        return _report(folders, out, formats, by, prices, venue, figure_titles, pages)


def _report(
    folders: list[Path],
    out: Path,
    formats: Sequence[str],
    by: Grouping,
    prices: PriceTable | None,
    venue: str,
    figure_titles: bool,
    pages: Callable[[], RunPages] | None,
) -> ReportResult:
    traces = load_traces(folders, columns=EVENT_COLUMNS_READ, outcome_lists=False)
    if traces.events.empty:
        raise UserInputError(f"{folders[0]}: no trace events to report on ({traces.skipped_count} lines skipped)")
    with Workers() as workers:  # the figures made meanwhile, in worker processes
        prepared = prepare(traces, prices)
        runs = prepared.runs
        events = traces.events
        by, groupings = _groupings(by, events)
        # A column of one bar per mode x scenario is unreadable: those cells become a heatmap, the rest per mode.
        shown: Grouping = "mode" if by == "scenario" else by
        drawn_from: list[Grouping] = [shown, "scenario"] if by == "scenario" else [shown]
        metrics = {g: compute(traces, g, prepared=prepared) for g in drawn_from}  # the figures' first: drawn meanwhile
        context = figure_context(runs, metrics[shown], figure_titles)
        cells = metrics["scenario"] if by == "scenario" else None
        decisions = decision_tallies(events, GROUP_KEYS[shown])  # who decided, kind by kind
        inputs = FigureInputs(metrics[shown], latency_samples(prepared, shown), context, cells, decisions, venue)
        rendering = Rendering(inputs, workers)
        metrics = {g: metrics[g] if g in metrics else compute(traces, g, prepared=prepared) for g in groupings}
        stories = metrics["scenario"] if "scenario" in metrics else compute(traces, "scenario", prepared=prepared)
        mode_tables = [tbl.seed000_table(metrics["mode"]), *spectrum_tables(stories)]
        intro = f"Grouped per {tbl.per(metrics[shown])}"
        if by == "scenario":
            intro += "; stop-correctness per mode x scenario"
        # The headline first, then the figures, then every grouping's tables (its headline only where not shown yet).
        sections = [Section("Summary", [tbl.main_table(metrics[by])], [])]
        models = events["model"].nunique()
        for g in groupings:
            lead = mode_tables if g == "mode" else []
            main = [] if g == by else [tbl.main_table(metrics[g])]
            paired = [paired_table(runs)] if g == "mode" else []  # modes on matched cells: the per-mode section's last
            # Several models in a grouping without them: every table says its rows pool them (paired: per model already)
            pooled = f"pooled over {models} models" if models > 1 and "model" not in GROUP_KEYS[g] else ""
            tables = [*main, *lead, tbl.violations_table(metrics[g]), *tbl.full_tables(metrics[g])]
            if pooled:
                tables = [replace(t, title=f"{t.title}, {pooled}") for t in tables]
            sections.append(Section(SECTION_TITLES[g] + (f", {pooled}" if pooled else ""), [*tables, *paired], []))
        warnings = skip_warnings(traces)
        header = status_lines(traces)
        meta = [*_meta(traces, runs, prices), *header]
        files = _write_tables(out, formats, sections, [tbl.metrics_table(m) for m in metrics.values()], context.line())
        drawn = rendering.result()
        files += _write_figures(out, drawn)
        rendered = [EmbeddedFigure(d.name, d.title, d.png, d.pdf) for d in drawn]
        sections.insert(1, Section("Figures", [], rendered, intro + "."))
        if "md" in formats:
            write_whole(out / "report.md", _markdown(sections, meta, warnings))
            files.append(out / "report.md")
        if "html" in formats:
            run_pages = pages() if pages is not None else RunPages([], [])
            files += run_pages.written
            text = page("bench report", meta, warnings, sections, runs_table(runs))
            total = len(traces.runs) + traces.incomplete_runs  # past MAX_RUN_PAGES, a note instead of pages
            write_whole(out / "report.html", run_pages.link(text, total))  # the run ids in its tables open their pages
            files.append(out / "report.html")
    return ReportResult(
        out=out,
        main=tbl.main_table(metrics[by]),
        files=files,
        lines=traces.lines,
        skipped=traces.skipped,
        runs=len(traces.runs),
        incomplete=traces.incomplete_runs,
        warnings=warnings,
        header=header,
    )


def _groupings(by: Grouping, events: pd.DataFrame) -> tuple[Grouping, list[Grouping]]:
    """The grouping the headline and figures use (per model and mode when there are several models) and every
    grouping the report has a section for."""
    if by == "mode" and events["model"].nunique() > 1:
        by = "model"
    groupings: list[Grouping] = ["mode"]
    if by == "scenario" or events["scenario"].nunique() > 1:
        groupings.append("scenario")
    if by == "model" or events["model"].nunique() > 1:
        groupings.append("model")
    if by == "policy":
        groupings.append("policy")
    if by == "run" or events["source"].nunique() > 1:
        groupings.append("run")
    return by, groupings


def _meta(traces: Traces, runs: pd.DataFrame, prices: PriceTable | None) -> list[str]:
    infra = int(runs["infrastructure"].sum())
    lines = [
        f"traces: {', '.join(clean_text(s) for s in traces.sources)} (schema {traces.schema_version})",
        f"{len(traces.events)} events from {traces.lines} lines; {traces.skipped_count} lines skipped; "
        f"{len(traces.runs)} complete runs ({infra} not judged: infrastructure); "
        f"{traces.incomplete_runs} incomplete runs",
    ]
    for info in traces.run_info:
        facts = [
            f"status {info.status}" if info.status else "",
            _models_text(info.models) if info.models else "",
            f"source {info.model_source}" if info.model_source else "",
            f"gateway {info.gateway_policy}" if info.gateway_policy else "",
            f"{info.trials} trials" if info.trials else "",
            f"label {info.label}" if info.label else "",
        ]
        lines.append(f"run {clean_text(info.folder)}: " + ", ".join(clean_text(f) for f in facts if f))
    if prices is not None:
        lines.append(f"prices: {len(prices)} model(s) priced (USD per 1M tokens)")
    return lines


def _models_text(models: Sequence[str]) -> str:
    return f"model {models[0]}" if len(models) == 1 else f"{len(models)} models: {', '.join(models)}"


def _write_figures(out: Path, drawn: list[Drawn]) -> list[Path]:
    written = []
    for figure in drawn:
        for name, data in (
            (f"{figure.name}.png", figure.png),
            (f"{figure.name}.pdf", figure.pdf),
            (f"{figure.name}{figs.COLUMN.suffix}.pdf", figure.column_pdf),
        ):
            write_whole(out / "figures" / name, data)
            written.append(out / "figures" / name)
    return written


def _write_tables(
    out: Path, formats: Sequence[str], sections: list[Section], metric_tables: list[tbl.Table], context: str
) -> list[Path]:
    written: list[Path] = []

    def put(path: Path, data: str) -> None:
        write_whole(path, data)
        written.append(path)

    tables = [t for s in sections for t in s.tables]
    if "csv" in formats:
        for table in [*tables, *metric_tables]:
            put(out / "tables" / f"{table.name}.csv", tbl.to_csv(table))
    if "latex" in formats:
        for table in tables:  # NAME.tex full width (table*, or a longtable when long), NAME_narrow.tex one column
            for name, text in latex_files(table, context).items():
                put(out / "tables" / name, text)
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
    traces = load_traces([Path(p) for p in paths], columns=EVENT_COLUMNS_READ)
    if traces.events.empty:
        raise UserInputError(f"{paths[0]}: no trace events ({traces.skipped_count} lines skipped)")
    return traces, compute(traces, grouping)
