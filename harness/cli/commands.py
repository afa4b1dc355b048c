"""The ``bench`` command: thin typer commands over the harness. Only this module prints or reads the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import typer
from typer.core import TyperCommand
from typer.exceptions import Abort, TyperException

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy, ProviderName, ResponseFormat
from harness.errors import UserInputError
from harness.matrix.exit_status import BAD_INPUT
from harness.terminal import fit_table, printable, width, wrap

if TYPE_CHECKING:
    from harness.matrix.cell_runner import Cell
    from harness.records.checkpoint import Decision
    from harness.records.trace import RunOutcome

ReportGrouping = Literal["mode", "scenario", "model", "policy", "run"]  # reports.metrics.GROUPINGS (a test: equal)
REPORT_FORMATS = "md,csv,latex,html"  # reports.report.FORMATS (a test keeps them equal)
LISTED_RUNS = 500  # bench show lists at most this many runs to choose from; a selection narrows the rest
_command_started: float | None = None  # set by main(): when this command started (None: when resume is called)


class BenchCommand(TyperCommand):
    """A command whose --help shows no type after a plain flag (typer prints <bool> for every flag, --help too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
            elif param.param_type_name == "argument" and param.nargs != 1:
                # a list argument's name already says it takes several (DIR...): no <list[Path]> after it
                cast(Any, param).display_type_rich = lambda ctx: ""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option

    def get_short_help_str(self, limit: int = 45) -> str:
        """The command's first sentence, whole: ``bench --help`` wraps it instead of cutting it at ``...``."""
        if self.short_help:
            return str(self.short_help)
        paragraph = " ".join((self.help or "").strip().split("\n\n")[0].split())
        first, dot, _ = paragraph.partition(". ")
        return first + dot.strip() if dot else paragraph

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """A registry's names ({models}, {approvers}) go into the help only when it is shown: no start pays."""
        for param in self.params:
            text = getattr(param, "help", None)
            for placeholder, names in REGISTERED_NAMES.items():
                if text and placeholder in text:
                    text = cast(Any, param).help = text.replace(placeholder, names())
        super().format_options(ctx, formatter)


def _model_choices() -> str:
    from harness.models.choice import model_choices

    return model_choices()


def _approver_choices() -> str:
    from harness.core.approvals import approver_choices

    return approver_choices()


# Help text naming what a registry holds; the registries are imported only to show that help.
REGISTERED_NAMES = {"{models}": _model_choices, "{approvers}": _approver_choices}


app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,  # plain help: rich and markdown-it cost 75 ms of every --help, and wrap flags in boxes
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Measure how agent control modes behave when rules conflict.",
)


def _echo(text: str = "", *, err: bool = False, nl: bool = True, fit: bool = True) -> None:
    """Everything bench prints goes through here: model answers, endpoint errors and file text are data, and an
    escape sequence in them must not retitle the terminal or rewrite what was printed. On stderr, one line each:
    a newline inside a message must not forge the next one. On stdout,
    a line longer than the terminal (``COLUMNS``) is wrapped unless ``fit`` is off (machine-readable output)."""
    typer.echo(printable(text, one_line=err) if err or not fit else wrap(printable(text), width()), err=err, nl=nl)


def _table(rows: Any, headers: Any) -> str:
    """Rows as a table that fits the terminal's width (``COLUMNS``): numbers right-aligned, prose wrapped."""
    cells = [["" if value is None else str(value) for value in row] for row in rows]
    numeric = [
        bool(rows) and all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        for i in range(len(headers))
    ]
    return fit_table(headers, cells, numeric, width())


def bench_command(name: str) -> Any:
    """``app.command`` with the plain help of BenchCommand: every command is registered through it."""
    return app.command(name, cls=BenchCommand)


ScenariosDir = Annotated[
    Path | None, typer.Option("--scenarios-dir", metavar="DIR", help="Folder of scenario YAML files.")
]


@bench_command("list")
def list_command(scenarios_dir: ScenariosDir = None) -> None:
    """List the control modes (who decides the next step, who can stop a run) and the scenarios."""
    from harness.matrix.catalog import catalog

    found = catalog(scenarios_dir)
    _echo(
        _table(
            found.modes,
            headers=["mode", "what it does", "who decides the next step", "who can really stop the run"],
        )
    )
    if found.runtimes:
        _echo("\nruntime adapters: modes run by a real agent framework (--mode runtimes; docs/runtimes.md)")
        _echo(_table(found.runtimes, headers=["mode", "what it does", "framework", "installed"]))
    _echo()
    _echo(_table(found.scenarios, headers=["scenario", "title", "correct stop"]))


