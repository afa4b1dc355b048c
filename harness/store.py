"""The in-memory virtual store runs write to: nothing real is ever written, sent or deployed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from harness.scenario import Scenario


@dataclass
class VirtualStore:
    """Artifacts, approvals, wait markers and call counts of one run. Only the gateway mutates it."""

    artifacts: dict[str, Any] = field(default_factory=dict)
    approvals: set[str] = field(default_factory=set)
    wait_markers: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)

    @classmethod
    def for_scenario(cls, scenario: Scenario) -> VirtualStore:
        return cls(
            artifacts=copy.deepcopy(scenario.store.artifacts),
            approvals={gate.name for gate in scenario.gates if gate.approved},
        )

    def has(self, key: str) -> bool:
        return key in self.artifacts

    def approved(self, gate: str) -> bool:
        return gate in self.approvals
