"""The scenario format: the typed model of a story file, its conditions and field paths, the JSON-Schema checks of
arguments, the load-time cross-checks, and the safe loading that names file and field on any problem."""

from harness.scenario.load import load_all, load_scenario, scenario_json_schema, scenario_schema_text, select_scenarios
from harness.scenario.model import (
    PLAN_REVIEW,
    ActionSpec,
    AnswerPolicy,
    Condition,
    Gate,
    Limits,
    Node,
    Oracle,
    ReferenceStep,
    Scenario,
    StopExpectation,
    Workflow,
)

__all__ = [
    "PLAN_REVIEW",
    "ActionSpec",
    "AnswerPolicy",
    "Condition",
    "Gate",
    "Limits",
    "Node",
    "Oracle",
    "ReferenceStep",
    "Scenario",
    "StopExpectation",
    "Workflow",
    "load_all",
    "load_scenario",
    "scenario_json_schema",
    "scenario_schema_text",
    "select_scenarios",
]
