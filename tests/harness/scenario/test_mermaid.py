"""The Mermaid rendering of a story's workflow: every node and every way out of a node drawn, a run's path
highlighted, and docs/stories.md current."""

from __future__ import annotations

import itertools
import re

import pytest

from harness.scenario.load import load_all
from harness.scenario.mermaid import mermaid
from harness.scenario.model import Scenario
from harness.scenario.stories_doc import DOC, stories_doc
from tests.helpers.bench import SCENARIOS

LIBRARY = load_all(SCENARIOS)
NODE = re.compile(r"^    (n_[a-z0-9_]+)(\[\[|\(\[|\{\{|\[|\(|\{)\"(.*)\"(\]\]|\]\)|\}\}|\]|\)|\})$")
EDGE = re.compile(r"^    (n_[a-z0-9_]+) (-->|-\.->)(?:\|\"([^\"]*)\"\|)? (n_[a-z0-9_]+)$")


def parse(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]], list[str]]:
    """A flowchart's nodes (id -> label), edges (source, target, label) and its other lines; fails on a line that is
    none of the statements the renderer writes."""
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    rest: list[str] = []
    for line in lines[1:]:
        if (node := NODE.match(line)) is not None:
            assert node.group(1) not in nodes, f"node defined twice: {line}"
            nodes[node.group(1)] = node.group(3)
        elif (edge := EDGE.match(line)) is not None:
            edges.append((edge.group(1), edge.group(4), edge.group(3) or ""))
        else:
            assert re.match(r"^    (classDef|class|linkStyle) ", line), f"not a flowchart statement: {line!r}"
            rest.append(line)
    return nodes, edges, rest


def ways_out(s: Scenario) -> int:
    """Every way out of every node, counted from the file: branches, next (unless a default branch takes its
    place), an approval node's way on after a rejection, a retry, a fallback loop and a fallback node."""
    count = 0
    for n in s.workflow.nodes:
        count += len(n.branches) + (n.on_reject is not None)
        count += n.next is not None and all(b.when is not None for b in n.branches)
        if n.on_failure is not None:
            count += bool(n.on_failure.retry) + (n.on_failure.react is not None) + (n.on_failure.fallback is not None)
    return count


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_the_mermaid_text_parses_with_every_node_and_transition_of_the_workflow(name):
    s = LIBRARY[name]
    nodes, edges, _ = parse(mermaid(s))
    assert set(nodes) == {f"n_{n.id}" for n in s.workflow.nodes}
    assert len(edges) == ways_out(s)
    assert all(source in nodes and target in nodes for source, target, _ in edges)
    for n in s.workflow.nodes:
        for branch in n.branches:
            if branch.when is not None:  # the condition is on the edge, not only in the YAML
                label = next(lbl for src, tgt, lbl in edges if (src, tgt) == (f"n_{n.id}", f"n_{branch.goto}"))
                assert all(path in label for _, path, _ in branch.when.tests()), label


def test_gates_are_marked_and_gated_nodes_say_by_which_gate():
    s = LIBRARY["bank_transfer_compliance"]
    nodes, edges, rest = parse(mermaid(s))
    approvals = [n.id for n in s.workflow.nodes if n.type == "approval"]
    assert f"    class {','.join('n_' + a for a in approvals)} gate" in rest
    assert "gated by compliance_approval" in nodes["n_send"]
    assert ("n_balance", "n_approve", "order.amount #gt; 10000") in edges


@pytest.mark.parametrize("name", sorted(n for n, s in LIBRARY.items() if any(x.on_reject for x in s.workflow.nodes)))
def test_an_approval_node_that_goes_on_after_a_rejection_draws_both_decisions(name):
    s = LIBRARY[name]
    _, edges, _ = parse(mermaid(s))
    for n in s.workflow.nodes:
        if n.on_reject is not None:
            assert (f"n_{n.id}", f"n_{n.on_reject}", "rejected") in edges
            assert (f"n_{n.id}", f"n_{n.next}", "approved") in edges


def test_a_rejection_edge_is_drawn_for_the_stories_with_a_compensation():
    assert {"aircraft_release", "hardship_grant", "hazmat_dispatch"} <= {
        n for n, s in LIBRARY.items() if any(x.on_reject for x in s.workflow.nodes)
    }
    _, edges, _ = parse(mermaid(LIBRARY["hazmat_dispatch"]))
    assert ("n_signoff", "n_cancel", "rejected") in edges


def test_a_loop_is_dashed_and_its_nodes_show_their_visit_budget():
    s = LIBRARY["release_pipeline"]
    nodes, _edges, _ = parse(mermaid(s))
    text = mermaid(s)
    assert "    n_fix -.-> n_build" in text.splitlines()  # fix sends the run back to build
    assert "at most 3 visits" in nodes["n_build"] and "at most" not in nodes["n_deploy"]


def test_a_runs_path_is_highlighted_with_its_order_and_repeated_transitions_counted():
    s = LIBRARY["release_pipeline"]
    path = ["build", "tests", "diagnose", "fix", "build", "tests", "scan", "approve"]
    nodes, edges, rest = parse(mermaid(s, path))
    visited = next(line for line in rest if line.endswith(" visited") and line.startswith("    class "))
    assert set(visited.split()[1].split(",")) == {f"n_{p}" for p in path}
    assert "run: #1, #5" in nodes["n_build"] and "run: #8" in nodes["n_approve"]
    styled = next(line for line in rest if line.startswith("    linkStyle "))
    indices = [int(i) for i in styled.split()[1].split(",")]
    taken = {(f"n_{a}", f"n_{b}") for a, b in itertools.pairwise(path)}
    assert {(edges[i][0], edges[i][1]) for i in indices} == taken
    assert ("n_build", "n_tests", "×2") in edges


def test_docs_stories_md_is_the_generated_text():
    assert DOC.read_text(encoding="utf-8") == stories_doc(SCENARIOS), (
        "docs/stories.md is stale: regenerate with .venv/bin/python -m harness.scenario.stories_doc"
    )
