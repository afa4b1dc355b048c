"""Per-run pages of the HTML report: each run's timeline (the same one ``bench show`` prints) on its own page,
and report.html linked to them: a Runs section listing every run, and every run id in its tables a link.

Pages are self-contained (no scripts, no network) and every piece of trace text is escaped, shown through
``harness.terminal.printable`` first, as in the terminal.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import re
from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserInputError
from harness.records.manifest import read_manifest
from harness.records.timeline import Ending, Timeline, timelines
from harness.terminal import printable
from reports.load import Traces
from reports.writing import write_whole

RUNS_DIR = "runs"
MAX_RUN_PAGES = 5_000  # past this, pages would outweigh the report; bench show opens any run instead
DETAIL_CAP = 4_000  # characters of one detail line on a page
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
_CELL = re.compile(r"<td([^>]*)>(\s*)([^<]*?)(\s*)</td>")

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 78rem;
       padding: 0 1rem; color: #1d1d1f; background: #ffffff; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
p.meta { font-size: 0.85rem; color: #444; margin: 0.2rem 0; }
.verdict { font-size: 1rem; padding: 0.6rem 0.8rem; border-left: 0.35rem solid #888; background: #f6f6f6; }
.verdict[data-verdict="correct"] { border-color: #2e7d32; }
.verdict[data-verdict="early"], .verdict[data-verdict="skipped_approval"], .verdict[data-verdict="late"],
.verdict[data-verdict="wrong_place"], .verdict[data-verdict="no_stop"] { border-color: #c62828; }
.verdict[data-verdict="failed_closed"] { border-color: #ef6c00; }
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
"""


@dataclass(frozen=True)
class RunLink:
    """Where one run's page is, relative to the report folder, and the facts its row in the Runs table shows."""

    timeline: Timeline
    href: str


def page(t: Timeline, back: str = "../report.html") -> str:
    """One run's timeline as a self-contained HTML document."""
    run = t.run
    end = t.ending
    verdict = (end.verdict if end is not None else None) or "none"
    head = t.facts(quote_label=False)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
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
    parts.append(_verdict_block(end, verdict))
    parts += [
        "<h2>Timeline</h2>",
        '<table class="timeline">',
        "<thead><tr><th>seq</th><th>step</th><th>who</th><th>what</th></tr></thead>",
        "<tbody>",
    ]
    for entry in t.entries:
        details = "".join(f'<div class="detail">{_e(_capped(d))}</div>' for d in entry.details)
        step = "" if entry.step is None else str(entry.step)
        parts.append(
            f'<tr class="tone-{entry.tone}" data-seq="{entry.seq}" data-kind="{_e(entry.kind)}">'
            f'<td class="num">{entry.seq}</td><td class="num">{_e(step)}</td><td class="who">{_e(entry.who)}</td>'
            f'<td class="what">{_e(entry.headline)}{details}</td></tr>'
        )
    parts += ["</tbody>", "</table>", *_ending_blocks(end), "</body>", "</html>", ""]
    return "\n".join(parts)


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
    parts = ["<h2>Ending</h2>", '<table class="facts">']
    parts += [f"<tr><td>{_e(name)}</td><td>{_e(value)}</td></tr>" for name, value in rows]
    parts.append("</table>")
    if end.violations:
        parts += ["<h2>Oracle violations</h2>", '<ul class="violations">']
        parts += [f"<li>{_e(v)}</li>" for v in end.violations]
        parts.append("</ul>")
    return parts


def write_run_pages(traces: Traces, out: Path) -> list[Path]:
    """Writes a page per run under ``out/runs/`` and links report.html to them; returns the pages written.

    Past MAX_RUN_PAGES runs no page is written and report.html says how to open a run instead.
    """
    report = out / "report.html"
    if not report.is_file():
        return []
    total = len(traces.runs) + traces.incomplete_runs
    written: list[Path] = []
    links: list[RunLink] = []
    if total <= MAX_RUN_PAGES:
        taken: set[str] = set()
        for source in traces.sources:
            path = Path(source)
            label = _label(path.parent)
            for t in timelines(path):
                if label is not None:
                    t = _with_label(t, label)
                name = _file_name(t.run.run_id, taken)
                target = out / RUNS_DIR / f"{name}.html"
                _put(target, page(t))
                written.append(target)
                links.append(RunLink(t, f"{RUNS_DIR}/{name}.html"))
    _put(report, link_report(report.read_text(encoding="utf-8"), links, total))
    return written


