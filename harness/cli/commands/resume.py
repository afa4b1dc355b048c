"""bench resume: a person's decision at a suspended run's gate, carried out in this process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.common import ScenariosDir, echo, environment, exit_with, stderr_note
from harness.errors import UserInputError
from harness.records.write_faults import reached

if TYPE_CHECKING:
    from harness.records.checkpoint import Decision


_command_started: float | None = None  # set by mark_started(): when this command started (None: when resume is called)


def mark_started(*, as_program: bool) -> None:
    """Remembers when this command started: its process's start when run as a program, else none (``main``)."""
    global _command_started
    _command_started = _process_started() if as_program else None


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
    reject: Annotated[
        bool,
        typer.Option(
            "--reject",
            help="Reject it: nothing gated commits; the run ends, or goes on to its compensation where the gate's "
            "on_rejection is continue (docs/scenarios.md).",
        ),
    ] = False,
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
    stop_id: Annotated[
        str | None,
        typer.Option(
            "--stop",
            metavar="ID",
            help="The stop you decide, by the id bench runs DIR and bench show print; one decided before is refused "
            "as already decided.",
            show_default=False,
        ),
    ] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Continue one suspended run with a person's decision, in this process, with the same model source.

    Without a decision, only carry out one a resume claimed and did not finish (killed, interrupted).
    """
    import getpass

    from harness.core.signals import StopRequest
    from harness.matrix.commands.resume import resume

    if approve + reject + revise > 1:
        raise UserInputError("give exactly one of --approve, --reject and --revise")
    if revise and not note.strip():
        raise UserInputError("--revise needs --note: what to change")
    decision: Decision | None = "approve" if approve else "reject" if reject else "revise" if revise else None
    stop = StopRequest()
    with stop.installed():  # to the last line: a signal once the decision is applied is said, never a silent 143
        result = resume(
            folder,
            run,
            decision,
            who=who or (_user_name(getpass) if decision is not None else ""),
            note=note,
            gate=gate,
            env=environment(),
            scenarios_dir=scenarios_dir,
            notify=stderr_note,
            started=_command_started,
            confirm=_ask if sys.stdin.isatty() and sys.stderr.isatty() else None,
            named=True,
            stop_id=stop_id,
            stop=stop,
        )
        reached("resume returned")  # test-only: BENCH_KILL_AT may signal this process here
        outcome = result.outcome
        if outcome is not None:
            where = f" at {outcome.suspended_at}" if outcome.suspended_at else ""
            echo(
                f"run {result.run_id}: {outcome.status}{where}; stop verdict {outcome.stop_verdict}; "
                f"{outcome.resumes} decision(s) so far; trace in {result.traces}"
            )
        exit_with(result.exit_status())


def _ask(question: str) -> bool:
    """The person at the terminal says yes to ``question`` (anything else, end of input included, is no)."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


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
