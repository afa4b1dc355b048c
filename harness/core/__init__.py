"""What a mode sees, behind one door: the run context, the gateway and its store, approvals, the outcome judge and
the oracle's checks, the model port, the clock and the stop signal, plus the scenario types a mode reads.

A mode imports ``harness.core`` and nothing else of the harness (the import-layers contract checks it).
"""

from harness.core.approvals import Gatekeeper, NobodyYet, RejectedByHuman, Suspended
from harness.core.audit_hash import audit_hash
from harness.core.clock import Clock, FakeClock, SystemClock
from harness.core.context import RunContext
from harness.core.gateway import ActionRecord, Gateway
from harness.core.model_port import Model, ModelReply, ModelRequest, ModelSource, PolicyView, RouteChoice
from harness.core.oracle_checks import DONE
from harness.core.outcome import ModeResult, judge
from harness.core.signals import RunInterrupted, StopRequest
from harness.core.step_deadline import StepTimedOut
from harness.core.store import VirtualStore
from harness.errors import AgentError, ModelError, UnknownNameError, UserInputError
from harness.records.checkpoint import HumanDecision

# crash_point(): an adapter calls it right after its framework's own durable write (a checkpointer's, a saved run
# state), so the crash sweep kills there too (BENCH_KILL_AFTER_WRITES); outside tests it does nothing
from harness.records.write_faults import wrote as crash_point
from harness.registry import Registry
from harness.scenario.json_schema import check_for
from harness.scenario.model import PLAN_REVIEW, ActionSpec, AnswerPolicy, Condition, FailureContract, Node, Scenario
from harness.scenario.paths import MISSING, collect, field_names, field_values

__all__ = [
    "DONE",
    "MISSING",
    "PLAN_REVIEW",
    "ActionRecord",
    "ActionSpec",
    "AgentError",
    "AnswerPolicy",
    "Clock",
    "Condition",
    "FailureContract",
    "FakeClock",
    "Gatekeeper",
    "Gateway",
    "HumanDecision",
    "ModeResult",
    "Model",
    "ModelError",
    "ModelReply",
    "ModelRequest",
    "ModelSource",
    "NobodyYet",
    "Node",
    "PolicyView",
    "Registry",
    "RejectedByHuman",
    "RouteChoice",
    "RunContext",
    "RunInterrupted",
    "Scenario",
    "StepTimedOut",
    "StopRequest",
    "Suspended",
    "SystemClock",
    "UnknownNameError",
    "UserInputError",
    "VirtualStore",
    "audit_hash",
    "check_for",
    "collect",
    "crash_point",
    "field_names",
    "field_values",
    "judge",
]
