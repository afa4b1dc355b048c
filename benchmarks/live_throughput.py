"""``bench run --model live`` against an instant endpoint, next to a bare httpx loop sending the same bodies.

The endpoint (benchmarks/instant_server.py, its own process) answers every request at once, so what is
measured is the client side: bench's whole run (modes, gateway, answer checks, trace and recording
written to disk) per request, against the least any Python client can do (an ``httpx.AsyncClient`` posting
the same request bodies at the same concurrency and reading the answers). Rounds alternate the two at
concurrency 1, 4 and 16; the ratio of request rates per round, median of rounds, is compared with the
target: bench >= 0.95x of the bare loop at each concurrency.
Run: .venv/bin/python benchmarks/live_throughput.py [--requests N --rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import RunSpec, run  # noqa: E402

TARGET = 0.95
CONCURRENCY = (1, 4, 16)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bench_round(url: str, requests: int, concurrency: int, folder: Path, workers: int = 1) -> tuple[float, list[dict]]:
    """Requests per second of a live bench run in ``workers`` processes (one model call per run), and its bodies."""
    env = {"LLM_API_URL": url, "LLM_MODEL": "instant", "LLM_API_KEY": "sk-benchmark-key-0123456789"}
    spec = RunSpec.build(
        env=env,
        model="live",
        modes=["react"],
        scenarios=["blog_brief_approval"],
        trials=requests,
        concurrency=concurrency,
        workers=workers,
        live={"provider": "generic"},
        out=folder,
    )
    started = time.perf_counter()
    result = run(spec)
    elapsed = time.perf_counter() - started
    bodies = [json.loads(line)["exchange"]["request"] for line in (result.folder / "recording.jsonl").open()]
    assert len(bodies) == requests, f"{len(bodies)} calls recorded, {requests} expected"
    return requests / elapsed, bodies


async def bare_loop(url: str, bodies: list[dict], concurrency: int) -> float:
    """Requests per second of the same bodies posted by a bare httpx.AsyncClient, ``concurrency`` in flight."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": "Bearer sk-benchmark-key-0123456789"}
    queue = iter(bodies)
    async with httpx.AsyncClient(limits=limits, headers=headers, timeout=30) as client:

        async def worker() -> None:
            for body in queue:
                response = await client.post(url + "/chat/completions", json=body)
                response.json()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(bodies) / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per round (default 400)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "instant_server.py"), str(port)], stdout=subprocess.PIPE, text=True
    )
    failed = False
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            rows = []
            for concurrency in CONCURRENCY:
                ratios, ours, bare = [], [], []
                for round_ in range(args.rounds):
                    rate, bodies = bench_round(url, args.requests, concurrency, Path(tmp) / f"c{concurrency}-{round_}")
                    baseline = asyncio.run(bare_loop(url, bodies, concurrency))
                    ours.append(rate)
                    bare.append(baseline)
                    ratios.append(rate / baseline)
                rows.append(
                    (
                        concurrency,
                        statistics.median(ours),
                        statistics.median(bare),
                        statistics.median(ratios),
                        min(ratios),
                        max(ratios),
                    )
                )
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(
        f"{'concurrency':>11} {'bench req/s':>12} {'bare httpx req/s':>17} {'ratio':>8} {'rounds':>14} "
        f"{'target':>7}  verdict"
    )
    for concurrency, ours, bare, ratio, low, high in rows:
        ok = ratio >= TARGET
        failed |= not ok
        print(
            f"{concurrency:>11} {ours:>12,.0f} {bare:>17,.0f} {ratio:>7.3f}x {low:>6.3f}-{high:.3f} {TARGET:>6.2f}x  "
            f"{'ok' if ok else 'MISSED'}"
        )
    print(
        f"({args.rounds} interleaved rounds of {args.requests} requests; bench: whole runs with trace and recording "
        f"on disk, one model call each; cpus: {os.cpu_count()})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
