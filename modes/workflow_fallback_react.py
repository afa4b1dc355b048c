"""Fallback ReAct (seed 003's mode 6): the workflow runs its main path; only on a node's declared failure does a
ReAct loop take over, limited to that node's fallback tools and step budget.

A node's ``on_failure.react`` is its fallback contract: once its retries are spent, a sub-agent may call only the
listed tools (the gateway refuses any other) for at most ``max_steps``; if code then finds its ``until`` holding
(the failure's cause resolved), control returns to the workflow, which runs the failed node again; otherwise, or if
the node fails again, the rest of ``on_failure`` applies (the fallback node, or the error the run ends with).
Nowhere else does the model choose an action.
"""

from __future__ import annotations

from modes.base import mode
from modes.workflow import WorkflowMode


@mode("workflow_fallback_react")
class WorkflowFallbackReact(WorkflowMode):
    summary = "The workflow's main path; on a node's declared failure, a ReAct loop limited to that node's tools."
    decides = "the workflow's code; on a declared failure, the model within the node's fallback tools"
    visible = "the current node's action; in a fallback loop, only its tools"
    stopper = "the state machine: a return at an approval node; the fallback loop's budget and code's check"
    intervention = "the workflow's main path; ReAct only on a preset failure path; approval nodes suspend"
    autonomy = "decides only inside a failed node's fallback loop"
    spectrum = 6
    published_p95_ms = 1100.0
    published_error_rate = 0.031
    story = "medical report reading: rules, help when ambiguous (medical_report)"
    typical_story = "medical_report"
    falls_back = True
