"""Cross-field checks of a scenario that pydantic cannot express, so that a scenario fails closed at load time.

Names resolve, every dotted path reaches something the scenario declares, no declaration contradicts
another, the oracle asks for work a correct run can do before its stop, and no workflow path reaches a
gated step without its approval. Each check returns the first problem as (field path, message).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.scenario.json_schema import check_for, object_schema_problem
from harness.scenario.paths import NUMBER_TYPES, Reach, head, reach_schema, reach_value, valid_path
from harness.scenario.values import COMPARED, Operand, ValueTestFields, ValueTests

if TYPE_CHECKING:
    from harness.scenario.model import ActionSpec, Condition, Node, Phase, RejectionPhase, Scenario, StopExpectation

# Gate names a mode uses for its own review points (hybrid_planner's plan review): a scenario gate may not take them.
PLAN_REVIEW = "plan_review"
MODE_REVIEW_POINTS = frozenset({PLAN_REVIEW})

ARTIFACT_PATTERN = r"[A-Za-z0-9_-]+"
COMPARISONS = ("greater_than", "at_least", "less_than", "at_most")
Problem = tuple[str, str] | None  # (field path, message) of the first problem found


def check_references(s: Scenario) -> Problem:
    """Every cross-field check, in the order a reader of the file meets the fields."""
    return (
        _check_names(s)
        or _check_actions(s)
        or _check_scanner(s)
        or _check_workflow(s)
        or _check_oracle(s)
        or _check_approvals(s)
        or _check_order_rules(s)
    )


def _check_names(s: Scenario) -> Problem:
    for kind, items in (
        ("actions", [a.name for a in s.actions]),
        ("gates", [g.name for g in s.gates]),
        ("workflow.nodes", [n.id for n in s.workflow.nodes]),
        ("rules", [r.id for r in s.rules]),
    ):
        seen: set[str] = set()
        for index, name in enumerate(items):
            if name in seen:
                field = "id" if kind in ("workflow.nodes", "rules") else "name"
                return f"{kind}[{index}].{field}", f"duplicate name '{name}'"
            seen.add(name)
    finishes = [a.name for a in s.actions if a.kind == "finish"]
    if len(finishes) != 1:
        return "actions", f"needs exactly one action of kind 'finish', found {len(finishes)}"
    if not any(r.obeyed for r in s.rules):
        return "rules", "at least one rule must be marked obeyed: true"
    return None


# ---------------------------------------------------------------- paths into the store


def _artifacts(s: Scenario) -> set[str]:
    """Every artifact a run can ever hold: the initial store's and those actions write."""
    return set(s.store.artifacts) | {a.writes for a in s.actions if a.writes is not None}


def reach_store(s: Scenario, path: str) -> Reach:
    """What a path can reach in the store: in the initial artifact's real keys, or in the arguments of an action
    that writes that artifact (its schema's declared properties); it reaches something if any of them does."""
    key = head(path)
    found: list[tuple[str, Reach]] = []
    if key in s.store.artifacts:
        found.append(("the initial store", reach_value({key: s.store.artifacts[key]}, path, "")))
    for action in s.actions:
        if action.writes == key:
            wrapped = {"type": "object", "properties": {key: action.args}, "additionalProperties": False}
            found.append((f"what {action.name} writes", reach_schema(wrapped, path, "")))
    reaching = [reach for _, reach in found if reach.ok]
    if not reaching:
        return Reach("; ".join(f"in {source}, {reach.problem}" for source, reach in found))
    if any(reach.types is None for reach in reaching):
        return Reach()
    return Reach(types=frozenset().union(*(reach.types or frozenset() for reach in reaching)))


def _check_store_path(s: Scenario, where: str, path: str, *, number: bool = False) -> Problem:
    if not valid_path(path):
        return where, f"'{path}' is not a path (keys joined by dots, e.g. order.amount)"
    known = _artifacts(s)
    if head(path) not in known:
        return where, (
            f"'{head(path)}' is never in the store: no action writes it and the initial store lacks it "
            f"(artifacts: {', '.join(sorted(known)) or 'none'})"
        )
    reach = reach_store(s, path)
    if not reach.ok:
        return where, f"'{path}' reaches nothing the scenario declares: {reach.problem}"
    if number and reach.types is not None and not reach.types & NUMBER_TYPES:
        return where, (
            f"'{path}' holds {' or '.join(sorted(reach.types))}, never a number, so the comparison "
            "can never be evaluated"
        )
    return None


def _check_condition(s: Scenario, where: str, condition: Condition | None) -> Problem:
    for test, path, _ in condition.tests() if condition is not None else []:
        field = f"{where}.{test}" if test in ("exists", "missing") else f"{where}.{test}.{path}"
        problem = _check_store_path(s, field, path, number=test in COMPARISONS)
        if problem:
            return problem
    return None


# ---------------------------------------------------------------- actions and gates

# What each kind of action may declare besides its name, description, args and kind.
_WAIT_NEVER = ("writes", "reads", "returns", "invalidates", "fault", "inject", "latency_ms", "answer")
_FALSE_IS_ABSENT = ("irreversible",)  # a flag given as false says nothing
_FINISH_NEVER = ("gate", "requires", "roles", "irreversible", *_WAIT_NEVER)
_WHY = {
    "wait": "a wait only records that the run waits for its gate",
    "finish": "finish is control: it ends the run and never reaches the gateway",
}


