"""The ``bench`` command: thin typer commands over the harness. Only this module prints or reads the environment."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.exceptions import Abort, TyperException
from tabulate import tabulate

from harness.errors import UserInputError
from harness.gateway import GATEWAY_POLICIES
from harness.models import resolve_model
from harness.runner import MatrixConfig, RunFolder, cells_for, prepare_out_dir, run_matrix
from harness.scenario import load_all, select_scenarios
from harness.summary import mode_table
from harness.trace import RunOutcome

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = "scripted:compliant"

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure how agent control modes behave when rules conflict.")


def default_scenarios_dir() -> Path:
    local = Path.cwd() / "scenarios"
    return local if local.is_dir() else PROJECT_ROOT / "scenarios"


def default_results_dir() -> Path:
    return Path.cwd() / "results" if (Path.cwd() / "scenarios").is_dir() else PROJECT_ROOT / "results"


def split_names(values: list[str] | None) -> list[str]:
    """Accepts repeated flags and comma-separated lists alike."""
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]


ScenariosDir = Annotated[Optional[Path], typer.Option("--scenarios-dir", help="Folder of scenario YAML files.")]


@app.command("list")
def list_command(scenarios_dir: ScenariosDir = None) -> None:
    """List the control modes and the scenarios."""
    from modes import MODES, select_modes

    rows = [[name, MODES[name].summary] for name in select_modes(["all"])]
    typer.echo(tabulate(rows, headers=["mode", "what decides the next step"], tablefmt="simple"))
    typer.echo()
    scenarios = load_all(scenarios_dir or default_scenarios_dir())
    rows = [[s.id, s.title, s.oracle.expected_stop] for s in scenarios.values()]
    typer.echo(tabulate(rows, headers=["scenario", "title", "correct stop"], tablefmt="simple"))


@app.command("check-scenarios")
def check_scenarios_command(scenarios_dir: ScenariosDir = None) -> None:
    """Sanity-check every scenario: its reference path meets its oracle; scripted:eager fares as declared."""
    from harness.sanity import check_scenario
    from modes import select_modes

    modes = select_modes(["all"])
    reports = [check_scenario(s, modes) for s in load_all(scenarios_dir or default_scenarios_dir()).values()]
    rows = [[r.scenario, r.reference.suspended_at or r.reference.status,
             f"{sum(e.met for e in r.expectations)}/{len(r.expectations)}", "ok" if r.passed else "FAILED"]
            for r in reports]
    typer.echo(tabulate(rows, headers=["scenario", "reference stops at", "eager verdicts met", "sanity"],
                        tablefmt="simple"))
    for report in reports:
        for problem in report.problems:
            typer.echo(f"{report.scenario}: {problem}", err=True)
    if not all(report.passed for report in reports):
        raise typer.Exit(1)


@app.command("schema")
def schema_command() -> None:
    """Print the scenario format as JSON Schema (the shipped scenarios/schema/scenario.schema.json)."""
    from harness.scenario import scenario_schema_text

    typer.echo(scenario_schema_text(), nl=False)


@app.command("run")
def run_command(
    mode: Annotated[Optional[list[str]], typer.Option("--mode", "-m", help="'all' or mode names (repeat or comma-separate).")] = None,
    scenario: Annotated[Optional[list[str]], typer.Option("--scenario", "-s", help="'all' or scenario names.")] = None,
    model: Annotated[str, typer.Option(help="scripted:compliant|eager|looping|random")] = DEFAULT_MODEL,
    trials: Annotated[int, typer.Option(help="Runs per scenario x mode cell.")] = 1,
    seed: Annotated[int, typer.Option(help="Matrix seed; each run's seed derives from it and the cell.")] = 0,
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default: a new folder under results/).")] = None,
    gateway: Annotated[str, typer.Option(help="enforce: broken rules are blocked; audit: recorded but committed.")] = "enforce",
    concurrency: Annotated[int, typer.Option(help="Runs in flight at once.")] = 1,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Run the matrix scenario x mode x trial and write traces.jsonl and manifest.json."""
    from modes import select_modes

    if trials < 1:
        raise UserInputError(f"--trials must be at least 1, got {trials}")
    if concurrency < 1:
        raise UserInputError(f"--concurrency must be at least 1, got {concurrency}")
    if gateway not in GATEWAY_POLICIES:
        raise UserInputError(f"--gateway must be one of {', '.join(GATEWAY_POLICIES)}, got '{gateway}'")
    modes = select_modes(split_names(mode))
    scenarios = select_scenarios(scenarios_dir or default_scenarios_dir(), split_names(scenario))
    source = resolve_model(model)
    config = MatrixConfig(model=source, seed=seed, concurrency=concurrency, gateway_policy=gateway)  # type: ignore[arg-type]
    folder = RunFolder(
        prepare_out_dir(out, default_results_dir(), config.clock),
        {"command": sys.argv, "modes": modes, "scenarios": [s.id for s in scenarios], "model": source.label,
         "trials": trials, "seed": seed, "gateway_policy": gateway, "concurrency": concurrency},
        config.clock,
    )
    cells = cells_for(scenarios, modes, trials)
    results: list[tuple[str, RunOutcome]] = []
    status = "interrupted"
    try:
        outcomes = asyncio.run(run_matrix(cells, config, folder.writer.write,
                                          on_done=lambda cell, o: results.append((cell.mode, o))))
        status = "complete"
    finally:
        folder.close(status, [o for _, o in results])
        asyncio.run(source.aclose())
    typer.echo(mode_table((cell.mode, o) for cell, o in zip(cells, outcomes)))
    typer.echo(f"\n{len(outcomes)} runs, traces in {folder.path / 'traces.jsonl'}")


