"""bench's exit codes, and the count that decides whether a matrix that ended measured anything at all.

A run ended by an infrastructure error (``harness.errors.INFRASTRUCTURE_ERRORS``: the network, a
timeout, an HTTP error, a replay miss, a bug) is not judged. A matrix in which every run ended so
measured nothing, whatever the table shows: it exits ``INFRASTRUCTURE`` with one line saying so
(``LLM_API_URL=http://`` used to exit 0). Past ``WARN_SHARE`` of the runs, a one-line warning. A run whose own
agent's code raised is judged (``agent_error``) and makes the matrix exit ``AGENT_FAILED``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import INFRASTRUCTURE_ERRORS

OK = 0
FAILED = 1  # replay drift, a compare regression, a sanity mismatch, a probe nobody answered
BAD_INPUT = 2  # a user error: one line naming the flag, file or field
INFRASTRUCTURE = 3  # every run of the matrix ended in an infrastructure error: nothing was judged
AGENT_FAILED = 4  # a run of a user's own agent ended in an error of the agent's own code (agent_error): judged
# 128 + the signal: 130 after SIGINT (Ctrl-C), 143 after SIGTERM (harness.core.signals.StopRequest.exit_code)

WARN_SHARE = 0.5  # more than half the runs not judged: the numbers that remain say little


@dataclass
class RunEnds:
    """How many runs of a matrix ended, and how many of those in an infrastructure error, by kind."""

    runs: int = 0
    infrastructure: Counter[str] = field(default_factory=Counter)
    agent_errors: int = 0  # runs judged agent_error: the user's own agent failed

    def add(self, status: str, stop_verdict: str, errors: Mapping[str, Any]) -> None:
        """One finished run (an interrupted run is not finished: the signal decides the exit code)."""
        if status == "interrupted":
            return
        self.runs += 1
        if stop_verdict == "agent_error":
            self.agent_errors += 1
        if status == "error" and stop_verdict == "infrastructure":
            kinds = sorted(kind for kind in errors if kind in INFRASTRUCTURE_ERRORS)
            self.infrastructure[kinds[0] if kinds else "internal"] += 1

    def add_outcome(self, outcome: Any) -> None:
        """A ``RunOutcome``, or its JSON as a trace line holds it."""
        if isinstance(outcome, Mapping):
            errors = outcome.get("errors")
            self.add(
                str(outcome.get("status")),
                str(outcome.get("stop_verdict")),
                errors if isinstance(errors, Mapping) else {},
            )
        else:
            self.add(outcome.status, outcome.stop_verdict, outcome.errors)

    @property
    def not_judged(self) -> int:
        return sum(self.infrastructure.values())

    def verdict(self) -> tuple[int, str] | None:
        """The exit code and its one line when infrastructure errors or the agent's own errors decide it; a warning
        line has code 0."""
        lost = self.not_judged
        if self.runs and self.agent_errors and lost < self.runs:
            return AGENT_FAILED, (
                f"error: {self.agent_errors} of {self.runs} runs ended in an error of the agent's own code "
                "(agent_error, judged and counted in every rate; bench show has each)"
            )
        if not self.runs or not lost:
            return None
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(self.infrastructure.items()))
        if lost == self.runs:
            return INFRASTRUCTURE, (
                f"error: all {self.runs} runs ended in an infrastructure error ({kinds}); nothing was judged "
                "(check the endpoint, the network or the recording; the trace has each error)"
            )
        if lost / self.runs > WARN_SHARE:
            return OK, (
                f"warning: {lost} of {self.runs} runs ({lost / self.runs:.0%}) ended in an infrastructure error "
                f"({kinds}); they are not judged"
            )
        return None
