"""How long `bench report` takes on a 1,000,000-event trace, next to only parsing the same file.

    .venv/bin/python benchmarks/report_scale.py [--events 1000000] [--repeat 5] [--keep DIR]
    .venv/bin/python benchmarks/report_scale.py --events 10000000 --report-only --repeat 1 [--trace FILE]

``--report-only`` measures `bench report` alone (no parse baselines, no ratio): its time and peak memory
next to the 2 GiB target, for a trace too large to parse five ways in reasonable time (10,000,000 events
are 5.2 GiB of JSONL, written in about two minutes). ``--trace`` reports on an existing traces.jsonl
instead of writing one.

Every measurement runs in its own child process; the rounds alternate the tasks, so a burst of load
on a busy machine hits a round's tasks alike. Times are measured inside the child around the work
itself (imports excluded); the whole child process's wall time is shown next to it. Peak memory is
the child's maximum resident set size (ru_maxrss from os.wait4), imports included.

Parse-only baselines, each a complete parse of every line of the file:
  json.loads loop        the standard library, one line at a time
  pandas read_json       pandas.read_json(lines=True): every field, nested objects as Python objects
                         (pyarrow's type inference cannot read bench traces: a free-form `detail`
                         field is a string in one run and an object in the next)
  pyarrow projected      pyarrow.json.read_json with the loader's explicit schema (fields the report
                         does not read are skipped by the parser): the fastest plain parse here
Each round's ratio is the report's time over that round's fastest baseline; the target holds when
every round is under it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

BASELINES = ("json.loads loop", "pandas read_json", "pyarrow projected")
TASKS = (*BASELINES, "bench report")
RATIO_TARGET, MEMORY_TARGET = 3.0, 2 << 30


def child(task: str, path: Path, out: Path) -> None:
    """Runs one task and prints its in-process seconds as JSON (imports done before the clock starts)."""
    if task == "json.loads loop":
        started = time.perf_counter()
        count = 0
        with open(path, "rb") as handle:
            for line in handle:
                json.loads(line)
                count += 1
    elif task == "pandas read_json":
        import pandas as pd

        started = time.perf_counter()
        count = len(pd.read_json(path, lines=True, dtype=False, convert_dates=False))
    elif task == "pyarrow projected":
        import pyarrow.json as pj

        from reports.load import SCHEMA

        options = pj.ParseOptions(explicit_schema=SCHEMA, unexpected_field_behavior="ignore")
        started = time.perf_counter()
        count = pj.read_json(path, parse_options=options).num_rows
    else:
        from reports.report import build_report

        started = time.perf_counter()
        result = build_report([path.parent], out=out)
        count = result.lines
    print(json.dumps({"seconds": time.perf_counter() - started, "lines": count}))


def measure(task: str, path: Path, out: Path) -> dict:
    """Runs ``task`` in a child process: its own seconds, the process's wall time and peak memory."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", task, str(path), str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        last = stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return {"task": task, "failed": last[0]}
    found = json.loads(stdout.decode().strip().splitlines()[-1])
    return {
        "task": task,
        "seconds": found["seconds"],
        "lines": found["lines"],
        "wall": wall,
        "peak": usage.ru_maxrss * 1024,
    }  # Linux reports kilobytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="write the trace and report here instead of a temporary folder")
    parser.add_argument("--report-only", action="store_true", help="measure bench report alone (time, peak memory)")
    parser.add_argument("--trace", type=Path, help="an existing traces.jsonl to report on (nothing is written)")
    parser.add_argument("--child", nargs=3, metavar=("TASK", "TRACE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0

    from synthetic_traces import write_synthetic

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        trace = args.trace or folder / "run" / "traces.jsonl"
        if args.trace is None:
            trace.parent.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            runs = write_synthetic(trace, args.events)
            print(
                f"synthetic trace: {args.events:,} events, {runs:,} runs, {trace.stat().st_size / 2**20:,.0f} MiB, "
                f"written in {time.perf_counter() - started:.1f} s ({trace})"
            )
        if args.report_only:
            return report_alone([measure("bench report", trace, folder / "report") for _ in range(args.repeat)])
        best: dict[str, dict] = {}
        ratios: list[float] = []
        for round_ in range(args.repeat):
            this = {task: measure(task, trace, folder / "report") for task in TASKS}
            for task, result in this.items():
                kept = best.get(task)
                if kept is None or ("seconds" in result and result["seconds"] < kept.get("seconds", float("inf"))):
                    best[task] = result
            parsed = [this[t]["seconds"] for t in BASELINES if "seconds" in this[t]]
            if "seconds" in this["bench report"] and parsed:
                ratios.append(this["bench report"]["seconds"] / min(parsed))
            print(
                f"round {round_ + 1}/{args.repeat}: "
                + ", ".join(f"{t} {this[t]['seconds']:.2f} s" if "seconds" in this[t] else f"{t} failed" for t in TASKS)
                + (f"; report / fastest parse {ratios[-1]:.2f}x" if len(ratios) == round_ + 1 else "")
            )
    return report(best, ratios, args.repeat, args.events)


def report_alone(rounds: list[dict]) -> int:
    """Each round's time and peak memory of `bench report`, the peak next to its target."""
    failed = [r["failed"] for r in rounds if "seconds" not in r]
    if failed:
        print(f"bench report failed: {failed[0]}")
        return 1
    for i, r in enumerate(rounds, start=1):
        print(
            f"round {i}/{len(rounds)}: bench report on {r['lines']:,} lines: {r['seconds']:.1f} s "
            f"({r['wall']:.1f} s whole process), peak memory {r['peak'] / 2**30:.2f} GiB "
            f"(target under {MEMORY_TARGET / 2**30:.0f} GiB): {'ok' if r['peak'] < MEMORY_TARGET else 'MISSED'}"
        )
    return 0 if all(r["peak"] < MEMORY_TARGET for r in rounds) else 1


def report(best: dict[str, dict], ratios: list[float], rounds: int, events: int) -> int:
    print()
    print(f"{'task':<20} {'seconds':>8} {'process s':>10} {'peak MiB':>9}  lines")
    for task in TASKS:
        r = best[task]
        if "seconds" not in r:
            print(f"{task:<20} failed: {r['failed']}")
            continue
        print(f"{task:<20} {r['seconds']:>8.2f} {r['wall']:>10.2f} {r['peak'] / 2**20:>9.0f}  {r['lines']:,}")
    parsed = [best[t] for t in BASELINES if "seconds" in best[t]]
    fastest = min(parsed, key=lambda r: r["seconds"])
    rep = best["bench report"]
    if "seconds" not in rep:
        print("bench report failed")
        return 1
    failed = [task for task in TASKS if "seconds" not in best[task]]
    ratio_ok = len(ratios) == rounds and max(ratios) <= RATIO_TARGET and not failed
    wall_ratio = rep["wall"] / fastest["wall"]
    print()
    print(
        f"report / fastest parse, per round: {', '.join(f'{r:.2f}x' for r in ratios)} "
        f"(best times: {rep['seconds'] / fastest['seconds']:.2f}x in-process, {wall_ratio:.2f}x whole process; "
        f"target <= {RATIO_TARGET:.0f}x in every round, every baseline working): {'ok' if ratio_ok else 'MISSED'}"
    )
    print(
        f"report peak memory: {rep['peak'] / 2**30:.2f} GiB (target under {MEMORY_TARGET / 2**30:.0f} GiB): "
        f"{'ok' if rep['peak'] < MEMORY_TARGET else 'MISSED'}"
    )
    print(f"lines reported on: {rep['lines']:,} of {events:,}")
    return 0 if ratio_ok and rep["peak"] < MEMORY_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
