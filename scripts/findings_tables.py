"""Prints docs/findings.md's tables from the reports of the two committed recordings, so the write-up's numbers are
regenerated from `bench report`'s CSVs instead of copied by hand.

    .venv/bin/bench report results/recorded/smollm2-135m --out /tmp/enforce
    .venv/bin/bench report results/recorded/smollm2-135m-audit --out /tmp/audit
    .venv/bin/python scripts/findings_tables.py /tmp/enforce /tmp/audit
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from reports.stats import wilson

VERDICTS = ("early", "skipped approval", "late", "wrong place", "no stop", "failed closed")


def percent(value: float) -> str:
    return "–" if pd.isna(value) else f"{100 * value:.1f}%"


def interval_width(text: str) -> float:
    low, high = (float(part.strip(" %")) for part in text.strip("[]").split(","))
    return high - low


def enforcing_table(report: Path) -> str:
    """Per mode: who can stop a run, stop-correct with the clustered and Wilson intervals, oracle passed, the rest."""
    main = pd.read_csv(report / "tables" / "main_by_mode.csv")
    modes = pd.read_csv(report / "tables" / "modes.csv").set_index("mode")
    rows = [
        "| mode | who can really stop a run | stop-correct | 95% CI (clustered) | Wilson | width ratio "
        "| oracle passed | right place, wrong work | what else happened |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, record in main.iterrows():
        n, correct = int(record["n"]), int(record["correct"])
        bound = wilson(correct, n)
        clustered = record["95% CI"]
        wilson_text = f"[{100 * bound.low:.1f}%, {100 * bound.high:.1f}%]" if n else "–"
        ratio = f"{interval_width(clustered) / (100 * (bound.high - bound.low)):.2f}" if n else "–"
        others = [f"{name.replace(' ', '_')} {int(record[name])}" for name in VERDICTS if int(record[name])]
        if int(record["unanswered review"]):
            others.append(f"{int(record['unanswered review'])} at its own plan review, unanswered (not judged)")
        if int(record["blocked"]):
            others.append(f"blocked {int(record['blocked'])}")
        passed = round(record["oracle passed"] * n) if n else 0
        rows.append(
            f"| `{record['mode']}` | {modes.loc[record['mode'], 'who can really stop a run']} | {correct} of {n} "
            f"| {clustered if n else '–'} | {wilson_text} | {ratio} | {passed} "
            f"| {int(record['right place, wrong work'])} | {', '.join(others) or '–'} |"
        )
    return "\n".join(rows)


def audit_lines(report: Path) -> str:
    """Per mode under audit: premature and unauthorized side effects, and late runs."""
    effects = pd.read_csv(report / "tables" / "side_effects_by_mode.csv")
    main = pd.read_csv(report / "tables" / "main_by_mode.csv").set_index("mode")
    rows = [
        "| mode | judged | late | premature | runs with premature | unauthorized | runs with unauthorized |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, record in effects.iterrows():
        rows.append(
            f"| `{record['mode']}` | {record['judged']} | {int(main.loc[record['mode'], 'late'])} "
            f"| {record['premature']} | {record['runs with premature']} | {record['unauthorized']} "
            f"| {record['runs with unauthorized']} |"
        )
    return "\n".join(rows)


def spectrum_table(report: Path) -> str:
    """Seed 003's seven modes on their typical stories."""
    spectrum = pd.read_csv(report / "tables" / "spectrum.csv")
    rows = [
        "| # | mode | its typical story | n judged | stop-correct | P95 per run | error rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in spectrum.itertuples(index=False):
        values = list(row)
        number, mode, _policy, story, n, rate, p95, errors, runs = values
        p95_text = "–" if pd.isna(p95) else (f"{p95:.1f} ms" if p95 < 1000 else f"{p95 / 1000:.1f} s")
        judged = "–" if pd.isna(n) else f"{int(n)} of {int(runs)}"
        rows.append(f"| {number} | `{mode}` | {story} | {judged} | {percent(rate)} | {p95_text} | {percent(errors)} |")
    return "\n".join(rows)


def main(enforce: str, audit: str) -> None:
    print("## enforcing\n")
    print(enforcing_table(Path(enforce)))
    print("\n## auditing\n")
    print(audit_lines(Path(audit)))
    print("\n## spectrum\n")
    print(spectrum_table(Path(enforce)))


if __name__ == "__main__":
    main(*sys.argv[1:3])
