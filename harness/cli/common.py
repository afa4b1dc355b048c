"""What every bench command shares: printing through one door, tables that fit the terminal, the exit line, the
environment live settings are read from, and the --scenarios-dir option."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from harness.terminal import fit_table, printable, width, wrap

ScenariosDir = Annotated[
    Path | None, typer.Option("--scenarios-dir", metavar="DIR", help="Folder of scenario YAML files.")
]


def echo(text: str = "", *, err: bool = False, nl: bool = True, fit: bool = True) -> None:
    """Everything bench prints goes through here: model answers, endpoint errors and file text are data, and an
    escape sequence in them must not retitle the terminal or rewrite what was printed. On stderr, one line each:
    a newline inside a message must not forge the next one. On stdout,
    a line longer than the terminal (``COLUMNS``) is wrapped unless ``fit`` is off (machine-readable output)."""
    typer.echo(printable(text, one_line=err) if err or not fit else wrap(printable(text), width()), err=err, nl=nl)


def table(rows: Any, headers: Any) -> str:
    """Rows as a table that fits the terminal's width (``COLUMNS``): numbers right-aligned, prose wrapped."""
    cells = [["" if value is None else str(value) for value in row] for row in rows]
    numeric = [
        bool(rows) and all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        for i in range(len(headers))
    ]
    return fit_table(headers, cells, numeric, width())


def stderr_note(line: str) -> None:
    """A note on stderr, wrapped to the terminal's width (an error stays one line; a note is read, not parsed)."""
    for part in wrap(printable(line, one_line=True), width()).splitlines():
        typer.echo(part, err=True)


def exit_with(status: tuple[int, str] | None) -> None:
    """Prints the line that goes with how the runs ended (a signal, nothing judged, mostly not judged) and exits
    with its code; a warning (code 0) only prints."""
    if status is None:
        return
    code, line = status
    echo(line, err=True)
    if code:
        raise typer.Exit(code)


def environment() -> dict[str, str]:
    """The variables live settings are read from: the environment, with ./.env filling in what it leaves unset."""
    from harness.models.dotenv import working_environment

    return working_environment()


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
