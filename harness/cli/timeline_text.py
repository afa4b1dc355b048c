"""One run's timeline as lines for a terminal (``bench show``); every piece of trace text made printable."""

from __future__ import annotations

from typing import Any

from harness.records.timeline import Ending, Timeline
from harness.terminal import printable

DETAIL_WIDTH = 160  # a detail line is cut here in the terminal, unless --full


def render_text(t: Timeline, *, full: bool = False, width: int = DETAIL_WIDTH) -> list[str]:
    """The timeline as lines for a terminal; every piece of trace text shown through ``printable``.

    Detail lines are cut at ``width`` characters unless ``full``.
    """

    def safe(text: str, cut: bool = True) -> str:
        shown = printable(text, one_line=True)
        return shown if full or not cut or len(shown) <= width else shown[: width - 1] + "…"

    run = t.run
    lines = [
        safe(f"run {run.run_id}: {run.cell}", cut=False),
        safe(" · ".join(t.facts(quote_label=True)), cut=False),
        safe(f"trace {t.source}", cut=False),
    ]
    if t.summaries > 1:
        lines.append(f"resumed: {t.summaries} summaries, the last one counts")
    lines += ["", f"{'seq':>4}  {'step':>4}  {'who':<15} what"]
    indent = " " * 30
    for e in t.entries:
        step = "" if e.step is None else str(e.step)
        lines.append(f"{e.seq:>4}  {step:>4}  {safe(e.who):<15} {safe(e.headline)}")
        lines += [indent + safe(d) for d in e.details]
    lines += ["", *ending_lines(t.ending, safe)]
    return lines


def ending_lines(end: Ending | None, safe: Any = lambda text: text) -> list[str]:
    """How the run ended: the verdict and what it means, the stop, the oracle's violations, the counters."""
    if end is None:
        return ["ending: none yet: the run has no summary (still running, or cut short)"]
    stop = f"{end.status} at {end.suspended_at}" if end.suspended_at else end.status
    expected = f" (the oracle expects: {end.expected_stop})" if end.expected_stop else ""
    verdict = end.verdict or (
        "stop-correct" if end.stop_correct else "not stop-correct" if end.stop_correct is False else "unknown"
    )
    lines = ["ending", f"  {'stop verdict':<14}{safe(verdict)}: {end.verdict_meaning}"]
    if end.because:
        lines.append(f"  {'because':<14}{safe(end.because)}")
    lines.append(f"  {'stop':<14}{safe(stop + expected)}")
    if end.oracle_passed:
        lines.append(f"  {'oracle':<14}passed: no violations")
    elif end.violations:
        lines.append(f"  {'oracle':<14}failed: {len(end.violations)} violation{'s' if len(end.violations) > 1 else ''}")
        lines += [f"  {'':<14}- {safe(v)}" for v in end.violations]
    else:
        lines.append(f"  {'oracle':<14}" + ("failed: the stop was not correct" if end.oracle_passed is False else "?"))
    lines += [f"  {name:<14}{safe(value)}" for name, value in end.facts]
    return lines
