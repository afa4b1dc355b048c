"""ReAct on LangGraph: a model node and a ``ToolNode`` in a loop, until the model answers without a tool call.

The agent is LangGraph's own loop, built as its ``ToolNode`` documentation recommends now that ``create_react_agent``
is deprecated (LangGraph 1.x points to ``langchain.agents.create_agent``, outside LangGraph): a ``StateGraph`` over a
message list, the model node, ``ToolNode`` and ``tools_condition``. bench's model answers the model node
(``langchain_bridge.BenchChatModel``), each tool is a scenario action through the gateway, and a tool whose gate is
closed calls ``interrupt()`` before its body runs, so LangGraph stops there until someone decides. The model node
saves which gates were open when the model chose its calls: a tool LangGraph runs again after a resume decides from
that, reaches the same ``interrupt()`` and gets the decision. The model itself keeps the step budget
(``StepLimitReached``).

A user's own graph (``--mode FILE.py:FACTORY``, docs/runtimes.md) runs here in place of the built one: the factory
gets the same tools and model and returns a ``StateGraph`` over ``messages``, compiled with the run's checkpointer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.core import HumanDecision, ModeResult, RunContext
from modes.base import mode
from modes.prompting import system_message
from modes.react import ANSWER, INSTRUCTIONS
from modes.runtimes.base import StepLimitReached
from modes.runtimes.langgraph_base import LangGraphMode, open_gates
from modes.runtimes.own_code import wrong_return

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.pregel import Pregel

    from modes.runtimes.langgraph_calls import CallBook
    from modes.runtimes.langgraph_reviews import AnswerFunction

# Graph steps a user's graph may take per tool call before LangGraph's recursion limit ends the run (bench's own
# graph takes two: the model node, then the tools).
USER_GRAPH_STEPS_PER_CALL = 10


@mode("langgraph_react")
class LangGraphReAct(LangGraphMode):
    summary = "A LangGraph ReAct agent (model node and ToolNode); a gated tool interrupts the graph before it runs."
    decides = "the model, inside LangGraph's agent loop"
    visible = "all actions, as the agent's tools"
    stopper = "LangGraph's interrupt(): a tool whose gate is closed stops the graph; else the model's final answer"
    intervention = "an approval of each gated tool call, through LangGraph's checkpointed interrupt"
    autonomy = "chooses tools, order, retries and when to stop; a gated call waits for its approval"
    spectrum = 12  # runtime adapters come after bench's ten: LangGraph's workflow (11), this agent, then the others
    hard_gate = True  # every tool whose gate is closed interrupts before its body reaches the gateway
    own_agent = (
        "build(tools, model) -> a LangGraph StateGraph over 'messages', not compiled (bench compiles it with the "
        "run's checkpointer); tools: the scenario's actions as LangChain tools, model: a LangChain chat model"
    )

    crash_sweep_modules = ("langgraph.prebuilt", "langgraph.checkpoint.sqlite.aio", "modes.runtimes.langchain_bridge")

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        return await run_agent(ctx, self, decision)


async def run_agent(ctx: RunContext, agent: LangGraphReAct, decision: HumanDecision | None) -> ModeResult:
    """The agent's graph on the run's thread, from the start or, with ``decision``, from its pending interrupts."""
    from langgraph.errors import GraphRecursionError

    from modes.runtimes.langchain_bridge import (
        BenchChatModel,
        Escaped,
        gateway_tools,
        tool_calls_in,
    )
    from modes.runtimes.langgraph_calls import CallBook
    from modes.runtimes.langgraph_driver import checkpointer

    scenario = ctx.scenario
    book = CallBook()
    tools = gateway_tools(ctx, [spec.name for spec in scenario.actions], book)
    model = BenchChatModel(ctx, book)
    factory = type(agent).agent_factory
    limit = (2 if factory is None else USER_GRAPH_STEPS_PER_CALL) * (ctx.limits.max_steps + 1) + 1
    try:
        async with checkpointer(ctx) as saver:
            state = await drive_graph(ctx, agent, decision, saver, tools, model, book, limit)
    except Escaped as escaped:
        raise escaped.inner from None
    except StepLimitReached as spent:
        return spent.end(ctx)
    except GraphRecursionError:
        ctx.decide(ctx.limits.max_steps + 1, "framework", None, "step_limit", {"recursion_limit": limit})
        return ModeResult("step_limit")
    step = len(tool_calls_in(state.get("messages", []))) + 1
    ctx.decide(step, "framework", scenario.finish_action.name, "run_finished")
    return ModeResult("finished")


async def drive_graph(
    ctx: RunContext,
    agent: LangGraphReAct,
    decision: HumanDecision | None,
    saver: BaseCheckpointSaver,
    tools: list[BaseTool],
    model: BaseChatModel,
    book: CallBook,
    limit: int,
) -> dict[str, Any]:
    """Builds the graph (bench's, or the user's factory's) on the run's saver and runs it: from its start, or from
    its pending interrupts with ``decision``; the final state."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from modes.runtimes.langchain_bridge import QUESTION
    from modes.runtimes.langgraph_driver import GraphRun

    factory = type(agent).agent_factory
    if factory is None:
        graph = agent_graph(tools, model, saver, ctx)
    else:
        graph = own_graph(factory(tools, model), saver)
    answer = own_answer(factory) if factory is not None else None
    run = GraphRun(ctx, graph, recursion_limit=limit, durability=agent.durability, book=book, answer=answer)
    if decision is not None:
        return await run.resume(decision)
    scenario = ctx.scenario
    system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)["content"]
    return await run.start({"messages": [SystemMessage(system), HumanMessage(QUESTION)], "open_gates": open_gates(ctx)})


def own_graph(built: Any, saver: BaseCheckpointSaver) -> Pregel:
    """A user's factory's graph on the run's checkpointer: a builder (``StateGraph``) compiled with it, or a compiled
    graph (``create_react_agent``'s, ``graph.compile()``'s) given it in place of its own, so its interrupts survive
    the process."""
    from langgraph.graph import StateGraph
    from langgraph.pregel import Pregel

    if isinstance(built, StateGraph):
        return built.compile(checkpointer=saver)
    if isinstance(built, Pregel):
        return built.copy(update={"checkpointer": saver})
    raise wrong_return(built, "a LangGraph StateGraph or a compiled graph")


def own_answer(factory: Any) -> AnswerFunction | None:
    """A user's answer function for interrupt payloads of the agent's own: ``answer`` on the factory, else ``ANSWER``
    in its module (docs/agents.md)."""
    import inspect

    found = getattr(factory, "answer", None) or getattr(inspect.getmodule(factory), "ANSWER", None)
    return found if callable(found) else None


def agent_graph(tools: list[BaseTool], model: BaseChatModel, saver: BaseCheckpointSaver, ctx: RunContext) -> Pregel:
    """LangGraph's agent loop: the model node, then the tools it called, until it answers without one."""
    from typing import Annotated, TypedDict

    from langchain_core.messages import AnyMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    # messages: the conversation; open_gates: the gates open when the model chose its latest calls. (Built here, as
    # LangGraph reads the messages' reducer from the annotation, which must be an object, not a string.)
    AgentState = TypedDict(  # noqa: UP013
        "AgentState",
        {"messages": Annotated[list[AnyMessage], add_messages], "open_gates": list[str]},
        total=False,
    )
    bound = model.bind_tools(tools)

    async def agent(state: Any) -> dict[str, Any]:
        reply = await bound.ainvoke(state["messages"])
        return {"messages": [reply], "open_gates": open_gates(ctx)}

    graph = StateGraph(AgentState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver)
