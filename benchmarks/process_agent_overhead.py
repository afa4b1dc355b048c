"""What a run of an agent process costs next to the in-process adapter of the same framework, measured in one run.

Four measurements, each N runs of blog_brief_approval with scripted:reference, one run at a time, through the same
call ``bench run`` makes (trace to a real file):

1. in-process: the ``openai_agents`` adapter (the Agents SDK's Runner in bench's process, bench's tools and model in
   the SDK's own types).
2. process, Agents SDK: examples/agents/openai_agents_mcp.py as ``agent:CMD`` (the same SDK, in its own process,
   with its MCP client and its OpenAI client talking to the run's two ports).
3. process, plain loop: examples/agents/plain_loop.py (the `mcp` client and httpx).
4. process, empty: a program that exits at once (the servers started and stopped, the process started and
   reaped: bench's own part of a process agent's cost, with no client at all).

It prints the time per run of each and its ratio to the in-process adapter's.
Run: .venv/bin/python benchmarks/process_agent_overhead.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.matrix.pipeline.driver import RunSpec  # noqa: E402
from harness.matrix.pipeline.driver import run as run_matrix  # noqa: E402
from harness.records.trace import read_events  # noqa: E402
from modes.runtimes.process import register_process_agent  # noqa: E402

SCENARIO = "blog_brief_approval"
PYTHON = sys.executable
AGENTS = {
    "process, Agents SDK": f"{PYTHON} {ROOT / 'examples' / 'agents' / 'openai_agents_mcp.py'}",
    "process, plain loop": f"{PYTHON} {ROOT / 'examples' / 'agents' / 'plain_loop.py'}",
    "process, empty": f"{PYTHON} -c pass",
}


def per_run(mode: str, runs: int, folder: Path) -> tuple[float, str]:
    """Seconds per run (the median of ``runs`` single runs, after one more that warms the imports up) and the verdicts
    they had."""
    times, verdicts = [], set()
    for number in range(runs + 1):
        out = folder / f"{number}"
        started = time.perf_counter()
        spec = RunSpec(model="scripted:reference", scenarios=(SCENARIO,), modes=(mode,), trials=1, out=out)
        result = run_matrix(spec)
        if number:
            times.append(time.perf_counter() - started)
        verdicts |= {e.outcome.stop_verdict for e in read_events(result.traces) if e.outcome is not None}
    return statistics.median(times), ", ".join(sorted(verdicts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="runs of each (their median printed; one more first, not counted)"
    )
    runs = parser.parse_args().runs
    modes = {"in-process adapter (openai_agents)": "openai_agents"}
    modes |= {label: register_process_agent(f"agent:{command}", command) for label, command in AGENTS.items()}
    with tempfile.TemporaryDirectory() as scratch:
        measured = {label: per_run(mode, runs, Path(scratch) / str(i)) for i, (label, mode) in enumerate(modes.items())}
    base = measured["in-process adapter (openai_agents)"][0]
    print(f"{runs} runs each of {SCENARIO}, scripted:reference, one at a time (median per run)")
    for label, (seconds, verdicts) in measured.items():
        print(f"{label:38} {seconds * 1000:8.0f} ms per run  {seconds / base:6.1f}x  ({verdicts})")


if __name__ == "__main__":
    main()
