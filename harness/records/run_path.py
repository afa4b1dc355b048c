"""The path a run took through its scenario's workflow, read from its transition events: the nodes it entered, in
order (a node entered twice appears twice). A mode that does not walk the workflow has none."""

from __future__ import annotations

from collections.abc import Iterable

from harness.records.timeline import LooseEvent


def workflow_path(events: Iterable[LooseEvent]) -> list[str]:
    """Node ids in the order the run entered them: where its first transition left from, then every target."""
    path: list[str] = []
    for event in sorted(events, key=lambda e: e.seq):
        if event.kind != "transition":
            continue
        detail = event.detail or {}
        source, target = detail.get("from"), detail.get("to", event.action)
        if isinstance(source, str) and (not path or path[-1] != source):
            path.append(source)  # the start node, or where a resumed walk picked up
        if isinstance(target, str):
            path.append(target)
    return path
