"""The ``bench`` command: thin typer commands over the harness. Only this module prints or reads the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer.exceptions import Abort, TyperException
from tabulate import tabulate

from harness.errors import UserInputError
from harness.exit_status import BAD_INPUT
from harness.progress import MatrixProgress
from harness.terminal import printable

if TYPE_CHECKING:
    from harness.checkpoint import Decision
    from harness.runner import Cell
    from harness.trace import RunOutcome

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure how agent control modes behave when rules conflict.")


def _echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Everything bench prints goes through here: model answers, endpoint errors and file text are data, and an
    escape sequence in them must not retitle the terminal or rewrite what was printed. On stderr, one line each:
    a newline inside a message must not forge the next one."""
    typer.echo(printable(text, one_line=err), err=err, nl=nl)


ScenariosDir = Annotated[Optional[Path], typer.Option("--scenarios-dir", help="Folder of scenario YAML files.")]


@app.command("list")
def list_command(scenarios_dir: ScenariosDir = None) -> None:
    """List the control modes (who decides the next step, who can stop a run) and the scenarios."""
    from harness.run import catalog

    found = catalog(scenarios_dir)
    _echo(tabulate(found.modes, headers=["mode", "what it does", "who decides the next step",
                                              "who can really stop the run"], tablefmt="simple"))
    _echo()
    _echo(tabulate(found.scenarios, headers=["scenario", "title", "correct stop"], tablefmt="simple"))


@app.command("check-scenarios")
def check_scenarios_command(scenarios_dir: ScenariosDir = None) -> None:
    """Sanity-check every scenario: its reference path meets its oracle; scripted:eager fares as declared."""
    from harness.run import check_scenarios

    reports = check_scenarios(scenarios_dir)
    rows = [[r.scenario, r.reference.suspended_at or r.reference.status,
             f"{sum(e.met for e in r.expectations)}/{len(r.expectations)}", "ok" if r.passed else "FAILED"]
            for r in reports]
    _echo(tabulate(rows, headers=["scenario", "reference stops at", "eager verdicts met", "sanity"],
                        tablefmt="simple"))
    for report in reports:
        for problem in report.problems:
            _echo(f"{report.scenario}: {problem}", err=True)
    if not all(report.passed for report in reports):
        raise typer.Exit(1)


@app.command("schema")
def schema_command() -> None:
    """Print the scenario format as JSON Schema (the shipped scenarios/schema/scenario.schema.json)."""
    from harness.run import scenario_schema_text

    _echo(scenario_schema_text(), nl=False)


