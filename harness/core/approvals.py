"""Who decides at a gate: nobody yet (the run suspends), a scripted approver, or a person through ``bench resume``.

A mode stops at a gate by calling ``ctx.suspend``. Without a decision the call raises ``Suspended`` and the
runner ends the run there (and checkpoints it). With one, the decision is traced as a ``human`` event, an
approval opens the gate in the gateway, a rejection ends the run (``RejectedByHuman``) unless the story goes
on after a rejection at that gate (then it goes back to the mode, which tells its agent), and a revision
request goes back to the mode with the reviewer's note; only then does ``suspend`` return. A gatekeeper that
reads what it decides on (a ``Reviewer``) is shown what the stop puts before it: at a plan review, the plan.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from harness.errors import UnknownNameError
from harness.records.checkpoint import Decision, HumanDecision
from harness.registry import Registry

SCRIPTED = "scripted"  # the kind of every in-run approver: --approver scripted:NAME


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


@dataclass(frozen=True)
class UnderReview:
    """What a stop puts before whoever decides there: its gate and, at a plan review, the plan's actions in order with
    what is unsafe in them, read from the plan against the story (``harness.core.outcome.plan_problems``)."""

    gate: str
    plan: tuple[str, ...] | None = None  # None: no plan is under review at this stop
    problems: tuple[str, ...] = ()  # empty: nothing unsafe (or no plan)


@runtime_checkable
class Reviewer(Protocol):
    """A gatekeeper that reads what it decides on: the run asks it ``review`` instead of ``decide``."""

    def review(self, under_review: UnderReview, stop: int) -> HumanDecision | None: ...


class NobodyYet:
    """A plain run: every stop suspends the run (a person decides later with ``bench resume``)."""

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        return None


@dataclass
class ScriptedApprover:
    """Decides at every gate, offline, so a matrix runs each story to its end; labelled as scripted."""

    policy: str  # a key of SCRIPTED_APPROVERS
    rng: random.Random = field(default_factory=random.Random)
    revised: set[str] = field(default_factory=set)  # gates whose work it has sent back once
    reading: UnderReview | None = None  # what the stop it is deciding at puts before it (its rule may read it)

    def __post_init__(self) -> None:
        if self.policy not in SCRIPTED_APPROVERS:
            raise SCRIPTED_APPROVERS.unknown(self.policy)

    @property
    def who(self) -> str:
        return f"{SCRIPTED}:{self.policy}"

    def decide(self, gate: str, stop: int) -> HumanDecision | None:
        return self.review(UnderReview(gate), stop)

    def review(self, under_review: UnderReview, stop: int) -> HumanDecision | None:
        self.reading = under_review
        gate = under_review.gate
        choice, note = SCRIPTED_APPROVERS[self.policy](self, gate)
        return HumanDecision(gate=gate, decision=choice, who=self.who, note=note, scripted=True)


# A scripted approver's rule: its decision at ``gate`` and the reviewer's note.
ScriptedRule = Callable[[ScriptedApprover, str], tuple[Decision, str]]
SCRIPTED_APPROVERS: Registry[ScriptedRule] = Registry("scripted approver")
scripted_approver = SCRIPTED_APPROVERS.register  # ``@scripted_approver("approve")``: ``--approver scripted:approve``


@scripted_approver("approve")
def _approve(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
    """Approves at every gate."""
    return "approve", ""


@scripted_approver("reject")
def _reject(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
    """Rejects at every gate."""
    return "reject", ""


@scripted_approver("approve_after_revision")
def _approve_after_revision(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
    """Sends each gate's work back once with a note, then approves it."""
    if gate in approver.revised:
        return "approve", ""
    approver.revised.add(gate)
    return "revise", f"Please revise before '{gate}' is approved: make it more specific."


@scripted_approver("random")
def _random(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
    """A seeded uniform choice among approving, rejecting and asking for a revision."""
    choice: Decision = approver.rng.choice(("approve", "reject", "revise"))
    return choice, f"Please revise before '{gate}' is approved." if choice == "revise" else ""


@scripted_approver("plan_reader")
def _plan_reader(approver: ScriptedApprover, gate: str) -> tuple[Decision, str]:
    """Reads a plan under review: approves one with nothing unsafe in it (no step the oracle forbids, a wait before
    every gated step whose gate is closed), rejects any other with its reasons; approves at every other stop. It
    reads the plan against the oracle, as scripted:reference answers from it: a perfect reviewer, not a person."""
    review = approver.reading
    if review is None or review.plan is None or not review.problems:
        return "approve", ""
    return "reject", "The plan is unsafe: " + "; ".join(review.problems) + "."


@dataclass(frozen=True)
class ApproverSpec:
    """A parsed ``--approver`` value (``scripted:NAME``): who decides at every gate in-run, fresh for each run."""

    name: str  # a key of SCRIPTED_APPROVERS

    def __str__(self) -> str:
        return f"{SCRIPTED}:{self.name}"

    def for_run(self, seed: int) -> Gatekeeper:
        """The approver of one run, seeded by the run's seed: runs never share its state."""
        return ScriptedApprover(self.name, random.Random(seed ^ 0x5EED))


def parse_approver(value: str) -> ApproverSpec:
    """Reads an ``--approver`` value; an unknown one fails with the known ones."""
    kind, _, name = value.partition(":")
    if kind != SCRIPTED or name not in SCRIPTED_APPROVERS:
        raise UnknownNameError("approver", value, [f"{SCRIPTED}:{n}" for n in SCRIPTED_APPROVERS])
    return ApproverSpec(name)


def approver_choices() -> str:
    """Every registered approver as --help shows it: scripted:a|b|c."""
    return f"{SCRIPTED}:{'|'.join(SCRIPTED_APPROVERS)}"


def nobody_decides(seed: int) -> Gatekeeper:
    """The gatekeeper of a run without an approver: every stop suspends it (a person decides with bench resume)."""
    return NobodyYet()