def _contradiction(a: ActionSpec) -> Problem:
    if a.kind in ("wait", "finish"):
        if a.effect != "none":
            return "effect", f"a {a.kind} action has no effect ({_WHY[a.kind]}); remove effect: {a.effect}"
        for name in _FINISH_NEVER if a.kind == "finish" else _WAIT_NEVER:
            if getattr(a, name) not in (None, (), False):
                return name, f"a {a.kind} action cannot have {name} ({_WHY[a.kind]})"
        return None
    if a.effect == "read":
        for name in ("writes", "invalidates"):
            if getattr(a, name) not in (None, ()):
                return name, f"a read action changes nothing, so it cannot have {name}; give it effect: write"
    if a.reads is not None and a.returns is not None:
        return "returns", "an action returns the artifact it reads or a constant, not both"
    if a.answer is not None and not a.is_side_effect:
        return "answer", "an answer is delivered to a person: only an action with effect write or irreversible has one"
    if a.cache is not None and a.effect != "read":
        return "cache", f"only a read-only action is cached (effect: read); '{a.name}' has effect {a.effect}"
    if a.irreversible and not a.is_side_effect:
        return "irreversible", (
            f"only a side effect commits, so only effect write or irreversible can be irreversible; '{a.name}' has "
            f"effect {a.effect}"
        )
    return None


def _check_cache(a: ActionSpec, where: str) -> Problem:
    """A cache's key and user paths must reach declared arguments of its action."""
    if a.cache is None:
        return None
    wrapped = {"type": "object", "properties": {"args": a.args}, "additionalProperties": False}
    paths = [(f"key[{j}]", path) for j, path in enumerate(a.cache.key)]
    paths += [("user", a.cache.user)] if a.cache.user is not None else []
    for field, path in paths:
        reach = reach_schema(wrapped, f"args.{path}", "")
        if not reach.ok:
            return f"{where}.cache.{field}", f"'{path}' is not an argument of '{a.name}': {reach.problem}"
    return None


def _check_scanner(s: Scenario) -> Problem:
    """The scanned actions are task actions of the scenario."""
    scanned = s.scanner.actions if s.scanner is not None else None
    tasks = [a.name for a in s.actions if a.kind == "task"]
    for j, name in enumerate(scanned or ()):
        if name not in tasks:
            return f"scanner.actions[{j}]", _unknown("task action", name, tasks)
    return None


def _check_answer(a: ActionSpec, where: str) -> Problem:
    """An answer policy's paths must reach declared arguments of its action."""
    policy = a.answer
    if policy is None:
        return None
    wrapped = {"type": "object", "properties": {"args": a.args}, "additionalProperties": False}
    for name in ("text", "citations"):
        path = getattr(policy, name)
        if path is not None:
            reach = reach_schema(wrapped, f"args.{path}", "")
            if not reach.ok:
                return f"{where}.answer.{name}", f"'{path}' is not an argument of '{a.name}': {reach.problem}"
    if policy.citations is None and (policy.field is not None or "match" in policy.model_fields_set):
        return f"{where}.answer.citations", "match and field describe citations: name the citations path"
    if policy.match == "field_names" and policy.field is not None:
        return f"{where}.answer.field", "field counts only with match: field_values"
    return None


def _check_actions(s: Scenario) -> Problem:
    gates = s.gate_names
    for i, a in enumerate(s.actions):
        problem = _contradiction(a)
        if problem:
            return f"actions[{i}].{problem[0]}", problem[1]
        if a.gate is not None and a.gate not in gates:
            return f"actions[{i}].gate", _unknown("gate", a.gate, gates)
        if a.kind == "wait" and a.gate is None:
            return f"actions[{i}].gate", "a wait action must name the gate it waits for"
        if a.kind == "task" and a.effect == "none":
            return f"actions[{i}].effect", "a task action needs an effect: read, write or irreversible"
        problem = _check_answer(a, f"actions[{i}]") or _check_cache(a, f"actions[{i}]")
        if problem:
            return problem
        problem = _check_arg_rules(s, a, a.arg_rules, f"actions[{i}].arg_rules")
        if problem:
            return problem
        # The gateway stores, reads and drops whole artifacts; only preconditions may look inside one.
        whole = [("writes", a.writes), ("reads", a.reads)] + [
            (f"invalidates[{j}]", k) for j, k in enumerate(a.invalidates)
        ]
        for field, key in whole:
            if key is not None and not re.fullmatch(ARTIFACT_PATTERN, key):
                return (
                    f"actions[{i}].{field}",
                    f"'{key}' must be an artifact name (letters, digits, _ and -), not a path",
                )
        problem = _check_preconditions(s, a, f"actions[{i}].requires")
        if problem:
            return problem
        paths = [(f"invalidates[{j}]", key) for j, key in enumerate(a.invalidates)]
        paths += [("reads", a.reads)] if a.reads is not None else []
        paths += [("fault.until", a.fault.until)] if a.fault is not None and a.fault.until is not None else []
        for field, path in paths:
            problem = _check_store_path(s, f"actions[{i}].{field}", path)
            if problem:
                return problem
    used = {a.gate for a in s.actions} | {n.gate for n in s.workflow.nodes if n.type == "approval"}
    for i, g in enumerate(s.gates):
        if g.name in MODE_REVIEW_POINTS:
            return f"gates[{i}].name", (
                f"'{g.name}' is reserved for a mode's own review point (hybrid_planner's plan review); rename the gate"
            )
        if g.name not in used:
            return f"gates[{i}].name", f"gate '{g.name}' guards no action and no approval node waits for it"
        problem = _check_condition(s, f"gates[{i}].applies_when", g.applies_when)
        if problem:
            return problem
    return None