def link_report(text: str, links: list[RunLink], total: int) -> str:
    """report.html with every run id in its tables linked to the run's page, and a Runs section at the end."""
    by_id = {html.escape(link.timeline.run.run_id): link.href for link in links}

    def linked(match: re.Match[str]) -> str:
        attributes, before, content, after = match.groups()
        first = content.split(" ", 1)[0]
        href = by_id.get(first)
        if href is None:
            return match.group(0)
        rest = content[len(first) :]
        return f'<td{attributes}>{before}<a href="{html.escape(href)}">{first}</a>{rest}{after}</td>'

    text = _CELL.sub(linked, text)
    section = _runs_section(links, total)
    return text.replace("</body>", section + "\n</body>", 1) if "</body>" in text else text + section


def _runs_section(links: list[RunLink], total: int) -> str:
    parts = ['<h2 id="runs">Runs</h2>']
    if not links:
        parts.append(
            f'<p class="note">{total:,} runs: per-run pages are written for reports of up to {MAX_RUN_PAGES:,} runs; '
            "open any run's timeline with <code>bench show DIR --run ID</code>.</p>"
        )
        return "\n".join(parts)
    several = len({link.timeline.source for link in links}) > 1
    parts.append(
        '<p class="note">Every run of the report; its id opens its timeline: who decided, what was proposed, what '
        "the gateway did and why, and how the run ended (also <code>bench show DIR --run ID</code>).</p>"
    )
    headers = ["run", "scenario", "mode", "trial", "model", "gateway", "status", "stop verdict", "violations"]
    headers += ["trace"] if several else []
    # one line a run: the container scrolls sideways instead of the cells wrapping
    parts += ['<div class="scroll"><table class="metrics" data-runs="all" style="white-space: nowrap">', "<thead><tr>"]
    parts += [f"<th>{h}</th>" for h in headers]
    parts += ["</tr></thead>", "<tbody>"]
    for link in links:
        t = link.timeline
        end = t.ending
        cells = [
            f'<a href="{html.escape(link.href)}">{_e(t.run.run_id)}</a>',
            _e(t.run.scenario),
            _e(t.run.mode),
            _e("" if t.run.trial is None else str(t.run.trial)),
            _e(t.run.model),
            _e(t.gateway_policy or ""),
            _e(end.status if end is not None else "(no summary)"),
            _e((end.verdict or "–") if end is not None else "–"),
            _e(str(len(end.violations)) if end is not None else ""),
        ]
        if several:
            cells.append(_e(t.source))
        parts.append(f'<tr data-run="{_e(t.run.run_id)}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    parts += ["</tbody>", "</table></div>"]
    return "\n".join(parts)


def _file_name(run_id: str, taken: set[str]) -> str:
    """A file name for the run's page: its id when that is a safe name, else a digest; never one used twice."""
    base = run_id if _SAFE_NAME.fullmatch(run_id) else "run-" + hashlib.sha256(run_id.encode()).hexdigest()[:16]
    name, n = base, 1
    while name.lower() in taken:  # case-insensitive file systems
        n += 1
        name = f"{base}-{n}"
    taken.add(name.lower())
    return name


def _label(folder: Path) -> str | None:
    with contextlib.suppress(UserInputError):
        return read_manifest(folder).label
    return None


def _with_label(t: Timeline, label: str) -> Timeline:
    from dataclasses import replace

    return replace(t, label=label)


def _put(path: Path, text: str) -> None:
    write_whole(path, text)


def _capped(text: str) -> str:
    """A detail line kept to DETAIL_CAP characters: a runaway answer must not make a page of megabytes."""
    if len(text) <= DETAIL_CAP:
        return text
    return f"{text[:DETAIL_CAP]}… ({len(text) - DETAIL_CAP:,} more characters: bench show --full)"


def _e(text: str) -> str:
    return html.escape(printable(text, one_line=True))
