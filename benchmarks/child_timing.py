"""Wall time of one child process, start to exit: the scripts that time whole ``bench`` commands share it."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def seconds(command: list[str]) -> float:
    """Runs ``command`` in the project folder; a failure stops the benchmark with the end of its stderr."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed
