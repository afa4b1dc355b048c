"""The public faces' exports are pinned: adding or dropping a name from ``__all__`` is a decision made here too,
never an accident of an import; and every exported name resolves."""

from __future__ import annotations

import importlib

import pytest

EXPORTS = {
    "harness": ["RunResult", "RunSpec", "load_traces", "replay", "resume", "run"],
    "harness.core": [
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
    ],
    "modes": ["MODES", "RENAMED", "Mode", "get_mode", "mode", "select_modes"],
    "reports": ["Traces", "load_traces"],
}


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_a_face_exports_exactly_its_pinned_names(package):
    exported = importlib.import_module(package).__all__
    assert sorted(exported) == sorted(EXPORTS[package]), (
        f"{package}.__all__ changed: added {sorted(set(exported) - set(EXPORTS[package]))}, "
        f"dropped {sorted(set(EXPORTS[package]) - set(exported))}; update tests/harness/test_exported_members.py "
        "if the change is meant"
    )
    assert len(set(exported)) == len(exported), f"{package}.__all__ names one member twice"


@pytest.mark.parametrize("package", sorted(EXPORTS))
def test_every_exported_name_resolves(package):
    face = importlib.import_module(package)
    unresolved = [name for name in face.__all__ if getattr(face, name, None) is None]
    assert not unresolved, f"{package} exports names it does not have: {unresolved}"