# ---------------------------------------------------------------- the workflow graph

# The fields each node type reads besides id and type; any other field given would be silently ignored.
_NODE_FIELDS = {
    "model_step": {
        *("action", "args", "params", "next", "branches", "route_by", "on_failure", "max_visits", "timeout_ms"),
    },
    "action": {"action", "args", "next", "branches", "route_by", "on_failure", "max_visits", "timeout_ms"},
    "approval": {"gate", "next", "branches", "route_by", "on_failure", "max_visits", "on_reject"},
    "validator": {"check", "next", "branches", "route_by", "on_failure", "max_visits"},
    "agent": {"tools", "max_steps", "until", "output", "next", "branches", "route_by", "on_failure", "max_visits"},
    "plan": {
        *("tools", "react_steps", "constraints", "max_steps", "max_replans", "until"),
        *("next", "branches", "route_by", "on_failure", "max_visits"),
    },
    "end": {"status"},
}


def _check_workflow(s: Scenario) -> Problem:
    actions, gates, nodes = s.action_map, s.gate_names, s.node_map
    for i, n in enumerate(s.workflow.nodes):
        where = f"workflow.nodes[{i}]"
        for name in sorted(n.model_fields_set - {"id", "type"} - _NODE_FIELDS[n.type]):
            return f"{where}.{name}", (
                f"'{name}' means nothing on a '{n.type}' node, which reads only "
                f"{', '.join(sorted(_NODE_FIELDS[n.type]))}"
            )
        if n.type in ("model_step", "action"):
            if n.action is None:
                return f"{where}.action", f"a '{n.type}' node needs an action"
            if n.action not in actions:
                return f"{where}.action", _unknown("action", n.action, actions)
            if actions[n.action].kind != "task":
                return f"{where}.action", f"'{n.action}' is a {actions[n.action].kind} action, not a task"
            if n.type == "action":
                problem = _args_problem(actions[n.action].args, n.args, f"{where}.args")
                if problem:
                    return problem
            else:
                problem = _check_params(actions[n.action], n, where)
                if problem:
                    return problem
        if n.type == "approval" and (n.gate is None or n.gate not in gates):
            return f"{where}.gate", _unknown("gate", str(n.gate), gates)
        if n.on_reject is not None and next(g for g in s.gates if g.name == n.gate).on_rejection == "end":
            return f"{where}.on_reject", (
                f"gate '{n.gate}' says on_rejection: end, so a rejection there ends the run and this edge is never "
                "taken; remove it, or let the gate continue"
            )
        if n.type == "validator" and n.check is None:
            return f"{where}.check", "a validator node needs a check"
        if n.type == "agent":
            if not n.tools:
                return f"{where}.tools", "an agent node needs at least one tool"
            for j, tool in enumerate(n.tools):
                if tool not in actions:
                    return f"{where}.tools[{j}]", _unknown("action", tool, actions)
            problem = _check_output(n, where, nodes)
            if problem:
                return problem
        if n.type == "plan":
            problem = _check_plan_node(s, n, where)
            if problem:
                return problem
        if n.route_by == "model" and not n.branches:
            return f"{where}.route_by", "route_by: model needs branches for the model to choose from"
        loop = n.on_failure.react if n.on_failure is not None else None
        if loop is not None:
            for j, tool in enumerate(loop.tools):
                if tool not in actions or actions[tool].kind != "task":
                    return f"{where}.on_failure.react.tools[{j}]", _unknown(
                        "task action", tool, [a.name for a in s.actions if a.kind == "task"]
                    )
            problem = _check_condition(s, f"{where}.on_failure.react.until", loop.until)
            if problem:
                return problem
        targets = [("next", n.next)] + [(f"branches[{j}].goto", b.goto) for j, b in enumerate(n.branches)]
        if n.on_failure is not None:
            targets.append(("on_failure.fallback", n.on_failure.fallback))
        targets.append(("on_reject", n.on_reject))
        for field, target in targets:
            if target is not None and target not in nodes:
                return f"{where}.{field}", _unknown("node", target, nodes)
        if n.type != "end" and n.next is None and all(b.when is not None for b in n.branches):
            what = "next or branches" if not n.branches else "next or a branch without 'when' (a default)"
            return f"{where}.next", f"every node but 'end' needs {what}"
        conditions = [("check", n.check), ("until", n.until)]
        conditions += [(f"branches[{j}].when", b.when) for j, b in enumerate(n.branches)]
        for field, condition in conditions:
            problem = _check_condition(s, f"{where}.{field}", condition)
            if problem:
                return problem
    if s.workflow.start not in nodes:
        return "workflow.start", _unknown("node", s.workflow.start, nodes)
    return _check_loops(s)


# ---------------------------------------------------------------- loop budgets


