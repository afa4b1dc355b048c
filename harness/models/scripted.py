"""Scripted policies for offline runs: deterministic stand-ins for a model, labelled ``scripted:<name>``.

They decide from the scenario's action metadata only (kinds, gates, declared order), so they work
on any scenario. They are test doubles for the control modes, never passed off as an LLM.
"""

from __future__ import annotations

import json
import math
import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from harness.core.model_port import ModelReply, ModelRequest, PolicyView
from harness.records.trace import Usage
from harness.registry import Registry
from harness.scenario.model import ActionSpec, ReferenceStep

Proposal = dict[str, Any]


def intended_sequence(view: PolicyView, *, wait: bool) -> list[str]:
    """The task in declared order; with ``wait``, each gate's wait action goes before its first gated action."""
    waits = {a.gate: a.name for a in view.catalog if a.kind == "wait"}
    sequence: list[str] = []
    for action in view.catalog:
        if action.kind != "task" or not _role_allows(view, action):
            continue
        gate = action.gate
        if wait and gate in waits and gate not in view.approvals and waits[gate] not in sequence:
            sequence.append(waits[gate])
        sequence.append(action.name)
    return sequence


def eager_sequence(view: PolicyView) -> list[str]:
    """Gated actions first, as early as possible, then the rest; it never waits."""
    tasks = [a for a in view.catalog if a.kind == "task"]
    gated = [a.name for a in tasks if a.gate is not None]
    return gated + [a.name for a in tasks if a.gate is None]


# The longest string or list a policy writes: a schema that asks for more (minLength: 1000000000) gets arguments the
# gateway refuses, as a model's would be, instead of a gigabyte in the trace.
EXAMPLE_LIMIT = 1_000


def example_args(spec: ActionSpec, rng: random.Random | None = None) -> dict[str, Any]:
    """Arguments that satisfy the action's schema: fixed values, or random ones given an rng."""
    return _example(spec.args, spec.name, rng)


def _example(schema: Any, name: str, rng: random.Random | None) -> Any:
    if not isinstance(schema, dict):  # a boolean sub-schema: true takes any value (a string will do), false none
        return _example({}, name, rng) if schema is True else None
    if "enum" in schema:  # an empty enum admits nothing: any value is refused alike
        return (rng.choice(schema["enum"]) if rng else schema["enum"][0]) if schema["enum"] else None
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", props))
        return {
            key: _example(sub, key, rng)
            for key, sub in props.items()
            if sub is not False and (key in required or rng is None)  # a property whose schema is false: left out
        }
    if kind == "array":
        count = 0 if schema.get("items") is False else min(max(int(schema.get("minItems", 1)), 1), EXAMPLE_LIMIT)
        return [_example(schema.get("items", {}), name, rng) for _ in range(count)]
    if kind == "integer":
        low = schema.get("minimum", 0)
        low = low if isinstance(low, int) else math.ceil(low)  # an integer at or above a fractional minimum
        return rng.randint(low, low + 100) if rng else low + 1
    if kind == "number":
        low = schema.get("minimum", 0)
        return round(rng.uniform(low, low + 100), 2) if rng else float(low + 1)
    if kind == "boolean":
        return rng.random() < 0.5 if rng else True
    if kind == "null":
        return None
    text = f"{name} (scripted)" if rng is None else f"{name} #{rng.randint(0, 9999)} (scripted)"
    min_length = min(int(schema.get("minLength", 0)), EXAMPLE_LIMIT)
    return text.ljust(min_length, ".")


def _role_allows(view: PolicyView, action: ActionSpec) -> bool:
    return action.roles is None or view.agent_role in action.roles


def _specs(view: PolicyView) -> dict[str, ActionSpec]:
    return {a.name: a for a in view.catalog}


def _finish(view: PolicyView) -> str:
    return next(a.name for a in view.catalog if a.kind == "finish")


def _next_in(sequence: list[str], view: PolicyView, offered: tuple[str, ...]) -> str:
    """The first offered action of ``sequence`` not yet attempted; a failed attempt is retried."""
    attempted = {r.action for r in view.history if r.status != "failed"}
    for name in sequence:
        if name in offered and name not in attempted:
            return name
    return _finish(view) if _finish(view) in offered else offered[-1]


def _action(name: str, view: PolicyView, rng: random.Random | None = None) -> Proposal:
    return {"action": name, "args": example_args(_specs(view)[name], rng)}


def _plan(names: list[str], view: PolicyView) -> Proposal:
    return {"plan": [_action(name, view) for name in names[: view.max_plan_steps]]}


class Policy(ABC):
    """A named way of answering every kind of request; registered with ``@scripted_policy("name")``."""

    name: ClassVar[str] = ""

    def __init__(self, rng: random.Random):
        self.rng = rng

    @abstractmethod
    def next_action(self, request: ModelRequest) -> Proposal: ...

    @abstractmethod
    def plan(self, request: ModelRequest) -> Proposal: ...

    def content(self, request: ModelRequest) -> Proposal:
        return example_args(_specs(request.view)[request.offered[0]])

    def route(self, request: ModelRequest) -> Proposal:
        """A route request: the first route the rules allow (the first offered when none is marked allowed)."""
        allowed = [r.target for r in request.view.routes if r.allowed and r.target in request.offered]
        return {"route": (allowed or list(request.offered))[0]}


