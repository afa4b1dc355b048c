"""Per-run pages of the HTML report: each run's timeline (the same one ``bench show`` prints) on its own page,
and report.html linked to them: every run id in its tables a link (its runs table: reports/runs_explorer.py).

A page also holds what the model was sent and answered at each call (from the folder's recording), the story's
rules and oracle, the run's path through the workflow (drawn, and as Mermaid text), and links to the other trials
of its cell and back to the report (reports/run_story.py gathers them).

Pages are self-contained (no scripts, no network) and every piece of trace text is escaped, shown through
``harness.terminal.printable`` first, as in the terminal.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Sequence
from pathlib import Path

from harness.errors import UserInputError
from harness.models.run_calls import ModelCall
from harness.records.manifest import read_manifest
from harness.records.run_path import workflow_path
from harness.records.timeline import Ending, Timeline, build, scan
from harness.scenario.mermaid import mermaid
from harness.scenario.story_text import oracle_rows, rule_rows
from harness.terminal import printable
from reports import palette
from reports.run_links import MAX_RUN_PAGES, RunLink, RunPages
from reports.run_story import FolderFacts, RunExtras, StoryFinder, siblings_by_run
from reports.workflow_svg import STYLE as WORKFLOW_STYLE
from reports.workflow_svg import workflow_svg
from reports.writing import write_whole

RUNS_DIR = "runs"
DETAIL_CAP = 4_000  # characters of one detail line on a page
MESSAGE_CAP = 40_000  # characters of one message or answer on a page
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")

# Each verdict's border in the palette's colour for it: the run page and the figures never disagree.
VERDICT_STYLE = "".join(
    f'.verdict[data-verdict="{name}"] {{ border-color: {colour}; }}\n' for name, colour in palette.VERDICTS.items()
)
STYLE = (
    """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 78rem;
       padding: 0 1rem; color: #1d1d1f; background: #ffffff; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