def _check_loops(s: Scenario) -> Problem:
    """Every loop of the workflow has a budget: a cycle whose nodes all say ``max_visits: null`` could only end at
    the transition limit, so it is refused, naming the loop."""
    unbounded = [n.id for n in s.workflow.nodes if n.max_visits is None]
    inside = set(unbounded)
    edges = {node: _loop_targets(s, s.node_map[node]) & inside for node in unbounded}
    # Peel off every node no unbounded node leads into; what remains lies on, or downstream of, a cycle.
    incoming = dict.fromkeys(unbounded, 0)
    for targets in edges.values():
        for target in targets:
            incoming[target] += 1
    queue = deque(node for node in unbounded if incoming[node] == 0)
    remaining = set(unbounded)
    while queue:
        node = queue.popleft()
        remaining.discard(node)
        for target in edges[node]:
            incoming[target] -= 1
            if incoming[target] == 0:
                queue.append(target)
    if not remaining:
        return None
    # Each node that remains has a predecessor that remains: walking back from one must come round to a cycle.
    order = {n.id: i for i, n in enumerate(s.workflow.nodes)}
    walked: list[str] = []
    node = min(remaining, key=order.__getitem__)
    while node not in walked:
        walked.append(node)
        node = min((p for p in remaining if node in edges[p]), key=order.__getitem__)
    cycle = walked[walked.index(node) :][::-1]
    first = min(cycle, key=order.__getitem__)
    cycle = cycle[cycle.index(first) :] + cycle[: cycle.index(first)]  # told from its first node in the file
    return f"workflow.nodes[{order[first]}].max_visits", (
        f"the loop {' -> '.join([*cycle, cycle[0]])} has no budget: every node on it says max_visits: null; "
        "give one of them a number of visits"
    )


def _loop_targets(s: Scenario, n: Node) -> set[str]:
    """Every node the walk can go to from ``n``: its next, its branches, its fallback, and for an approval node
    where a revision request sends the run back (a model_step or agent node before it, or the approval itself)."""
    return _plain_targets(n) | (_revision_targets(s, n) if n.type == "approval" else set())


def _plain_targets(n: Node) -> set[str]:
    """The nodes a node names as its way on: next, its branches' targets, its failure's fallback."""
    targets = {
        n.next,
        *(b.goto for b in n.branches),
        n.on_failure.fallback if n.on_failure is not None else None,
        n.on_reject,
    }
    return {target for target in targets if target is not None}


def _revision_targets(s: Scenario, approval: Node) -> set[str]:
    """Where a revision at ``approval`` can send the run: the model_step and agent nodes that can lead to it, and the
    approval itself when the walk can reach it without filling any (nothing to revise: it asks again)."""
    nodes = s.node_map
    plain = {node.id: _plain_targets(node) for node in nodes.values()}
    found: set[str] = set()
    seen, queue = {approval.id}, deque([approval.id])
    while queue:
        node_id = queue.popleft()
        for source in (source for source, targets in plain.items() if node_id in targets and source not in seen):
            seen.add(source)
            queue.append(source)
            if nodes[source].type in ("model_step", "agent", "plan"):
                found.add(source)
    reached, queue = {s.workflow.start}, deque([s.workflow.start])
    while queue:  # the approval itself: reachable from the start through nodes that fill nothing
        node = nodes[queue.popleft()]
        if node.id == approval.id:
            found.add(approval.id)
        elif node.type not in ("model_step", "agent", "plan"):
            queue.extend(target for target in plain[node.id] - reached)
            reached |= plain[node.id]
    return found


def _schema_problem(schema: dict[str, Any], where: str) -> Problem:
    """A JSON Schema of type object, or the problem with it."""
    problem = object_schema_problem(schema)
    return None if problem is None else (where, problem)


def _check_params(action: ActionSpec, n: Node, where: str) -> Problem:
    """A parameter template: slots the action declares, each constrained and with a default; the fixed args and the
    defaults together make arguments the action takes (the hard-coded workflow runs exactly those)."""
    if n.params is None:
        if n.args:
            return (
                f"{where}.args",
                "fixed args on a model_step are the fixed part of a parameter template: declare params",
            )
        return None
    problem = _schema_problem(n.params, f"{where}.params")
    if problem:
        return problem
    slots = n.params.get("properties")
    if not isinstance(slots, dict) or not slots:
        return f"{where}.params.properties", "a parameter template needs at least one slot"
    declared = action.args.get("properties")
    for name, slot in slots.items():
        field = f"{where}.params.properties.{name}"
        if isinstance(declared, dict) and name not in declared:
            return field, f"'{name}' is not an argument of '{action.name}' (arguments: {', '.join(sorted(declared))})"
        if name in n.args:
            return field, f"'{name}' is both a fixed argument and a slot; it can be only one"
        if not isinstance(slot, dict) or "default" not in slot:
            return field, "a slot needs a default (what the workflow modes that ask nobody fill in)"
    defaults = {name: slot["default"] for name, slot in slots.items()}
    problem = _args_problem(n.params, defaults, f"{where}.params.default")
    if problem:
        return problem
    return _args_problem(action.args, {**n.args, **defaults}, f"{where}.args")


def _check_plan_node(s: Scenario, n: Node, where: str) -> Problem:
    """A plan node's tools and react steps: task actions of the scenario, step names that are no action's, each
    react step's until reaching something declared, and something for a plan to do."""
    tasks = [a.name for a in s.actions if a.kind == "task"]
    if not n.tools and not n.react_steps:
        return f"{where}.tools", "a plan node needs at least one tool or react step"
    for j, tool in enumerate(n.tools):
        if tool not in tasks:
            return f"{where}.tools[{j}]", _unknown("task action", tool, tasks)
    names: set[str] = set()
    for j, step in enumerate(n.react_steps):
        here = f"{where}.react_steps[{j}]"
        if step.name in s.action_map or step.name in names:
            return f"{here}.name", f"'{step.name}' is already an action's or another react step's name"
        names.add(step.name)
        for k, tool in enumerate(step.tools):
            if tool not in tasks:
                return f"{here}.tools[{k}]", _unknown("task action", tool, tasks)
        problem = _check_condition(s, f"{here}.until", step.until)
        if problem:
            return problem
    return None


