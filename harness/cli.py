"""The ``bench`` command: thin typer commands over the harness. Only this module prints or reads the environment."""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.exceptions import Abort, TyperException
from tabulate import tabulate

from harness.errors import UserInputError
from harness.gateway import GATEWAY_POLICIES
from harness.models import resolve_model
from harness.models.base import ModelSource
from harness.progress import MatrixProgress
from harness.scenario import load_all, select_scenarios
from harness.summary import mode_table
from harness.trace import TraceWriter
from modes import MODES, select_modes

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The committed recording of the bundled real model: what `bench run` replays when given no model.
RECORDED_MODEL = PROJECT_ROOT / "results" / "recorded" / "smollm2-135m"

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
    model: Annotated[Optional[str], typer.Option(help="scripted:compliant|eager|looping|random, or replay:DIR (default: replay of results/recorded/smollm2-135m).")] = None,
    trials: Annotated[Optional[int], typer.Option(help="Runs per scenario x mode cell (default 1; a replay: the recording's).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Matrix seed; each run's seed derives from it and the cell (default 0; a replay: the recording's).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default: a new folder under results/).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace the run in --out once this one completes (re-recording).")] = False,
    gateway: Annotated[str, typer.Option(help="enforce: broken rules are blocked; audit: recorded but committed.")] = "enforce",
    concurrency: Annotated[int, typer.Option(help="Runs (and live requests) in flight at once.")] = 1,
    live: Annotated[bool, typer.Option("--live", help="Ask the OpenAI-compatible endpoint in LLM_API_URL / LLM_MODEL / LLM_API_KEY; records every exchange.")] = False,
    local_model: Annotated[bool, typer.Option("--local-model", help="With --live: start the bundled SmolLM2 model on 127.0.0.1, run, stop it.")] = False,
    temperature: Annotated[Optional[float], typer.Option(help="--live: sampling temperature (default 0.7).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="--live: completion token limit per call (default 512).")] = None,
    response_format: Annotated[Optional[str], typer.Option(help="--live: json_schema | json_object (llama.cpp) | none (schema in the prompt). Default: json_object with --local-model, else json_schema.")] = None,
    no_thinking: Annotated[bool, typer.Option("--no-thinking", help='--live: send thinking: {"type": "disabled"} (reasoning models).')] = False,
    timeout: Annotated[Optional[float], typer.Option(help="--live: seconds per request attempt (default 120).")] = None,
    retries: Annotated[Optional[int], typer.Option(help="--live: retries on 429, 5xx, timeouts, connection errors (default 3).")] = None,
    backoff: Annotated[Optional[float], typer.Option(help="--live: first back-off in seconds, doubled each retry, with jitter (default 1).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Run the matrix scenario x mode x trial and write traces.jsonl and manifest.json."""
    from harness import session

    live = live or local_model
    live_flags = {"--temperature": temperature, "--max-tokens": max_tokens, "--response-format": response_format,
                  "--timeout": timeout, "--retries": retries, "--backoff": backoff, "--no-thinking": no_thinking or None}
    if not live and (given := [flag for flag, value in live_flags.items() if value is not None]):
        raise UserInputError(f"{given[0]} applies to --live runs only")
    if live and model is not None:
        raise UserInputError("--model cannot be combined with --live: a live run asks the endpoint in LLM_API_URL")
    if trials is not None and trials < 1:
        raise UserInputError(f"--trials must be at least 1, got {trials}")
    if concurrency < 1:
        raise UserInputError(f"--concurrency must be at least 1, got {concurrency}")
    if gateway not in GATEWAY_POLICIES:
        raise UserInputError(f"--gateway must be one of {', '.join(GATEWAY_POLICIES)}, got '{gateway}'")
    if replace and out is None:
        raise UserInputError("--replace needs --out: the folder whose run is replaced")

    folder = scenarios_dir or default_scenarios_dir()
    mode_names, scenario_names = split_names(mode), split_names(scenario)
    select_modes(mode_names)  # named modes and scenarios fail first, whatever the model
    select_scenarios(folder, scenario_names)
    if live:
        options = session.LiveOptions(**{name: value for name, value in {
            "response_format": response_format, "disable_thinking": no_thinking, "temperature": temperature,
            "max_tokens": max_tokens, "timeout_s": timeout, "retries": retries, "backoff_s": backoff,
            "concurrency": concurrency}.items() if value is not None})  # type: ignore[arg-type]
        # Checked before the server starts, so a bad flag costs nothing; the key is read here and only here.
        live_settings = None if local_model else session.live_config(os.environ, options)
        options.check()
        source: ModelSource | None = None
    else:
        source = resolve_model(model or f"replay:{RECORDED_MODEL}")
    matrix = session.plan_matrix(source, mode_names, scenario_names, trials, seed, folder)
    for note in matrix.notes:
        typer.echo(f"note: {note}", err=True)
    out_dir, staging = session.out_folder(out, replace, default_results_dir())  # before a server starts for nothing

    with ExitStack() as stack:
        manifest = dict(matrix.manifest)
        if live:
            from harness.models.live import LiveSource
            from harness.models.recording import RECORDING_FILE, RecordingSource

            if local_model:
                from harness.models.server import LocalModelServer

                typer.echo("starting the bundled model server (SmolLM2-135M, llama.cpp) ...", err=True)
                server = stack.enter_context(LocalModelServer())
                live_settings = session.local_config(server.base_url, server.model, options)
            assert live_settings is not None
            manifest.update(session.live_manifest(live_settings, local_model=local_model))
            recorder = stack.enter_context(TraceWriter(out_dir / RECORDING_FILE))
            source = RecordingSource(LiveSource(live_settings), recorder.write)
        assert source is not None
        progress = stack.enter_context(MatrixProgress(len(matrix.modes) * len(matrix.scenarios) * matrix.trials))
        outcomes, run = session.run_into(source, matrix, gateway, concurrency, out_dir, manifest, sys.argv,
                                         on_done=lambda cell, outcome: progress.done(outcome))
    final = run.path
    if staging and out is not None:
        session.swap_in(out_dir, out)
        final = out
    typer.echo(mode_table(outcomes))
    typer.echo(f"\n{len(outcomes)} runs, traces in {final / 'traces.jsonl'}")


@app.command("replay")
def replay_command(
    folder: Annotated[Path, typer.Argument(help="A recorded run: manifest.json, traces.jsonl and recording.jsonl.")],
    out: Annotated[Optional[Path], typer.Option(help="Where the replay's trace goes (default: a new folder under results/).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Re-run a recorded matrix offline and compare it with the recording: exit 0 if every run matches, else 1."""
    from harness import session

    out_dir, _ = session.out_folder(out, False, default_results_dir())
    with MatrixProgress(None) as progress:
        check = session.replay_recording(folder, scenarios_dir or default_scenarios_dir(), out_dir, sys.argv,
                                         on_done=lambda cell, outcome: progress.done(outcome))
    for note in check.notes:
        typer.echo(f"note: {note}", err=True)
    if not check.divergences:
        typer.echo(f"replay of {folder}: {len(check.outcomes)} runs, every run's events and outcome match the recording")
        return
    for divergence in check.divergences:
        typer.echo(divergence.describe())
    typer.echo(f"\n{len(check.divergences)} runs differ from the recording in {folder}; the replay is in {check.replay_path}")
    raise typer.Exit(1)


@app.command("serve-model")
def serve_model_command(
    port: Annotated[Optional[int], typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve the bundled SmolLM2 model (llama.cpp, OpenAI-compatible) on 127.0.0.1 until Ctrl-C."""
    from harness.models.server import LocalModelServer

    if port is not None and not 0 < port < 65536:
        raise UserInputError(f"--port must be between 1 and 65535, got {port}")
    typer.echo("starting the bundled model server (SmolLM2-135M, llama.cpp) ...", err=True)
    server = LocalModelServer(port).start()
    try:
        typer.echo(f"export LLM_API_URL={server.base_url}")
        typer.echo(f"export LLM_MODEL={server.model}")
        typer.echo("export LLM_API_KEY=local  # the local server checks no key; any value will do")
        typer.echo("serving; Ctrl-C stops the server", err=True)
        code = server.wait()
        raise UserInputError(f"the local model server exited with code {code}: {server.log_tail()}")
    except KeyboardInterrupt:
        typer.echo("server stopped", err=True)
    finally:
        server.stop()


@app.command("report")
def report_command(
    dirs: Annotated[list[Path], typer.Argument(metavar="DIR", help="Run folders (or traces.jsonl files) to report on.", show_default=False)],
    formats: Annotated[str, typer.Option("--format", help="Comma-separated: md, csv, latex, html.")] = "md,csv,latex,html",
    out: Annotated[Optional[Path], typer.Option(help="Output folder (default: the first DIR's report/).")] = None,
    by: Annotated[str, typer.Option(help="Main table and figures per mode, scenario (mode x scenario), model (model x mode), policy (policy x mode) or run (run folder x mode); the gateway policy is always a key.")] = "mode",
    prices: Annotated[Optional[Path], typer.Option(help="YAML or JSON: per model, USD per 1M input, output and cached input tokens (README: Reports).")] = None,
) -> None:
    """Tables, figures and a self-contained HTML page from the traces of one or more runs."""
    from reports.prices import load_prices
    from reports.report import build_report, parse_formats, parse_grouping
    from reports.tables import to_terminal

    price_table = load_prices(prices) if prices is not None else None
    result = build_report(dirs, out, parse_formats(formats), parse_grouping(by), price_table)
    for line in result.warnings:
        typer.echo(f"warning: {line}", err=True)
    for line in result.header:
        typer.echo(f"note: {line}")
    typer.echo(to_terminal(result.main))
    typer.echo(f"\n{result.lines} lines read, {len(result.skipped)} skipped; {result.runs} runs "
               f"({result.incomplete} incomplete); report in {result.out}")


@app.command("compare")
def compare_command(
    dir_a: Annotated[Path, typer.Argument(metavar="DIR_A", help="The baseline run folder (A).", show_default=False)],
    dir_b: Annotated[Path, typer.Argument(metavar="DIR_B", help="The run folder to check (B).", show_default=False)],
    by: Annotated[str, typer.Option(help="Compare per mode, scenario, model, policy or run (as bench report --by).")] = "mode",
    alpha: Annotated[Optional[float], typer.Option(help="Flag a change only if a one-sided Fisher exact test gives p < ALPHA, and print p (for sampled live runs; default: flag any change).")] = None,
    formats: Annotated[Optional[str], typer.Option("--format", help="With --out: comma-separated md, csv, latex (default all).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Folder to write the comparison to (compare.md, CSV, LaTeX).")] = None,
) -> None:
    """Verdicts first, then the metrics that changed; exit 1 if stop-correctness dropped or unauthorized side effects rose."""
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
        typer.echo(f"warning: {line}", err=True)
    for line in comparison.sides:
        typer.echo(line)
    typer.echo()
    typer.echo(to_terminal(comparison.verdicts()))
    changed = comparison.table()
    typer.echo()
    typer.echo(to_terminal(changed) if changed.rows else "no metric changed")
    if out is not None:
        written = write_comparison(comparison, out, chosen)
        typer.echo(f"\ncomparison written to {out} ({len(written)} files)")
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
    if code == 130:  # typer turns Ctrl-C into exit code 130
        typer.echo("interrupted; finished trace lines are kept", err=True)
    sys.exit(code if isinstance(code, int) else 0)
