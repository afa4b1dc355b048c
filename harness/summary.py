"""The short per-mode table ``bench run`` prints when a matrix ends (the full metrics are in reports/)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from tabulate import tabulate

from harness.trace import RunOutcome, read_events

HEADERS = ["mode", "runs", "stop-correct", "oracle passed", "statuses", "premature", "blocked",
           "wait w/o suspend", "steps (mean)", "llm calls", "tokens", "errors"]
# What each column counts, printed under the table (README: the main job).
LEGEND = """\
stop-correct: runs whose stop verdict is correct (README: stop verdicts); oracle passed: stop-correct with no oracle
violation; statuses: how the runs ended; premature: gated side effects committed before their approval; blocked:
attempts the gateway refused; wait w/o suspend: runs that recorded a wait and went on; steps (mean): actions the
gateway recorded per run, on average; llm calls, tokens: totals over the mode's runs; errors: error events by kind."""


def mode_rows(results: Iterable[tuple[str, RunOutcome]]) -> list[list[object]]:
    """One row a mode, in first-seen order."""
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
    return tabulate(mode_rows(results), headers=HEADERS, tablefmt="simple")


def table_for(traces: Path) -> str:
    """The table of a run folder's traces.jsonl, read back from disk (the run keeps no outcomes in memory)."""
    if not traces.exists():
        return "(no runs)"
    table = mode_table((e.mode, e.outcome) for e in read_events(traces) if e.kind == "summary" and e.outcome)
    return f"{table}\n\n{LEGEND}"