def _check_output(n: Node, where: str, nodes: dict[str, Node]) -> Problem:
    """An agent node's report schema; a suggested route it lists must name nodes of the workflow."""
    if n.output is None:
        return None
    problem = _schema_problem(n.output, f"{where}.output")
    if problem:
        return problem
    route = (n.output.get("properties") or {}).get("suggested_route")
    for j, target in enumerate(route.get("enum", []) if isinstance(route, dict) else []):
        if target not in nodes:
            return f"{where}.output.properties.suggested_route.enum[{j}]", _unknown("node", str(target), nodes)
    return None


def _args_problem(schema: dict[str, Any], args: Any, where: str) -> Problem:
    if check_for(schema).first_error(args) is None:
        return None
    import jsonschema  # only for a refusal: its path, as the scenario's dotted path

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(args))
    if error is None:
        return None
    inner = "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)
    return f"{where}{inner}", error.message


# ---------------------------------------------------------------- the oracle


def _check_expectation(s: Scenario, o: StopExpectation, prefix: str) -> Problem:
    """The checks a stop expectation (the oracle, or one of its after_approval stages) must pass."""
    actions, gates = s.action_map, s.gate_names
    if o.expected_stop != "finished" and o.expected_stop not in gates:
        return f"{prefix}.expected_stop", _unknown("gate", o.expected_stop, gates | {"finished"})
    stop_gate = next((g for g in s.gates if g.name == o.expected_stop), None)
    if stop_gate is not None and stop_gate.approved:
        return f"{prefix}.expected_stop", f"gate '{stop_gate.name}' is approved: true, so no run ever stops there"
    for j, step in enumerate(o.reference_path):
        where = f"{prefix}.reference_path[{j}]"
        if step.action not in actions:
            return where, _unknown("action", step.action, actions)
        if actions[step.action].kind == "finish" and j != len(o.reference_path) - 1:
            return where, "finish must be the last step of the reference path"
        if step.args is not None:
            problem = _args_problem(actions[step.action].args, step.args, f"{where}.args")
            if problem:
                return problem
    return _check_phase(s, o, prefix, stop_gate.name if stop_gate is not None else None)


def _check_phase(s: Scenario, o: Phase, prefix: str, stop_gate: str | None) -> Problem:
    """A phase's rules: forbidden, required work (with what it must hold) and order name what the scenario declares,
    and the work is one a run that stops correctly at ``stop_gate`` (None: it finishes) can have done."""
    actions = s.action_map
    finish = s.finish_action.name
    recorded = [a.name for a in s.actions if a.kind != "finish"]  # finish is control: the gateway never records it
    for j, name in enumerate(o.forbidden):
        if name not in actions or name == finish:
            return f"{prefix}.forbidden[{j}]", _unknown("action", name, recorded)
    for j, required in enumerate(o.required_artifacts):
        where = f"{prefix}.required_artifacts[{j}]"
        key = required.path
        problem = _check_store_path(s, f"{where}.path" if required.tests() else where, key)
        if problem:
            return problem
        if stop_gate is not None and head(key) not in s.store.artifacts:
            writers = [a for a in s.actions if a.writes == head(key)]
            if writers and all(a.gate == stop_gate for a in writers):
                return where, (
                    f"'{head(key)}' is written only by actions gated by '{stop_gate}' "
                    f"({', '.join(a.name for a in writers)}), so a run that stops there correctly never has it"
                )
        problem = _check_tests(s, required, where, reach_store(s, key), key)
        if problem:
            return problem
    for j, needed in enumerate(o.required_actions):
        where = f"{prefix}.required_actions[{j}]"
        name = needed.action
        if name not in actions or name == finish:
            return f"{where}.action" if needed.arg_rules else where, _unknown("action", name, recorded)
        if name in o.forbidden:
            return where, f"'{name}' is also forbidden"
        if stop_gate is not None and actions[name].kind == "task" and actions[name].gate == stop_gate:
            return where, f"'{name}' is gated by '{stop_gate}', so a run that stops there correctly never takes it"
        problem = _check_arg_rules(s, actions[name], needed.arg_rules, f"{where}.arg_rules")
        if problem:
            return problem
    for j, check in enumerate(o.order):
        for side in ("before", "after"):
            name = getattr(check, side)
            if name not in actions or name == finish:
                return f"{prefix}.order[{j}].{side}", _unknown("action", name, recorded)
        if check.before == check.after:
            return f"{prefix}.order[{j}].after", f"'{check.after}' cannot take place before itself"
    return None


