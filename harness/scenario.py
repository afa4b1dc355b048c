"""Scenario files: the YAML format, its validation, and the loader that names file and field on error."""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import yaml
from pydantic import (BaseModel, ConfigDict, Field, GetJsonSchemaHandler, ValidationError, field_validator,
                      model_validator)

from harness.errors import ScenarioError, UnknownNameError
from harness.paths import MISSING, PATH_PATTERN, head, lookup, valid_path

NAME_PATTERN = r"^[a-z][a-z0-9_]*$"
ARTIFACT_PATTERN = r"[A-Za-z0-9_-]+"
MAX_STEPS = 1_000  # bounds that keep a looping model from writing trace forever
MAX_TRANSITIONS = 10_000
EMPTY_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


class _Strict(BaseModel):
    """Base of every scenario record: unknown keys are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Rule(_Strict):
    """One instruction the agent is given; conflicting rules are the point of a scenario."""

    id: str = Field(pattern=NAME_PATTERN, description="Rule name, unique in the scenario.")
    text: str = Field(min_length=1, description="The instruction as the agent reads it.")
    precedence: int = Field(ge=1, description="Rank when rules conflict: 1 wins over 2.")
    obeyed: bool = Field(description="Whether a correct run obeys this rule (the oracle follows the obeyed ones).")


class Condition(_Strict):
    """A fact about the store that the runtime checks (never the model); every test given must hold.

    Keys are paths into the artifacts (``order.amount``); a path that reaches nothing fails every test but ``missing``.
    """

    exists: str | None = Field(None, description="Path that must hold a value.")
    missing: str | None = Field(None, description="Path that must hold nothing.")
    equals: dict[str, Any] | None = Field(None, description="Path -> the exact value it must hold.")
    greater_than: dict[str, float] | None = Field(None, description="Path -> a number its value must exceed.")
    at_least: dict[str, float] | None = Field(None, description="Path -> a number its value must reach.")
    less_than: dict[str, float] | None = Field(None, description="Path -> a number its value must stay under.")
    at_most: dict[str, float] | None = Field(None, description="Path -> a number its value must not exceed.")

    @model_validator(mode="after")
    def _has_a_test(self) -> Condition:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("a condition needs at least one test (exists, missing, equals, greater_than, ...)")
        return self

    def paths(self) -> list[tuple[str, str]]:
        """(field, path) of every path the condition reads, for validation."""
        found = [(name, value) for name in ("exists", "missing") if (value := getattr(self, name)) is not None]
        for name in ("equals", *_COMPARISONS):
            found.extend((name, path) for path in getattr(self, name) or {})
        return found

    def holds(self, artifacts: Mapping[str, Any]) -> bool:
        """Evaluates the condition on the store's artifacts."""
        data = dict(artifacts)
        if self.exists is not None and lookup(data, self.exists) is MISSING:
            return False
        if self.missing is not None and lookup(data, self.missing) is not MISSING:
            return False
        for path, expected in (self.equals or {}).items():
            if lookup(data, path) != expected:
                return False
        for name, compare in _COMPARISONS.items():
            for path, bound in (getattr(self, name) or {}).items():
                value = lookup(data, path)
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if not number or not compare(value, bound):
                    return False
        return True


_COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "greater_than": operator.gt, "at_least": operator.ge, "less_than": operator.lt, "at_most": operator.le,
}


class Fault(_Strict):
    """Makes an action fail as a flaky or broken tool would: its first N calls, or until an artifact exists."""

    fail_first: int | None = Field(None, ge=1, description="The action's first N calls fail.")
    until: str | None = Field(None, description="Every call fails while this artifact path is missing (a cause to fix).")
    error: str = Field(min_length=1, description="The error message the failing call returns to the agent.")

    @model_validator(mode="after")
    def _has_a_trigger(self) -> Fault:
        if self.fail_first is None and self.until is None:
            raise ValueError("a fault needs fail_first, until, or both")
        return self

    def fails(self, call: int, artifacts: Mapping[str, Any]) -> bool:
        """Whether the ``call``-th call (from 1) fails, given the store."""
        if self.fail_first is not None and call <= self.fail_first:
            return True
        return self.until is not None and lookup(dict(artifacts), self.until) is MISSING


