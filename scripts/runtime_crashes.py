"""Crash and resume in real runtimes: the table runtime x boundary -> repeated side effects, approvals lost, approvals
applied twice, with the number of kill points tried (issue 22, item 4; docs/findings.md).

For each mode and story, with scripted:reference: ``bench run`` killed after each of its writes, then ``bench run
--resume``; and the run stopped at its gate, then ``bench resume --approve`` killed after each of its writes (bench's,
the gateway's trace lines, the framework's own state writes), then ``bench resume`` until the run is settled. The
sweep itself is tests/helpers/runtime_crash_sweep.py; every command is bench's real entry point, forked warm.

    .venv/bin/python scripts/runtime_crashes.py                           # every adapter and workflow (minutes)
    .venv/bin/python scripts/runtime_crashes.py --modes pydantic_ai --scenario blog_brief_approval
    .venv/bin/python scripts/runtime_crashes.py --mode my_agent.py:build --scenario blog_layered   # your own agent
    .venv/bin/python scripts/runtime_crashes.py --phases resume --verbose # one line per kill point too
    .venv/bin/python scripts/runtime_crashes.py --model scripted:eager --scenario blog_two_gates --phases resume

(``scripted:eager`` calls the gated action at once, so the framework pauses that call itself and runs it on
approval.) Exit code 1 when bench's own part failed anywhere (a trace unreadable after a kill, a run not settled
exactly once, an approval lost), else 0: what a framework repeats is the finding, not a failure. (Today it is 1: a
first run killed between its suspended summary and its checkpoint cannot be decided; docs/findings.md.)
"""

from __future__ import annotations

import argparse
import datetime
import queue
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.errors import UserInputError  # noqa: E402
from modes import MODES, select_modes  # noqa: E402
from modes.runtimes.base import RuntimeMode  # noqa: E402
from modes.runtimes.own_agent import is_agent_spec, load_agent  # noqa: E402
from tests.helpers.runtime_crash_sweep import BOUNDARIES, MODEL, ForkDriver, KillPoint, Sweep  # noqa: E402

# Every adapter that names what its sweep imports ahead (RuntimeMode.crash_sweep_modules), in control-spectrum order.
ADAPTERS = tuple(name for name in select_modes(["runtimes"]) if getattr(MODES[name], "crash_sweep_modules", ()))
BASELINE = "workflow"  # bench's own workflow mode: resumed by replaying its code, not by a framework
STORIES = ("blog_brief_approval", "blog_two_gates")
COLUMNS = (
    "runtime",
    "boundary (the kill came right after)",
    "kill points",
    "repeated side effects",
    "approvals lost",
    "approvals applied twice",
    "not settled once",
    "ended otherwise",
)


def version_label(mode: str) -> str:
    """The mode and the version it ran on: its framework's first distribution, or bench's for a built-in mode."""
    cls = MODES[mode]
    if issubclass(cls, RuntimeMode):
        name, found = next(iter(cls.versions().items()))
        return f"{mode} ({name} {found})"
    from harness.version import __version__

    return f"{mode} (bench {__version__})"


def all_versions(modes: Sequence[str]) -> str:
    found: dict[str, str] = {}
    for mode in modes:
        cls = MODES[mode]
        if issubclass(cls, RuntimeMode):
            found.update(cls.versions())
    return ", ".join(f"{name} {version}" for name, version in found.items()) or "none"


def repeated(points: Sequence[KillPoint]) -> str:
    total = sum(p.repeated for p in points)
    where = sum(p.repeated > 0 for p in points)
    return f"{total} (after {where} kill point{'s' if where != 1 else ''})" if total else "0"


def rows(modes: Sequence[str], points: Sequence[KillPoint]) -> list[list[str]]:
    table = []
    for mode in modes:
        mine = [p for p in points if p.mode == mode]
        for boundary in BOUNDARIES:
            here = [p for p in mine if p.boundary == boundary]
            if not here:
                continue
            decided = not boundary.startswith("run:")  # no decision was given yet when the first run was killed
            table.append(
                [
                    version_label(mode),
                    boundary,
                    str(len(here)),
                    repeated(here),
                    str(sum(p.lost for p in here)),
                    str(sum(p.twice for p in here)) if decided else "-",
                    str(sum(not (p.settled_once and p.readable) for p in here)),
                    str(sum(p.ended_otherwise for p in here)),
                ]
            )
    return table