POLICIES: Registry[type[Policy]] = Registry("scripted policy", named=True)
scripted_policy = POLICIES.register  # ``@scripted_policy("eager")``: ``--model scripted:eager`` runs it


@scripted_policy("compliant")
class Compliant(Policy):
    """Follows the rule that waits: waits before gated actions, and stops once an approval is pending."""

    def next_action(self, request: ModelRequest) -> Proposal:
        view = request.view
        last = view.history[-1] if view.history else None
        pending = last is not None and last.status == "wait_recorded" and last.gate not in view.approvals
        if pending and _finish(view) in request.offered:  # it asked, nobody has approved yet: it stops
            return _action(_finish(view), view)
        return _action(_next_in(intended_sequence(view, wait=True), view, request.offered), view)

    def plan(self, request: ModelRequest) -> Proposal:
        names = [n for n in intended_sequence(request.view, wait=True) if n in request.offered]
        return _plan([*names, _finish(request.view)], request.view)


@scripted_policy("eager")
class Eager(Policy):
    """Follows the rule that pushes on: goes for the gated write as early as it can and never waits."""

    def next_action(self, request: ModelRequest) -> Proposal:
        view = request.view
        return _action(_next_in(eager_sequence(view), view, request.offered), view)

    def plan(self, request: ModelRequest) -> Proposal:
        names = [n for n in eager_sequence(request.view) if n in request.offered]
        return _plan([*names, _finish(request.view)], request.view)

    def route(self, request: ModelRequest) -> Proposal:
        """The route that reaches a gated action soonest, allowed or not; else the first offered."""
        gated = {a.name for a in request.view.catalog if a.kind == "task" and a.gate is not None}
        for route in request.view.routes:
            if route.target in request.offered and any(action in gated for action, _ in route.leads_to):
                return {"route": route.target}
        return {"route": request.offered[0]}


@scripted_policy("looping")
class Looping(Policy):
    """Repeats its first action forever, like the article's ReAct run."""

    def _first(self, request: ModelRequest) -> str:
        sequence = [n for n in intended_sequence(request.view, wait=False) if n in request.offered]
        return sequence[0] if sequence else request.offered[0]

    def next_action(self, request: ModelRequest) -> Proposal:
        return _action(self._first(request), request.view)

    def plan(self, request: ModelRequest) -> Proposal:
        return _plan([self._first(request)] * request.view.max_plan_steps, request.view)


@scripted_policy("random")
class RandomChoice(Policy):
    """A seeded uniform choice among whatever it is offered."""

    def next_action(self, request: ModelRequest) -> Proposal:
        return _action(self.rng.choice(request.offered), request.view, self.rng)

    def plan(self, request: ModelRequest) -> Proposal:
        length = self.rng.randint(1, request.view.max_plan_steps)
        names = [self.rng.choice(request.offered) for _ in range(length)]
        return {"plan": [_action(name, request.view, self.rng) for name in names]}

    def content(self, request: ModelRequest) -> Proposal:
        return example_args(_specs(request.view)[request.offered[0]], self.rng)

    def route(self, request: ModelRequest) -> Proposal:
        return {"route": self.rng.choice(request.offered)}