@bench_command("check-scenarios")
def check_scenarios_command(
    scenarios_dir: ScenariosDir = None,
    suggest: Annotated[
        str | None,
        typer.Option(
            "--suggest",
            metavar="MODE",
            help="Print MODE's sanity rows, computed (scripted:eager's verdicts), as YAML to review and paste.",
        ),
    ] = None,
) -> None:
    """Sanity-check every scenario: its reference path meets its oracle; scripted:eager fares as declared.

    A mode with no sanity row for a scenario is noted as not covered there, not failed.
    """
    from harness.matrix.catalog import check_scenarios, suggest_sanity_rows
    from harness.matrix.sanity import coverage_notes

    if suggest is not None:
        _echo(suggest_sanity_rows(suggest, scenarios_dir), nl=False)
        return
    reports = check_scenarios(scenarios_dir)
    rows = [
        [
            r.scenario,
            r.reference.suspended_at or r.reference.status,
            f"{sum(e.met for e in r.expectations)}/{len(r.expectations)}",
            "ok" if r.passed else "FAILED",
        ]
        for r in reports
    ]
    _echo(_table(rows, headers=["scenario", "reference stops at", "eager verdicts met", "sanity"]))
    for note in coverage_notes(reports):
        _echo(note)
    for report in reports:
        for problem in report.problems:
            _echo(f"{report.scenario}: {problem}", err=True)
    if not all(report.passed for report in reports):
        raise typer.Exit(1)