class ActionSpec(_Strict):
    """An action the agent may propose, what it does to the virtual store, and what guards it."""

    name: str = Field(pattern=NAME_PATTERN, description="Action name, unique in the scenario; what the model proposes.")
    description: str = Field(min_length=1, description="What the action does, as the agent reads it.")
    kind: Literal["task", "wait", "finish"] = Field(
        "task", description="task: does something; wait: records a wait for a gate; finish: ends the run (exactly one).")
    effect: Literal["none", "read", "write", "irreversible"] = Field(
        "none", description="task only: read has no side effect; write and irreversible are side effects.")
    args: dict[str, Any] = Field(default_factory=lambda: dict(EMPTY_ARGS),
                                 description="JSON Schema (type object) the arguments must satisfy; the gateway checks it.")
    gate: str | None = Field(None, description="task: needs this gate approved; wait: waits for it")
    writes: str | None = Field(None, description="artifact the action stores its args under")
    reads: str | None = Field(None, description="artifact the action returns")
    returns: Any = Field(None, description="constant observation when nothing is read")
    requires: tuple[str, ...] = Field((), description="artifacts that must exist first")
    invalidates: tuple[str, ...] = Field((), description="artifacts this action makes stale")
    roles: tuple[str, ...] | None = Field(None, description="roles allowed to call it; none: any")
    fault: Fault | None = Field(None, description="Makes the action fail like a flaky tool.")
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

    name: str = Field(pattern=NAME_PATTERN, description="Gate name, unique in the scenario.")
    description: str = Field(min_length=1, description="Who approves what, in words.")
    approved: bool = Field(False, description="approved before the run starts")
    applies_when: Condition | None = Field(
        None, description="The gate guards its actions only while this holds (a threshold); none: always.")


class InitialStore(_Strict):
    """What the in-memory virtual store holds when a run starts."""

    artifacts: dict[str, Any] = Field(default_factory=dict, description="Artifact name -> its content.")


class Branch(_Strict):
    """One conditional transition: the first branch whose condition holds is taken."""

    when: Condition | None = Field(None, description="Condition on the store; none: always (a default branch).")
    goto: str = Field(description="The node to go to.")


class FailureContract(_Strict):
    """What a workflow node does when its action fails: retry, then fallback or return an error."""

    retry: int = Field(0, ge=0, description="Times the node is re-run after a failure before giving up.")
    fallback: str | None = Field(None, description="Node to go to once the retries are spent.")
    return_error: str | None = Field(None, description="Error code the run ends with when there is no fallback.")


class Node(_Strict):
    """A workflow node. Code fixes the transitions; the model only fills in ``model_step`` and ``agent`` nodes."""

    id: str = Field(pattern=NAME_PATTERN, description="Node name, unique in the workflow.")
    type: Literal["model_step", "action", "approval", "validator", "agent", "end"] = Field(
        description="model_step: the model fills in the action's args; action: fixed args; approval: suspends "
                    "unless the gate is approved; validator: checks the store; agent: inner ReAct over tools; end.")
    action: str | None = Field(None, description="model_step / action: the task action the node runs.")
    args: dict[str, Any] = Field(default_factory=dict, description="action node: the fixed arguments.")
    gate: str | None = Field(None, description="approval node: the gate it waits for.")
    check: Condition | None = Field(None, description="validator node: what must hold to pass.")
    tools: tuple[str, ...] = Field((), description="agent node: the only actions its inner loop may call.")
    max_steps: int = Field(5, ge=1, description="agent node: inner steps before it gives up.")
    until: Condition | None = Field(None, description="agent node: readiness contract")
    next: str | None = Field(None, description="Node after success when no branch applies.")
    branches: tuple[Branch, ...] = Field((), description="Conditional transitions after success, first match wins.")
    on_failure: FailureContract | None = Field(None, description="Failure contract; none: the run ends with an error.")
    status: Literal["finished", "error"] = Field("finished", description="end node: how the run ends there.")


class Workflow(_Strict):
    """The state machine workflow-family modes walk."""

    start: str = Field(description="The first node.")
    nodes: tuple[Node, ...] = Field(min_length=1, description="Every node of the graph.")


class ReferenceStep(_Strict):
    """One step of the oracle's correct sequence: an action name, or the action with its arguments."""

    action: str = Field(description="The action a correct run takes.")
    args: dict[str, Any] | None = Field(None, description="Its arguments; none: example values from its schema.")

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"action": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: GetJsonSchemaHandler) -> dict[str, Any]:
        # The YAML may give a bare action name for a step without explicit arguments.
        as_object = handler.resolve_ref_schema(handler(core))
        described = {key: as_object.pop(key) for key in ("title", "description") if key in as_object}
        return {**described, "anyOf": [{"type": "string", "description": "an action name"}, dict(as_object)]}


