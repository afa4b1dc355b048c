"""The mode registry and the contract every control mode fulfils."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from harness.core import ModeResult, Registry, RunContext, UserInputError

# Names a mode had before: refused with one line naming the mode that replaced it (a recording under the old name
# was made with the old prompts, so running the new mode under it would mislead).
RENAMED = {"react_guarded": "react_guardrails"}


class Mode(ABC):
    """A control mode: asks the model for proposals and decides, in code, which one is taken.

    The class attributes describe the mode for the report tables (seed 000's and seed 003's).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    decides: ClassVar[str] = ""  # who decides each step
    visible: ClassVar[str] = ""  # actions the model can see
    stopper: ClassVar[str] = ""  # who can really stop a run
    intervention: ClassVar[str] = ""  # where a human can intervene
    autonomy: ClassVar[str] = ""  # what the model is free to choose
    # Position on the control spectrum: 1..7 are seed 003's seven modes in its order (1 = code decides everything);
    # 8.. are bench's extra plan modes, after the seven, the most controlled first (docs/modes.md).
    spectrum: ClassVar[int] = 0
    # Seed 003's published figures for its position (P95 latency in ms, error rate as a fraction of requests), shown
    # next to bench's measured ones and labelled as the seed's; None for a mode the seed's table does not list.
    published_p95_ms: ClassVar[float | None] = None
    published_error_rate: ClassVar[float | None] = None
    story: ClassVar[str | None] = None  # seed 003's typical story for this position (bench's scenario in brackets)
    typical_story: ClassVar[str | None] = None  # the id of the scenario that stages that story, if there is one
    # Whether the mode's own code stops before every unapproved gate (the runtime, not the gateway alone):
    # under an auditing gateway such a mode still commits nothing gated without its approval.
    hard_gate: ClassVar[bool] = False
    # Whether the mode's own code does nothing to keep to a gate (it runs what the model proposes or plans; only the
    # gateway blocks): under an auditing gateway an eager model's gated action commits early. Never with hard_gate.
    naive: ClassVar[bool] = False
    # The mode's own review points (gate names no story may take, ``MODE_REVIEW_POINTS``) where its code stops a run
    # besides the story's gates: ``bench resume`` counts them among the stops a bare decision could land on.
    review_points: ClassVar[frozenset[str]] = frozenset()
    # The mode's own tunables (class attributes named here), traced in every run_start event.
    PARAMETERS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        return {name: getattr(cls, name) for name in cls.PARAMETERS}

    @abstractmethod
    async def run(self, ctx: RunContext) -> ModeResult:
        """Runs one scenario to a stop; only returns, breaks and transitions are control."""


MODES: Registry[type[Mode]] = Registry("mode", named=True, summary=lambda cls: cls.summary)
mode = MODES.register  # ``@mode("react")`` registers a mode class under its name


def get_mode(name: str) -> Mode:
    """An instance of the named mode; unknown names fail with the known ones."""
    if name in RENAMED and name not in MODES:
        raise UserInputError(
            f"mode '{name}' is now '{RENAMED[name]}' (ReAct with guardrails: retry budget per tool, call timeout, "
            f"output filter); use --mode {RENAMED[name]}"
        )
    return MODES[name]()


# Names that select a group of modes: ``all`` is bench's own control modes (the control spectrum: what the committed
# recordings and the main job run), ``runtimes`` every runtime adapter (a mode run by a real agent framework).
GROUPS = ("all", "runtimes")


def is_runtime(cls: type[Mode]) -> bool:
    """Whether a mode is a runtime adapter: its agent is built and run by a real agent framework."""
    from modes.runtimes.base import RuntimeMode  # the adapters' contract builds on this module

    return issubclass(cls, RuntimeMode)


def select_modes(names: list[str]) -> list[str]:
    """Resolves mode names and groups (``GROUPS``; no names is ``all``), each group in control-spectrum order; a
    mode named twice runs once. Unknown names fail with the known ones."""
    selected: list[str] = []
    for name in names or ["all"]:
        if name in GROUPS:
            group = sorted(
                (n for n, cls in MODES.items() if is_runtime(cls) == (name == "runtimes")),
                key=lambda n: (MODES[n].spectrum, n),
            )
            if not group:
                raise UserInputError(f"--mode {name}: no mode of that group is registered")
        else:
            get_mode(name)
            group = [name]
        selected += [n for n in group if n not in selected]
    return selected