@bench_command("show-scenario")
def show_scenario_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The scenario's name.", show_default=False)],
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print its workflow as a Mermaid flowchart (for a ```mermaid block).")
    ] = False,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Show one scenario: its rules and oracle, or with --mermaid its workflow graph as Mermaid text."""
    from harness.matrix.spec import project_dirs
    from harness.scenario.load import select_scenarios
    from harness.scenario.mermaid import mermaid as mermaid_text
    from harness.scenario.story_text import oracle_rows, rule_rows

    (scenario,) = select_scenarios(project_dirs(scenarios_dir)[0], [name])
    if mermaid:
        _echo(mermaid_text(scenario), nl=False, fit=False)
        return
    _echo(f"{scenario.id}: {scenario.title}")
    for title, rows in (("rules", rule_rows(scenario)), ("oracle", oracle_rows(scenario))):
        _echo(f"\n{title}")
        for row_name, value in rows:
            _echo(f"  {row_name}: {' '.join(value.split())}")
    _echo(f"\nworkflow: bench show-scenario {scenario.id} --mermaid")


@bench_command("schema")
def schema_command() -> None:
    """Print the scenario format as JSON Schema (the shipped scenarios/schema/scenario.schema.json)."""
    from harness.matrix.catalog import scenario_schema_text

    _echo(scenario_schema_text(), nl=False, fit=False)


@bench_command("run")
def run_command(
    mode: Annotated[
        list[str] | None,
        typer.Option(
            "--mode",
            "-m",
            metavar="NAME",
            help="'all' (bench's own modes), 'runtimes' (the framework adapters), mode names, or your own agent "
            "as FILE.py:FACTORY or MODULE:FACTORY (docs/runtimes.md); repeat or comma-separate.",
        ),
    ] = None,
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", "-s", metavar="NAME", help="'all' or scenario names.")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            metavar="MODEL",
            help="{models}; live reads LLM_API_URL, LLM_MODEL and LLM_API_KEY (the environment, else ./.env; "
            "live:NAME asks for NAME, or the endpoint ./bench.toml sets for it). Repeat for a matrix per model in "
            "one folder. Default: replay of results/recorded/smollm2-135m.",
        ),
    ] = None,
    trials: Annotated[
        int | None, typer.Option(help="Runs per scenario x mode cell (default 1; a replay: the recording's).")
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Matrix seed; each run's seed derives from it and the cell (default 0; a replay: the recording's)."
        ),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            metavar="TEXT", help="A name for this run, kept in its manifest and shown by bench runs, show and report."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Output folder, new or empty (default: a new folder under results/)."),
    ] = None,
    replace: Annotated[
        bool, typer.Option("--replace", help="Replace the bench run in --out once this one completes (re-recording).")
    ] = False,
    gateway: Annotated[
        GatewayPolicy | None,
        typer.Option(
            help="enforce: broken rules are blocked; audit: recorded but committed "
            f"(default {DEFAULT_GATEWAY_POLICY}; a replay: the recording's)."
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Runs (and live requests) in flight at once.")] = 1,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Local worker processes (default: the cores for a scripted or replayed matrix from 2,000 runs; "
            "1 for a live model).",
            show_default=False,
        ),
    ] = None,
    executor: Annotated[
        Literal["local", "ray"],
        typer.Option(help="local: this machine's processes; ray: batches of runs as Ray tasks (docs/scale.md#ray)."),
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            metavar="ADDR", help="--executor ray: the cluster to join (default: RAY_ADDRESS, else a Ray started here)."
        ),
    ] = None,
    live: Annotated[bool, typer.Option("--live", help="Same as --model live.")] = False,
    local_model: Annotated[bool, typer.Option("--local-model", help="Same as --model local.")] = False,
    temperature: Annotated[float | None, typer.Option(help="Live: sampling temperature (default 0.7).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Live: completion token limit per call (default 512).")] = None,
    response_format: Annotated[
        ResponseFormat | None,
        typer.Option(
            help="Live: json_schema, json_object (with the schema for llama.cpp) or none (the schema in the "
            "prompt). Default: the provider profile's."
        ),
    ] = None,
    no_thinking: Annotated[
        bool, typer.Option("--no-thinking", help="Live: switch thinking off the way the provider profile documents.")
    ] = False,
    timeout: Annotated[float | None, typer.Option(help="Live: seconds per request attempt (default 120).")] = None,
    retries: Annotated[
        int | None, typer.Option(help="Live: retries on 429, 5xx, timeouts, connection errors (default 3).")
    ] = None,
    backoff: Annotated[
        float | None,
        typer.Option(help="Live: first back-off in seconds, doubled each retry, with jitter (default 1)."),
    ] = None,
    provider: Annotated[
        Literal["auto", ProviderName] | None,
        typer.Option(
            help="Live: the provider profile (default auto: from the URL and /models; see docs/live-models.md)."
        ),
    ] = None,
    strict_schema: Annotated[
        bool,
        typer.Option(
            "--strict-schema",
            help="Live: OpenAI strict structured outputs; names each scenario argument that cannot be strict.",
        ),
    ] = False,
    max_response_bytes: Annotated[
        int | None,
        typer.Option(
            help="Live: read at most this many bytes of an answer (default 4 MiB); past it the answer is a parse error."
        ),
    ] = None,
    stop_after_failures: Annotated[
        int | None,
        typer.Option(
            metavar="K",
            help="Live: stop the matrix after K runs in a row end in the same endpoint error (default 10; 0 never).",
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="DIR",
            help="Continue a matrix that was cut short (killed or interrupted): only its cells without a final "
            "summary run.",
        ),
    ] = None,
    approver: Annotated[
        str | None,
        typer.Option(
            metavar="scripted:NAME",
            help="{approvers} decides at every gate, so each story runs to its end "
            "(default: runs suspend at gates; decide later with bench resume).",
        ),
    ] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Run the matrix scenario x mode x trial and write traces.jsonl and manifest.json."""
    from harness.cli.tally import RunTally
    from harness.matrix.pipeline import run
    from harness.matrix.spec import RunSpec

    live_options = {
        name: value
        for name, value in {
            "response_format": response_format,
            "disable_thinking": no_thinking or None,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout_s": timeout,
            "retries": retries,
            "backoff_s": backoff,
            "provider": provider,
            "strict_schema": strict_schema or None,
            "max_response_bytes": max_response_bytes,
            "stop_after_failures": stop_after_failures,
        }.items()
        if value is not None
    }
    given = {
        name: value
        for name, value in {
            "modes": mode,
            "scenarios": scenario,
            "scenarios_dir": scenarios_dir,
            "model": _model_alias(model, live, local_model),
            "live": live_options or None,
            "trials": trials,
            "seed": seed,
            "gateway": gateway,
            "out": out,
            "replace": replace or None,
            "approver": approver,
            "resume": resume,
            "label": label,
            "workers": workers,
            "executor": executor if executor != "local" else None,
            "ray_address": ray_address,
        }.items()
        if value is not None
    }
    spec = RunSpec.build(
        env=_environment(),  # the key is read from the environment (or ./.env) here, and only here
        concurrency=concurrency,
        command=sys.argv,
        **given,
    )
    tally = RunTally()

    def done(cell: Cell, outcome: RunOutcome) -> None:
        progress.done(outcome)
        tally.add(cell, outcome)

    from harness.cli.progress import MatrixProgress

    with MatrixProgress() as progress:
        result = run(
            spec,
            on_done=done,
            notify=_note,
            on_plan=lambda matrix: progress.plan(matrix.size),
            on_event=progress.listener,
            on_model=lambda label: setattr(tally, "model", label),
        )
    _echo(tally.table(width()))
    named = f"run {printable(result.manifest.label, one_line=True)!r}: " if result.manifest.label else ""
    _echo(f"\n{named}{result.manifest.runs} runs, traces in {result.traces}")
    _echo(f"next: bench show {result.folder} (one run's timeline), bench report {result.folder}")
    _exit_with(result.exit_status())


def _model_alias(model: list[str] | None, live: bool, local_model: bool) -> list[str] | None:
    """--live and --local-model are the old spellings of --model live and --model local."""
    alias = "local" if local_model else "live" if live else None
    if alias is not None and model and model != [alias]:
        shown = " --model ".join(model)
        raise UserInputError(f"--model {shown} cannot be combined with --{'local-model' if local_model else 'live'}")
    return [alias] if alias is not None else model


def _environment() -> dict[str, str]:
    """The variables live settings are read from: the environment, with ./.env filling in what it leaves unset."""
    from harness.models.dotenv import working_environment

    return working_environment()


def _note(line: str) -> None:
    """A note on stderr, wrapped to the terminal's width (an error stays one line; a note is read, not parsed)."""
    for part in wrap(printable(line, one_line=True), width()).splitlines():
        typer.echo(part, err=True)


def _exit_with(status: tuple[int, str] | None) -> None:
    """Prints the line that goes with how the runs ended (a signal, nothing judged, mostly not judged) and exits
    with its code; a warning (code 0) only prints."""
    if status is None:
        return
    code, line = status
    _echo(line, err=True)
    if code:
        raise typer.Exit(code)


@bench_command("replay")
def replay_command(
    folder: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="A recorded run: manifest.json, traces.jsonl and recording.jsonl."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Where the replay's trace goes (default: a new folder under results/)."),
    ] = None,
    label: Annotated[
        str | None, typer.Option(metavar="TEXT", help="A name for the replay's run (as bench run --label).")
    ] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Re-run a recorded matrix offline and compare it with the recording: exit 0 if every run matches, else 1."""
    from harness.cli.progress import MatrixProgress
    from harness.matrix.recorded_replay import replay

    with MatrixProgress() as progress:
        check = replay(
            folder,
            scenarios_dir=scenarios_dir,
            out=out,
            notify=_note,
            on_done=lambda cell, outcome: progress.done(outcome),
            on_plan=lambda matrix: progress.plan(matrix.size),
            on_event=progress.listener,
            label=label,
        )
    for note in check.notes:
        _note(f"note: {note}")
    status = check.result.exit_status()
    if check.result.interrupted:
        _exit_with(status)
    runs = check.result.manifest.runs
    if not check.divergences:
        _echo(
            f"replay of {folder}: {runs} runs, every run's events and outcome match the recording; "
            f"the replay is in {check.result.folder}"
        )
        _exit_with(status)  # a faithful replay of runs that all failed in the plumbing still measured nothing
        return
    for divergence in check.divergences:
        _echo(divergence.describe())
    _echo(
        f"\n{len(check.divergences)} runs differ from the recording in {folder}; the replay is in {check.result.folder}"
    )
    if status is not None:
        _echo(status[1].replace("error: ", "note: ", 1), err=True)  # drift decides the exit code
    raise typer.Exit(1)


@bench_command("probe")
def probe_command(
    model: Annotated[
        Literal["live", "local"],
        typer.Option(
            help="live (your own endpoint: LLM_API_URL, LLM_MODEL, LLM_API_KEY) or local (the bundled model, "
            "started then stopped)."
        ),
    ] = "live",
    provider: Annotated[
        Literal["auto", ProviderName] | None, typer.Option(help="The provider profile (default auto).")
    ] = None,
    local_model: Annotated[bool, typer.Option("--local-model", help="Same as --model local.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 60.0,
) -> None:
    """Ask an endpoint one tiny request per capability and print what it supports; no matrix is run."""
    from harness.matrix.catalog import probe_endpoint

    description, rows = probe_endpoint(
        "local" if local_model else model, env=_environment(), provider=provider, timeout_s=timeout, notify=_note
    )
    _echo(description)
    _echo(
        _table(
            [[r.capability, r.verdict, r.detail] for r in rows],
            headers=["capability", "answer", "detail"],
        )
    )
    if not any(r.verdict == "yes" for r in rows):
        _echo("error: the endpoint accepted none of the probes", err=True)
        raise typer.Exit(1)


@bench_command("resume")
def resume_command(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="The run folder that holds the suspended run.", show_default=False)
    ],
    run: Annotated[
        str,
        typer.Option(
            "--run",
            metavar="ID",
            help="The run id, or a unique prefix of it (bench runs DIR lists the suspended ones).",
            show_default=False,
        ),
    ],
    approve: Annotated[bool, typer.Option("--approve", help="Approve the pending gate: the run goes on.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject it: the run ends, nothing gated commits.")] = False,
    revise: Annotated[
        bool,
        typer.Option(
            "--revise", help="Send the work back with --note (a plan to its planner); the run stops there again."
        ),
    ] = False,
    note: Annotated[str, typer.Option(help="Why; kept in the human event.")] = "",
    who: Annotated[
        str | None, typer.Option("--as", metavar="NAME", help="Who decides (default: your user name).")
    ] = None,
    gate: Annotated[
        str | None, typer.Option(help="The gate you decide on; refused if the run waits elsewhere.")
    ] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Continue one suspended run with a person's decision, in this process, with the same model source.

    Without a decision, only carry out one a resume claimed and did not finish (killed, interrupted).
    """
    import getpass

    from harness.matrix.decide import resume

    if approve + reject + revise > 1:
        raise UserInputError("give exactly one of --approve, --reject and --revise")
    if revise and not note.strip():
        raise UserInputError("--revise needs --note: what to change")
    decision: Decision | None = "approve" if approve else "reject" if reject else "revise" if revise else None
    result = resume(
        folder,
        run,
        decision,
        who=who or (_user_name(getpass) if decision is not None else ""),
        note=note,
        gate=gate,
        env=_environment(),
        scenarios_dir=scenarios_dir,
        notify=_note,
        started=_command_started,
    )
    outcome = result.outcome
    if outcome is not None:
        where = f" at {outcome.suspended_at}" if outcome.suspended_at else ""
        _echo(
            f"run {result.run_id}: {outcome.status}{where}; stop verdict {outcome.stop_verdict}; "
            f"{outcome.resumes} decision(s) so far; trace in {result.traces}"
        )
    _exit_with(result.exit_status())


def _process_started() -> float:
    """When this process started (seconds since the epoch), from the kernel where it says; else now."""
    import time

    try:
        stat = Path("/proc/self/stat").read_text()
        # field 22, starttime: clock ticks after boot, rounded down; one tick more never puts the start before the
        # true one, so a stop saved just before this process was forked is never taken for one saved after it
        ticks = int(stat.rsplit(")", 1)[1].split()[19]) + 1
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        return time.time()


def _user_name(getpass: Any) -> str:
    try:
        return str(getpass.getuser())
    except (KeyError, OSError, ImportError):  # a container user with no name: the decision still needs a who
        raise UserInputError("--as: your user name cannot be found; say who decides with --as NAME") from None


@bench_command("serve-model")
def serve_model_command(
    port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1 (default: a free one).")] = None,
) -> None:
    """Serve the bundled SmolLM2 model (llama.cpp, OpenAI-compatible) on 127.0.0.1 until Ctrl-C or SIGTERM."""
    from harness.core.signals import StopRequest
    from harness.matrix.catalog import model_server

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


@bench_command("report")
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
    _echo(to_terminal(result.main, width()))
    _echo(
        f"\n{result.lines} lines read, {len(result.skipped)} skipped; {result.runs} runs "
        f"({result.incomplete} incomplete); report in {result.out}"
    )


@bench_command("export")
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
        _echo(f"warning: {line}", err=True)
    for file in files:
        _echo(_relative(file))
    _echo(f"{said} exported to {_relative(where)}")
    if export_format == "inspect":
        _echo(f"open them with: inspect view --log-dir {_relative(where)}")


@bench_command("compare")
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
        _echo(f"warning: {line}", err=True)
    for line in comparison.sides:
        _echo(line)
    _echo()
    _echo(to_terminal(comparison.verdicts(), width()))
    changed = comparison.table()
    _echo()
    _echo(to_terminal(changed, width()) if changed.rows else "no metric changed")
    if alpha is not None:
        _echo()
        _echo(comparison.significance)
    if out is not None:
        written = write_comparison(comparison, out, chosen)
        _echo()
        _echo(f"comparison written to {out} ({len(written)} files)")
    if comparison.regressed:
        _echo(err=True)  # bench's own blank line: each _echo on stderr is one line, so a newline inside is escaped
        _echo(f"{len(comparison.regressed)} regression(s)", err=True)
        raise typer.Exit(1)


@bench_command("gate-check")
def gate_check_command(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="The story whose workflow is checked.")],
    inject: Annotated[
        str,
        typer.Option(
            "--inject",
            metavar="NODE=ERROR",
            help="The workflow node whose action fails on every call, and the error (a bare code: HTTP CODE).",
        ),
    ],
    sample: Annotated[int, typer.Option(min=1, help="Gateway records the log audit samples.")] = 20,
    seed: Annotated[int, typer.Option(help="Seeds the run and the audit's sample.")] = 0,
    mode: Annotated[str, typer.Option(metavar="NAME", help="The workflow mode that walks the story.")] = "workflow",
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="The run folder (default: a new one).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Seed 003's release gate: inject an error into one workflow step, check the step took its declared
    on_failure route, and audit a sample of the run's gateway records (both hashes present and recomputed).

    Exit 0 when every check holds, 1 with a line per failed check (docs/scenarios.md: the release gate).
    """
    from harness.matrix.release_gate import Injection, gate_check

    report = gate_check(
        scenario, Injection.parse(inject), mode=mode, sample=sample, seed=seed, out=out, scenarios_dir=scenarios_dir
    )
    for check in report.checks:
        _echo(printable(check.line(), one_line=True))
    _echo(f"run folder: {report.folder}")
    if not report.passed:
        failed = sum(not check.passed for check in report.checks)
        _echo(f"release gate failed: {failed} check(s)", err=True)
        raise typer.Exit(1)


@bench_command("show")
def show_command(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="A run folder (or its traces.jsonl).", show_default=False)
    ],
    run: Annotated[
        str | None, typer.Option("--run", metavar="ID", help="The run id, or a unique prefix of 4+ characters.")
    ] = None,
    scenario: Annotated[str | None, typer.Option(metavar="NAME", help="Select by scenario.")] = None,
    mode: Annotated[str | None, typer.Option(metavar="NAME", help="Select by mode.")] = None,
    trial: Annotated[int | None, typer.Option(help="Select by trial.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show long arguments and answers whole.")] = False,
    prompts: Annotated[
        bool,
        typer.Option(
            "--prompts",
            help="Also show what the model was sent and answered at each call (from the folder's recording), the "
            "story's rules and oracle, the path through the workflow and the other trials of the cell.",
        ),
    ] = False,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """One run as a timeline: who decided, what was proposed, what the gateway did and why, how it ended.

    Without a selection that names one run, lists the runs of DIR to choose from.
    """
    from harness.cli.timeline_text import prompt_lines, render_text
    from harness.matrix.browse import show

    shown = show(folder, run_id=run, scenario=scenario, mode=mode, trial=trial)
    if shown.skipped:
        _note(f"warning: {shown.skipped} unreadable trace lines skipped")
    if shown.timeline is not None:
        lines = render_text(shown.timeline, full=full)
        if prompts:
            from reports.run_story import extras_of_run

            lines += prompt_lines(extras_of_run(folder, shown.timeline, scenarios_dir))
        for line in lines:
            _echo(line)
        return
    rows = [
        [r.run_id, r.scenario, r.mode, r.trial, r.status or "(no summary)", r.verdict or "-", r.events]
        for r in shown.matches[:LISTED_RUNS]
    ]
    _echo(printable(_table(rows, headers=["run", "scenario", "mode", "trial", "status", "stop verdict", "events"])))
    more = len(shown.matches) - len(rows)
    _echo(
        (f"... and {more:,} more\n" if more > 0 else "")
        + f"\n{len(shown.matches):,} runs; show one with --run ID (a unique prefix will do) or narrow with "
        "--scenario, --mode, --trial"
    )


@bench_command("runs")
def runs_command(
    root: Annotated[
        Path | None,
        typer.Argument(metavar="[ROOT]", help="A folder of run folders, or one run folder (default: results/)."),
    ] = None,
) -> None:
    """List run folders: label, start, model, modes, scenarios, trials, status, runs and runs awaiting a decision."""
    from harness.matrix.browse import folders, waiting

    found = folders(root)
    if not found:
        _echo(f"no run folders under {root or 'results/'}; bench run makes one")
        return
    rows = [
        [
            _relative(r.path),
            r.label or "-",
            r.started or "-",
            f"{r.model} ({r.model_source})" if r.model else "-",
            len(r.modes) if r.model else "-",
            len(r.scenarios) if r.model else "-",
            r.trials if r.trials is not None else "-",
            r.status,
            r.runs if r.runs is not None else "-",
            "-" if r.problem else r.suspended if r.suspended is not None else "?",
        ]
        for r in found
    ]
    headers = ["folder", "label", "started", "model", "modes", "scenarios", "trials", "status", "runs", "waiting"]
    _echo(_table(rows, headers=headers))
    for row in found:
        if row.problem:
            _note(f"warning: {printable(row.problem, one_line=True)}")
    _echo(
        "\nwaiting: suspended runs that wait for a decision (bench resume); stopped: the process that ran it "
        "is gone; bench show DIR lists a folder's runs"
    )
    if len(found) == 1 and found[0].model:
        _describe_one(found[0], waiting(found[0].path))


def _describe_one(row: Any, pending: list[Any]) -> None:
    """One folder in full: the names behind the counts, the runs waiting for a decision, and those whose decision
    is given but not carried out yet."""
    _echo(f"\nmodes: {', '.join(row.modes)}\nscenarios: {', '.join(row.scenarios)}")
    where = _relative(row.path)
    waiting = [w for w in pending if w.state == "waiting"]
    if waiting:
        rows = [
            [
                w.run_id,
                w.run.scenario if w.run else "?",
                w.run.mode if w.run else "?",
                w.run.trial if w.run else "?",
                w.gate,
            ]
            for w in waiting
        ]
        _echo()
        _echo(_table(rows, headers=["waiting run", "scenario", "mode", "trial", "gate"]))
        _echo(f"\ndecide with: bench resume {where} --run ID --approve (or --reject)")
    for w in pending:
        if w.state == "waiting":
            continue
        given = f" ({w.claim.decision}, by {w.claim.who})" if w.claim else ""
        if w.state == "deciding":
            _echo(f"\nrun {w.run_id}: '{w.gate}' decided{given}; a bench resume is carrying it out now")
        else:
            _echo(
                f"\nrun {w.run_id}: '{w.gate}' decided{given}, not carried out (its resume was cut short); "
                f"bench resume {where} --run {w.run_id} carries it out"
            )


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    global _command_started
    # When the command started: bench resume decides only a stop pending by then. Run as a program (the bench
    # script, python -m harness), when its process started; called in a longer-lived process (a test), now.
    as_program = sys._getframe(1).f_globals.get("__name__") == "__main__"
    _command_started = _process_started() if as_program else None
    try:
        code = app(standalone_mode=False)
    except UserInputError as exc:
        _echo(f"error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", BAD_INPUT))  # an endpoint that is none: 3 (harness.models.dead_endpoint)
    except OSError as exc:  # a file or folder the system refused where no check named it first: still one line
        where = f"{exc.filename}: " if exc.filename is not None else ""
        _echo(f"error: {where}{exc.strerror or exc}", err=True)
        sys.exit(BAD_INPUT)
    except TyperException as exc:  # usage errors found by the option parser
        # typer checks values with pydantic, whose messages start "Value error, ": the flag and value say it all
        message = exc.format_message().replace(": Value error, ", ": ")
        if "\n" in message:  # click's usage block: its lines are bench's own, the values in them are not
            typer.echo(printable(message), err=True)
        else:
            _echo(f"error: {message}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        _echo("interrupted; finished trace lines are kept", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)  # a signal's 130/143 comes with its line already printed