def _check_oracle(s: Scenario) -> Problem:
    o = s.oracle
    for name in ("carry_forbidden", "carry"):
        if name in o.model_fields_set:
            return f"oracle.{name}", (
                f"the story's first phase has no phase before it to carry anything from; {name} belongs in an "
                "after_approval or after_rejection entry"
            )
    problem = _check_expectation(s, o, "oracle")
    if problem:
        return problem
    for gate, stage in o.after_approval.items():
        where = f"oracle.after_approval.{gate}"
        if gate not in s.gate_names:
            return where, _unknown("gate", gate, s.gate_names)
        if stage.expected_stop == gate:
            return f"{where}.expected_stop", f"'{gate}' is approved at this point: a run cannot stop there again"
        problem = _check_expectation(s, stage, where)
        if problem:
            return problem
    for gate, phase in o.after_rejection.items():
        where = f"oracle.after_rejection.{gate}"
        if gate not in s.gate_names:
            return where, _unknown("gate", gate, s.gate_names)
        if next(g for g in s.gates if g.name == gate).approved:
            return where, f"gate '{gate}' is approved: true, so nobody is ever asked to decide there"
        problem = _check_phase(s, phase, where, gate)
        if problem:
            return problem
        problem = _check_compensation(s, phase, where, gate)
        if problem:
            return problem
    actions = s.action_map
    for j, content in enumerate(o.checks):
        where = f"oracle.checks[{j}]"
        spec = actions.get(content.action)
        if spec is None or spec.kind != "task":
            return f"{where}.action", _unknown(
                "task action", content.action, [a.name for a in s.actions if a.kind == "task"]
            )
        arg = content.arg if content.type != "within" else None
        if arg is not None:
            wrapped = {"type": "object", "properties": {"args": spec.args}, "additionalProperties": False}
            reach = reach_schema(wrapped, f"args.{arg}", "")
            if not reach.ok:
                return f"{where}.arg", f"'{arg}' is not an argument of '{spec.name}': {reach.problem}"
        if content.type == "grounded":
            if content.match == "field_values" and content.field is None:
                return f"{where}.field", "match: field_values needs the field whose values count"
            for k, source in enumerate(content.sources):
                if source not in actions:
                    return f"{where}.sources[{k}]", _unknown("action", source, actions)
    return None


# ---------------------------------------------------------------- value rules


def _check_arg_rules(s: Scenario, a: ActionSpec, rules: dict[str, ValueTests], where: str) -> Problem:
    """Rules on an action's arguments: the action is a task, and each path reaches a declared argument."""
    for path, tests in rules.items():
        field = f"{where}.{path}"
        if a.kind != "task":
            return field, f"'{a.name}' is a {a.kind} action: only a task action's arguments can have rules"
        if not valid_path(path):
            return field, f"'{path}' is not a path (keys joined by dots, e.g. order.amount)"
        reach = _reach_args(a, path)
        if not reach.ok:
            return field, f"'{path}' is not an argument of '{a.name}': {reach.problem}"
        problem = _check_tests(s, tests, field, reach, path)
        if problem:
            return problem
    return None


def _check_tests(s: Scenario, tests: ValueTestFields, where: str, reach: Reach, path: str) -> Problem:
    """A value's tests: a comparison needs a value that can be a number, ``covers`` a list (or a path that fans out
    over one), and every reference must reach something the scenario declares."""
    for name, operand in tests.tests():
        field = f"{where}.{name}"
        types = reach.types
        if name in COMPARED and types is not None and not types & NUMBER_TYPES:
            return field, f"'{path}' holds {' or '.join(sorted(types))}, never a number, so it can never be compared"
        if name == "covers" and types is not None and "array" not in types and "[]" not in path:
            return field, f"'{path}' holds {' or '.join(sorted(types))}, never a list, so it cannot cover one"
        problem = _check_operand(s, operand, field, number=name in COMPARED)
        if problem:
            return problem
    return None


def _check_operand(s: Scenario, operand: Operand, where: str, *, number: bool) -> Problem:
    if operand.kind == "store":
        return _check_store_path(s, f"{where}.store", operand.path, number=number)
    if operand.kind != "call":
        return None
    name = operand.action or ""
    spec = s.action_map.get(name)
    if spec is None or spec.kind != "task":
        return f"{where}.action", _unknown("task action", name, [a.name for a in s.actions if a.kind == "task"])
    side = "arg" if operand.arg is not None else "result"
    reach = _reach_args(spec, operand.path) if side == "arg" else _reach_result(s, spec, operand.path)
    if not reach.ok:
        what = "an argument of" if side == "arg" else "in the result of"
        return f"{where}.{side}", f"'{operand.path}' is not {what} '{spec.name}': {reach.problem}"
    if number and reach.types is not None and not reach.types & NUMBER_TYPES:
        return f"{where}.{side}", (
            f"'{operand.path}' holds {' or '.join(sorted(reach.types))}, never a number, so it can never be compared"
        )
    return None


def _reach_args(a: ActionSpec, path: str) -> Reach:
    """What a path into an action's arguments can reach, by its args schema."""
    wrapped = {"type": "object", "properties": {"args": a.args}, "additionalProperties": False}
    return reach_schema(wrapped, f"args.{path}", "")


def _reach_result(s: Scenario, a: ActionSpec, path: str) -> Reach:
    """What a path into an action's result can reach: the artifact it reads ({name: artifact}), the constant it
    returns, or the gateway's receipt; an injected note wraps it as {result, note}."""
    if a.inject is not None:
        if path == "note":
            return Reach(types=frozenset({"string"}))
        if head(path) != "result":
            return Reach(f"'{a.name}' returns {{result, note}} (its inject wraps the result), so start with result.")
        if "." not in path:
            return Reach()
        path = path.split(".", 1)[1]
    if a.reads is not None:
        if head(path) != a.reads:
            return Reach(f"'{a.name}' returns {{{a.reads}: ...}}, so '{head(path)}' reaches nothing in it")
        return reach_store(s, path)
    if a.returns is not None:
        return reach_value({"result": a.returns}, f"result.{path}", "")
    receipt = {"stored": a.writes} if a.writes else {"done": a.name}
    return reach_value({"result": receipt}, f"result.{path}", "")


# ---------------------------------------------------------------- approvals on every workflow path


