"""The one error hierarchy: what can go wrong in a run, and who gets to see it.

A user error (bad flag, bad file) stops the command with one line and exit code 2.
A model error ends that one run with ``status: error`` and the matrix goes on.
An action failing is not an exception at all: it goes back to the agent as an observation.

Every exception bench defines, by base, with its module (tests/harness/test_errors_tree.py keeps this whole)::

    Exception
    +-- BenchError (harness.errors): every error bench raises on purpose
    |   +-- UserInputError (harness.errors): one line on stderr, exit 2
    |   |   +-- UnknownNameError (harness.errors): a name nobody registered; the known ones listed
    |   |   +-- ScenarioError (harness.errors): a story file that does not load or validate
    |   |   +-- ResumeMismatch (harness.errors): a resumed run does not replay to its checkpoint's stop
    |   |   +-- WriteFailed (harness.errors): a file bench writes could not be written
    |   |   +-- EndpointUnusable (harness.models.dead_endpoint): not an OpenAI-compatible endpoint, exit 3
    |   |   +-- LocalModelUnavailable (harness.models.server): the [local] extra missing, or its server down
    |   |   +-- CheckpointMoved (harness.records.checkpoint): another decision got to the run first
    |   +-- ModelError (harness.errors): a model call failed after its retries; ends that run
    |   +-- AgentError (harness.errors): a user's own agent's code raised; the run is judged agent_error
    +-- Unreadable (harness.files): why a file cannot be read (caught by its readers, never raised out)
    +-- StepTimedOut (harness.core.step_deadline): a step's answer did not come within its timeout_ms
    +-- _Refused (harness.scenario.safe_yaml): a YAML construct the safe loader refuses (a ScenarioError outside)
    +-- Escaped (modes.runtimes.langchain_bridge): carries bench's BaseException out of LangChain's model call
    +-- StepLimitReached (modes.runtimes.base): an adapter's model asked past max_steps; nothing is called
    +-- AgentExited (modes.runtimes.process.run): an agent process exited non-zero or never started: agent_error
    BaseException (control flow no mode can swallow)
    +-- Suspended (harness.core.approvals): the run stops at a gate nobody has decided yet
    +-- RejectedByHuman (harness.core.approvals): a person (or scripted approver) rejected the run at a gate
    +-- RunInterrupted (harness.core.signals): a stop was requested (SIGINT, SIGTERM)
    +-- TraceDiverged (harness.matrix.commands.reconcile): a decision carried out again met a line it writes otherwise
"""

from __future__ import annotations

from typing import Any, Literal, get_args

ErrorKind = Literal[
    "network", "timeout", "http_4xx", "http_5xx", "parse", "schema", "replay_miss", "workflow", "internal", "agent"
]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)

# Failures of the plumbing around the model, not of the control mode or the model's choices.
# Reports keep runs ended by these out of the stop-correctness denominator.
INFRASTRUCTURE_ERRORS: frozenset[str] = frozenset(
    {"network", "timeout", "http_4xx", "http_5xx", "replay_miss", "internal"}
)


class BenchError(Exception):
    """Base of every error bench raises on purpose."""


class UserInputError(BenchError):
    """Bad input from the user: the CLI prints the message as one line and exits 2."""


class AgentError(BenchError):
    """The code of a user's own agent (``--mode FILE.py:FACTORY``) raised: the run ends judged ``agent_error`` (the
    agent failed), never as infrastructure."""

    def __init__(self, exc: BaseException):
        first = (str(exc).strip().splitlines() or [""])[0]
        super().__init__(f"{type(exc).__name__}: {first}"[:500])


class UnknownNameError(UserInputError):
    """A mode, scenario, model or policy name that is not registered."""

    def __init__(self, what: str, name: str, known: list[str] | tuple[str, ...]):
        self.what, self.name, self.known = what, name, tuple(known)
        super().__init__(f"unknown {what} '{name}'; known: {', '.join(sorted(known))}")


class ScenarioError(UserInputError):
    """A scenario file that does not load or does not validate; names file and field."""

    def __init__(self, path: str, field: str, message: str):
        self.path, self.field, self.message = path, field, message
        where = f"{path}: {field}: " if field else f"{path}: "
        super().__init__(where + message)


class ResumeMismatch(UserInputError):
    """A resumed run does not replay to the stop its checkpoint names; nothing of it is written."""


class ModelError(BenchError):
    """A model call that failed after its retries; ``kind`` classifies it for the trace."""

    def __init__(self, kind: ErrorKind, message: str, *, failed_attempts: tuple[Any, ...] = (), answer: object = None):
        # failed_attempts: the retried attempts before the last one (harness.core.model_port.Attempt)
        # answer: the model's unreadable reply (a ModelReply with no proposal) when it did answer,
        # so its tokens and latency are still traced
        self.kind, self.failed_attempts, self.answer = kind, failed_attempts, answer
        self.step: int | None = None  # the agent step whose request failed, set where the request is made
        super().__init__(message)


class WriteFailed(UserInputError):
    """A file bench writes could not be written (a full disk, a read-only folder): one line naming the file, exit 2.

    Raised by every writer (trace, manifest, checkpoint database, recording, report) with the path and the
    system's reason, so the CLI's one error boundary prints it and the manifest can say why the run stopped.
    """

    def __init__(self, path: object, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: cannot write: {reason}")

    def __reduce__(self) -> tuple[type[WriteFailed], tuple[str, str]]:
        return type(self), (self.path, self.reason)  # raised in a report's worker process, re-raised in the parent
