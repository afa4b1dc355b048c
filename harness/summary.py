"""The short per-mode table ``bench run`` prints when a matrix ends, computed by reports.metrics from the run's trace.

Reading the finished traces.jsonl (instead of outcomes kept in memory) keeps ``bench run``'s memory flat
in the number of runs, and makes the end-of-run table and ``bench report`` one computation.
pandas and pyarrow are imported only when the table is made: ``bench``'s start-up stays fast.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from tabulate import tabulate

from harness.trace import RunOutcome

HEADERS = ["mode", "runs", "stop-correct", "oracle passed", "statuses", "premature", "blocked",
           "wait w/o suspend", "steps (mean)", "llm calls", "tokens", "errors"]


def run_table(trace_path: Path) -> str:
    """The end-of-run table for one traces.jsonl: per mode (and gateway policy), the verdicts first.

    The same numbers as ``bench report``'s headline table (reports.metrics), with a legend line per column.
    Raises ``UserInputError`` for a trace the report would refuse (mixed versions, conflicting duplicates).
    """
    from reports.load import load_traces
    from reports.metrics import compute
    from reports.tables import main_table, to_terminal

    traces = load_traces([trace_path])
    if traces.events.empty:
        return "no runs in this trace"
    table = main_table(compute(traces, "mode"))
    lines = [to_terminal(table), "", table.note]
    if traces.skipped_count or traces.incomplete_runs:
        lines.append(f"{traces.skipped_count} unreadable lines, {traces.incomplete_runs} runs without a summary "
                     "(not judged); bench report names them")
    return "\n".join(lines)


def mode_rows(results: Iterable[tuple[str, RunOutcome]]) -> list[list[object]]:
    """One row a mode, in first-seen order (the table ``bench run`` printed before ``run_table``)."""
    by_mode: dict[str, list[RunOutcome]] = defaultdict(list)
    for mode_name, outcome in results:
        by_mode[mode_name].append(outcome)
    rows = []
    for mode_name, outcomes in by_mode.items():
        n = len(outcomes)
        statuses = Counter(o.status for o in outcomes)
        errors: Counter[str] = Counter()
        for o in outcomes:
            errors.update(o.errors)
        rows.append([
            mode_name, n,
            f"{sum(o.stop_correct for o in outcomes)}/{n}",
            f"{sum(o.oracle_passed for o in outcomes)}/{n}",
            ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            sum(o.premature_side_effects for o in outcomes),
            sum(o.side_effects_blocked for o in outcomes),
            sum(o.wait_marker_without_suspend for o in outcomes),
            round(sum(o.steps for o in outcomes) / n, 2),
            sum(o.llm_calls for o in outcomes),
            sum(o.usage.total_tokens for o in outcomes),
            ", ".join(f"{k} {v}" for k, v in sorted(errors.items())) or "-",
        ])
    return rows


def mode_table(results: Iterable[tuple[str, RunOutcome]]) -> str:
    """Kept until ``bench run`` prints ``run_table`` (the run pipeline refactor wires it in); same columns as before."""
    return tabulate(mode_rows(results), headers=HEADERS, tablefmt="simple")