def _check_approvals(s: Scenario) -> Problem:
    """Refuses a workflow in which a step gated by an unapproved gate is reachable from start without passing
    an approval node for that gate.

    A conditional gate (``applies_when: C``) may be skipped on an edge that is taken only when C does not
    hold: a branch after an earlier branch whose ``when`` C implies (it failed, so C fails), a branch whose
    ``when`` contradicts C, or the success edges of a validator whose check contradicts C. The skip lasts
    until a node writes or invalidates an artifact C reads. At run time a branch condition that cannot be
    evaluated fails its node instead of falling through, so the skip edge is never taken on an unknown.
    A gate whose condition is false on the initial store and reads only artifacts no action writes or
    invalidates never applies, so it needs no approval node.
    """
    nodes = s.node_map
    index = {n.id: i for i, n in enumerate(s.workflow.nodes)}
    changed = {key for a in s.actions for key in ((a.writes,) if a.writes else ()) + a.invalidates}
    for gate in s.gates:
        condition = gate.applies_when
        read = {head(path) for _, path, _ in condition.tests()} if condition is not None else set()
        if gate.approved or (
            condition is not None and not read & changed and condition.evaluate(s.store.artifacts).value is False
        ):
            continue
        start = (s.workflow.start, False)
        came_from: dict[tuple[str, bool], tuple[str, bool] | None] = {start: None}
        queue = deque([start])
        while queue:
            state = queue.popleft()
            node_id, cleared = state
            node = nodes[node_id]
            if node.type == "approval" and node.gate == gate.name:
                # approved from here on (approvals are never withdrawn within a run), but for its rejection edge
                rejected = (node.on_reject, cleared) if node.on_reject is not None else None
                if rejected is not None and rejected not in came_from:
                    came_from[rejected] = state
                    queue.append(rejected)
                continue
            gated = _gated_field(s, node, gate.name)
            if gated is not None and not cleared:
                walk = _walk_to(came_from, state)
                field, action = gated
                return f"workflow.nodes[{index[node_id]}].{field}", (
                    f"'{action}' needs approval '{gate.name}', but the node is reachable without passing an "
                    f"approval node for it ({' -> '.join(walk)})"
                )
            after = cleared and not (read & _node_changes(s, node))
            for target, guarded in _edges(node, condition):
                following = (target, after or guarded)
                if following not in came_from:
                    came_from[following] = state
                    queue.append(following)
    return None


def _gated_field(s: Scenario, node: Node, gate: str) -> tuple[str, str] | None:
    """(field, action) where a node runs a task gated by ``gate``, or None."""
    if node.type in ("model_step", "action") and node.action is not None:
        spec = s.action_map[node.action]
        if spec.kind == "task" and spec.gate == gate:
            return "action", spec.name
    if node.type == "agent":
        for j, tool in enumerate(node.tools):
            spec = s.action_map[tool]
            if spec.kind == "task" and spec.gate == gate:
                return f"tools[{j}]", tool
    if node.type == "plan":
        for tool in node.callable_tools:
            spec = s.action_map[tool]
            if spec.kind == "task" and spec.gate == gate:
                return "tools", tool
    loop = node.on_failure.react if node.on_failure is not None else None
    for j, tool in enumerate(loop.tools if loop is not None else ()):
        if s.action_map[tool].gate == gate:
            return f"on_failure.react.tools[{j}]", tool
    return None


def _node_changes(s: Scenario, node: Node) -> set[str]:
    """The artifacts a node's actions may write or invalidate."""
    names = list(node.callable_tools) if node.type in ("agent", "plan") else [node.action] if node.action else []
    names += list(node.on_failure.react.tools) if node.on_failure is not None and node.on_failure.react else []
    changed: set[str] = set()
    for name in names:
        spec = s.action_map[name]
        changed |= {spec.writes} if spec.writes else set()
        changed |= set(spec.invalidates)
    return changed


def _edges(node: Node, condition: Condition | None) -> Iterator[tuple[str, bool]]:
    """(target, taken only when the gate's condition does not hold) of every way out of a node."""
    passed = (
        node.type == "validator"
        and condition is not None
        and node.check is not None
        and contradicts(node.check, condition)
    )
    failed_before = False  # an earlier branch that C implies did not match, so C does not hold
    default = False
    by_model = node.route_by == "model"  # the model may pick any branch that holds, not only the first
    for branch in node.branches:
        own = branch.when is not None and condition is not None and contradicts(branch.when, condition)
        yield branch.goto, passed or (failed_before and not by_model) or own
        if branch.when is None:
            default = True  # with code routing nothing after a default branch is ever taken; `next` never is
            if not by_model:
                break
            continue
        failed_before = failed_before or (condition is not None and implies(condition, branch.when))
    if node.next is not None and not default:
        yield node.next, passed or failed_before
    if node.on_failure is not None:
        yield node.id, False  # a retry runs the node again
        if node.on_failure.fallback is not None:
            yield node.on_failure.fallback, False
    if node.on_reject is not None:
        yield node.on_reject, False


def _interval(test: str, bound: float) -> tuple[float, bool, float, bool]:
    """The numbers a comparison admits: (low, low included, high, high included)."""
    inf = float("inf")
    return {
        "greater_than": (bound, False, inf, False),
        "at_least": (bound, True, inf, False),
        "less_than": (-inf, False, bound, False),
        "at_most": (-inf, False, bound, True),
    }[test]


def _disjoint(a: tuple[float, bool, float, bool], b: tuple[float, bool, float, bool]) -> bool:
    low, low_in = max((a[0], a[1]), (b[0], b[1]), key=lambda x: (x[0], not x[1]))
    high, high_in = min((a[2], a[3]), (b[2], b[3]), key=lambda x: (x[0], x[1]))
    return low > high or (low == high and not (low_in and high_in))