@scripted_policy("reference")
class Reference(Policy):
    """Follows the oracle's correct steps, both halves of the story, with their arguments: a perfect model.

    It shows what a mode can do when the model does everything right (a mode's own limits, apart from the
    model's); it reads the oracle, so its runs say nothing about any real model.
    """

    def _remaining(self, view: PolicyView) -> list[ReferenceStep]:
        """The reference steps not yet taken: each gateway record that matches the next step moves past it. A step
        whose irreversible action already committed (a revision sends the work back past it) is left as it is, as
        the workflow modes skip its node: it commits at most once."""
        steps, position, specs, committed = list(view.reference), 0, _specs(view), set()

        def done(step: ReferenceStep) -> bool:  # a request's catalog may hold only some of the story's actions
            spec = specs.get(step.action)
            return spec is not None and spec.irreversible and step.action in committed

        for record in view.history:
            while position < len(steps) and done(steps[position]):
                position += 1
            if position < len(steps) and record.action == steps[position].action and record.status != "blocked":
                position += 1
            if record.status == "committed":
                committed.add(record.action)
        while position < len(steps) and done(steps[position]):
            position += 1
        return steps[position:]

    def _step(self, step: ReferenceStep, view: PolicyView) -> Proposal:
        spec = _specs(view)[step.action]
        return {"action": step.action, "args": step.args if step.args is not None else example_args(spec)}

    def next_action(self, request: ModelRequest) -> Proposal:
        view = request.view
        remaining = self._remaining(view)
        pending = (
            bool(view.history)
            and view.history[-1].status == "wait_recorded"
            and view.history[-1].gate not in view.approvals | view.refused | view.revising
        )
        if remaining and remaining[0].action in request.offered and not pending:
            return self._step(remaining[0], view)
        return _action(_finish(view), view) if _finish(view) in request.offered else _action(request.offered[-1], view)

    def plan(self, request: ModelRequest) -> Proposal:
        view = request.view
        if view.delegates:
            return {"plan": self._delegated_plan(request)}
        steps = [self._step(s, view) for s in self._remaining(view) if s.action in request.offered]
        return {"plan": [*steps[: view.max_plan_steps - 1], _action(_finish(view), view)]}

    def _delegated_plan(self, request: ModelRequest) -> list[Proposal]:
        """A plan node's plan: the next correct steps while the stage can take them, a run of steps a react step's
        sub-agent holds the tools for handed to it as one step, up to the first step the stage cannot take."""
        view, plan = request.view, []
        for step in self._remaining(view):
            if step.action in request.offered:
                plan.append(self._step(step, view))
                continue
            holder = next((name for name, tools in view.delegates if step.action in tools), None)
            if holder is None:
                break
            if not plan or plan[-1]["action"] != holder:
                plan.append(_action(holder, view))
        return plan[: view.max_plan_steps] or [_action(request.offered[0], view)]

    def content(self, request: ModelRequest) -> Proposal:
        action = request.offered[0]
        upcoming = [s for s in self._remaining(request.view) if s.action == action]
        return self._step(upcoming[0], request.view)["args"] if upcoming else example_args(_specs(request.view)[action])

    def route(self, request: ModelRequest) -> Proposal:
        """The route whose first steps match the next correct step (its action, and its arguments where both are
        given); else what any policy would pick."""
        remaining = self._remaining(request.view)
        if remaining:
            step = remaining[0]
            for route in request.view.routes:
                if route.target in request.offered and any(
                    action == step.action and (args is None or step.args is None or args == step.args)
                    for action, args in route.leads_to
                ):
                    return {"route": route.target}
        return super().route(request)


def structured(plan: list[Proposal], view: PolicyView) -> list[Proposal]:
    """A flat plan as a structured one (for a plan node): each step's id is its action (numbered when repeated), it
    depends on the earlier steps that write what it requires, or, requiring something no earlier step writes, on
    the step before it (which may bring it about); done_when is what it writes. From action metadata only."""
    specs, finish = _specs(view), _finish(view)
    shaped: list[Proposal] = []
    writers: dict[str, str] = {}  # artifact -> the id of the latest step that writes it
    for item in plan:
        if item["action"] == finish:
            continue
        spec = specs[item["action"]]
        number, step_id = 1, item["action"]
        while any(s["id"] == step_id for s in shaped):
            number += 1
            step_id = f"{item['action']}_{number}"
        needed = [path.split(".")[0].removesuffix("[]") for path in spec.required_paths]
        depends = list(dict.fromkeys(writers[n] for n in needed if n in writers))
        if shaped and any(n not in writers for n in needed):
            depends = list(dict.fromkeys([*depends, shaped[-1]["id"]]))
        shaped.append({**item, "id": step_id, "depends_on": depends, "done_when": spec.writes or ""})
        if spec.writes:
            writers[spec.writes] = step_id
    return shaped


def _wants_structure(request: ModelRequest) -> bool:
    """Whether a plan request asks for structured steps (a plan node's planner): its steps have depends_on."""
    items = request.response_schema.get("properties", {}).get("plan", {}).get("items", {})
    choices = items.get("anyOf", [items]) if isinstance(items, dict) else []
    return any(isinstance(c, dict) and "depends_on" in c.get("properties", {}) for c in choices)


class ScriptedModel:
    """A model whose answers come from a policy; zero tokens, zero latency, and labelled as scripted."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.label = f"scripted:{policy.name}"

    async def complete(self, request: ModelRequest) -> ModelReply:
        answer = {
            "next_action": self.policy.next_action,
            "plan": self.policy.plan,
            "content": self.policy.content,
            "route": self.policy.route,
        }[request.purpose]
        proposal = answer(request)
        if request.purpose == "plan" and _wants_structure(request):
            proposal = {"plan": structured(proposal["plan"], request.view)}
        return ModelReply(proposal=proposal, text=json.dumps(proposal), usage=Usage(), latency_ms=0.0)


class ScriptedSource:
    """Gives each run a fresh policy seeded for that run, so runs never share state."""

    def __init__(self, name: str):
        if name not in POLICIES:
            raise POLICIES.unknown(name)
        self.name = name
        self.label = f"scripted:{name}"

    def for_run(self, seed: int) -> ScriptedModel:
        return ScriptedModel(POLICIES[self.name](random.Random(seed)))

    async def aclose(self) -> None:
        return None
