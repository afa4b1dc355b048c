"""Kills one worker process of ``bench run --workers 2`` at random instants and checks the driver each time (issue 36).

Each kill must leave no hang, no traceback, and the matrix complete in the same command (or stopped in one line, then
completed by ``bench run --resume``), every cell exactly once. One line per kill, then a summary.

    .venv/bin/python scripts/worker_kills.py              # 20 kills (a minute or two a kill on a busy 2-core machine)
    .venv/bin/python scripts/worker_kills.py --kills 5 --seed 3
    .venv/bin/python scripts/worker_kills.py --scenario blog_layered,release_pipeline   # a shorter matrix

Exit code 1 when any kill showed a problem, else 0.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.bench import bench_process  # noqa: E402
from tests.helpers.worker_kills import ARGS, HANG_S, kill_one_worker  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="chooses the instants and the worker killed")
    parser.add_argument(
        "--scenario", default="all", help="the stories of the matrix (a loaded machine: fewer, for a shorter matrix)"
    )
    options = parser.parse_args()
    rng = random.Random(options.seed)
    chosen = list(ARGS)
    chosen[chosen.index("--scenario") + 1] = options.scenario
    args = tuple(chosen)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "whole"
        started = time.monotonic()
        assert bench_process("run", *args, "--out", str(whole)).returncode == 0
        took = time.monotonic() - started  # a wait past several times this is a hang, however loaded the machine
        lines = (whole / "traces.jsonl").read_bytes().count(b"\n")
        print(f"the matrix whole: {lines} trace lines in {took:.0f} s; a hang is {max(HANG_S, 4 * took):.0f} s")
        for n in range(1, options.kills + 1):
            result = kill_one_worker(Path(tmp) / f"kill-{n}", rng, lines, args, max(HANG_S, 4 * took))
            failed += bool(result.problems)
            how = "completed" if result.returncode == 0 else f"exit {result.returncode}, --resume completed it"
            said = "the driver named the dead worker" if result.noted else "no note"
            verdict = "; ".join(result.problems) or "ok"
            print(f"kill {n:2}: at {result.share:4.0%} of the trace: {how}; {said}: {verdict}", flush=True)
    print(f"{options.kills - failed} of {options.kills} kills survived; {failed} showed a problem")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
