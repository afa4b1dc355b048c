"""``bench run --model live --workers N`` against an instant endpoint, next to N bare httpx processes, in one run.

The endpoint (benchmarks/instant_server.py, an asyncio server in its own process) answers every request at once
with a valid next action (finish), so each run is one model call and what is measured is the client side: bench's
whole run in N worker processes (modes, gateway, answer checks, the driver writing trace and recording) against N
processes that do the least any Python client can: an ``httpx.AsyncClient`` each, posting the same request bodies
(taken from bench's recording) with the same share of the concurrency. Both are timed from the moment their
processes are asked to start to the last answer, so both pay their start-up; rounds alternate the two and the
median ratio of request rates is compared with the target (0.9x).
Run: .venv/bin/python benchmarks/live_workers_throughput.py [--workers 2] [--requests 4000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.live_throughput import bench_round, free_port  # noqa: E402
from harness.matrix.executors.workers import worker_share  # noqa: E402

TARGET = 0.9
KEY = "sk-benchmark-key-0123456789"


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds so far of this process and of its ended child processes (bench's workers, the bare clients)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def bare_process(url: str, bodies: list[dict], concurrency: int) -> None:
    """One bare client process: posts ``bodies`` with ``concurrency`` in flight and reads every answer."""

    async def main() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        queue = iter(bodies)
        async with httpx.AsyncClient(limits=limits, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as client:

            async def worker() -> None:
                for body in queue:
                    response = await client.post(url + "/chat/completions", json=body)
                    response.json()

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    asyncio.run(main())


def bare_round(url: str, bodies: list[dict], concurrency: int, workers: int) -> float:
    """Requests per second of ``workers`` bare processes sharing the bodies and the concurrency as bench does."""
    context = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    processes = [
        context.Process(
            target=bare_process, args=(url, bodies[i::workers], worker_share(concurrency, workers, i)), daemon=True
        )
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        assert process.exitcode == 0, f"a bare client process exited with {process.exitcode}"
    return len(bodies) / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--requests", type=int, default=4000, help="requests per round (default 4000)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight in all (default 16)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "instant_server.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    ours, bare, ratios = [], [], []
    spent = {"driver": 0.0, "workers": 0.0, "bare": 0.0}  # CPU seconds over every round
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(args.rounds):
                own, children = cpu_seconds()
                rate, bodies = bench_round(url, args.requests, args.concurrency, Path(tmp) / str(round_), args.workers)
                own_after, children_after = cpu_seconds()
                baseline = bare_round(url, bodies, args.concurrency, args.workers)
                spent["driver"] += own_after - own
                spent["workers"] += children_after - children
                spent["bare"] += cpu_seconds()[1] - children_after
                ours.append(rate)
                bare.append(baseline)
                ratios.append(rate / baseline)
    finally:
        server.terminate()
        server.wait(timeout=10)
    ratio = statistics.median(ratios)
    print(
        f"live runs against an instant endpoint: {args.requests} requests a round, --concurrency {args.concurrency}, "
        f"{args.workers} processes each side, {args.rounds} alternating rounds; cpus: {os.cpu_count()}"
    )
    print(f"bench --workers {args.workers}:        {statistics.median(ours):8.0f} req/s (median)")
    print(f"{args.workers} bare httpx processes:   {statistics.median(bare):8.0f} req/s (median)")
    per_request = {name: seconds / (args.requests * args.rounds) * 1000 for name, seconds in spent.items()}
    print(
        f"CPU a request: bench driver {per_request['driver']:.2f} ms + workers {per_request['workers']:.2f} ms; "
        f"bare processes {per_request['bare']:.2f} ms (the endpoint's own CPU not counted on either side)"
    )
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"ratio: {ratio:.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}; target {TARGET}x): "
        f"{'ok' if ratio >= TARGET else 'MISSED'}"
    )
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
