"""``bench --help`` and ``bench list`` against ``python -c "import typer"``: the CLI must start like typer does.

Each command runs in a fresh child process, exactly as a user starts it; the rounds interleave the three
commands so a burst of load on a noisy machine hits all of them alike. The figure is the median over rounds
of each round's ratio (command time / ``import typer`` time in the same round), printed with its target and
ok or MISSED. ``bench list`` loads and validates every scenario file (pydantic models, JSON Schemas), so it
does more than print.
Run: .venv/bin/python benchmarks/cli_startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from child_timing import seconds

BENCH = str(Path(sys.executable).with_name("bench"))
TARGET = 2.0
COMMANDS = {
    "bench --help": [BENCH, "--help"],
    "bench list": [BENCH, "list"],
}
BASELINE = [sys.executable, "-c", "import typer"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    args = parser.parse_args()
    for command in [BASELINE, *COMMANDS.values()]:
        seconds(command)  # warm the file cache once: the first start reads every .pyc from disk
    ratios: dict[str, list[float]] = {name: [] for name in COMMANDS}
    times: dict[str, list[float]] = {name: [] for name in ["import typer", *COMMANDS]}
    for _ in range(args.rounds):
        base = seconds(BASELINE)
        times["import typer"].append(base)
        for name, command in COMMANDS.items():
            took = seconds(command)
            times[name].append(took)
            ratios[name].append(took / base)
    print(
        f"{'command':<16}{'median ms':>10}{'ratio (median of rounds)':>26}{'rounds min-max':>18}{'target':>9}  verdict"
    )
    print(f"{'import typer':<16}{statistics.median(times['import typer']) * 1000:>10.0f}")
    failed = False
    for name, values in ratios.items():
        ratio = statistics.median(values)
        verdict = "ok" if ratio <= TARGET else "MISSED"
        failed |= verdict == "MISSED"
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(
            f"{name:<16}{statistics.median(times[name]) * 1000:>10.0f}{ratio:>25.2f}x{spread:>18}"
            f"{'<= ' + str(TARGET) + 'x':>9}  {verdict}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
