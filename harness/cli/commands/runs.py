"""bench runs and bench show: the run folders, and one run's timeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from harness.cli.common import ScenariosDir, echo, relative, stderr_note, table
from harness.terminal import printable

LISTED_RUNS = 500  # bench show lists at most this many runs to choose from; a selection narrows the rest


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
    from harness.matrix.commands.browse import show

    shown = show(folder, run_id=run, scenario=scenario, mode=mode, trial=trial)
    if shown.skipped:
        stderr_note(f"warning: {shown.skipped} unreadable trace lines skipped")
    if shown.timeline is not None:
        lines = render_text(shown.timeline, full=full)
        stop = shown.stops.get(shown.timeline.run.run_id)
        if stop is not None:
            where = relative(folder if folder.is_dir() else folder.parent)
            lines.append(
                f"  {'decide':<14}it waits at '{printable(stop.gate, one_line=True)}', stop {stop.stop_id}: "
                f"bench resume {where} --run {stop.run_id} --stop {stop.stop_id} --approve (or --reject, or --revise "
                "--note WHY)"
            )
        if prompts:
            from reports.run_story import extras_of_run

            lines += prompt_lines(extras_of_run(folder, shown.timeline, scenarios_dir))
        for line in lines:
            echo(line)
        return
    rows = [
        [r.run_id, r.scenario, r.mode, r.trial, r.status or "(no summary)", r.verdict or "-", r.events]
        for r in shown.matches[:LISTED_RUNS]
    ]
    headers = ["run", "scenario", "mode", "trial", "status", "stop verdict", "events"]
    if shown.stops:  # the column only where a run waits: a folder with none keeps its listing
        rows = [[*row, shown.stops[row[0]].stop_id if row[0] in shown.stops else "-"] for row in rows]
        headers.append("stop")
    echo(printable(table(rows, headers=headers)))
    more = len(shown.matches) - len(rows)
    echo(
        (f"... and {more:,} more\n" if more > 0 else "")
        + f"\n{len(shown.matches):,} runs; show one with --run ID (a unique prefix will do) or narrow with "
        "--scenario, --mode, --trial"
    )


def runs_command(
    root: Annotated[
        Path | None,
        typer.Argument(metavar="[ROOT]", help="A folder of run folders, or one run folder (default: results/)."),
    ] = None,
) -> None:
    """List run folders: label, start, model, modes, scenarios, trials, status, runs and runs awaiting a decision."""
    from harness.matrix.commands.browse import folders, waiting

    found = folders(root)
    if not found:
        echo(f"no run folders under {root or 'results/'}; bench run makes one")
        return
    rows = [
        [
            relative(r.path),
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
    echo(table(rows, headers=headers))
    for row in found:
        if row.problem:
            stderr_note(f"warning: {printable(row.problem, one_line=True)}")
    echo(
        "\nwaiting: suspended runs that wait for a decision (bench resume); stopped: the process that ran it "
        "is gone; bench show DIR lists a folder's runs"
    )
    if len(found) == 1 and found[0].model:
        _describe_one(found[0], waiting(found[0].path))


def _describe_one(row: Any, pending: list[Any]) -> None:
    """One folder in full: the names behind the counts, the runs waiting for a decision, and those whose decision
    is given but not carried out yet."""
    echo(f"\nmodes: {', '.join(row.modes)}\nscenarios: {', '.join(row.scenarios)}")
    where = relative(row.path)
    waiting = [w for w in pending if w.state == "waiting"]
    if waiting:
        rows = [
            [
                w.run_id,
                w.run.scenario if w.run else "?",
                w.run.mode if w.run else "?",
                w.run.trial if w.run else "?",
                w.gate,
                w.stop_id,
            ]
            for w in waiting
        ]
        echo()
        echo(table(rows, headers=["waiting run", "scenario", "mode", "trial", "gate", "stop"]))
        echo(
            f"\ndecide with: bench resume {where} --run ID --stop STOP --approve (or --reject, or --revise --note WHY)"
        )
    for w in pending:
        if w.state == "waiting":
            continue
        given = f" ({w.claim.decision}, by {w.claim.who})" if w.claim else ""
        if w.state == "deciding":
            echo(f"\nrun {w.run_id}: '{w.gate}' decided{given}; a bench resume is carrying it out now")
        else:
            echo(
                f"\nrun {w.run_id}: '{w.gate}' decided{given}, not carried out (its resume was cut short); "
                f"bench resume {where} --run {w.run_id} carries it out"
            )
