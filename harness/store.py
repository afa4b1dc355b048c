"""The in-memory virtual store runs write to: nothing real is ever written, sent or deployed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from harness.paths import MISSING, lookup
from harness.scenario import Condition, Scenario


@dataclass
class VirtualStore:
    """Artifacts, approvals, wait markers and call counts of one run. Only the gateway mutates it."""

    artifacts: dict[str, Any] = field(default_factory=dict)
    approvals: set[str] = field(default_factory=set)
    wait_markers: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    # gates that guard only while a condition holds (a threshold); checked on every approval question
    gate_conditions: dict[str, Condition] = field(default_factory=dict)

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
        """Whether the gate lets its actions through: approved, or its condition does not hold now."""
        if gate in self.approvals:
            return True
        condition = self.gate_conditions.get(gate)
        return condition is not None and not condition.holds(self.artifacts)
