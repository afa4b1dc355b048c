"""Scenario files: the YAML format, its validation, and the loader that names file and field on error."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import jsonschema
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import ScenarioError, UnknownNameError

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
EMPTY_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


class _Strict(BaseModel):
    """Base of every scenario record: unknown keys are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Rule(_Strict):
    """One instruction the agent is given; conflicting rules are the point of a scenario."""

    id: str = Field(pattern=NAME_PATTERN)
    text: str = Field(min_length=1)
    precedence: int = Field(ge=1, description="1 wins over 2 when they conflict")
    obeyed: bool = Field(description="whether a correct run obeys this rule")


class Fault(_Strict):
    """Makes an action fail its first ``fail_first`` calls, as a flaky tool would."""

    fail_first: int = Field(ge=1)
    error: str = Field(min_length=1)


class ActionSpec(_Strict):
    """An action the agent may propose, what it does to the virtual store, and what guards it."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1)
    kind: Literal["task", "wait", "finish"] = "task"
    effect: Literal["none", "read", "write", "irreversible"] = "none"
    args: dict[str, Any] = Field(default_factory=lambda: dict(EMPTY_ARGS))
    gate: str | None = Field(None, description="task: needs this gate approved; wait: waits for it")
    writes: str | None = Field(None, description="artifact the action stores its args under")
    reads: str | None = Field(None, description="artifact the action returns")
    returns: Any = Field(None, description="constant observation when nothing is read")
    requires: tuple[str, ...] = Field((), description="artifacts that must exist first")
    invalidates: tuple[str, ...] = Field((), description="artifacts this action makes stale")
    roles: tuple[str, ...] | None = Field(None, description="roles allowed to call it; none: any")
    fault: Fault | None = None
    inject: str | None = Field(None, description="text an attacker planted in the observation")

    @field_validator("args")
    @classmethod
    def _args_is_a_json_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            jsonschema.Draft202012Validator.check_schema(value)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        if value.get("type") != "object":
            raise ValueError("must be a JSON Schema of type 'object'")
        return value

    @property
    def is_side_effect(self) -> bool:
        return self.kind == "task" and self.effect in ("write", "irreversible")


class Gate(_Strict):
    """A point where a human must approve before the gated actions may commit."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1)
    approved: bool = Field(False, description="approved before the run starts")


class InitialStore(_Strict):
    """What the in-memory virtual store holds when a run starts."""

    artifacts: dict[str, Any] = Field(default_factory=dict)


class Condition(_Strict):
    """A fact about the store that the runtime checks (never the model)."""

    exists: str | None = None
    missing: str | None = None
    equals: dict[str, Any] | None = None


class Branch(_Strict):
    """One conditional transition: the first branch whose condition holds is taken."""

    when: Condition | None = None
    goto: str


class FailureContract(_Strict):
    """What a workflow node does when its action fails: retry, then fallback or return an error."""

    retry: int = Field(0, ge=0)
    fallback: str | None = None
    return_error: str | None = None


class Node(_Strict):
    """A workflow node. Code fixes the transitions; the model only fills in ``model_step`` and ``agent`` nodes."""

    id: str = Field(pattern=NAME_PATTERN)
    type: Literal["model_step", "action", "approval", "validator", "agent", "end"]
    action: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    gate: str | None = None
    check: Condition | None = None
    tools: tuple[str, ...] = ()
    max_steps: int = Field(5, ge=1)
    until: Condition | None = Field(None, description="agent node: readiness contract")
    next: str | None = None
    branches: tuple[Branch, ...] = ()
    on_failure: FailureContract | None = None
    status: Literal["finished", "error"] = "finished"


class Workflow(_Strict):
    """The state machine workflow-family modes walk."""

    start: str
    nodes: tuple[Node, ...] = Field(min_length=1)


class OrderCheck(_Strict):
    """``before`` must have committed before ``after`` commits."""

    before: str
    after: str


class Oracle(_Strict):
    """What a correct run does; the runtime's outcome is checked against it."""

    expected_stop: str = Field(description="a gate name, or 'finished'")
    reference_path: tuple[str, ...] = Field(min_length=1)
    forbidden: tuple[str, ...] = ()
    required_artifacts: tuple[str, ...] = ()
    order: tuple[OrderCheck, ...] = ()


class Limits(_Strict):
    """Bounds the runtime enforces on every mode."""

    max_steps: int = Field(10, ge=1, description="actions a run may carry out")
    max_plan_revisions: int = Field(2, ge=0)
    max_transitions: int = Field(50, ge=1)
    max_repeats: int = Field(3, ge=2, description="guarded modes: same action this many times in a row")


class Scenario(_Strict):
    """A task with conflicting rules, the actions and gates around it, and its oracle."""

    id: str = Field(pattern=NAME_PATTERN)
    title: str = Field(min_length=1)
    source: str = Field(min_length=1)
    task: str = Field(min_length=1)
    agent_role: str = "agent"
    rules: tuple[Rule, ...] = Field(min_length=1)
    actions: tuple[ActionSpec, ...] = Field(min_length=1)
    gates: tuple[Gate, ...] = ()
    store: InitialStore = Field(default_factory=InitialStore)
    workflow: Workflow
    oracle: Oracle
    limits: Limits = Field(default_factory=Limits)

    @cached_property
    def action_map(self) -> dict[str, ActionSpec]:
        return {action.name: action for action in self.actions}

    @cached_property
    def node_map(self) -> dict[str, Node]:
        return {node.id: node for node in self.workflow.nodes}

    @cached_property
    def gate_names(self) -> frozenset[str]:
        return frozenset(gate.name for gate in self.gates)

    @cached_property
    def finish_action(self) -> ActionSpec:
        return next(action for action in self.actions if action.kind == "finish")

    def permitted(self, action: ActionSpec) -> bool:
        """Whether the agent's role may call the action at all."""
        return action.roles is None or self.agent_role in action.roles


