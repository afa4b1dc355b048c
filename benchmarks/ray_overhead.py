"""Per-unit overhead of the Ray executor against the local worker pool, on the same scripted matrix, in one run.

The matrix (``--modes`` x ``--scenarios`` x ``--trials`` with ``scripted:random``) is run the way ``bench run`` runs
it (``harness.run``, traces to a real file): with ``--workers N`` (local processes), then with ``--executor ray`` on
a Ray instance started here with N CPUs (started before the clock runs: joining a cluster is paid once a sweep),
alternating, ``--repeat`` times, best of each kept. Prints the wall milliseconds per unit of each, their ratio, the
trace bytes per unit and the driver's CPU milliseconds per unit under Ray (what one driver spends writing each
unit: the figure docs/scale.md's saturation estimate starts from), and whether both folders hold the same traces.
Run: .venv/bin/python benchmarks/ray_overhead.py [--trials 20] [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ray  # noqa: E402

from benchmarks.workers_throughput import comparable  # noqa: E402
from harness.matrix.pipeline.driver import RunSpec  # noqa: E402
from harness.matrix.pipeline.driver import run as run_matrix  # noqa: E402


def timed(folder: Path, trials: int, **how: object) -> tuple[float, float, int]:
    """Wall seconds, this process's CPU seconds, and runs of one whole scripted matrix."""
    spec = RunSpec(model="scripted:random", trials=trials, out=folder, replace=True, **how)  # type: ignore[arg-type]
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_matrix(spec)
    assert result.manifest.status == "complete", result.manifest.stopped_because
    return time.perf_counter() - wall, time.process_time() - cpu, result.manifest.runs or 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            pool, on_ray = Path(tmp) / "pool", Path(tmp) / "ray"
            timed(on_ray, 1, executor="ray")  # warms Ray's worker processes: their imports are paid once a sweep
            best: dict[str, tuple[float, float]] = {}
            runs = 0
            for _ in range(args.repeat):
                for name, folder, how in (
                    ("pool", pool, {"workers": args.workers}),
                    ("ray", on_ray, {"executor": "ray"}),
                ):
                    wall, cpu, runs = timed(folder, args.trials, **how)
                    if name not in best or wall < best[name][0]:
                        best[name] = (wall, cpu)
            same = comparable(pool) == comparable(on_ray)
            trace_bytes = (on_ray / "traces.jsonl").stat().st_size
    finally:
        ray.shutdown()
    per_pool, per_ray = (best[name][0] / runs * 1000 for name in ("pool", "ray"))
    print(f"matrix: every mode x every scenario x {args.trials} trials = {runs} runs, scripted:random")
    print(
        f"--workers {args.workers}:        {per_pool:6.3f} ms a unit (best of {args.repeat}: {best['pool'][0]:.1f} s)"
    )
    print(
        f"--executor ray ({args.workers} CPUs): {per_ray:6.3f} ms a unit (best {args.repeat}: {best['ray'][0]:.1f} s)"
    )
    print(f"ratio ray / local pool: {per_ray / per_pool:.2f}x (wall time a unit)")
    driver = {name: best[name][1] / runs * 1000 for name in best}
    print(f"driver CPU a unit: {driver['ray']:.3f} ms under Ray, {driver['pool']:.3f} ms with the local pool")
    print(f"trace: {trace_bytes / runs:,.0f} bytes a unit")
    print(f"same traces from both executors (timestamps and latencies aside): {same}")


if __name__ == "__main__":
    main()
