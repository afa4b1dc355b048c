"""Parameterised workflow (seed 003's mode 3): fixed steps from a template; the model fills in only its slots.

At a ``model_step`` that declares ``params`` the model is asked for those slots alone: the template's fixed
arguments are not its to write, what it writes outside the slots never reaches the action, and a value outside a
slot's constraints makes code refuse the answer (traced) and keep the template's defaults; so does an answer the
model port already refused against the slots' schema (a live model's ``schema`` error), which does not end the run.
It cannot add, skip or reorder steps: the walk is the hard-coded workflow's.
"""

from __future__ import annotations

from modes.base import mode
from modes.workflow import WorkflowMode


@mode("workflow_param")
class WorkflowParam(WorkflowMode):
    summary = "Fixed steps from a template; the model fills in only the template's slots, within their constraints."
    decides = "the workflow's code; the model only fills a template's slots"
    visible = "the current step's open parameters and their constraints"
    stopper = "the state machine: a return at an approval node"
    intervention = "the parameter template: fixed steps, constrained slots; approval nodes suspend"
    autonomy = "chooses parameter values; cannot add or skip steps"
    spectrum = 3
    published_p95_ms = 450.0
    published_error_rate = 0.012
    story = "e-commerce promotion copy (promotion_copy)"
    typical_story = "promotion_copy"
    fills_params = True
