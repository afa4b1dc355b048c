"""The ``bench`` command: the typer app, its commands registered in one place in the order --help lists them, and
the one error boundary (a user error is one line and exit 2). Only harness/cli prints or reads the environment."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, cast

import typer
from typer.core import TyperCommand
from typer.exceptions import Abort, TyperException

from harness.cli.commands import model, report, resume, run, runs, scenarios
from harness.cli.common import echo
from harness.errors import UserInputError
from harness.matrix.pipeline.exit_status import BAD_INPUT
from harness.terminal import printable


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


# Every command, in the order ``bench --help`` lists them.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("list", scenarios.list_command),
    ("check-scenarios", scenarios.check_scenarios_command),
    ("show-scenario", scenarios.show_scenario_command),
    ("schema", scenarios.schema_command),
    ("run", run.run_command),
    ("replay", run.replay_command),
    ("probe", model.probe_command),
    ("resume", resume.resume_command),
    ("serve-model", model.serve_model_command),
    ("report", report.report_command),
    ("export", report.export_command),
    ("compare", report.compare_command),
    ("gate-check", scenarios.gate_check_command),
    ("show", runs.show_command),
    ("runs", runs.runs_command),
)
for _name, _command in COMMANDS:
    app.command(_name, cls=BenchCommand)(_command)


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    # When the command started: bench resume decides only a stop pending by then. Run as a program (the bench
    # script, python -m harness), when its process started; called in a longer-lived process (a test), now.
    resume.mark_started(as_program=sys._getframe(1).f_globals.get("__name__") == "__main__")
    try:
        code = app(standalone_mode=False)
    except UserInputError as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", BAD_INPUT))  # an endpoint that is none: 3 (harness.models.dead_endpoint)
    except OSError as exc:  # a file or folder the system refused where no check named it first: still one line
        where = f"{exc.filename}: " if exc.filename is not None else ""
        echo(f"error: {where}{exc.strerror or exc}", err=True)
        sys.exit(BAD_INPUT)
    except TyperException as exc:  # usage errors found by the option parser
        # typer checks values with pydantic, whose messages start "Value error, ": the flag and value say it all
        message = exc.format_message().replace(": Value error, ", ": ")
        if "\n" in message:  # click's usage block: its lines are bench's own, the values in them are not
            typer.echo(printable(message), err=True)
        else:
            echo(f"error: {message}", err=True)
        sys.exit(exc.exit_code)
    except (Abort, KeyboardInterrupt):
        echo("interrupted; finished trace lines are kept", err=True)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)  # a signal's 130/143 comes with its line already printed
