"""The harness's own overhead next to a model call, measured in one run.

Three measurements, printed as time per model call and as a ratio to a real model call:

1. live:     the bundled SmolLM2 model behind its llama.cpp server (the ``[local]`` extra), every mode on
             one scenario. For each run, harness time = the run's wall time minus the time spent inside
             its model calls (HTTP included), so the overhead and the model are timed in the same runs.
2. scripted: the whole matrix with scripted policies (no model at all): everything bench does around a
             model call (modes, gateway, outcome, trace lines written and flushed to a file).
3. replay:   the committed recording replayed (no network): the same plus reading and validating answers.

The reference "model call" is the median model-call latency of measurement 1. Without the ``[local]``
extra, measurement 1 is skipped and the committed recording's median latency is the reference (said so).
Run: .venv/bin/python benchmarks/run_overhead.py [--trials N]
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
from harness.records.trace import TraceEvent, read_events  # noqa: E402
from harness.scenario.load import load_all  # noqa: E402

RECORDING = ROOT / "results" / "recorded" / "smollm2-135m"


def run(
    model: str, scenarios: list[str], modes: list[str], trials: int | None, run_dir: Path
) -> tuple[float, list[TraceEvent]]:
    """Runs a matrix the way ``bench run`` does (the same call), trace to a real file: wall seconds and the events."""
    started = time.perf_counter()
    result = run_matrix(RunSpec(model=model, scenarios=scenarios, modes=modes, trials=trials, out=run_dir))
    elapsed = time.perf_counter() - started
    return elapsed, list(read_events(result.traces))


def calls(events: list[TraceEvent]) -> list[TraceEvent]:
    return [e for e in events if e.kind == "model_call"]


def live_measurement(trials: int, folder: Path) -> tuple[float, float, int] | None:
    """(median call ms, harness ms per call, calls) from live runs on the bundled model, or None without it."""
    from harness.models.server import LocalModelUnavailable, model_path

    try:
        model_path()
    except LocalModelUnavailable as exc:
        print(f"live: skipped ({exc})")
        return None
    _, events = run("local", ["blog_brief_approval"], ["all"], trials, folder / "live")
    model_calls = calls(events)
    inside: dict[str, float] = {}
    for call in model_calls:
        inside[call.run_id] = inside.get(call.run_id, 0.0) + (call.latency_ms or 0.0)
    walls = {e.run_id: e.outcome.wall_ms for e in events if e.kind == "summary" and e.outcome is not None}
    harness_ms = sum(walls[run_id] - inside.get(run_id, 0.0) for run_id in walls)
    return statistics.median(c.latency_ms or 0.0 for c in model_calls), harness_ms / len(model_calls), len(model_calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per cell for the offline matrices")
    parser.add_argument("--live-trials", type=int, default=2, help="trials per mode for the live measurement")
    args = parser.parse_args()
    scenarios = sorted(load_all(ROOT / "scenarios"))
    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        live = live_measurement(args.live_trials, folder)
        if live is not None:
            reference_ms, harness_ms, n = live
            reference = f"median live call of the bundled model, this run ({n} calls)"
            rows.append(("live: harness time inside live runs", n, harness_ms * 1000))
        else:
            recorded = calls(list(read_events(RECORDING / "traces.jsonl")))
            reference_ms = statistics.median(c.latency_ms or 0.0 for c in recorded)
            reference = f"median call in the committed recording ({len(recorded)} calls; not measured in this run)"
        seconds, events = run("scripted:random", scenarios, ["all"], args.trials, folder / "scripted")
        rows.append(("scripted: whole matrix, no model", len(calls(events)), seconds / len(calls(events)) * 1e6))
        seconds, events = run(f"replay:{RECORDING}", [], [], None, folder / "replay")
        rows.append(("replay: committed recording", len(calls(events)), seconds / len(calls(events)) * 1e6))

    print(f"reference model call: {reference_ms:,.1f} ms = {reference}")
    print(f"{'measurement':<40} {'calls':>7} {'per call':>12} {'/ model call':>14}")
    for label, n, micros in rows:
        print(f"{label:<40} {n:>7} {micros:>9,.0f} us {micros / 1000 / reference_ms:>13.4%}")


if __name__ == "__main__":
    main()
