"""The in-memory virtual store runs write to: nothing real is ever written, sent or deployed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from harness.core.tool_cache import ToolCache
from harness.scenario.model import Condition, Scenario
from harness.scenario.paths import MISSING, lookup


@dataclass
class VirtualStore:
    """Artifacts, approvals, wait markers, call counts and cached results of one run. Only the gateway mutates it."""

    artifacts: dict[str, Any] = field(default_factory=dict)
    approvals: set[str] = field(default_factory=set)
    wait_markers: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    # gates that guard only while a condition holds (a threshold); checked on every approval question
    gate_conditions: dict[str, Condition] = field(default_factory=dict)
    cache: ToolCache = field(default_factory=ToolCache)  # results of the run's cached read-only calls

    @classmethod
    def for_scenario(cls, scenario: Scenario) -> VirtualStore:
        return cls(
            artifacts=copy.deepcopy(scenario.store.artifacts),
            approvals={gate.name for gate in scenario.gates if gate.approved},
            gate_conditions={gate.name: gate.applies_when for gate in scenario.gates if gate.applies_when is not None},
        )

    def has(self, path: str) -> bool:
        """Whether an artifact (or a path into one, ``order.amount``) holds a value."""
        return lookup(self.artifacts, path) is not MISSING

    def approved(self, gate: str) -> bool:
        """Whether the gate lets its actions through: approved, or its condition certainly does not hold now."""
        return self.gate_closed_because(gate) is None

    def gate_closed_because(self, gate: str) -> str | None:
        """None when the gate lets its actions through; else why not ("" when it simply is not approved).

        A condition that cannot be evaluated (a path reaching nothing, a non-number compared) keeps the gate
        closed: a typo or a malformed value never opens a gate.
        """
        if gate in self.approvals:
            return None
        condition = self.gate_conditions.get(gate)
        if condition is None:
            return ""
        truth = condition.evaluate(self.artifacts)
        if truth.value is False:
            return None
        return "" if truth.value else f"its condition cannot be evaluated ({truth.why}), so it applies"
