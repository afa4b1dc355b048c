"""PydanticAI as a mode: a ``pydantic_ai.Agent`` picks each tool; gated tools require approval (deferred tools).

PydanticAI decides the loop (ask the model, run the tool it called, ask again, stop at the output tool); bench's
model answers each turn through a ``FunctionModel`` and every tool body goes through the gateway
(modes/runtimes/pydantic_ai_agent.py). A tool whose gate is not open needs approval: PydanticAI ends the agent run
with ``DeferredToolRequests`` before the body runs; the adapter saves the message history in the run folder, records
the wait and suspends. It goes on by PydanticAI's own means: the saved history and ``DeferredToolResults``
(``ToolApproved``, or ``ToolDenied`` with the reviewer's note for a revision), in this process with an in-run
approver or in a new one through ``resume``. Whatever PydanticAI runs again on resume reaches the gateway again
under the same step and is counted (``repeated_side_effects``).
"""

from __future__ import annotations

from harness.core import HumanDecision, ModeResult, RunContext
from modes.base import mode
from modes.runtimes.base import RuntimeMode


@mode("pydantic_ai")
class PydanticAI(RuntimeMode):
    summary = "A PydanticAI agent: PydanticAI's agent loop; gated tools require approval (deferred tools)."
    decides = "the model, inside PydanticAI's agent loop"
    visible = "all actions, as the agent's tools (finish is its output tool)"
    stopper = "PydanticAI: an unapproved gated tool call is deferred and ends the agent run; else finish or step limit"
    intervention = "an approval of each deferred tool call, through the saved message history"
    autonomy = "chooses tools, order, retries and when to stop; a gated call waits for its approval"
    spectrum = 14  # runtime adapters come after bench's ten: LangGraph's two, the Agents SDK, then PydanticAI
    # ApprovalRequiredToolset asks for approval whenever the call's gate is not open, before the tool's body runs
    hard_gate = True
    framework = "pydantic_ai"
    extra = "pydantic-ai"
    distributions = ("pydantic-ai-slim",)
    own_agent = (
        "build(tools, model) -> a PydanticAI Agent; tools: the scenario's actions as one toolset (toolsets=[tools]; "
        "a gated call requires approval while its gate is closed, so the output types need DeferredToolRequests), "
        "model: a FunctionModel answered by bench's model"
    )
    # PydanticAI sends nothing unless logfire is installed and configured (bench never does); its first-run banner on
    # a terminal is turned off.
    telemetry_off = (("PYDANTIC_AI_NO_BANNER", "1"),)
    crash_sweep_modules = ("modes.runtimes.pydantic_ai_agent",)

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        from modes.runtimes.pydantic_ai_agent import resume, start  # the framework-bound half, imported only now

        factory = type(self).agent_factory
        return await (start(ctx, factory) if decision is None else resume(ctx, decision, factory))
