"""Conditional-routing workflow (seed 003's mode 2): code's rules say which branches are open; the model picks one.

At a node whose branches are marked ``route_by: model`` the model is shown every branch and told which the rules
allow now (their ``when`` holds; a default branch always does), and picks one; code takes it only if it is allowed,
otherwise refuses it, traces the refusal and takes its own route (the first branch that holds). Everything else is
the hard-coded workflow's walk: transitions, approval nodes, parameter templates filled with their defaults.
"""

from __future__ import annotations

from modes.base import mode
from modes.workflow import WorkflowMode


@mode("workflow_routed")
class WorkflowRouted(WorkflowMode):
    summary = "The workflow's rules open some branches; the model picks one of those, code refuses any other."
    decides = "the workflow's code; the model picks among the branches its rules allow"
    visible = "the current node's action, or the node's branches and which are allowed"
    stopper = "the state machine: a return at an approval node"
    intervention = "the if/else rules: which branches each node allows; approval nodes suspend"
    autonomy = "picks a branch within the rules; fills in the current step"
    spectrum = 2
    published_p95_ms = 280.0
    published_error_rate = 0.003
    story = "support ticket first-level triage (support_ticket_triage)"
    typical_story = "support_ticket_triage"
    routes = "model"
