"""Who decides at a gate: nobody yet (the run suspends), a scripted approver, or a person through ``bench resume``.

A mode stops at a gate by calling ``ctx.suspend``. Without a decision the call raises ``Suspended`` and the
runner ends the run there (and checkpoints it). With one, the decision is traced as a ``human`` event, an
approval opens the gate in the gateway, a rejection ends the run (``RejectedByHuman``) and a revision
request goes back to the mode with the reviewer's note; only then does ``suspend`` return.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from harness.errors import UnknownNameError
from harness.records.checkpoint import Decision, HumanDecision

SCRIPTED_APPROVERS = ("approve", "reject", "approve_after_revision", "random")


class Suspended(BaseException):
    """The run stops at ``gate``: nobody has decided yet. A BaseException, so that no mode can swallow it."""

    def __init__(self, gate: str):
        super().__init__(gate)
        self.gate = gate


class RejectedByHuman(BaseException):
    """A person (or a scripted approver) rejected the run at ``gate``: it ends there."""

    def __init__(self, gate: str):
        super().__init__(gate)
        self.gate = gate


class Gatekeeper(Protocol):
    """Gives the decision at the n-th stop of a run (``stop`` counts from 0), or None: nobody decides now."""

    def decide(self, gate: str, stop: int) -> HumanDecision | None: ...


class NobodyYet:
    """A plain run: every stop suspends the run (a person decides later with ``bench resume``)."""

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        return None


@dataclass
class ScriptedApprover:
    """Decides at every gate, offline, so a matrix runs each story to its end; labelled as scripted."""

    policy: str
    rng: random.Random = field(default_factory=random.Random)
    _revised: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.policy not in SCRIPTED_APPROVERS:
            raise UnknownNameError("scripted approver", self.policy, SCRIPTED_APPROVERS)

    @property
    def who(self) -> str:
        return f"scripted:{self.policy}"

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        choice: Decision
        note = ""
        if self.policy == "approve_after_revision" and gate not in self._revised:
            self._revised.add(gate)
            choice, note = "revise", f"Please revise before '{gate}' is approved: make it more specific."
        elif self.policy == "approve_after_revision":
            choice = "approve"
        elif self.policy == "random":
            choice = self.rng.choice(("approve", "reject", "revise"))
            note = f"Please revise before '{gate}' is approved." if choice == "revise" else ""
        else:
            choice = "approve" if self.policy == "approve" else "reject"
        return HumanDecision(gate=gate, decision=choice, who=self.who, note=note, scripted=True)


def approver_factory(spec: str | None) -> Callable[[int], Gatekeeper]:
    """``scripted:NAME`` -> a fresh approver per run, seeded by the run's seed; None -> nobody decides in-run."""
    if spec is None:
        return lambda seed: NobodyYet()
    kind, _, name = spec.partition(":")
    if kind != "scripted" or name not in SCRIPTED_APPROVERS:
        raise UnknownNameError("approver", spec, [f"scripted:{n}" for n in SCRIPTED_APPROVERS])
    return lambda seed: ScriptedApprover(name, random.Random(seed ^ 0x5EED))
