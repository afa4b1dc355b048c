"""The CLI's progress bar for a matrix (on stderr): runs done of total, errors, model calls, elapsed time and the
cell in flight, moved by every trace event so a live run of minutes never looks frozen."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from harness.records.trace import RunOutcome, TraceEvent
from harness.terminal import printable

IN_RUN_SHARE = 0.9  # at most this much of one run's slot fills from its steps; the rest when it ends


@dataclass
class _InFlight:
    cell: str
    max_steps: int
    step: int = 0


class MatrixProgress:
    """Shown only when stderr is a terminal, so logs and captured output stay clean.

    ``listener`` is the callback the run pipeline calls with every trace event; it is None when nothing is
    shown, so a run whose stderr is not a terminal pays nothing for progress.
    """

    def __init__(self, total: int | None = None, *, console: Console | None = None):  # None: not known yet
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal
        self.finished = 0
        self.errors = 0
        self.calls = 0
        self._flight: dict[str, _InFlight] = {}
        self._latest: str | None = None  # the run of the latest event: the cell the bar names
        self._progress = _BarAndCell(
            TextColumn("[bold]runs"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("calls {task.fields[calls]}"),
            TimeElapsedColumn(),
            cell=lambda: self.cell,
            console=self.console,
            disable=not self.enabled,
            transient=False,
        )
        self._task = self._progress.add_task("runs", total=total, errors=0, calls=0)

    @property
    def listener(self) -> Callable[[TraceEvent], None] | None:
        return self.event if self.enabled else None

    def plan(self, total: int) -> None:
        """The matrix's size, once it is known (a replay learns it from the recording)."""
        self._progress.update(self._task, total=total)

    def event(self, event: TraceEvent) -> None:
        """One trace event: a run starts, the model answers, an action or a step happens, a run ends."""
        run = event.run_id
        if event.kind == "run_start":
            limits = (event.detail or {}).get("limits") or {}
            steps = limits.get("max_steps") if isinstance(limits, dict) else None
            cell = printable(f"{event.scenario} / {event.mode} / trial {event.trial}", one_line=True)
            self._flight[run] = _InFlight(cell, steps if isinstance(steps, int) and steps > 0 else 1)
        elif event.kind == "summary":
            self._flight.pop(run, None)
        elif event.kind == "model_call":
            self.calls += 1
        flying = self._flight.get(run)
        if flying is not None:
            flying.step = max(flying.step, event.step)
            self._latest = run
        self._refresh()

    def done(self, outcome: RunOutcome) -> None:
        """Counts one finished run; a run that ended with status error counts as an error."""
        self.finished += 1
        if outcome.status == "error":
            self.errors += 1
        self._refresh()

    @property
    def completed(self) -> float:
        """Runs done, plus each run in flight's share of its step limit (so the bar moves within a run)."""
        partial = sum(min(IN_RUN_SHARE, f.step / f.max_steps * IN_RUN_SHARE) for f in self._flight.values())
        return self.finished + partial

    @property
    def cell(self) -> str:
        """The cell of the latest event and its step, and how many other runs are in flight."""
        flying = self._flight.get(self._latest) if self._latest is not None else None
        if flying is None:
            return ""
        others = len(self._flight) - 1
        return f"{flying.cell} · step {flying.step}" + (f" (+{others} in flight)" if others > 0 else "")

    def _refresh(self) -> None:
        self._progress.update(self._task, completed=self.completed, errors=self.errors, calls=self.calls)

    def __enter__(self) -> MatrixProgress:
        self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._flight.clear()  # the last frame shows no cell: nothing is in flight any more
        self._progress.stop()


class _BarAndCell(Progress):
    """The bar on one line and the cell in flight on the next, cut to the terminal's width (never dropped)."""

    def __init__(self, *columns: Any, cell: Callable[[], str], **options: Any):
        self._cell = cell  # first: the base class may draw while it starts
        super().__init__(*columns, **options)

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        cell = self._cell()
        if cell:
            yield Text(cell, style="dim", no_wrap=True, overflow="ellipsis")  # a Text: names are never markup
