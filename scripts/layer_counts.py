"""Counts harness/matrix/'s rooms, modules and import arrows, its circles and back-arrows, and the parameters of
its executor functions: the numbers issue 33's acceptance asks for, measured from the source (no import)."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "harness.matrix"
FLOORS = ("commands", "pipeline", "executors", "cell")  # highest first: an arrow may only run down this list
MAX_EXECUTOR_PARAMETERS = 3


def modules() -> dict[str, Path]:
    base = ROOT / "harness" / "matrix"
    found = {}
    for path in sorted(base.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = path
    return found


def room(module: str) -> str:
    rest = module.removeprefix(PACKAGE).lstrip(".")
    return rest.split(".", 1)[0] if "." in rest or rest in FLOORS else "(face)"


def arrows(found: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import between two of the package's modules, lazy ones included."""
    edges = set()
    for name, path in found.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # "from pkg import sub" is an arrow to pkg.sub; to pkg itself only for a name that is not a module
                subs = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [s for s in subs if s in found] or [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target in found and target != name:
                    edges.add((name, target))
    return edges


def circles(nodes: list[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    out: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        out[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in out[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return found


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = function.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (1 if names and names[0].arg in ("self", "cls") else 0)


def executor_functions(found: dict[str, Path]) -> list[tuple[str, int]]:
    """(module.function, parameters) of every function in the executors' room, methods and nested functions
    included (an ast walk); a method's ``self`` or ``cls`` is not counted."""
    rows = []
    for name, path in found.items():
        if room(name) != "executors":
            continue
        short = name.rsplit(".", 1)[1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                rows.append((f"{short}.{node.name}", parameters(node)))
    return rows


def main() -> int:
    found = modules()
    edges = arrows(found)
    by_room: dict[str, list[str]] = defaultdict(list)
    for name in found:
        by_room[room(name)].append(name)
    print(f"{PACKAGE}: {len(by_room)} rooms, {len(found)} modules, {len(edges)} arrows between them")
    for name in ["(face)", *FLOORS]:
        print(f"  {name:10} {len(by_room[name]):3} modules")
    floor = {name: FLOORS.index(room(name)) for name in found if room(name) in FLOORS}
    back = sorted((a, b) for a, b in edges if a in floor and b in floor and floor[b] < floor[a])
    room_edges = {(room(a), room(b)) for a, b in edges if room(a) != room(b)}
    module_circles = circles(sorted(found), edges)
    room_circles = circles([*FLOORS, "(face)"], room_edges)
    print(f"room arrows: {len(room_edges)}: " + ", ".join(f"{a}->{b}" for a, b in sorted(room_edges)))
    print(f"circles: {len(module_circles)} between modules, {len(room_circles)} between rooms")
    for circle in module_circles + room_circles:
        print("  " + " <-> ".join(circle))
    print(f"back-arrows (a floor importing one above it): {len(back)}")
    for a, b in back:
        print(f"  {a} -> {b}")
    rows = executor_functions(found)
    worst = max(count for _, count in rows)
    over = [f"{qualified} ({count})" for qualified, count in rows if count > MAX_EXECUTOR_PARAMETERS]
    print(f"executor functions (every def in executors/, nested included): {len(rows)}, at most {worst} parameters")
    print(f"  over {MAX_EXECUTOR_PARAMETERS}: " + (", ".join(over) or "none"))
    return 1 if module_circles or room_circles or back or worst > MAX_EXECUTOR_PARAMETERS else 0


if __name__ == "__main__":
    sys.exit(main())
