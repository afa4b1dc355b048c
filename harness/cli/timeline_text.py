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


def prompt_lines(extras: Any) -> list[str]:
    """What ``bench show --prompts`` adds below the timeline (``extras``: reports.run_story.RunExtras): the run's
    path through the workflow, the other trials of its cell, the story's rules and oracle, and every model call's
    messages and raw answer, whole: their lines kept, none cut (the terminal's width wraps them); a system prompt
    identical to the previous call's is one line saying so."""
    from harness.scenario.story_text import oracle_rows, rule_rows

    lines = [""]
    if extras.path:
        lines.append(_line("path through the workflow: " + " → ".join(extras.path)))
    trials = [
        f"trial {s.trial if s.trial is not None else '?'} {s.run_id}" + (" (this run)" if s.itself else "")
        for s in extras.siblings
    ]
    if len(trials) > 1:
        lines.append(_line("trials of this cell: " + ", ".join(trials)))
    scenario = extras.story.scenario
    lines += ["", _line(f"story {scenario.id}: {scenario.title}" if scenario is not None else "story")]
    if extras.story.note:
        lines.append(_line(f"  note: {extras.story.note}"))
    if scenario is not None:
        for title, rows in (("rules", rule_rows(scenario)), ("oracle", oracle_rows(scenario))):
            lines.append(f"  {title}")
            for name, value in rows:
                lines.append(_line(f"    {name}: {' '.join(value.split())}"))
    lines += ["", _line(f"model calls: {extras.calls_note}")]
    system: str | None = None  # the last call's system prompt: one identical to it is folded into one line
    for number, call in enumerate(extras.calls or [], start=1):
        head = [f"call {number}", f"step {call.step}", call.purpose, f"{call.latency_ms / 1000:.1f} s"]
        if call.prompt_tokens is not None or call.completion_tokens is not None:
            head.append(f"{call.prompt_tokens or 0:,} → {call.completion_tokens or 0:,} tokens")
        lines += ["", _line(" · ".join(head))]
        for message in call.messages:
            if message.role == "system" and message.content == system:  # folded: every call resends it whole
                lines.append(f"  [system] the same as call {number - 1}'s")
                continue
            system = message.content if message.role == "system" else system
            lines.append(f"  [{_line(message.role)}]")
            lines += [_line(f"    {line}") for line in printable(message.content).splitlines()]
        if call.problem is not None:
            lines.append(_line(f"  [no answer] {call.problem}"))
        if call.answer is not None:
            lines.append("  [answer]")
            lines += [_line(f"    {line}") for line in printable(call.answer).splitlines()]
    return lines


def _line(text: str) -> str:
    return printable(text, one_line=True)
