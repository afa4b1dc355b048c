"""``bench report`` on the committed recording against importing what it is built on, in fresh processes.

The baseline is a child that only imports pandas, pyarrow and matplotlib (the floor of any report made
with them); the other child runs ``bench report`` on ``results/recorded/smollm2-135m`` into a temporary
folder, every format (Markdown, CSV, LaTeX, HTML, PNG and PDF figures, one page a run). Rounds interleave
the two, each report written into a folder of its own (nothing a round before wrote is there); the figure is the
median of each round's ratio, with its target and ok or MISSED.
Run: .venv/bin/python benchmarks/report_recording.py [--rounds 7] [--recording DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from child_timing import ROOT, seconds

BENCH = str(Path(sys.executable).with_name("bench"))
TARGET = 3.0  # issue 37: at most 3x the imports on a quiet machine
BASELINE = [sys.executable, "-c", "import pandas, pyarrow, matplotlib"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--recording", type=Path, default=ROOT / "results" / "recorded" / "smollm2-135m")
    args = parser.parse_args()
    bases, reports, ratios = [], [], []
    with tempfile.TemporaryDirectory() as tmp:

        def report(round_: int) -> list[str]:  # a fresh folder each round: the cold report, nothing of a round before
            return [BENCH, "report", str(args.recording), "--out", str(Path(tmp) / f"report-{round_}")]

        seconds(BASELINE)  # warm the file cache once for both
        seconds(report(0))
        for round_ in range(1, args.rounds + 1):
            base, took = seconds(BASELINE), seconds(report(round_))
            bases.append(base)
            reports.append(took)
            ratios.append(took / base)
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"import pandas, pyarrow, matplotlib: median {statistics.median(bases):.2f} s")
    print(f"bench report {args.recording.name}: median {statistics.median(reports):.2f} s")
    print(
        f"ratio (median of rounds) {ratio:.2f}x, rounds {min(ratios):.2f}-{max(ratios):.2f} "
        f"(target <= {TARGET}x): {verdict}"
    )
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