class OrderCheck(_Strict):
    """``before`` must have committed before ``after`` commits."""

    before: str = Field(description="Action that must take effect first.")
    after: str = Field(description="Action that may take effect only after it.")


class GroundedCheck(_Strict):
    """Each value at ``arg`` in the calls of ``action`` must come from what tools returned earlier in the run."""

    type: Literal["grounded"] = Field(description="Cited values must appear in earlier tool results.")
    action: str = Field(description="The action whose arguments are checked.")
    arg: str = Field(pattern=PATH_PATTERN, description="Path into its args: 'plate', 'cited_fields[]', 'claims[].doc_id'.")
    match: Literal["field_names", "field_values"] = Field(
        description="field_names: must be a key some result had; field_values: a value some result had under `field`.")
    field: str | None = Field(None, description="field_values: the result key whose values count (e.g. 'id').")
    sources: tuple[str, ...] = Field((), description="Actions whose results count; none: every action that took effect.")
    first: int | None = Field(None, ge=1, description="Only the first N distinct values returned count (e.g. top 3 documents).")


class PhraseCheck(_Strict):
    """The calls of ``action`` must not contain any of ``phrases`` (case-insensitive) in the checked text."""

    type: Literal["no_phrases"] = Field(description="Forbidden phrasing in the action's arguments.")
    action: str = Field(description="The action whose arguments are checked.")
    arg: str | None = Field(None, pattern=PATH_PATTERN, description="Path into its args; none: every string in the args.")
    phrases: tuple[str, ...] = Field(min_length=1, description="Phrases a correct run never writes there.")


OracleCheck = Annotated[GroundedCheck | PhraseCheck, Field(discriminator="type")]


class Oracle(_Strict):
    """What a correct run does; the runtime's outcome is checked against it."""

    expected_stop: str = Field(description="a gate name, or 'finished'")
    reference_path: tuple[ReferenceStep, ...] = Field(
        min_length=1, description="The correct sequence; a wait step for an unapproved gate is where it stops.")
    forbidden: tuple[str, ...] = Field((), description="Actions a correct run never takes effect with.")
    required_artifacts: tuple[str, ...] = Field((), description="Artifacts the store must hold at the end.")
    order: tuple[OrderCheck, ...] = Field((), description="Pairs of actions that must take effect in this order.")
    checks: tuple[OracleCheck, ...] = Field((), description="Content checks on the arguments of committed actions.")


class Limits(_Strict):
    """Bounds the runtime enforces on every mode."""

    max_steps: int = Field(10, ge=1, le=MAX_STEPS, description=f"Actions a run may carry out (at most {MAX_STEPS}).")
    max_transitions: int = Field(50, ge=1, le=MAX_TRANSITIONS,
                                 description=f"Workflow node transitions before the run is cut (at most {MAX_TRANSITIONS}).")

    @model_validator(mode="before")
    @classmethod
    def _mode_parameters_moved(cls, value: Any) -> Any:
        for name, owner in (("max_plan_revisions", "plan_validated"), ("max_repeats", "react_guarded")):
            if isinstance(value, dict) and name in value:
                raise ValueError(f"'{name}' is no longer a scenario limit: it is {owner}'s own parameter")
        return value


Verdict = Literal["passes", "blocked", "violates", "fails"]


class Expectation(_Strict):
    """What a scripted policy's run in one mode must come to, under each gateway policy."""

    enforce: Verdict | None = Field(None, description="Verdict with the gateway blocking broken rules.")
    audit: Verdict | None = Field(None, description="Verdict with the gateway committing and recording them.")


class Sanity(_Strict):
    """Declared results of the sanity check (``bench check-scenarios``): how the eager policy fares per mode.

    Verdicts: passes (oracle passed, nothing refused); blocked (the runtime refused or stopped something and
    nothing wrong took effect); violates (a broken rule took effect); fails (none of those, oracle failed).
    """

    eager: dict[str, Expectation] = Field(default_factory=dict, description="Mode name -> verdicts of scripted:eager.")


