"""A scenario's workflow as Mermaid flowchart text: nodes shaped by type, transitions labelled with their conditions,
gates marked, loops dashed. GitHub renders it in a ```mermaid block (docs/stories.md); a run page adds the run's
path, highlighted.

Node ids are prefixed (``n_read``): Mermaid reserves words such as ``end``, which a node may be called.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from harness.scenario.model import Scenario
from harness.scenario.workflow_graph import Edge, GraphNode, WorkflowGraph, workflow_graph

# Mermaid's shapes per node type: [text] box, (text) rounded, [[text]] subroutine, {{text}} hexagon, {text} rhombus,
# ([text]) stadium.
_SHAPES = {
    "action": ("[", "]"),
    "model_step": ("(", ")"),
    "agent": ("[[", "]]"),
    "approval": ("{{", "}}"),
    "validator": ("{", "}"),
    "end": ("([", "])"),
}
CLASSES = {
    "gate": "fill:#fff3e0,stroke:#ef6c00,stroke-width:2px",
    "gated": "stroke:#ef6c00,stroke-dasharray:4 3",
    "error": "fill:#ffebee,stroke:#c62828",
    "visited": "fill:#e3f2fd,stroke:#1565c0,stroke-width:3px",
}
VISITED_LINK = "stroke:#1565c0,stroke-width:3px"


def mermaid(s: Scenario, path: Sequence[str] = ()) -> str:
    """The workflow as a ``flowchart TD``; with ``path`` (node ids in the order a run entered them), its nodes and
    transitions styled ``visited`` and each node's entries numbered in order."""
    graph = workflow_graph(s)
    order: dict[str, list[int]] = {}
    for number, node in enumerate(path, start=1):
        order.setdefault(node, []).append(number)
    lines = ["flowchart TD"]
    lines += [f"    {_node(graph, n, order.get(n.id, []))}" for n in graph.nodes]
    edges = list(graph.edges)
    taken = Counter(pairwise(path))
    extra = [Edge(a, b, "next", "taken by the run, not in the graph") for a, b in taken if not _has(edges, a, b)]
    highlighted: list[int] = []
    claimed: set[tuple[str, str]] = set()
    for index, e in enumerate([*edges, *extra]):
        count = taken.get((e.source, e.target), 0)
        label = e.label
        if count and (e.source, e.target) not in claimed:  # one drawn edge carries a transition taken twice
            claimed.add((e.source, e.target))
            highlighted.append(index)
            label = f"{label} ×{count}".strip() if count > 1 else label
        lines.append(f"    {_edge(e, label, dashed=e.loop or e in extra)}")
    used = {name: members for name, members in _classes(graph, order).items() if members}
    lines += [f"    classDef {name} {CLASSES[name]}" for name in used]
    lines += [f"    class {','.join(_id(m) for m in members)} {name}" for name, members in used.items()]
    if highlighted:
        lines.append(f"    linkStyle {','.join(str(i) for i in highlighted)} {VISITED_LINK}")
    return "\n".join(lines) + "\n"


def _has(edges: list[Edge], source: str, target: str) -> bool:
    return any(e.source == source and e.target == target for e in edges)


def _node(graph: WorkflowGraph, n: GraphNode, visits: list[int]) -> str:
    opening, closing = _SHAPES.get(n.type, ("[", "]"))
    text = [f"<b>{_text(n.id)}</b>", _text(n.caption)]
    if n.gate is not None and not n.approval:
        text.append(f"gated by {_text(n.gate)}")
    if n.budget is not None and n.id in graph.on_loop:
        text.append(f"at most {n.budget} visits")
    if n.id == graph.start:
        text.append("start")
    if visits:
        text.append("run: " + ", ".join(f"#{v}" for v in visits))
    return f'{_id(n.id)}{opening}"{"<br/>".join(text)}"{closing}'


def _edge(e: Edge, label: str, *, dashed: bool) -> str:
    arrow = "-.->" if dashed else "-->"
    shown = f'|"{_text(label)}"|' if label else ""
    return f"{_id(e.source)} {arrow}{shown} {_id(e.target)}"


def _classes(graph: WorkflowGraph, order: dict[str, list[int]]) -> dict[str, list[str]]:
    return {
        "gate": [n.id for n in graph.nodes if n.approval],
        "gated": [n.id for n in graph.nodes if n.gate is not None and not n.approval],
        "error": [n.id for n in graph.nodes if n.end_status == "error"],
        "visited": [n.id for n in graph.nodes if n.id in order],  # last: its style wins
    }


def _id(node: str) -> str:
    return f"n_{node}"


def _text(text: str) -> str:
    """Text inside a quoted Mermaid label: its quote and angle brackets as Mermaid's entity codes."""
    return text.replace("#", "#35;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
