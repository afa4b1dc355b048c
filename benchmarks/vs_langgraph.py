"""bench next to LangGraph on the same gated blog workflow, measured side by side in one run.

The work: the blog story's first half. Create the brief, then stop at the approval gate, with no model
(bench: a scripted policy; LangGraph: a node that writes the brief). bench runs the real thing, as
``bench run`` does: a scenario, a mode, the gateway, the judge and every trace line written to a file.
LangGraph 1.2 runs its recipe for the same story: a StateGraph of two nodes (the brief, then an approval
node that calls ``interrupt()``), an in-memory checkpointer, one thread per run, invoked until it
suspends. Rounds alternate the two (bench, LangGraph, bench, ...), so the machine's load hits both; each
round gives a ratio of the per-run times, and the median of the rounds is compared with the target.

Targets (issue 13): bench workflow <= 0.10x LangGraph's run, react and plan_execute <= 0.15x.
Needs the [benchmarks] extra (LangGraph). Run: .venv/bin/python benchmarks/vs_langgraph.py [--runs N --rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_matrix  # noqa: E402
from harness.models.scripted import ScriptedSource  # noqa: E402
from harness.records.trace import TraceWriter  # noqa: E402
from harness.scenario.load import load_scenario  # noqa: E402

TARGETS = {"workflow": 0.10, "react": 0.15, "plan_execute": 0.15}
SCENARIO = load_scenario(ROOT / "scenarios" / "blog_brief_approval.yaml")


def bench_batch(mode: str, runs: int, folder: Path) -> float:
    """Seconds per run of ``runs`` bench runs of one mode, every trace line written to a file."""
    path = folder / f"{mode}-{uuid.uuid4().hex[:8]}.jsonl"
    config = MatrixConfig(model=ScriptedSource("compliant"), seed=0)
    started = time.perf_counter()
    with TraceWriter(path) as writer:
        asyncio.run(run_matrix(cells_for([SCENARIO], [mode], runs), config, writer.write))
    return (time.perf_counter() - started) / runs


class BlogState(TypedDict, total=False):
    brief: dict[str, Any]
    approved: bool


def langgraph_graph() -> Any:
    """LangGraph's recipe for the story: brief, then an approval node that interrupts; in-memory checkpoints."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def create_brief(state: BlogState) -> BlogState:
        return {"brief": {"topic": "who decides an agent's next step", "audience": "engineers"}}

    def approve_brief(state: BlogState) -> BlogState:
        answer = interrupt({"gate": "brief_approval", "brief": state["brief"]})
        return {"approved": bool(answer)}

    graph = StateGraph(BlogState)
    graph.add_node("create_brief", create_brief)
    graph.add_node("approve_brief", approve_brief)
    graph.add_edge(START, "create_brief")
    graph.add_edge("create_brief", "approve_brief")
    graph.add_edge("approve_brief", END)
    return graph.compile(checkpointer=InMemorySaver())


def langgraph_batch(graph: Any, runs: int) -> float:
    """Seconds per run of ``runs`` LangGraph runs, each on a new thread, until it suspends at the approval."""
    started = time.perf_counter()
    for _ in range(runs):
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        result = graph.invoke({}, config)
        assert "__interrupt__" in result, "the LangGraph run did not suspend at the approval"
    return (time.perf_counter() - started) / runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs per batch (default 300)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    args = parser.parse_args()
    try:
        graph = langgraph_graph()
    except ImportError:
        print("LangGraph is not installed: .venv/bin/pip install -e '.[benchmarks]'")
        return 2
    langgraph_batch(graph, 50)  # warm both up: imports, caches
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for mode in TARGETS:
            bench_batch(mode, 50, folder)
        ratios: dict[str, list[float]] = {mode: [] for mode in TARGETS}
        graph_times, bench_times = [], {mode: [] for mode in TARGETS}
        for _ in range(args.rounds):
            for mode in TARGETS:
                lg = langgraph_batch(graph, args.runs)
                ours = bench_batch(mode, args.runs, folder)
                graph_times.append(lg)
                bench_times[mode].append(ours)
                ratios[mode].append(ours / lg)
    print(
        f"LangGraph {_version()} suspend-at-gate run (2 nodes, interrupt, in-memory checkpointer): "
        f"median {1e6 * statistics.median(graph_times):,.0f} us per run"
    )
    print(
        f"{'bench mode':<14}{'us per run':>12}{'ratio (median of rounds)':>28}{'rounds min-max':>20}"
        f"{'target':>9}  verdict"
    )
    failed = False
    for mode, target in TARGETS.items():
        median = statistics.median(ratios[mode])
        ok = median <= target
        failed |= not ok
        print(
            f"{mode:<14}{1e6 * statistics.median(bench_times[mode]):>12,.0f}{median:>27.3f}x"
            f"{min(ratios[mode]):>13.3f}-{max(ratios[mode]):.3f}{target:>8.2f}x  {'ok' if ok else 'MISSED'}"
        )
    print(f"({args.rounds} interleaved rounds of {args.runs} runs each; bench writes every trace line to a file)")
    return 1 if failed else 0


def _version() -> str:
    from importlib.metadata import version

    return version("langgraph")


if __name__ == "__main__":
    raise SystemExit(main())