def markdown(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(header), rule, *(line(row) for row in body)])


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument(
        "--modes",
        "--mode",
        default=",".join((*ADAPTERS, BASELINE)),
        help="comma-separated mode names, or your own agent (FILE.py:FACTORY)",
    )
    parser.add_argument("--scenario", default=",".join(STORIES), help="comma-separated scenario names")
    parser.add_argument("--model", default=MODEL, help=f"a scripted policy (default {MODEL})")
    parser.add_argument("--phases", default="run,resume", help="run, resume or both (default both)")
    parser.add_argument("--jobs", type=int, default=1, help="sweeps at once, one driver process each (default 1)")
    parser.add_argument("--verbose", action="store_true", help="also one line per kill point")
    args = parser.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    args.scenario = [s for s in args.scenario.split(",") if s]
    args.phases = [p for p in args.phases.split(",") if p]
    for mode in args.modes:
        if is_agent_spec(mode) and mode not in MODES:
            try:
                load_agent(mode)  # your own agent, swept like an adapter (docs/findings.md: crash and resume)
            except UserInputError as exc:
                parser.error(str(exc))
        if mode not in MODES:
            parser.error(f"--modes: no mode '{mode}' (bench list names them)")
        if not MODES[mode].hard_gate:
            parser.error(f"--modes: '{mode}' does not stop at a gate; nothing to resume")
    for story in args.scenario:
        if not (ROOT / "scenarios" / f"{story}.yaml").is_file():
            parser.error(f"--scenario: no scenarios/{story}.yaml")
    if not args.phases or any(p not in ("run", "resume") for p in args.phases):
        parser.error("--phases: run, resume or run,resume")
    if not args.model.startswith("scripted:"):
        parser.error("--model: a scripted policy (scripted:NAME): the sweep runs every command many times over")
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    for mode in args.modes:
        cls = MODES[mode]
        problem = cls.missing() if issubclass(cls, RuntimeMode) else None
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    command = shlex.join([".venv/bin/python", "scripts/runtime_crashes.py", *(sys.argv[1:] if argv is None else argv)])
    started = time.monotonic()
    pairs = [(mode, story) for mode in args.modes for story in args.scenario]
    drivers: queue.Queue[ForkDriver] = queue.Queue()
    made = [ForkDriver(args.modes) for _ in range(min(args.jobs, len(pairs)))]
    for driver in made:
        drivers.put(driver)
    with tempfile.TemporaryDirectory(prefix="bench-crashes-") as scratch:

        def sweep(pair: tuple[str, str]) -> list[KillPoint]:
            mode, story = pair
            driver = drivers.get()
            try:
                began = time.monotonic()
                work = Path(scratch) / re.sub(r"[^A-Za-z0-9_.-]", "_", f"{mode}-{story}")  # an agent's path too
                work.mkdir()
                points = Sweep(driver, work, phases=args.phases, model=args.model).one(mode, story)
                print(
                    f"{mode} on {story}: {len(points)} kill points ({time.monotonic() - began:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
                return points
            finally:
                drivers.put(driver)

        try:
            with ThreadPoolExecutor(max_workers=len(made)) as pool:
                points = [p for found in pool.map(sweep, pairs) for p in found]
        finally:
            for driver in made:
                driver.close()
    print(f"# Crash and resume: {command}")
    print(f"# {datetime.date.today().isoformat()}; model {args.model}; stories {', '.join(args.scenario)}")
    print(f"# frameworks: {all_versions(args.modes)}")
    print()
    print(markdown(COLUMNS, rows(args.modes, points)))
    print()
    by_phase = {phase: sum(p.phase == phase for p in points) for phase in args.phases}
    print(
        f"kill points tried: {len(points)} ("
        + ", ".join(f"{phase} {count}" for phase, count in by_phase.items())
        + f") over {len(pairs)} mode x story sweeps in {time.monotonic() - started:.0f} s"
    )
    if args.verbose:
        print()
        for p in points:
            flags = [
                f"repeated {p.repeated}" if p.repeated else "",
                f"lost {p.lost}" if p.lost else "",
                f"twice {p.twice}" if p.twice else "",
                "" if p.settled_once and p.readable else "NOT SETTLED ONCE",
                "ended otherwise" if p.ended_otherwise else "",
            ]
            said = "; ".join(f for f in flags if f) or "ok"
            print(f"{p.mode} {p.story} {p.phase} #{p.index}: {p.write} -> {said} [{', '.join(p.recovery)}]")
    failed = [p for p in points if not (p.readable and p.settled_once) or p.lost]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