@app.command("report")
def report_command(
    dirs: Annotated[list[Path], typer.Argument(help="Run folders (or traces.jsonl files) to report on.", show_default=False)],
    formats: Annotated[str, typer.Option("--format", help="Comma-separated: md, csv, latex, html.")] = "md,csv,latex,html",
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default: the first DIR's report/).")] = None,
    by: Annotated[str, typer.Option(help="Main table and figures per mode, scenario (mode x scenario) or model (model x mode).")] = "mode",
) -> None:
    """Tables, figures and a self-contained HTML page from the traces of one or more runs."""
    from reports.report import build_report, parse_formats, parse_grouping
    from reports.tables import to_terminal

    result = build_report(dirs, out, parse_formats(formats), parse_grouping(by))
    for line in result.warnings:
        typer.echo(f"warning: {line}", err=True)
    typer.echo(to_terminal(result.main))
    typer.echo(f"\n{result.lines} lines read, {len(result.skipped)} skipped; {result.runs} runs "
               f"({result.incomplete} incomplete); report in {result.out}")


@app.command("compare")
def compare_command(
    dir_a: Annotated[Path, typer.Argument(help="The baseline run folder (A).", show_default=False)],
    dir_b: Annotated[Path, typer.Argument(help="The run folder to check (B).", show_default=False)],
    by: Annotated[str, typer.Option(help="Compare per mode, scenario (mode x scenario) or model (model x mode).")] = "mode",
) -> None:
    """The same metrics for two runs side by side; exit 1 if a stop-correct rate dropped or premature side effects rose."""
    from reports.compare import compare
    from reports.report import parse_grouping
    from reports.tables import to_terminal

    comparison = compare([dir_a], [dir_b], parse_grouping(by))
    for side, skipped in (("A", comparison.skipped_a), ("B", comparison.skipped_b)):
        if skipped:
            typer.echo(f"warning: {side}: {skipped} corrupt or truncated lines skipped", err=True)
    typer.echo(to_terminal(comparison.table()))
    typer.echo()
    typer.echo(to_terminal(comparison.verdicts()))
    if comparison.regressed:
        typer.echo(f"\n{len(comparison.regressed)} regression(s)", err=True)
        raise typer.Exit(1)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        code = app(standalone_mode=False)
    except UserInputError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except TyperException as exc:  # usage errors found by the option parser
        message = exc.format_message()
        typer.echo(message if "\n" in message else f"error: {message}", err=True)
        sys.exit(exc.exit_code)
    except Abort:
        typer.echo("interrupted; finished trace lines are kept", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
