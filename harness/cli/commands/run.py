"""bench run and bench replay: a matrix run into a new folder, or a recorded one run again and compared."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy, ProviderName, ResponseFormat
from harness.cli.common import ScenariosDir, echo, environment, exit_with, stderr_note
from harness.errors import UserInputError
from harness.terminal import printable, width

if TYPE_CHECKING:
    from harness.matrix.cell.units import Cell
    from harness.records.trace import RunOutcome


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
    record_through: Annotated[
        list[Path] | None,
        typer.Option(
            "--record-through",
            metavar="DIR",
            help="Live: answer every request DIR's recording holds from it and ask the model only the rest; the new "
            "folder's recording holds both, and replays exactly. Repeat it to serve from several recordings (the "
            "first that holds a request answers it).",
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
    from harness.matrix.pipeline.driver import run
    from harness.matrix.pipeline.spec import RunSpec

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
            "record_through": tuple(record_through) if record_through else None,
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
        env=environment(),  # the key is read from the environment (or ./.env) here, and only here
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
            notify=stderr_note,
            on_plan=lambda matrix: progress.plan(matrix.size),
            on_event=progress.listener,
            on_model=lambda label: setattr(tally, "model", label),
        )
    echo(tally.table(width()))
    named = f"run {printable(result.manifest.label, one_line=True)!r}: " if result.manifest.label else ""
    echo(f"\n{named}{result.manifest.runs} runs, traces in {result.traces}")
    echo(f"next: bench show {result.folder} (one run's timeline), bench report {result.folder}")
    exit_with(result.exit_status())


def _model_alias(model: list[str] | None, live: bool, local_model: bool) -> list[str] | None:
    """--live and --local-model are the old spellings of --model live and --model local."""
    alias = "local" if local_model else "live" if live else None
    if alias is not None and model and model != [alias]:
        shown = " --model ".join(model)
        raise UserInputError(f"--model {shown} cannot be combined with --{'local-model' if local_model else 'live'}")
    return [alias] if alias is not None else model


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
    from harness.matrix.commands.recorded_replay import replay

    with MatrixProgress() as progress:
        check = replay(
            folder,
            scenarios_dir=scenarios_dir,
            out=out,
            notify=stderr_note,
            on_done=lambda cell, outcome: progress.done(outcome),
            on_plan=lambda matrix: progress.plan(matrix.size),
            on_event=progress.listener,
            label=label,
        )
    for note in check.notes:
        stderr_note(f"note: {note}")
    status = check.result.exit_status()
    if check.result.interrupted:
        exit_with(status)
    runs = check.result.manifest.runs
    if not check.divergences:
        echo(
            f"replay of {folder}: {runs} runs, every run's events and outcome match the recording; "
            f"the replay is in {check.result.folder}"
        )
        exit_with(status)  # a faithful replay of runs that all failed in the plumbing still measured nothing
        return
    for divergence in check.divergences:
        echo(divergence.describe())
    echo(
        f"\n{len(check.divergences)} runs differ from the recording in {folder}; the replay is in {check.result.folder}"
    )
    if status is not None:
        echo(status[1].replace("error: ", "note: ", 1), err=True)  # drift decides the exit code
    raise typer.Exit(1)
