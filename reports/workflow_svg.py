"""A scenario's workflow drawn as a small inline SVG, with one run's path through it highlighted: the picture a run
page shows offline (Mermaid's renderer needs a script from the network; this needs nothing).

Layered layout: each node one row below the deepest node leading into it (loops left out), nodes of a row ordered
under their parents; forward edges run down, loops go round on the right. Visited nodes are filled and numbered in
the order the run entered them; a transition taken more than once says how often.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from harness.scenario.model import Scenario
from harness.scenario.workflow_graph import Edge, GraphNode, WorkflowGraph, workflow_graph

ROW = 86  # px from one row of nodes to the next
NODE_H = 44
GAP = 28  # px between two nodes of a row
MARGIN = 16
CHAR_W = 6.6  # px of a 12 px character, roughly: sizes a box to its text
MIN_W, MAX_W = 120, 250
LOOP_LANE = 22  # px between two loops' lanes on the right
LABEL_CHARS = 38

INK, MUTED, ROUTE = "#37474f", "#9e9e9e", "#1565c0"
FILL = {"visited": "#e3f2fd", "gate": "#fff3e0", "error": "#ffebee", "plain": "#ffffff"}

STYLE = """
svg.workflow { max-width: 100%; height: auto; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
svg.workflow text { font-size: 12px; fill: #263238; }
svg.workflow text.caption { font-size: 11px; fill: #546e7a; }
svg.workflow text.edge { font-size: 10.5px; fill: #616161; }
svg.workflow text.edge.taken { fill: #0d47a1; font-weight: 600; }
svg.workflow text.badge { font-size: 10.5px; fill: #ffffff; font-weight: 600; }
"""


def workflow_svg(s: Scenario, path: Sequence[str] = ()) -> str:
    """The workflow as an ``<svg>`` element; ``path`` the node ids a run entered, in order (empty: no run)."""
    graph = workflow_graph(s)
    rows = _rows(graph)
    width_of = {n.id: _width(n) for n in graph.nodes}
    position = _place(rows, width_of)
    nodes = {n.id: n for n in graph.nodes}
    taken = Counter(pairwise(path))
    order: dict[str, list[int]] = {}
    for number, node in enumerate(path, start=1):
        order.setdefault(node, []).append(number)
    right = max((x + width_of[n] for n, (x, _) in position.items()), default=0)
    edges = _one_arc_a_node(graph.edges)
    loops = [e for e in edges if e.loop and e.source != e.target]
    extra = [Edge(a, b, "next", "") for a, b in taken if a in nodes and b in nodes and not _has(graph.edges, a, b)]
    arcs = [
        position[e.source][0] + width_of[e.source] + 40 + 5.8 * len(_cut(e.label, LABEL_CHARS))
        for e in edges
        if e.source == e.target
    ]
    right = max([right, *arcs])  # the loops' lanes run right of the nodes and of the labels of their own arcs
    width = right + MARGIN + LOOP_LANE * (len(loops) + len(extra) + 1) + 60
    height = MARGIN * 2 + len(rows) * ROW
    parts = [
        f'<svg class="workflow" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="workflow of {_e(s.id)}">',
        _markers(),
    ]
    lane = 0
    claimed: set[tuple[str, str]] = set()
    for e in [*edges, *extra]:
        key = (e.source, e.target)
        count = taken.get(key, 0) if key not in claimed else 0
        if count:
            claimed.add(key)
        if e in loops or e in extra:
            lane += 1
        parts.append(_edge(e, position, width_of, count, right + MARGIN + LOOP_LANE * lane, e in extra))
    for n in graph.nodes:
        last = bool(path) and path[-1] == n.id
        parts.append(_node(n, position[n.id], width_of[n.id], order.get(n.id, []), n.id == graph.start, last))
    parts.append("</svg>")
    return "\n".join(parts)


def _one_arc_a_node(edges: Sequence[Edge]) -> list[Edge]:
    """The edges with a node's retry and fallback loop drawn as one arc on it, their labels joined."""
    selfs: dict[str, list[Edge]] = {}
    for e in edges:
        if e.source == e.target:
            selfs.setdefault(e.source, []).append(e)
    drawn = []
    for e in edges:
        if e.source != e.target:
            drawn.append(e)
        elif selfs[e.source][0] is e:
            labels = [s.label.removeprefix("on failure: ") for s in selfs[e.source]]
            drawn.append(Edge(e.source, e.target, e.kind, "on failure: " + "; ".join(labels), loop=True))
    return drawn


def _has(edges: Sequence[Edge], source: str, target: str) -> bool:
    return any(e.source == source and e.target == target for e in edges)


def _rows(graph: WorkflowGraph) -> list[list[str]]:
    """Nodes by row: the longest path from a root over the edges that are no loops; unreachable nodes last."""
    ids = [n.id for n in graph.nodes]
    forward = [e for e in graph.edges if not e.loop and e.source != e.target]
    incoming = dict.fromkeys(ids, 0)
    for e in forward:
        incoming[e.target] += 1
    depth = dict.fromkeys(ids, 0)
    ready = [n for n in ids if incoming[n] == 0]
    ready.sort(key=lambda n: (n != graph.start, ids.index(n)))
    seen: list[str] = []
    while ready:
        node = ready.pop(0)
        seen.append(node)
        for e in forward:
            if e.source == node:
                depth[e.target] = max(depth[e.target], depth[node] + 1)
                incoming[e.target] -= 1
                if incoming[e.target] == 0:
                    ready.append(e.target)
    rows: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for node in ids:
        rows[depth[node]].append(node)
    parents = {n: [e.source for e in forward if e.target == n] for n in ids}
    rank = {n: i for i, n in enumerate(rows[0])}
    for row in rows[1:]:  # under their parents: order by the parents' mean place
        row.sort(key=lambda n: (sum(rank.get(p, 0) for p in parents[n]) / max(len(parents[n]), 1), ids.index(n)))
        rank.update({n: i for i, n in enumerate(row)})
    return [row for row in rows if row]


def _place(rows: list[list[str]], width_of: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Each node's top-left corner: rows centred on the widest one."""
    row_widths = [sum(width_of[n] for n in row) + GAP * (len(row) - 1) for row in rows]
    widest = max(row_widths, default=0)
    position: dict[str, tuple[float, float]] = {}
    for r, (row, row_width) in enumerate(zip(rows, row_widths, strict=True)):
        x = MARGIN + (widest - row_width) / 2
        for node in row:
            position[node] = (x, MARGIN + r * ROW)
            x += width_of[node] + GAP
    return position


def _width(n: GraphNode) -> float:
    longest = max(len(n.id) + 4, len(_cut(n.caption, 34)))
    return max(MIN_W, min(MAX_W, longest * CHAR_W + 24))


def _node(n: GraphNode, at: tuple[float, float], width: float, visits: list[int], start: bool, last: bool) -> str:
    x, y = at
    kind = "visited" if visits else "gate" if n.approval else "error" if n.end_status == "error" else "plain"
    stroke = ROUTE if visits else "#ef6c00" if n.gate is not None else INK
    dash = ' stroke-dasharray="5 3"' if n.gate is not None and not n.approval else ""
    radius = 20 if n.type == "end" else 10 if n.type in ("model_step", "agent") else 3
    tip = f"{n.id}: {n.caption}" + (f" (gated by {n.gate})" if n.gate and not n.approval else "")
    title = n.id + (" ▸ start" if start else "") + (" ⚑" if n.approval else "")
    parts = [
        f'<g class="node" data-node="{_e(n.id)}" data-visits="{len(visits)}"><title>{_e(tip)}</title>',
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{NODE_H}" rx="{radius}" fill="{FILL[kind]}" '
        f'stroke="{stroke}" stroke-width="{2.5 if visits else 1.3}"{dash}/>',
        f'<text x="{x + width / 2:.1f}" y="{y + 18:.1f}" text-anchor="middle" font-weight="600">{_e(title)}</text>',
        f'<text class="caption" x="{x + width / 2:.1f}" y="{y + 34:.1f}" text-anchor="middle">'
        f"{_e(_cut(n.caption, int((width - 16) / 6.2)))}</text>",
    ]
    if visits:
        badge = _cut("·".join(str(v) for v in visits), 14) + (" ■" if last else "")
        w = 10 + 6.4 * len(badge)
        parts += [
            f'<rect x="{x - 8:.1f}" y="{y - 9:.1f}" width="{w:.1f}" height="17" rx="8.5" fill="{ROUTE}"/>',
            f'<text class="badge" x="{x - 8 + w / 2:.1f}" y="{y + 3:.1f}" text-anchor="middle">{_e(badge)}</text>',
        ]
    parts.append("</g>")
    return "".join(parts)


def _edge(
    e: Edge,
    position: dict[str, tuple[float, float]],
    width_of: dict[str, float],
    count: int,
    lane_x: float,
    unplanned: bool,
) -> str:
    (sx, sy), (tx, ty) = position[e.source], position[e.target]
    sw, tw = width_of[e.source], width_of[e.target]
    colour, marker, thick = (ROUTE, "arrow-taken", 2.6) if count else (MUTED, "arrow", 1.3)
    dash = ' stroke-dasharray="5 4"' if e.loop or e.source == e.target or unplanned else ""
    limit = LABEL_CHARS
    if e.source == e.target:  # a retry or fallback loop on the node itself: an arc on its right
        x1, y1, y2 = sx + sw, sy + 12, sy + NODE_H - 12
        d = f"M{x1:.1f},{y1:.1f} C{x1 + 34:.1f},{y1 - 10:.1f} {x1 + 34:.1f},{y2 + 10:.1f} {x1 + 2:.1f},{y2:.1f}"
        lx, ly, anchor = x1 + 36, sy + NODE_H / 2 + 4, "start"
    elif ty > sy:  # forward: from the bottom of the source down to the top of the target
        x1, y1, x2, y2 = sx + sw / 2, sy + NODE_H, tx + tw / 2, ty - 2
        side = _detour(position, width_of, e, x1, x2)
        if side is None:
            bend = (y2 - y1) / 2
            d = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} {x2:.1f},{y2:.1f}"
        else:  # it would cross a node of a row in between: round it on the right
            ys, yt = y1 + 8, ty - 10  # close to the rows: a label of a straight edge sits half-way
            corners = [(x1, y1), (x1, ys), (side, ys), (side, yt), (x2, yt), (x2, y2)]
            d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in corners)
        if x1 == x2 or side is not None:  # beside a straight line
            lx, ly, anchor = (side if side is not None else x1) + 6, y1 + (y2 - y1) / 2 + 4, "start"
        else:  # just above the target, cut to its width: labels of branches to one row stay apart
            lx, ly, anchor = x2, y2 - 6, "middle"
            limit = int(tw / 5.6)
    else:  # a loop back up (or across a row): below the source's row out to a lane on the right, up above the
        # target's row, and into the target's top: between rows, it crosses no node
        x1, y1 = sx + sw * 0.75, sy + NODE_H
        x2, y2 = tx + tw * 0.75, ty - 2
        corners = [(x1, y1), (x1, y1 + 10), (lane_x, y1 + 10), (lane_x, y2 - 10), (x2, y2 - 10), (x2, y2)]
        d = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in corners)
        lx, ly, anchor = lane_x + 4, (y1 + y2) / 2, "start"
        limit = 10  # within the picture's right margin; the whole label is the edge's tooltip
    label = _cut(e.label, limit - 3 if count > 1 else limit)
    label = f"{label} ×{count}".strip() if count > 1 else label
    parts = [
        f'<g class="edge" data-from="{_e(e.source)}" data-to="{_e(e.target)}" data-taken="{count}">',
        f"<title>{_e(f'{e.source} → {e.target}' + (f': {e.label}' if e.label else ''))}</title>",
        f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{thick}"{dash} marker-end="url(#{marker})"/>',
    ]
    if label:
        css = "edge taken" if count else "edge"
        parts.append(f'<text class="{css}" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{_e(label)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _detour(
    position: dict[str, tuple[float, float]], width_of: dict[str, float], e: Edge, x1: float, x2: float
) -> float | None:
    """Where an edge that skips rows must run to pass the nodes of the rows in between (None: it passes)."""
    top, bottom = position[e.source][1], position[e.target][1]
    low, high = min(x1, x2) - 6, max(x1, x2) + 6
    blocking = [
        x + width_of[n] for n, (x, y) in position.items() if top < y < bottom and x < high and x + width_of[n] > low
    ]
    return max(blocking) + 18 if blocking else None


def _markers() -> str:
    return (
        "<defs>"
        + "".join(
            f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
            'markerUnits="userSpaceOnUse" '
            f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
            for name, colour in (("arrow", MUTED), ("arrow-taken", ROUTE))
        )
        + "</defs>"
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