p.meta { font-size: 0.85rem; color: #444; margin: 0.2rem 0; }
.verdict { font-size: 1rem; padding: 0.6rem 0.8rem; border-left: 0.35rem solid #888; background: #f6f6f6; }
table.timeline { border-collapse: collapse; font-size: 0.85rem; width: 100%; }
table.timeline th, table.timeline td { border-bottom: 1px solid #e4e4e4; padding: 0.3rem 0.5rem; vertical-align: top;
                                       text-align: left; }
table.timeline td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.timeline .detail { color: #555; font-family: ui-monospace, monospace; font-size: 0.78rem;
                         overflow-wrap: anywhere; margin-top: 0.15rem; }
tr.tone-proposal td.who { color: #1565c0; } tr.tone-ok td.what { color: #2e7d32; }
tr.tone-blocked td.what, tr.tone-error td.what { color: #c62828; } tr.tone-stop td.what { color: #ef6c00; }
tr.tone-human td.what { color: #6a1b9a; } tr.tone-end td { font-weight: 600; }
table.facts td { padding: 0.2rem 0.8rem 0.2rem 0; vertical-align: top; font-size: 0.88rem; }
ul.violations li { font-family: ui-monospace, monospace; font-size: 0.85rem; }
nav.sections { font-size: 0.85rem; margin: 0.6rem 0; } nav.sections a { margin-right: 0.9rem; }
p.cell { font-size: 0.88rem; margin: 0.5rem 0; } p.cell a, p.cell strong { margin-left: 0.5rem; }
p.note { font-size: 0.85rem; color: #555; }
p.path { font-size: 0.9rem; line-height: 1.6; } p.path span { white-space: nowrap; font-weight: 600; }
h3 { font-size: 1rem; }
div.picture { overflow-x: auto; }
section.call { border: 1px solid #e0e0e0; border-radius: 6px; padding: 0.2rem 0.9rem 0.6rem; margin: 0.9rem 0; }
section.call h3 { font-size: 0.95rem; margin: 0.6rem 0 0.4rem; }
details.message summary, div.answer div.role { font-size: 0.8rem; color: #37474f; cursor: pointer; margin: 0.3rem 0; }
div.answer div.role { cursor: auto; font-weight: 600; color: #1565c0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.78rem; background: #f7f7f9; padding: 0.5rem 0.7rem;
      border-radius: 4px; margin: 0.2rem 0 0.5rem; max-width: 100%; }
div.answer pre { background: #eef4fb; border-left: 3px solid #1565c0; }
p.problem { color: #c62828; font-size: 0.85rem; }
a.call { font-size: 0.78rem; margin-left: 0.4rem; }
table.story td:first-child { white-space: nowrap; color: #444; }
@media (max-width: 60rem) { table.story td:first-child { white-space: normal; } }
@media print { details { display: block; } details > * { display: block; } }
"""
    + VERDICT_STYLE
    + WORKFLOW_STYLE
)


class StoryBlocks:
    """A story's blocks (its rules and oracle; its workflow drawn with a path walked), made once for every run page
    that shows them: 240 runs of a report share 12 stories and a few paths each."""

    def __init__(self) -> None:
        self._made: dict[tuple[object, ...], list[str]] = {}

    def path(self, extras: RunExtras, mode: str) -> list[str]:
        walked = tuple(extras.path)
        key = ("path", id(extras.story.scenario), extras.story.note, walked, "" if walked else mode)
        return self._made[key] if key in self._made else self._keep(key, _path_blocks(extras, mode))

    def story(self, extras: RunExtras) -> list[str]:
        key = ("story", id(extras.story.scenario), extras.story.note)
        return self._made[key] if key in self._made else self._keep(key, _story_blocks(extras))

    def _keep(self, key: tuple[object, ...], blocks: list[str]) -> list[str]:
        self._made[key] = blocks
        return blocks


def page(
    t: Timeline, back: str = "../report.html", extras: RunExtras | None = None, blocks: StoryBlocks | None = None
) -> str:
    """One run's timeline as a self-contained HTML document; with ``extras``, its model calls, story, workflow path
    and sibling trials too (``blocks``: the story's blocks shared with the other pages of one report; the scenario
    objects they are keyed by must live as long as it)."""
    blocks = blocks if blocks is not None else StoryBlocks()
    run = t.run
    end = t.ending
    verdict = (end.verdict if end is not None else None) or "none"
    head = t.facts(quote_label=False)
    calls = _call_seqs(t, extras.calls if extras is not None else None)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>run {_e(run.run_id)}: {_e(run.cell)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        f'<body data-run="{_e(run.run_id)}">',
        f'<p class="meta"><a href="{_e(back)}">back to the report</a></p>',
        f"<h1>Run {_e(run.run_id)}: {_e(run.cell)}</h1>",
        f'<p class="meta">{_e(" · ".join(head))}</p>',
        f'<p class="meta">trace {_e(t.source)}</p>',
    ]
    if t.summaries > 1:
        parts.append(f'<p class="meta">resumed: {t.summaries} summaries, the last one counts</p>')
    if extras is not None:
        parts += _siblings_block(extras, t)
        parts.append(_nav(extras))
    parts.append(_verdict_block(end, verdict))
    if extras is not None:
        parts += blocks.path(extras, run.mode)
    parts += [
        '<h2 id="timeline">Timeline</h2>',
        '<table class="timeline">',
        "<thead><tr><th>seq</th><th>step</th><th>who</th><th>what</th></tr></thead>",
        "<tbody>",
    ]
    for entry in t.entries:
        details = "".join(f'<div class="detail">{_e(_capped(d))}</div>' for d in entry.details)
        step = "" if entry.step is None else str(entry.step)
        number = calls.get(entry.seq)
        link = f' <a class="call" href="#call-{number}">prompt and answer</a>' if number is not None else ""
        parts.append(
            f'<tr class="tone-{entry.tone}" data-seq="{entry.seq}" data-kind="{_e(entry.kind)}" id="seq-{entry.seq}">'
            f'<td class="num">{entry.seq}</td><td class="num">{_e(step)}</td><td class="who">{_e(entry.who)}</td>'
            f'<td class="what">{_e(entry.headline)}{link}{details}</td></tr>'
        )
    parts += ["</tbody>", "</table>", *_ending_blocks(end)]
    if extras is not None:
        parts += _call_blocks(extras, {number: seq for seq, number in calls.items()})
        parts += blocks.story(extras)
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _call_seqs(t: Timeline, calls: list[ModelCall] | None) -> dict[int, int]:
    """Timeline seq -> call number of each model_call event, when the trace and the recording agree on the count."""
    seqs = [e.seq for e in t.entries if e.kind == "model_call"]
    if not calls or len(seqs) != len(calls):
        return {}
    return {seq: number for number, seq in enumerate(seqs, start=1)}


def _siblings_block(extras: RunExtras, t: Timeline) -> list[str]:
    if len(extras.siblings) <= 1:
        return ['<p class="cell">The only trial of its cell (story, mode, model, gateway policy) in this report.</p>']
    shown = []
    for s in extras.siblings:
        name = f"trial {s.trial if s.trial is not None else '?'}"
        title = f' title="run {_e(s.run_id)}"'
        if s.itself:
            shown.append(f"<strong{title}>{_e(name)} (this run)</strong>")
        elif s.href is not None:
            shown.append(f'<a href="{_e(s.href)}"{title} data-sibling="{_e(s.run_id)}">{_e(name)}</a>')
    cell = f"{t.run.scenario} / {t.run.mode} / {t.run.model} / {t.gateway_policy or '?'}"
    return [f'<p class="cell">Trials of this cell ({_e(cell)}):{"".join(shown)}</p>']


def _nav(extras: RunExtras) -> str:
    calls = f" ({len(extras.calls)})" if extras.calls is not None else ""
    links = [
        ("path", "Workflow path"),
        ("timeline", "Timeline"),
        ("ending", "Ending"),
        ("calls", f"Model calls{calls}"),
        ("story", "Story: rules and oracle"),
    ]
    return '<nav class="sections">' + "".join(f'<a href="#{a}">{_e(b)}</a>' for a, b in links) + "</nav>"


def _path_blocks(extras: RunExtras, mode: str) -> list[str]:
    parts = ['<h2 id="path">Path through the workflow</h2>']
    scenario = extras.story.scenario
    if scenario is None:
        return [*parts, f'<p class="note">{_e(extras.story.note or "the scenario cannot be read")}</p>']
    if extras.path:
        steps = " → ".join(f'<span data-step="{i}">{_e(node)}</span>' for i, node in enumerate(extras.path, 1))
        parts.append(
            f'<p class="note">The run entered {len(extras.path)} nodes, numbered on the graph in that order. Blue: '
            "the nodes it visited and the transitions it took (×2: taken twice); dashed: loops and nodes a gate "
            "holds back; ⚑: an approval node; ■: where the walk ended.</p>"
        )
        parts.append(f'<p class="path">{steps}</p>')
    else:
        parts.append(
            f'<p class="note">{_e(mode)} does not walk the workflow (no transitions in its trace): the graph is the '
            "story's, for reference; the timeline shows the path this run took.</p>"
        )
    parts.append(f'<div class="picture">{workflow_svg(scenario, extras.path)}</div>')
    parts += [
        "<details><summary>Mermaid text of this graph"
        + (" with the run's path highlighted" if extras.path else "")
        + "</summary>",
        f"<pre>{html.escape(mermaid(scenario, extras.path))}</pre>",
        "</details>",
    ]
    return parts


def _call_blocks(extras: RunExtras, seq_of: dict[int, int]) -> list[str]:
    parts = ['<h2 id="calls">Model calls: what the model was sent and what it answered</h2>']
    parts.append(f'<p class="note">{_e(extras.calls_note)}</p>')
    if not extras.calls:
        return parts
    before: list[str] = []
    for number, call in enumerate(extras.calls, start=1):
        head = [f"Call {number}", f"step {call.step}", call.purpose, f"{call.latency_ms / 1000:.1f} s"]
        if call.prompt_tokens is not None or call.completion_tokens is not None:
            head.append(f"{call.prompt_tokens or 0:,} → {call.completion_tokens or 0:,} tokens")
        if call.attempts > 1:
            head.append(f"answered at attempt {call.attempts}")
        seq = seq_of.get(number)
        where = f' · <a href="#seq-{seq}">timeline seq {seq}</a>' if seq is not None else ""
        parts += [
            f'<section class="call" id="call-{number}" data-call="{number}">',
            f"<h3>{_e(' · '.join(head))}{where}</h3>",
        ]
        for i, message in enumerate(call.messages):
            text = message.content
            size = f"{len(text):,} characters"
            if i < len(before) and before[i] == text:
                parts.append(
                    f'<details class="message" data-role="{_e(message.role)}"><summary>{_e(message.role)} · {size} · '
                    f"the same as in call {number - 1}</summary><pre>{_pre(text)}</pre></details>"
                )
            else:
                parts.append(
                    f'<details class="message" data-role="{_e(message.role)}" open><summary>{_e(message.role)} · '
                    f"{size}</summary><pre>{_pre(text)}</pre></details>"
                )
        before = [m.content for m in call.messages]
        if call.problem is not None:
            parts.append(f'<p class="problem">{_e(call.problem)}</p>')
        if call.answer is not None:
            parts.append(
                f'<div class="answer"><div class="role">answer (raw)</div><pre>{_pre(call.answer)}</pre></div>'
            )
        parts.append("</section>")
    return parts


def _story_blocks(extras: RunExtras) -> list[str]:
    parts = ['<h2 id="story">Story: rules and oracle</h2>']
    scenario = extras.story.scenario
    if extras.story.note:
        parts.append(f'<p class="note">{_e(extras.story.note)}</p>')
    if scenario is None:
        return parts
    parts.append(f'<p class="meta">{_e(scenario.id)}: {_e(scenario.title)} (source: {_e(scenario.source)})</p>')
    for title, rows in (("Rules", rule_rows(scenario)), ("Oracle: what a correct run does", oracle_rows(scenario))):
        parts += [f"<h3>{title}</h3>", f'<table class="facts story" data-rows="{title.split(":")[0].lower()}">']
        parts += [f"<tr><td>{_e(name)}</td><td>{_e(' '.join(value.split()))}</td></tr>" for name, value in rows]
        parts.append("</table>")
    return parts


def _pre(text: str) -> str:
    """A message or answer as preformatted text: lines kept, control characters made visible, capped."""
    shown = printable(text)
    if len(shown) > MESSAGE_CAP:
        shown = f"{shown[:MESSAGE_CAP]}… ({len(shown) - MESSAGE_CAP:,} more characters: bench show --prompts --full)"
    return html.escape(shown)


def _verdict_block(end: Ending | None, verdict: str) -> str:
    if end is None:
        return f'<p class="verdict" data-verdict="{verdict}">No ending yet: the run has no summary.</p>'
    shown = end.verdict or "no stop verdict"
    because = f'<br><span class="because">because {_e(end.because)}</span>' if end.because else ""
    return (
        f'<p class="verdict" data-verdict="{_e(verdict)}">Stop verdict <strong>{_e(shown)}</strong>: '
        f"{_e(end.verdict_meaning)}{because}</p>"
    )


def _ending_blocks(end: Ending | None) -> list[str]:
    if end is None:
        return []
    stop = f"{end.status} at {end.suspended_at}" if end.suspended_at else end.status
    rows = [("stop", stop + (f" (the oracle expects: {end.expected_stop})" if end.expected_stop else ""))]
    if end.oracle_passed:
        rows.append(("oracle", "passed: no violations"))
    else:
        rows.append(("oracle", f"failed: {len(end.violations)} violations" if end.violations else "failed"))
    rows += list(end.facts)
    parts = ['<h2 id="ending">Ending</h2>', '<table class="facts">']
    parts += [f"<tr><td>{_e(name)}</td><td>{_e(' '.join(value.split()))}</td></tr>" for name, value in rows]
    parts.append("</table>")
    if end.violations:
        parts += ["<h2>Oracle violations</h2>", '<ul class="violations">']
        parts += [f"<li>{_e(v)}</li>" for v in end.violations]
        parts.append("</ul>")
    return parts


def write_run_pages(sources: Sequence[str], out: Path, library: Path | None = None) -> RunPages:
    """Writes a page per run of the traces files ``sources`` under ``out/runs/``; the result links report.html's
    text to them. They read the traces themselves (pages_meanwhile writes them in a process of their own).

    Past MAX_RUN_PAGES runs no page is written (counted by the folders' manifests where they say, else by the
    traces, read no further than the first run past it) and report.html says how to open a run instead.
    ``library``: the scenario folder the runs' stories are read from (default: the project's scenarios/).
    """
    written: list[Path] = []
    links: list[RunLink] = []
    taken: set[str] = set()
    stories = StoryFinder(library)  # keeps every scenario it read: the blocks below are keyed by them
    blocks = StoryBlocks()
    pending: list[tuple[Timeline, str, FolderFacts, list[str]]] = []
    if sum(_manifest_runs(Path(source).parent) for source in sources) > MAX_RUN_PAGES:
        return RunPages([], [], MAX_RUN_PAGES)  # the manifests count more runs than pages are for: no trace read
    for source in sources:
        path = Path(source)
        facts = FolderFacts(path.parent)
        found = scan(path, most=MAX_RUN_PAGES - len(pending))
        if found.over:
            return RunPages([], [], MAX_RUN_PAGES)
        for run_id, events in found.runs.items():
            t = build(events, source=str(path), label=facts.label)
            name = _file_name(run_id, taken)
            links.append(RunLink(t.run.run_id, f"{RUNS_DIR}/{name}.html"))
            pending.append((t, name, facts, workflow_path(events)))
    siblings = siblings_by_run([(t.run.run_id, _cell(t), t.run.trial, f"{name}.html") for t, name, _, _ in pending])
    for t, name, facts, walked in pending:
        run = t.run
        calls, note = facts.calls(run.scenario, run.mode, run.trial, run.model)
        extras = RunExtras(
            calls=calls,
            calls_note=note,
            story=stories.story(run.scenario, facts.manifest),
            path=walked,
            siblings=siblings[run.run_id],
        )
        target = out / RUNS_DIR / f"{name}.html"
        _put(target, page(t, extras=extras, blocks=blocks))
        written.append(target)
    return RunPages(written, links, MAX_RUN_PAGES)


def _manifest_runs(folder: Path) -> int:
    """The runs a folder's manifest counts (0 where it has none, cannot be read, or has not counted them yet)."""
    try:
        return read_manifest(folder).runs or 0
    except UserInputError:
        return 0


def _cell(t: Timeline) -> tuple[str, str, str, str | None]:
    return (t.run.scenario, t.run.mode, t.run.model, t.gateway_policy)


def _file_name(run_id: str, taken: set[str]) -> str:
    """A file name for the run's page: its id when that is a safe name, else a digest; never one used twice."""
    base = run_id if _SAFE_NAME.fullmatch(run_id) else "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:16]
    name, n = base, 1
    while name.lower() in taken:  # case-insensitive file systems
        n += 1
        name = f"{base}-{n}"
    taken.add(name.lower())
    return name


def _put(path: Path, text: str) -> None:
    write_whole(path, text)


def _capped(text: str) -> str:
    """A detail line kept to DETAIL_CAP characters: a runaway answer must not make a page of megabytes."""
    if len(text) <= DETAIL_CAP:
        return text
    return f"{text[:DETAIL_CAP]}… ({len(text) - DETAIL_CAP:,} more characters: bench show --full)"


def _e(text: str) -> str:
    return html.escape(printable(text, one_line=True))
