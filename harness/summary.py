"""The table ``bench run`` prints when a matrix ends, computed by reports.metrics from the run's trace.

Reading the finished traces.jsonl (instead of outcomes kept in memory) keeps ``bench run``'s memory flat
in the number of runs, and makes the end-of-run table and ``bench report``'s headline one computation.
pandas and pyarrow are imported only when the table is made: ``bench``'s start-up stays fast.
"""

from __future__ import annotations

from pathlib import Path


def table_for(traces: Path) -> str:
    """The end-of-run table of one traces.jsonl: per mode and gateway policy, the stop verdicts first.

    The same numbers as ``bench report``'s headline table, with the legend of its columns.
    Raises ``UserInputError`` for a trace the report would refuse (mixed versions, conflicting duplicates).
    """
    if not traces.exists():
        return "(no runs)"
    from reports.load import load_traces
    from reports.metrics import compute
    from reports.tables import main_table, to_terminal

    loaded = load_traces([traces])
    if loaded.events.empty:
        return "(no runs)"
    table = main_table(compute(loaded, "mode"))
    lines = [to_terminal(table), "", table.note]
    if loaded.skipped_count or loaded.incomplete_runs:
        lines.append(
            f"{loaded.skipped_count} unreadable lines, {loaded.incomplete_runs} runs without a summary "
            "(not judged); bench report names them"
        )
    return "\n".join(lines)