class Scenario(_Strict):
    """A task with conflicting rules, the actions and gates around it, and its oracle."""

    id: str = Field(pattern=NAME_PATTERN, description="Scenario name; must match the file name.")
    title: str = Field(min_length=1, description="One line for tables.")
    source: str = Field(min_length=1, description="The source story (seed article) it stages.")
    task: str = Field(min_length=1, description="The task prompt the agent is given.")
    agent_role: str = Field("agent", description="The agent's role, checked against each action's roles.")
    rules: tuple[Rule, ...] = Field(min_length=1, description="The rules, at least one obeyed by a correct run.")
    actions: tuple[ActionSpec, ...] = Field(min_length=1, description="Every action, exactly one of kind finish.")
    gates: tuple[Gate, ...] = Field((), description="Human approval points.")
    store: InitialStore = Field(default_factory=InitialStore, description="The virtual store at the start.")
    workflow: Workflow = Field(description="The graph workflow-family modes walk.")
    oracle: Oracle = Field(description="What a correct run does.")
    limits: Limits = Field(default_factory=Limits, description="Step and revision bounds.")
    sanity: Sanity = Field(default_factory=Sanity, description="Declared sanity-check results.")

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
    """Loads and validates one scenario file; any problem raises ``ScenarioError(file, field)`` on one line."""
    shown = _display_path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _error(shown, "", f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _error(shown, where, f"YAML syntax error: {problem}") from None
    if not isinstance(raw, dict):
        raise _error(shown, "", "must be a YAML mapping at the top level")
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _error(shown, _field_path(first["loc"], raw), _clean(first["msg"])) from None
    problem = _check_references(scenario)
    if problem:
        raise _error(shown, *problem)
    if scenario.id != path.stem:
        raise _error(shown, "id", f"'{scenario.id}' must match the file name '{path.stem}'")
    return scenario


def scenario_json_schema() -> dict[str, Any]:
    """The scenario format as a JSON Schema, generated from the models (shipped in scenarios/schema/)."""
    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def scenario_schema_text() -> str:
    """The JSON Schema as the text of the shipped file (``bench schema`` prints it)."""
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


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


def _field_path(loc: tuple[Any, ...], raw: Any) -> str:
    """A pydantic error location as ``actions[2].gate``, walking the raw data to drop union tags."""
    parts: list[str] = []
    node = raw
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
            node = node[item] if isinstance(node, list) and item < len(node) else None
            continue
        key = str(item)
        if key.startswith("function-"):
            continue
        if isinstance(node, dict) and key not in node and node.get("type") == key:
            continue  # the tag of a discriminated union (an oracle check's type), not a field
        parts.append(("." if parts else "") + key)
        node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _clean(message: str) -> str:
    # YAML has lists, not tuples: say what the author wrote.
    return message.removeprefix("Value error, ").replace("a valid tuple", "a valid list")


def _error(shown: str, field: str, message: str) -> ScenarioError:
    # One line whatever the source of the message (YAML marks and JSON Schema messages can span lines).
    return ScenarioError(shown, field, " ".join(message.split()))


Problem = tuple[str, str] | None  # (field path, message) of the first problem found


def _check_references(s: Scenario) -> Problem:
    """Cross-field checks pydantic cannot express; returns (field, message) of the first problem."""
    return _check_names(s) or _check_actions(s) or _check_workflow(s) or _check_oracle(s)


def _check_names(s: Scenario) -> Problem:
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
    return None


def _artifacts(s: Scenario) -> set[str]:
    """Every artifact a run can ever hold: the initial store's and those actions write."""
    return set(s.store.artifacts) | {a.writes for a in s.actions if a.writes is not None}


def _check_artifact(s: Scenario, where: str, path: str) -> Problem:
    if not valid_path(path):
        return where, f"'{path}' is not a path (keys joined by dots, e.g. order.amount)"
    known = _artifacts(s)
    if head(path) not in known:
        return where, f"'{head(path)}' is never in the store: no action writes it and the initial store lacks it " \
                      f"(artifacts: {', '.join(sorted(known)) or 'none'})"
    return None


def _check_condition(s: Scenario, where: str, condition: Condition | None) -> Problem:
    for field, path in condition.paths() if condition is not None else []:
        where_field = f"{where}.{field}" if field in ("exists", "missing") else f"{where}.{field}.{path}"
        problem = _check_artifact(s, where_field, path)
        if problem:
            return problem
    return None


def _check_actions(s: Scenario) -> Problem:
    gates = s.gate_names
    for i, a in enumerate(s.actions):
        if a.gate is not None and a.gate not in gates:
            return f"actions[{i}].gate", _unknown("gate", a.gate, gates)
        if a.kind == "wait" and a.gate is None:
            return f"actions[{i}].gate", "a wait action must name the gate it waits for"
        if a.kind == "task" and a.effect == "none":
            return f"actions[{i}].effect", "a task action needs an effect: read, write or irreversible"
        # The gateway stores, reads and drops whole artifacts; only preconditions may look inside one.
        whole = [("writes", a.writes), ("reads", a.reads)] + [(f"invalidates[{j}]", k) for j, k in enumerate(a.invalidates)]
        for field, key in whole:
            if key is not None and not re.fullmatch(ARTIFACT_PATTERN, key):
                return f"actions[{i}].{field}", f"'{key}' must be an artifact name (letters, digits, _ and -), not a path"
        paths = [(f"requires[{j}]", key) for j, key in enumerate(a.requires)]
        paths += [(f"invalidates[{j}]", key) for j, key in enumerate(a.invalidates)]
        paths += [("reads", a.reads)] if a.reads is not None else []
        paths += [("fault.until", a.fault.until)] if a.fault is not None and a.fault.until is not None else []
        for field, path in paths:
            problem = _check_artifact(s, f"actions[{i}].{field}", path)
            if problem:
                return problem
    used = {a.gate for a in s.actions} | {n.gate for n in s.workflow.nodes if n.type == "approval"}
    for i, g in enumerate(s.gates):
        if g.name not in used:
            return f"gates[{i}].name", f"gate '{g.name}' guards no action and no approval node waits for it"
        problem = _check_condition(s, f"gates[{i}].applies_when", g.applies_when)
        if problem:
            return problem
    return None


def _check_workflow(s: Scenario) -> Problem:
    actions, gates, nodes = s.action_map, s.gate_names, s.node_map
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
            for j, tool in enumerate(n.tools):
                if tool not in actions:
                    return f"{where}.tools[{j}]", _unknown("action", tool, actions)
        targets = [("next", n.next)] + [(f"branches[{j}].goto", b.goto) for j, b in enumerate(n.branches)]
        if n.on_failure is not None:
            targets.append(("on_failure.fallback", n.on_failure.fallback))
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
    return None


def _check_oracle(s: Scenario) -> Problem:
    actions, gates, o = s.action_map, s.gate_names, s.oracle
    if o.expected_stop != "finished" and o.expected_stop not in gates:
        return "oracle.expected_stop", _unknown("gate", o.expected_stop, gates | {"finished"})
    for j, step in enumerate(o.reference_path):
        where = f"oracle.reference_path[{j}]"
        if step.action not in actions:
            return where, _unknown("action", step.action, actions)
        if actions[step.action].kind == "finish" and j != len(o.reference_path) - 1:
            return where, "finish must be the last step of the reference path"
        if step.args is not None:
            error = jsonschema.exceptions.best_match(
                jsonschema.Draft202012Validator(actions[step.action].args).iter_errors(step.args))
            if error is not None:
                inner = "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)
                return f"{where}.args{inner}", error.message
    for j, name in enumerate(o.forbidden):
        if name not in actions:
            return f"oracle.forbidden[{j}]", _unknown("action", name, actions)
    for j, key in enumerate(o.required_artifacts):
        problem = _check_artifact(s, f"oracle.required_artifacts[{j}]", key)
        if problem:
            return problem
    for j, check in enumerate(o.order):
        for side in ("before", "after"):
            if getattr(check, side) not in actions:
                return f"oracle.order[{j}].{side}", _unknown("action", getattr(check, side), actions)
    for j, content in enumerate(o.checks):
        where = f"oracle.checks[{j}]"
        spec = actions.get(content.action)
        if spec is None or spec.kind != "task":
            return f"{where}.action", _unknown("task action", content.action, [a.name for a in s.actions if a.kind == "task"])
        declared = spec.args.get("properties", {})
        if content.arg is not None and declared and head(content.arg) not in declared:
            return f"{where}.arg", f"'{head(content.arg)}' is not an argument of '{spec.name}' " \
                                   f"(arguments: {', '.join(declared)})"
        if isinstance(content, GroundedCheck):
            if content.match == "field_values" and content.field is None:
                return f"{where}.field", "match: field_values needs the field whose values count"
            for k, source in enumerate(content.sources):
                if source not in actions:
                    return f"{where}.sources[{k}]", _unknown("action", source, actions)
    return None


def _unknown(what: str, name: str, known: Any) -> str:
    return f"unknown {what} '{name}' (known: {', '.join(sorted(known)) or 'none'})"
