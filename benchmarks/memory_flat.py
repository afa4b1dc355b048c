"""Peak memory of ``bench run --trials N`` at N = 100, 1,000 and 10,000: it must not grow with N.

Each size runs in a child process exactly as a user would start it (one scenario, one mode, a scripted
policy, the trace written to disk); the child's own peak RSS comes from ``os.wait4``. The cells are
generated lazily, no outcome is kept (the end table is tallied as runs end), so the peak should be flat:
the target is the largest peak within 1.15x of the smallest, printed as a ratio with ok or MISSED.
Run: .venv/bin/python benchmarks/memory_flat.py [--sizes 100,1000,10000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.15


def peak_rss_mib(trials: int, out: Path) -> float:
    """The peak resident memory of one ``bench run`` child process, in MiB."""
    command = [
        sys.executable,
        "-m",
        "harness",
        "run",
        "--model",
        "scripted:compliant",
        "--mode",
        "workflow",
        "--scenario",
        "blog_brief_approval",
        "--trials",
        str(trials),
        "--out",
        str(out),
    ]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench run --trials {trials} failed: {child.stderr.read().decode() if child.stderr else ''}")
    return usage.ru_maxrss / 1024  # kilobytes on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="trial counts, comma-separated")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        peaks = {n: peak_rss_mib(n, Path(tmp) / f"run-{n}") for n in sizes}
    for n, peak in peaks.items():
        print(f"bench run --trials {n:>6}: peak RSS {peak:7.1f} MiB")
    ratio = max(peaks.values()) / min(peaks.values())
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"largest / smallest peak: {ratio:.3f}x (target <= {TARGET}x: flat in N): {verdict}")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    raise SystemExit(main())