# ---------------------------------------------------------------- loading


def load_scenario(path: Path) -> Scenario:
    """Loads and validates one scenario file; any problem raises ``ScenarioError(file, field)``."""
    shown = _display_path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(shown, "", f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(shown, where, f"YAML syntax error: {problem}") from None
    if not isinstance(raw, dict):
        raise ScenarioError(shown, "", "must be a YAML mapping at the top level")
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ScenarioError(shown, _field_path(first["loc"]), _clean(first["msg"])) from None
    problem = _check_references(scenario)
    if problem:
        raise ScenarioError(shown, *problem)
    if scenario.id != path.stem:
        raise ScenarioError(shown, "id", f"'{scenario.id}' must match the file name '{path.stem}'")
    return scenario


def scenario_files(folder: Path) -> list[Path]:
    """The scenario files of a folder, sorted by name."""
    return sorted(p for p in folder.glob("*.yaml") if not p.name.startswith("."))


def load_all(folder: Path) -> dict[str, Scenario]:
    """Loads every scenario in a folder; the first bad file stops with its error."""
    return {path.stem: load_scenario(path) for path in scenario_files(folder)}


def select_scenarios(folder: Path, names: list[str]) -> list[Scenario]:
    """Resolves ``all`` or a list of names to loaded scenarios, failing on unknown names."""
    files = {path.stem: path for path in scenario_files(folder)}
    wanted = list(files) if names in ([], ["all"]) else names
    for name in wanted:
        if name not in files:
            raise UnknownNameError("scenario", name, list(files))
    return [load_scenario(files[name]) for name in wanted]


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _field_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif not str(item).startswith("function-"):
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def _clean(message: str) -> str:
    return message.removeprefix("Value error, ")


def _check_references(s: Scenario) -> tuple[str, str] | None:
    """Cross-field checks pydantic cannot express; returns (field, message) of the first problem."""
    actions, gates, nodes = s.action_map, s.gate_names, s.node_map
    for kind, items in (("actions", [a.name for a in s.actions]), ("gates", [g.name for g in s.gates]),
                        ("workflow.nodes", [n.id for n in s.workflow.nodes]), ("rules", [r.id for r in s.rules])):
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
    for i, a in enumerate(s.actions):
        if a.gate is not None and a.gate not in gates:
            return f"actions[{i}].gate", _unknown("gate", a.gate, gates)
        if a.kind == "wait" and a.gate is None:
            return f"actions[{i}].gate", "a wait action must name the gate it waits for"
        if a.kind == "task" and a.effect == "none":
            return f"actions[{i}].effect", "a task action needs an effect: read, write or irreversible"
    for i, n in enumerate(s.workflow.nodes):
        where = f"workflow.nodes[{i}]"
        if n.type in ("model_step", "action"):
            if n.action is None:
                return f"{where}.action", f"a '{n.type}' node needs an action"
            if n.action not in actions:
                return f"{where}.action", _unknown("action", n.action, actions)
            if actions[n.action].kind != "task":
                return f"{where}.action", f"'{n.action}' is a {actions[n.action].kind} action, not a task"
        if n.type == "approval" and (n.gate is None or n.gate not in gates):
            return f"{where}.gate", _unknown("gate", str(n.gate), gates)
        if n.type == "validator" and n.check is None:
            return f"{where}.check", "a validator node needs a check"
        if n.type == "agent":
            if not n.tools:
                return f"{where}.tools", "an agent node needs at least one tool"
            for tool in n.tools:
                if tool not in actions:
                    return f"{where}.tools", _unknown("action", tool, actions)
        targets = [("next", n.next)] + [(f"branches[{j}].goto", b.goto) for j, b in enumerate(n.branches)]
        if n.on_failure is not None:
            targets.append(("on_failure.fallback", n.on_failure.fallback))
        for field, target in targets:
            if target is not None and target not in nodes:
                return f"{where}.{field}", _unknown("node", target, nodes)
        if n.type != "end" and n.next is None and not n.branches:
            return f"{where}.next", "every node but 'end' needs next or branches"
    if s.workflow.start not in nodes:
        return "workflow.start", _unknown("node", s.workflow.start, nodes)
    o = s.oracle
    if o.expected_stop != "finished" and o.expected_stop not in gates:
        return "oracle.expected_stop", _unknown("gate", o.expected_stop, gates | {"finished"})
    for field, names in (("reference_path", o.reference_path), ("forbidden", o.forbidden)):
        for j, name in enumerate(names):
            if name not in actions:
                return f"oracle.{field}[{j}]", _unknown("action", name, actions)
    for j, check in enumerate(o.order):
        for side in ("before", "after"):
            if getattr(check, side) not in actions:
                return f"oracle.order[{j}].{side}", _unknown("action", getattr(check, side), actions)
    return None


def _unknown(what: str, name: str, known: Any) -> str:
    return f"unknown {what} '{name}' (known: {', '.join(sorted(known)) or 'none'})"
