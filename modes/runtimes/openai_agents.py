"""The OpenAI Agents SDK as a mode: an SDK ``Agent`` run by the SDK's ``Runner``, gated tools ``needs_approval``.

The SDK decides the loop (ask the model, run the tool it called, ask again, stop at a final message); bench's model
answers each turn (modes/runtimes/openai_agents_sdk.py) and every tool body goes through the gateway. A tool whose
gate is not open when the SDK plans the call needs approval, so the SDK pauses the run before the body runs; the
adapter records the wait, saves the SDK's serialised ``RunState`` in the run folder and suspends. It goes on by the
SDK's own means: ``state.approve`` (or ``state.reject`` with the reviewer's note, for a revision) and
``Runner.run`` again, in this process with an in-run approver, or in a new one through ``resume``. Whatever the SDK
runs again on resume reaches the gateway again under the same step and is counted (``repeated_side_effects``).
"""

from __future__ import annotations

from harness.core import HumanDecision, ModeResult, RunContext
from modes.base import mode
from modes.react import INSTRUCTIONS
from modes.runtimes.base import RuntimeMode


@mode("openai_agents")
class OpenAIAgents(RuntimeMode):
    summary = "An OpenAI Agents SDK agent: the SDK's Runner loops; gated tools need approval (needs_approval)."
    decides = "the model, inside the SDK's Runner loop"
    visible = "all actions, as the agent's function tools"
    stopper = "the SDK: a gated tool call needs approval and pauses the run; else the final message or step limit"
    intervention = "an approval of each gated tool call, through the SDK's serialised run state"
    autonomy = "chooses tools, order, retries and when to stop; a gated call waits for its approval"
    spectrum = 13  # runtime adapters come after bench's ten; LangGraph's two take 11 and 12 (docs/runtimes.md)
    hard_gate = True  # needs_approval checks the gate when the SDK plans each call: no gated body runs before it opens
    framework = "agents"
    extra = "openai-agents"
    distributions = ("openai-agents",)
    own_agent = (
        "build(tools, model) -> an Agents SDK Agent; tools: the scenario's actions as FunctionTools (a gated one "
        "needs_approval while its gate is closed), model: an SDK Model answered by bench's model"
    )
    telemetry_off = (("OPENAI_AGENTS_DISABLE_TRACING", "1"),)  # no traces exported to OpenAI
    crash_sweep_modules = ("modes.runtimes.openai_agents_sdk",)

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        from modes.runtimes.openai_agents_sdk import AgentsRun  # the SDK-bound half, imported only now

        adapter = AgentsRun(ctx, INSTRUCTIONS, type(self).agent_factory)
        return await (adapter.run() if decision is None else adapter.resume(decision))