@app.command("run")
def run_command(
    mode: Annotated[Optional[list[str]], typer.Option("--mode", "-m", help="'all' or mode names (repeat or comma-separate).")] = None,
    scenario: Annotated[Optional[list[str]], typer.Option("--scenario", "-s", help="'all' or scenario names.")] = None,
    model: Annotated[Optional[str], typer.Option(help="scripted:compliant|eager|looping|random, replay:DIR, live (LLM_API_URL, LLM_MODEL, LLM_API_KEY) or local (the bundled SmolLM2-135M). Default: replay of results/recorded/smollm2-135m.")] = None,
    trials: Annotated[Optional[int], typer.Option(help="Runs per scenario x mode cell (default 1; a replay: the recording's).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Matrix seed; each run's seed derives from it and the cell (default 0; a replay: the recording's).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Output folder, new or empty (default: a new folder under results/).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Replace the bench run in --out once this one completes (re-recording).")] = False,
    gateway: Annotated[Optional[str], typer.Option(help="enforce: broken rules are blocked; audit: recorded but committed (default enforce; a replay: the recording's).")] = None,
    concurrency: Annotated[int, typer.Option(help="Runs (and live requests) in flight at once.")] = 1,
    live: Annotated[bool, typer.Option("--live", help="Same as --model live.")] = False,
    local_model: Annotated[bool, typer.Option("--local-model", help="Same as --model local.")] = False,
    temperature: Annotated[Optional[float], typer.Option(help="Live: sampling temperature (default 0.7).")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Live: completion token limit per call (default 512).")] = None,
    response_format: Annotated[Optional[str], typer.Option(help="Live: json_schema | json_object (llama.cpp) | none (schema in the prompt). Default: json_object for local, else json_schema.")] = None,
    no_thinking: Annotated[bool, typer.Option("--no-thinking", help='Live: send thinking: {"type": "disabled"} (reasoning models).')] = False,
    timeout: Annotated[Optional[float], typer.Option(help="Live: seconds per request attempt (default 120).")] = None,
    retries: Annotated[Optional[int], typer.Option(help="Live: retries on 429, 5xx, timeouts, connection errors (default 3).")] = None,
    backoff: Annotated[Optional[float], typer.Option(help="Live: first back-off in seconds, doubled each retry, with jitter (default 1).")] = None,
    provider: Annotated[Optional[str], typer.Option(help="Live: auto|openai|azure|vllm|ollama|llamacpp|deepseek|dashscope|gemini|generic (default auto: from the URL and /models; README: provider profiles).")] = None,
    strict_schema: Annotated[bool, typer.Option("--strict-schema", help="Live: OpenAI strict structured outputs; names each scenario argument that cannot be strict.")] = False,
    max_response_bytes: Annotated[Optional[int], typer.Option(help="Live: read at most this many bytes of an answer (default 4 MiB); past it the answer is a parse error.")] = None,
    resume: Annotated[Optional[Path], typer.Option("--resume", metavar="DIR", help="Continue a matrix that was cut short (killed or interrupted): only its cells without a final summary run.")] = None,
    approver: Annotated[Optional[str], typer.Option(help="scripted:approve|reject|approve_after_revision|random decides at every gate, so each story runs to its end (default: runs suspend at gates; decide later with bench resume).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Run the matrix scenario x mode x trial and write traces.jsonl and manifest.json."""
    from harness.run import RunSpec, run
    from harness.summary import RunTally

    live_options = {name: value for name, value in {
        "response_format": response_format, "disable_thinking": no_thinking or None, "temperature": temperature,
        "max_tokens": max_tokens, "timeout_s": timeout, "retries": retries, "backoff_s": backoff,
        "provider": provider, "strict_schema": strict_schema or None, "max_response_bytes": max_response_bytes}.items()
        if value is not None}
    given = {name: value for name, value in {
        "modes": mode, "scenarios": scenario, "scenarios_dir": scenarios_dir,
        "model": _model_alias(model, live, local_model), "live": live_options or None, "trials": trials, "seed": seed,
        "gateway": gateway, "out": out, "replace": replace or None, "approver": approver, "resume": resume}.items()
        if value is not None}
    spec = RunSpec.build(env=os.environ,  # the key is read from the environment here, and only here
                         concurrency=concurrency, command=sys.argv, **given)
    tally = RunTally()

    def done(cell: Cell, outcome: RunOutcome) -> None:
        progress.done(outcome)
        tally.add(cell, outcome)

    with MatrixProgress() as progress:
        result = run(spec, on_done=done, notify=_note, on_plan=lambda matrix: progress.plan(matrix.size))
    _echo(tally.table())
    _echo(f"\n{result.manifest.runs} runs, traces in {result.traces}")
    _exit_with(result.exit_status())


def _model_alias(model: str | None, live: bool, local_model: bool) -> str | None:
    """--live and --local-model are the old spellings of --model live and --model local."""
    alias = "local" if local_model else "live" if live else None
    if alias is not None and model is not None and model != alias:
        raise UserInputError(f"--model {model} cannot be combined with --{'local-model' if local_model else 'live'}")
    return alias or model


def _note(line: str) -> None:
    _echo(line, err=True)


def _exit_with(status: tuple[int, str] | None) -> None:
    """Prints the line that goes with how the runs ended (a signal, nothing judged, mostly not judged) and exits
    with its code; a warning (code 0) only prints."""
    if status is None:
        return
    code, line = status
    _echo(line, err=True)
    if code:
        raise typer.Exit(code)


@app.command("replay")
def replay_command(
    folder: Annotated[Path, typer.Argument(help="A recorded run: manifest.json, traces.jsonl and recording.jsonl.")],
    out: Annotated[Optional[Path], typer.Option(help="Where the replay's trace goes (default: a new folder under results/).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Re-run a recorded matrix offline and compare it with the recording: exit 0 if every run matches, else 1."""
    from harness.run import replay

    with MatrixProgress() as progress:
        check = replay(folder, scenarios_dir=scenarios_dir, out=out, notify=_note,
                       on_done=lambda cell, outcome: progress.done(outcome),
                       on_plan=lambda matrix: progress.plan(matrix.size))
    for note in check.notes:
        _note(f"note: {note}")
    status = check.result.exit_status()
    if check.result.interrupted:
        _exit_with(status)
    runs = check.result.manifest.runs
    if not check.divergences:
        _echo(f"replay of {folder}: {runs} runs, every run's events and outcome match the recording; "
              f"the replay is in {check.result.folder}")
        _exit_with(status)  # a faithful replay of runs that all failed in the plumbing still measured nothing
        return
    for divergence in check.divergences:
        _echo(divergence.describe())
    _echo(f"\n{len(check.divergences)} runs differ from the recording in {folder}; "
          f"the replay is in {check.result.folder}")
    if status is not None:
        _echo(status[1].replace("error: ", "note: ", 1), err=True)  # drift decides the exit code
    raise typer.Exit(1)


@app.command("probe")
def probe_command(
    model: Annotated[str, typer.Option(help="live (LLM_API_URL, LLM_MODEL, LLM_API_KEY) or local (the bundled model, started then stopped).")] = "live",
    provider: Annotated[Optional[str], typer.Option(help="auto|openai|azure|vllm|ollama|llamacpp|deepseek|dashscope|gemini|generic (default auto).")] = None,
    local_model: Annotated[bool, typer.Option("--local-model", help="Same as --model local.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 60.0,
) -> None:
    """Ask an endpoint one tiny request per capability and print what it supports; no matrix is run."""
    from harness.run import probe_endpoint

    description, rows = probe_endpoint("local" if local_model else model, env=os.environ, provider=provider,
                                       timeout_s=timeout, notify=_note)
    _echo(description)
    _echo(tabulate([[r.capability, r.verdict, r.detail] for r in rows],
                        headers=["capability", "answer", "detail"], tablefmt="simple"))
    if not any(r.verdict == "yes" for r in rows):
        _echo("error: the endpoint accepted none of the probes", err=True)
        raise typer.Exit(1)


@app.command("resume")
def resume_command(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The run folder that holds the suspended run.", show_default=False)],
    run: Annotated[str, typer.Option("--run", help="The run id (bench runs DIR lists the suspended ones).", show_default=False)],
    approve: Annotated[bool, typer.Option("--approve", help="Approve the pending gate: the run goes on.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject it: the run ends, nothing gated commits.")] = False,
    revise: Annotated[bool, typer.Option("--revise", help="Send the work back with --note (a plan to its planner); the run stops there again.")] = False,
    note: Annotated[str, typer.Option(help="Why; kept in the human event.")] = "",
    who: Annotated[Optional[str], typer.Option("--as", help="Who decides (default: your user name).")] = None,
    gate: Annotated[Optional[str], typer.Option(help="The gate you decide on; refused if the run waits elsewhere.")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Continue one suspended run with a person's decision, in this process, with the same model source."""
    import getpass

    from harness.run import resume

    if approve + reject + revise != 1:
        raise UserInputError("give exactly one of --approve, --reject and --revise")
    if revise and not note.strip():
        raise UserInputError("--revise needs --note: what to change")
    decision: Decision = "approve" if approve else "reject" if reject else "revise"
    result = resume(folder, run, decision, who=who or _user_name(getpass), note=note,
                    gate=gate, env=os.environ, scenarios_dir=scenarios_dir, notify=_note)
    outcome = result.outcome
    where = f" at {outcome.suspended_at}" if outcome.suspended_at else ""
    _echo(f"run {run}: {outcome.status}{where}; stop verdict {outcome.stop_verdict}; "
          f"{outcome.resumes} decision(s) so far; trace in {result.traces}")
    _exit_with(result.exit_status())


def _user_name(getpass: Any) -> str:
    try:
        return str(getpass.getuser())
    except (KeyError, OSError, ImportError):  # a container user with no name: the decision still needs a who
        raise UserInputError("--as: your user name cannot be found; say who decides with --as NAME") from None


@app.command("serve-model")
def serve_model_command(
    port: Annotated[Optional[int], typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve the bundled SmolLM2 model (llama.cpp, OpenAI-compatible) on 127.0.0.1 until Ctrl-C or SIGTERM."""
    from harness.run import StopRequest, model_server

    if port is not None and not 0 < port < 65536:
        raise UserInputError(f"--port must be between 1 and 65535, got {port}")
    _echo("starting the bundled model server (SmolLM2-135M, llama.cpp) ...", err=True)
    stop = StopRequest()
    server = model_server(port)
    try:
        with stop.installed():  # SIGTERM unwinds like Ctrl-C, so the server is always stopped
            server.start()
            _echo(f"export LLM_API_URL={server.base_url}")
            _echo(f"export LLM_MODEL={server.model}")
            _echo("export LLM_API_KEY=local  # the local server checks no key; any value will do")
            _echo("serving; Ctrl-C stops the server", err=True)
            code = server.wait()
            raise UserInputError(f"the local model server exited with code {code}: {server.log_tail()}")
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the normal way to stop serving
        _echo("server stopped", err=True)
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
        _echo(f"warning: {line}", err=True)
    for line in result.header:
        _echo(f"note: {line}")
    _echo(to_terminal(result.main))
    _echo(f"\n{result.lines} lines read, {len(result.skipped)} skipped; {result.runs} runs "
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
        _echo(f"warning: {line}", err=True)
    for line in comparison.sides:
        _echo(line)
    _echo()
    _echo(to_terminal(comparison.verdicts()))
    changed = comparison.table()
    _echo()
    _echo(to_terminal(changed) if changed.rows else "no metric changed")
    if out is not None:
        written = write_comparison(comparison, out, chosen)
        _echo(f"\ncomparison written to {out} ({len(written)} files)")
    if comparison.regressed:
        _echo(f"\n{len(comparison.regressed)} regression(s)", err=True)
        raise typer.Exit(1)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        code = app(standalone_mode=False)
    except UserInputError as exc:
        _echo(f"error: {exc}", err=True)
        sys.exit(BAD_INPUT)
    except OSError as exc:  # a file or folder the system refused where no check named it first: still one line
        where = f"{exc.filename}: " if exc.filename is not None else ""
        _echo(f"error: {where}{exc.strerror or exc}", err=True)
        sys.exit(BAD_INPUT)
    except TyperException as exc:  # usage errors found by the option parser
        message = exc.format_message()
        if "\n" in message:  # click's usage block: its lines are bench's own, the values in them are not
            typer.echo(printable(message), err=True)
        else:
            _echo(f"error: {message}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        _echo("interrupted; finished trace lines are kept", err=True)
        sys.exit(130)
    if code == 130:  # typer turns Ctrl-C into exit code 130
        _echo("interrupted; finished trace lines are kept", err=True)
    sys.exit(code if isinstance(code, int) else 0)
