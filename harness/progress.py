"""The CLI's progress bar for a matrix: cells done of total, runs ended in error, elapsed time (on stderr)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.trace import RunOutcome


class MatrixProgress:
    """Shown only when stderr is a terminal, so logs and captured output stay clean."""

    def __init__(self, total: int | None = None, *, console: Console | None = None):  # None: not known yet
        self.console = console or Console(stderr=True)
        self.errors = 0
        self._progress = Progress(
            TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"), TimeElapsedColumn(),
            console=self.console, disable=not self.console.is_terminal, transient=False,
        )
        self._task = self._progress.add_task("runs", total=total, errors=0)

    def plan(self, total: int) -> None:
        """The matrix's size, once it is known (a replay learns it from the recording)."""
        self._progress.update(self._task, total=total)

    def done(self, outcome: RunOutcome) -> None:
        """Counts one finished run; a run that ended with status error counts as an error."""
        if outcome.status == "error":
            self.errors += 1
        self._progress.update(self._task, advance=1, errors=self.errors)

    def __enter__(self) -> MatrixProgress:
        self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._progress.stop()