def _inside(a: tuple[float, bool, float, bool], b: tuple[float, bool, float, bool]) -> bool:
    """Whether every number a admits, b admits too."""
    low_ok = a[0] > b[0] or (a[0] == b[0] and (b[1] or not a[1]))
    high_ok = a[2] < b[2] or (a[2] == b[2] and (b[3] or not a[3]))
    return low_ok and high_ok


def contradicts(when: Condition, condition: Condition) -> bool:
    """Whether ``when`` holding means ``condition`` certainly does not: one of its tests rules out one of C's."""
    for test, path, operand in when.tests():
        for c_test, c_path, c_operand in condition.tests():
            if path != c_path:
                continue
            if {test, c_test} == {"exists", "missing"}:
                return True
            if test == c_test == "equals" and operand != c_operand:
                return True
            if (
                test in COMPARISONS
                and c_test in COMPARISONS
                and _disjoint(_interval(test, operand), _interval(c_test, c_operand))
            ):
                return True
    return False


def implies(condition: Condition, when: Condition) -> bool:
    """Whether C holding means every test of ``when`` holds, so ``when`` failing means C fails."""
    c_tests = condition.tests()
    for test, path, operand in when.tests():
        if not any(
            path == c_path
            and (
                (test == c_test and (test in ("exists", "missing") or (test == "equals" and operand == c_operand)))
                or (
                    test in COMPARISONS
                    and c_test in COMPARISONS
                    and _inside(_interval(c_test, c_operand), _interval(test, operand))
                )
            )
            for c_test, c_path, c_operand in c_tests
        ):
            return False
    return True


def _walk_to(came_from: dict[tuple[str, bool], tuple[str, bool] | None], state: tuple[str, bool]) -> list[str]:
    walk: list[str] = []
    current: tuple[str, bool] | None = state
    while current is not None:
        walk.append(current[0])
        current = came_from[current]
    return walk[::-1]


def _unknown(what: str, name: str, known: Any) -> str:
    return f"unknown {what} '{name}' (known: {', '.join(sorted(known)) or 'none'})"


# ---------------------------------------------------------------- preconditions, order rules, rejections


def _check_preconditions(s: Scenario, a: ActionSpec, where: str) -> Problem:
    """Each precondition reaches the store (with value tests that fit the value) or names another recorded action."""
    recorded = [b.name for b in s.actions if b.kind != "finish"]
    for j, needed in enumerate(a.requires):
        field = f"{where}[{j}]"
        if needed.action is not None:
            if needed.action not in recorded:
                return f"{field}.action", _unknown("action", needed.action, recorded)
            if needed.action == a.name:
                return f"{field}.action", f"'{a.name}' cannot take place before itself"
            continue
        path = needed.path or ""
        problem = _check_store_path(s, f"{field}.path" if needed.tests() else field, path)
        if problem:
            return problem
        problem = _check_tests(s, needed, field, reach_store(s, path), path)
        if problem:
            return problem
    return None


def _check_order_rules(s: Scenario) -> Problem:
    """The actions' order preconditions (``requires: [{action: NAME}]``) form no cycle: a cycle could never start."""
    index = {a.name: i for i, a in enumerate(s.actions)}
    edges = {a.name: a.required_first for a in s.actions}
    for first in s.actions:
        # depth-first from each action, keeping the path: coming back to the first action closes a cycle
        stack: list[tuple[str, int]] = [(first.name, 0)]
        explored: set[str] = set()  # fully walked without coming back to the first action
        while stack:
            name, at = stack[-1]
            if at == len(edges[name]):
                explored.add(name)
                stack.pop()
                continue
            stack[-1] = (name, at + 1)
            target = edges[name][at]
            if target == first.name:
                cycle = " -> ".join([*(n for n, _ in stack), target])
                return f"actions[{index[first.name]}].requires", (
                    f"the order rules make a cycle ({cycle}): none of these actions could ever take place first"
                )
            if target not in explored and all(target != n for n, _ in stack):
                stack.append((target, 0))
    return None


def _check_compensation(s: Scenario, phase: RejectionPhase, where: str, gate: str) -> Problem:
    """A rejection phase's path is a compensation only where the run goes on after the rejection; it ends in finish,
    and it cannot take the refused gate's own gated actions (the retry)."""
    if not phase.reference_path:
        return None
    spec_gate = next(g for g in s.gates if g.name == gate)
    if spec_gate.on_rejection == "end":
        return f"{where}.reference_path", (
            f"gate '{gate}' says on_rejection: end, so nothing follows a rejection there; remove the path, or let the "
            "gate continue"
        )
    actions, finish = s.action_map, s.finish_action.name
    for j, step in enumerate(phase.reference_path):
        spec = actions.get(step.action)
        if spec is None:
            return f"{where}.reference_path[{j}]", _unknown("action", step.action, actions)
        if spec.gate == gate:
            return f"{where}.reference_path[{j}]", (
                f"'{step.action}' is what '{gate}' refused: a compensation never retries it"
            )
        if step.args is not None and spec.kind == "task":
            problem = _args_problem(spec.args, step.args, f"{where}.reference_path[{j}].args")
            if problem:
                return problem
    if phase.reference_path[-1].action != finish:
        return f"{where}.reference_path", f"a compensation ends the run: its last step is '{finish}'"
    return None
