"""Structured plans (seed 001): each step has an id, the steps it depends on, a completion condition and a status.

The model proposes the steps; the statuses are the executor's, never the model's. A flat plan (the list of actions
every other plan mode asks for) still reads: each of its steps depends on the one before, so a planner that answers
flat drives the structured executor too. A revision keeps what is done: a step of the new plan with the id and action
of a step already done is not run again, and done steps the new plan leaves out stay in it, done.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.core import ActionSpec, ModelError

Status = Literal["pending", "running", "done", "failed"]


@dataclass
class PlanStep:
    """One step of a structured plan, with the status the executor keeps."""

    id: str
    action: str
    args: Any
    depends_on: tuple[str, ...] = ()
    done_when: str | None = None  # a store path that must hold a value once the step is done; none: it took effect
    status: Status = "pending"
    reason: str | None = None  # why it failed

    def state(self) -> dict[str, Any]:
        """The step as a plan event shows it."""
        shown: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "depends_on": list(self.depends_on),
            "status": self.status,
        }
        if self.done_when:
            shown["done_when"] = self.done_when
        if self.reason:
            shown["reason"] = self.reason
        return shown


def structured_plan_schema(offered: Sequence[ActionSpec], max_steps: int) -> dict[str, Any]:
    """A list of 1..max_steps steps, each one offered action with fitting arguments, an id, the ids it depends on and
    its completion condition (a store path, or "" for "the action took effect"). Every property is required, as
    strict structured outputs want."""
    choices = [
        {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "action": {"type": "string", "enum": [spec.name]},
                "args": spec.args,
                "depends_on": {"type": "array", "items": {"type": "string"}},
                "done_when": {"type": "string"},
            },
            "required": ["id", "action", "args", "depends_on", "done_when"],
            "additionalProperties": False,
        }
        for spec in offered
    ]
    return {
        "type": "object",
        "properties": {"plan": {"type": "array", "minItems": 1, "maxItems": max_steps, "items": {"anyOf": choices}}},
        "required": ["plan"],
        "additionalProperties": False,
    }


def read_structured_plan(proposal: Any, finish: str) -> list[PlanStep]:
    """A plan proposal as PlanSteps; finish steps are dropped (a sub-flow ends when its steps are done). A step
    without ``id`` and ``depends_on`` is a flat one: its id is its action (numbered when repeated) and it depends on
    the step before. Anything else that does not read is a schema error."""
    plan = proposal.get("plan") if isinstance(proposal, dict) else None
    if not isinstance(plan, list) or not plan:
        raise ModelError("schema", f"expected {{'plan': [steps]}}, got {_short(proposal)}")
    steps: list[PlanStep] = []
    taken: set[str] = set()
    for item in plan:
        if isinstance(item, dict) and set(item) == {"step"}:
            item = item["step"]
        if not isinstance(item, dict) or not isinstance(item.get("action"), str):
            raise ModelError("schema", f"expected a step {{'id', 'action', 'args', 'depends_on'}}, got {_short(item)}")
        if item["action"] == finish:
            continue
        flat = "id" not in item and "depends_on" not in item
        step_id = item.get("id") if not flat else _fresh_id(item["action"], taken)
        depends = item.get("depends_on", [])
        done_when = item.get("done_when") or None
        if not isinstance(step_id, str) or not step_id:
            raise ModelError("schema", f"a step's id must be a non-empty string, got {_short(step_id)}")
        if not isinstance(depends, list) or not all(isinstance(d, str) for d in depends):
            raise ModelError("schema", f"depends_on must be a list of step ids, got {_short(depends)}")
        if done_when is not None and not isinstance(done_when, str):
            raise ModelError("schema", f"done_when must be a store path or empty, got {_short(done_when)}")
        if flat and steps:
            depends = [steps[-1].id]
        args = item.get("args", {})
        steps.append(PlanStep(step_id, item["action"], {} if args is None else args, tuple(depends), done_when))
        taken.add(step_id)
    if not steps:
        raise ModelError("schema", "the plan has no step but finish")
    return steps


def _fresh_id(action: str, taken: set[str]) -> str:
    """A flat step's id: its action, numbered from 2 when the action comes again."""
    if action not in taken:
        return action
    number = 2
    while f"{action}_{number}" in taken:
        number += 1
    return f"{action}_{number}"


def revise(current: Sequence[PlanStep], proposed: Sequence[PlanStep]) -> list[PlanStep]:
    """The next revision: the proposed steps, where one with the id and action of a step already done keeps it done;
    done steps the proposal leaves out go first, done (what is done stays done)."""
    done = {step.id: step for step in current if step.status == "done"}
    mentioned = {step.id for step in proposed}
    carried = [step for step in current if step.status == "done" and step.id not in mentioned]
    revised = []
    for step in proposed:
        kept = done.get(step.id)
        if kept is not None and kept.action == step.action:
            step.status = "done"
        revised.append(step)
    return [*carried, *revised]


def dependency_problems(steps: Sequence[PlanStep]) -> list[str]:
    """What is wrong with a plan's dependencies: an id used twice, a dependency on an unknown id, a cycle, a step
    listed before a step it depends on. Empty: the plan can run in its own order."""
    problems: list[str] = []
    position: dict[str, int] = {}
    for index, step in enumerate(steps, start=1):
        if step.id in position:
            problems.append(f"step {index} ({step.action}): id '{step.id}' is used twice")
        position.setdefault(step.id, index)
    for index, step in enumerate(steps, start=1):
        for dep in step.depends_on:
            if dep not in position:
                problems.append(f"step {index} ({step.action}): depends on unknown step '{dep}'")
    cycle = _cycle(steps, position)
    if cycle:
        problems.append("the steps " + " -> ".join(cycle) + " depend on each other in a cycle")
        return problems
    for index, step in enumerate(steps, start=1):
        for dep in step.depends_on:
            if dep in position and position[dep] > index:
                problems.append(
                    f"step {index} ({step.action}): depends on '{dep}', which comes after it (step {position[dep]})"
                )
    return problems


def _cycle(steps: Sequence[PlanStep], position: dict[str, int]) -> list[str]:
    """One cycle of the dependency graph, as ids from a step back to itself; empty when there is none."""
    edges = {step.id: [d for d in step.depends_on if d in position] for step in steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for dep in edges.get(node, []):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for step in steps:
        if step.id not in state:
            found = visit(step.id)
            if found:
                return found
    return []


def plan_problems(steps: Sequence[PlanStep], offered: Iterable[str], max_steps: int) -> list[str]:
    """The structured plan validator's reasons to send a plan back: an action the stage does not offer, the
    dependencies (dependency_problems), more steps to run than the stage may still run."""
    allowed = set(offered)
    problems = [
        f"step {index} ({step.action}): not one of this stage's steps ({', '.join(sorted(allowed))})"
        for index, step in enumerate(steps, start=1)
        if step.action not in allowed
    ]
    problems += dependency_problems(steps)
    to_run = sum(step.status != "done" for step in steps)
    if to_run > max_steps:
        problems.append(f"the plan has {to_run} steps to run, more than the {max_steps} this stage may still run")
    return problems


def ready_step(steps: Sequence[PlanStep]) -> PlanStep | None:
    """The first pending step whose dependencies are all done: the executor's next, in dependency order."""
    done = {step.id for step in steps if step.status == "done"}
    return next((s for s in steps if s.status == "pending" and all(d in done for d in s.depends_on)), None)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
