"""A scenario's workflow as a drawable graph: its nodes with a one-line caption, every way out of a node as a typed
edge (with the condition that takes it, or the decision: an approval node's rejection edge), which nodes a gate
guards, and which edges close a loop.

The Mermaid text (harness/scenario/mermaid.py) and the run page's picture (reports/workflow_svg.py) both draw from
this, so the docs and a run's page show the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness.scenario.model import Condition, Node, Scenario

EdgeKind = Literal["next", "branch", "fallback", "retry", "react", "reject"]

_SIGNS = {"greater_than": ">", "at_least": "≥", "less_than": "<", "at_most": "≤"}


@dataclass(frozen=True)
class Edge:
    """One way out of a node: where it goes, why (``label``), and whether it runs back up the graph (a loop)."""

    source: str
    target: str
    kind: EdgeKind
    label: str
    loop: bool = False


@dataclass(frozen=True)
class GraphNode:
    """A node as drawn: its id, type, a caption (what it runs or checks) and the gate that guards it, if any."""

    id: str
    type: str
    caption: str
    gate: str | None  # approval node: the gate it asks for; a node running a gated action: that action's gate
    approval: bool  # an approval node (it asks for the gate); else a node whose action the gate holds back
    budget: int | None  # max_visits, shown on nodes that sit on a loop
    end_status: str | None  # end node: finished or error


@dataclass(frozen=True)
class WorkflowGraph:
    start: str
    nodes: tuple[GraphNode, ...]
    edges: tuple[Edge, ...]

    @property
    def on_loop(self) -> frozenset[str]:
        """The nodes a loop passes through (a self-loop of retries is not one: it never re-enters the node)."""
        loops = [e for e in self.edges if e.loop and e.kind not in ("retry", "react")]
        found: set[str] = set()
        for back in loops:  # a back edge target -> ... -> source: the nodes reachable from target that reach source
            found |= _between(self.edges, back.target, back.source)
        return frozenset(found)


def workflow_graph(s: Scenario) -> WorkflowGraph:
    """The scenario's workflow as nodes and edges, in the order its file gives them."""
    edges = [edge for node in s.workflow.nodes for edge in _edges_of(node)]
    back = _back_edges(s.workflow.start, edges)
    edges = [
        Edge(e.source, e.target, e.kind, e.label, loop=True) if (e.source, e.target, e.label) in back else e
        for e in edges
    ]
    return WorkflowGraph(s.workflow.start, tuple(_node(s, n) for n in s.workflow.nodes), tuple(edges))


def condition_text(c: Condition) -> str:
    """A condition as a short formula: ``order.amount > 10000 and screening exists``."""
    parts = []
    for test, path, operand in c.tests():
        if test in ("exists", "missing"):
            parts.append(f"{path} {test}")
        elif test == "equals":
            parts.append(f"{path} = {_value(operand)}")
        else:
            parts.append(f"{path} {_SIGNS[test]} {_value(operand)}")
    return " and ".join(parts)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value) if isinstance(value, str) else str(value)


def _node(s: Scenario, n: Node) -> GraphNode:
    gate = n.gate if n.type == "approval" else None
    if n.action is not None and gate is None:
        spec = s.action_map.get(n.action)
        gate = spec.gate if spec is not None and spec.kind == "task" else None
    return GraphNode(
        id=n.id,
        type=n.type,
        caption=_caption(n),
        gate=gate,
        approval=n.type == "approval",
        budget=n.max_visits if n.type != "end" else None,
        end_status=n.status if n.type == "end" else None,
    )


def _caption(n: Node) -> str:
    if n.type in ("action", "model_step"):
        return f"{n.type.replace('_', ' ')}: {n.action}"
    if n.type == "approval":
        return f"approval: {n.gate}"
    if n.type == "validator":
        return "check: " + (condition_text(n.check) if n.check is not None else "?")
    if n.type == "agent":
        return "agent: " + ", ".join(n.tools)
    if n.type == "plan":  # a Plan-and-Execute sub-flow: its tools and the steps it may hand to a ReAct sub-agent
        react = "".join(f"; react {s.name}: {', '.join(s.tools)}" for s in n.react_steps)
        return "plan: " + ", ".join(n.tools) + react
    return f"end: {n.status}"


def _edges_of(n: Node) -> list[Edge]:
    edges = []
    by_model = n.route_by == "model"
    for branch in n.branches:
        if by_model:  # the model picks among the branches open at the time; a default branch is always open
            label = f"model's pick if {condition_text(branch.when)}" if branch.when is not None else "model's pick"
        else:
            label = condition_text(branch.when) if branch.when is not None else "otherwise"
        edges.append(Edge(n.id, branch.goto, "branch", label))
    defaulted = any(b.when is None for b in n.branches)
    if n.next is not None and not defaulted:
        edges.append(
            Edge(n.id, n.next, "next", "approved" if n.on_reject is not None else "otherwise" if n.branches else "")
        )
    if n.on_reject is not None:  # an approval node whose gate goes on after a rejection: the compensation's way
        edges.append(Edge(n.id, n.on_reject, "reject", "rejected"))
    failure = n.on_failure
    if failure is not None:
        if failure.retry:
            edges.append(Edge(n.id, n.id, "retry", f"on failure: retry ×{failure.retry}"))
        if failure.react is not None:
            edges.append(Edge(n.id, n.id, "react", "on failure: fallback loop " + ", ".join(failure.react.tools)))
        if failure.fallback is not None:
            edges.append(Edge(n.id, failure.fallback, "fallback", "on failure"))
    return edges


def _back_edges(start: str, edges: list[Edge]) -> set[tuple[str, str, str]]:
    """The edges a depth-first walk from ``start`` finds running back to a node still on its path (loops)."""
    out: dict[str, list[Edge]] = {}
    for e in edges:
        out.setdefault(e.source, []).append(e)
    back: set[tuple[str, str, str]] = set()
    state: dict[str, int] = {}  # 1: on the path, 2: done
    stack: list[tuple[str, int]] = [(start, 0)]
    state[start] = 1
    while stack:
        node, i = stack.pop()
        children = out.get(node, [])
        if i < len(children):
            stack.append((node, i + 1))
            e = children[i]
            seen = state.get(e.target)
            if seen == 1:
                back.add((e.source, e.target, e.label))
            elif seen is None:
                state[e.target] = 1
                stack.append((e.target, 0))
        else:
            state[node] = 2
    return back


def _between(edges: tuple[Edge, ...], start: str, end: str) -> set[str]:
    """The nodes on some path from ``start`` to ``end``."""
    forward = _reach(edges, start, reverse=False)
    backward = _reach(edges, end, reverse=True)
    return forward & backward


def _reach(edges: tuple[Edge, ...], origin: str, *, reverse: bool) -> set[str]:
    seen, todo = {origin}, [origin]
    while todo:
        node = todo.pop()
        for e in edges:
            here, there = (e.target, e.source) if reverse else (e.source, e.target)
            if here == node and there not in seen:
                seen.add(there)
                todo.append(there)
    return seen
