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

from harness.session import execute  # noqa: E402

from harness.models.base import ModelSource  # noqa: E402
from harness.models.live import LiveConfig, LiveSource, chat_completions_url  # noqa: E402
from harness.models.replay import ReplaySource  # noqa: E402
from harness.models.scripted import ScriptedSource  # noqa: E402
from harness.runner import MatrixConfig, RunFolder, cells_for  # noqa: E402
from harness.scenario import load_all  # noqa: E402
from harness.trace import TraceEvent, read_events  # noqa: E402
from modes import select_modes  # noqa: E402

RECORDING = ROOT / "results" / "recorded" / "smollm2-135m"


def run(
    source: ModelSource, scenarios: list, modes: list[str], trials: int, run_dir: Path
) -> tuple[float, list[TraceEvent]]:
    """Runs a matrix the way ``bench run`` does, traces written to a real file; returns wall seconds and the events."""
    run_dir.mkdir(parents=True)
    config = MatrixConfig(model=source, seed=0)
    started = time.perf_counter()
    execute(cells_for(scenarios, modes, trials), config, RunFolder(run_dir, {}, config.clock))
    elapsed = time.perf_counter() - started
    return elapsed, list(read_events(run_dir / "traces.jsonl"))


def calls(events: list[TraceEvent]) -> list[TraceEvent]:
    return [e for e in events if e.kind == "model_call"]


def live_measurement(scenarios: dict, trials: int, folder: Path) -> tuple[float, float, int] | None:
    """(median call ms, harness ms per call, calls) from live runs on the bundled model, or None without it."""
    from harness.models.server import LocalModelServer, LocalModelUnavailable

    try:
        server = LocalModelServer().start()
    except LocalModelUnavailable as exc:
        print(f"live: skipped ({exc})")
        return None
    try:
        config = LiveConfig(
            url=chat_completions_url(server.base_url), model=server.model, response_format="json_object"
        )
        _, events = run(
            LiveSource(config), [scenarios["blog_brief_approval"]], select_modes(["all"]), trials, folder / "live"
        )
    finally:
        server.stop()
    model_calls = calls(events)
    inside = {}
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
    scenarios = load_all(ROOT / "scenarios")
    modes = select_modes(["all"])
    rows: list[tuple[str, int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        live = live_measurement(scenarios, args.live_trials, folder)
        if live is not None:
            reference_ms, harness_ms, n = live
            reference = f"median live call of the bundled model, this run ({n} calls)"
            rows.append(("live: harness time inside live runs", n, harness_ms * 1000))
        else:
            recorded = calls(list(read_events(RECORDING / "traces.jsonl")))
            reference_ms = statistics.median(c.latency_ms or 0.0 for c in recorded)
            reference = f"median call in the committed recording ({len(recorded)} calls; not measured in this run)"
        seconds, events = run(
            ScriptedSource("random"), list(scenarios.values()), modes, args.trials, folder / "scripted"
        )
        rows.append(("scripted: whole matrix, no model", len(calls(events)), seconds / len(calls(events)) * 1e6))
        replay = ReplaySource(RECORDING)
        recorded_scenarios = [scenarios[s] for s in replay.manifest["scenarios"] if s in scenarios]
        seconds, events = run(
            replay, recorded_scenarios, replay.manifest["modes"], int(replay.manifest["trials"]), folder / "replay"
        )
        rows.append(("replay: committed recording", len(calls(events)), seconds / len(calls(events)) * 1e6))

    print(f"reference model call: {reference_ms:,.1f} ms = {reference}")
    print(f"{'measurement':<40} {'calls':>7} {'per call':>12} {'/ model call':>14}")
    for label, n, micros in rows:
        print(f"{label:<40} {n:>7} {micros:>9,.0f} us {micros / 1000 / reference_ms:>13.4%}")


if __name__ == "__main__":
    main()
