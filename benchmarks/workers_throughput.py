"""Scripted matrix throughput with N worker processes against one process, measured in one run.

The whole matrix (every mode x every scenario) with ``scripted:random`` is run the way ``bench run`` runs it
(``harness.run``, traces to a real file), first with ``--workers 1`` (today's in-process asyncio executor), then
with ``--workers N``; each run is repeated ``--repeat`` times, alternating, and the best of each is kept (these
machines are noisy). Prints runs per second of each, their ratio against the target (1.7x for 2 workers on 2
cores), the CPU seconds the driver and the workers used (what the ratio would be on an idle machine does not
depend on other processes' load as much as the wall time does), the load average, and whether the two folders hold
the same traces (timestamps and latencies aside). The default matrix (100 trials: 25,000 runs) is big enough that a
worker's second of start-up does not decide the ratio.
Run: .venv/bin/python benchmarks/workers_throughput.py [--trials 100] [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.matrix.pipeline.driver import RunSpec  # noqa: E402
from harness.matrix.pipeline.driver import run as run_matrix  # noqa: E402

TARGET = 1.7  # the target for 2 workers on a 2-core machine
TIMING_FIELDS = ("ts", "latency_ms")


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def timed(workers: int, trials: int, folder: Path) -> tuple[float, int, float, float]:
    """Wall seconds and runs of one whole scripted matrix with ``workers`` processes, and the CPU seconds of this
    process (the driver) and of its worker processes."""
    spec = RunSpec(model="scripted:random", trials=trials, workers=workers, out=folder, replace=True)
    driver, children = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = run_matrix(spec)
    elapsed = time.perf_counter() - started
    driver = cpu_seconds(resource.RUSAGE_SELF) - driver
    return elapsed, result.manifest.runs, driver, cpu_seconds(resource.RUSAGE_CHILDREN) - children


def comparable(folder: Path) -> list[str]:
    """The folder's trace lines without what differs between executors (time), sorted."""
    lines = []
    with open(folder / "traces.jsonl", encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            for name in TIMING_FIELDS:
                event.pop(name, None)
            if event.get("outcome"):
                event["outcome"].pop("wall_ms", None)
            lines.append(json.dumps(event, sort_keys=True))
    return sorted(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp) / "one", Path(tmp) / "many"
        best: dict[int, float] = {}
        cpu: dict[int, tuple[float, float]] = {}
        runs = 0
        load_before = os.getloadavg()[0]
        for _ in range(args.repeat):
            for workers, folder in ((1, one), (args.workers, many)):
                seconds, runs, driver, children = timed(workers, args.trials, folder)
                if seconds < best.get(workers, float("inf")):
                    best[workers], cpu[workers] = seconds, (driver, children)
        load_after = os.getloadavg()[0]
        same = comparable(one) == comparable(many)
    rate_one, rate_many = runs / best[1], runs / best[args.workers]
    ratio = rate_many / rate_one
    print(f"matrix: every mode x every scenario x {args.trials} trials = {runs} runs, scripted:random")
    print(f"--workers 1:  {rate_one:8.0f} runs/s  (best of {args.repeat}: {best[1]:.1f} s)")
    print(f"--workers {args.workers}:  {rate_many:8.0f} runs/s  (best of {args.repeat}: {best[args.workers]:.1f} s)")
    print(f"ratio: {ratio:.2f}x  (target {TARGET}x for 2 workers on 2 cores; {os.cpu_count()} cores here)")
    for workers in (1, args.workers):
        driver, children = cpu[workers]
        print(f"CPU of the best --workers {workers} run: driver {driver:.1f} s, worker processes {children:.1f} s")
    print(f"load average (1 min) before and after: {load_before:.1f}, {load_after:.1f}")
    print(f"same traces from both executors (timestamps and latencies aside): {same}")


if __name__ == "__main__":
    main()
