"""The scenario's workflow as a LangGraph ``StateGraph``: one graph node per workflow node, approval nodes interrupt.

Each graph node does what the built-in workflow does at that node (``modes/workflow.py``'s walk, reused: model steps,
actions, validators, agent nodes, failure contracts, branch conditions through ``ctx.holds``/``ctx.evaluate``) and
routes with ``Command(goto=...)`` to the node the walk chose; the walk's counters live in the graph's state, so they
are checkpointed with it. An approval node whose gate is closed calls ``interrupt()``: LangGraph stops the graph
there until someone decides (``langgraph_driver``), and on resume runs the node again from its start; it decides
from the gates its state saved as open, so it reaches the same ``interrupt()`` and takes the decision. The
transition bound is the scenario's ``max_transitions``, counted in the state (the nodes' loop budgets too).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, TypedDict

from harness.core import HumanDecision, ModeResult, Node, RunContext
from modes.base import mode
from modes.runtimes.langgraph_base import Durability, LangGraphMode, decision_of, gate_closed, open_gates
from modes.workflow import WorkflowWalk

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel
    from langgraph.types import Command


class WalkState(TypedDict, total=False):
    """The graph's state. Its keys start with an underscore: no workflow node id can (a node's name in the graph is
    its id, and LangGraph refuses a node named like a state key)."""

    _walk: dict[str, Any]  # the walk's counters (GraphWalk.saved)
    _result: str  # how the walk ended: finished, error or step_limit


@mode("langgraph_workflow")
class LangGraphWorkflow(LangGraphMode):
    summary = "The scenario's workflow as a LangGraph StateGraph; approval nodes interrupt the graph."
    decides = "the workflow's code, as LangGraph nodes; the model only fills in the current node"
    visible = "only the current node's action (or an agent node's tools)"
    stopper = "LangGraph's interrupt() at an approval node"
    intervention = "all branch logic written in code; every approval node interrupts the graph"
    autonomy = "none over the path: the content of the current step"
    spectrum = 11  # runtime adapters come after bench's ten, the most controlled first
    hard_gate = True  # an approval node whose gate is closed interrupts before the walk goes on

    crash_sweep_modules = ("langgraph.graph", "langgraph.checkpoint.sqlite.aio", "modes.runtimes.langgraph_driver")

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        return await run_workflow(ctx, self.durability, decision)


class GraphWalk(WorkflowWalk):
    """The built-in walk inside one graph node: its counters come from the graph's state and go back into it."""

    def __init__(self, ctx: RunContext, saved: dict[str, Any]):
        super().__init__(ctx)
        self.step = saved.get("step", 0)
        self.failures = Counter(saved.get("failures", {}))
        self.observations = list(saved.get("observations", []))
        self.trail = list(saved.get("trail", []))
        self.fell_back = set(saved.get("fell_back", []))
        self.visits = Counter(saved.get("visits", {}))
        self.rerun = saved.get("rerun")
        self.transitions: int = saved.get("transitions", 0)
        self.saved_open: list[str] | None = saved.get("open_gates")

    def saved(self) -> dict[str, Any]:
        """The walk's counters as the graph's state keeps them (JSON values), with the gates open now."""
        return {
            "step": self.step,
            "failures": dict(self.failures),
            "observations": self.observations,
            "trail": self.trail,
            "fell_back": sorted(self.fell_back),
            "visits": dict(self.visits),
            "rerun": self.rerun,
            "transitions": self.transitions,
            "open_gates": open_gates(self.ctx),
        }

    def gate_open(self, gate: str) -> bool:
        return not gate_closed(self.ctx, self.saved_open, gate)

    def stop_at_gate(self, node: Node, gate: str) -> HumanDecision | str:
        """LangGraph's interrupt: the graph stops here; the driver records the request and suspends the run."""
        from modes.runtimes.langgraph_driver import ask_approval

        answer = ask_approval(gate, self.step, node=node.id)
        if "blocked" in answer:
            self.observations.append(answer["blocked"])
            return answer.get("reason", "approval request blocked")
        return decision_of(gate, answer)


async def run_workflow(ctx: RunContext, durability: Durability, decision: HumanDecision | None) -> ModeResult:
    """The workflow's graph on the run's thread, from its start or, with ``decision``, from its pending interrupt."""
    from modes.runtimes.langgraph_driver import GraphRun, checkpointer

    async with checkpointer(ctx) as saver:
        run = GraphRun(
            ctx, workflow_graph(ctx, saver), recursion_limit=ctx.limits.max_transitions + 2, durability=durability
        )
        if decision is not None:
            state = await run.resume(decision)
        else:
            state = await run.start({"_walk": {"open_gates": open_gates(ctx)}})
    return ModeResult(state["_result"])


def workflow_graph(ctx: RunContext, saver: BaseCheckpointSaver) -> Pregel:
    """A graph node for each workflow node, entered at the workflow's start; each routes to the node its walk chose."""
    from langgraph.graph import START, StateGraph

    graph = StateGraph(WalkState)
    for node in ctx.scenario.workflow.nodes:
        graph.add_node(node.id, visitor(ctx, node))
    graph.add_edge(START, ctx.scenario.workflow.start)
    return graph.compile(checkpointer=saver)


def visitor(ctx: RunContext, node: Node) -> Any:
    """The graph node of one workflow node: the walk's entry into it, then the transition it chose, or the end."""
    from langgraph.graph import END
    from langgraph.types import Command

    async def visit(state: dict[str, Any]) -> Command:
        walk = GraphWalk(ctx, state.get("_walk", {}))
        outcome = await walk.enter(node)
        if isinstance(outcome, ModeResult):
            return Command(goto=END, update={"_walk": walk.saved(), "_result": outcome.status})
        ctx.transition(walk.step, node.id, outcome)
        walk.transitions += 1
        if walk.transitions >= ctx.limits.max_transitions:
            ended = walk.out_of_transitions(ctx.scenario.node_map[outcome])
            return Command(goto=END, update={"_walk": walk.saved(), "_result": ended.status})
        return Command(goto=outcome, update={"_walk": walk.saved()})

    return visit
