"""Runs a mode's LangGraph graph: its checkpointer, its thread, and the approvals its ``interrupt()`` calls wait for.

A node (a gated tool, an approval node) stops the graph with ``ask_approval``, LangGraph's ``interrupt()``. The
graph returns with the interrupt pending and its state saved; outside the graph, the driver records the approval
request through the gateway and stops the run with ``ctx.suspend(step, "framework", gate)``. With an in-run approver
the decision comes back at once and the graph goes on in this process with ``Command(resume=...)`` (the map
``{interrupt_id: answer}`` when several are pending); without one the run ends suspended, the graph's state stays in
``state_dir/langgraph.sqlite`` under the run's id as its thread, and ``resume`` answers the pending interrupts with
the decision ``bench resume`` brings. LangGraph then runs each interrupted node again from its start: whatever that
node did before its ``interrupt()`` reaches the gateway again and is counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, interrupt

from harness.core import HumanDecision, RunContext, UserInputError, crash_point
from modes.prompting import observation_line
from modes.runtimes.langgraph_base import Durability, GateAnswer, GateRequest

DATABASE = "langgraph.sqlite"  # the checkpointer's file in the run's state_dir


def ask_approval(gate: str, step: int, *, action: str | None = None, node: str | None = None) -> GateAnswer:
    """Stops the graph here until ``gate`` is decided (LangGraph's ``interrupt``); on resume, the answer.

    LangGraph re-runs the calling node from its start on resume: what it did before this call happens again.
    """
    request: GateRequest = {"gate": gate, "step": step, "action": action, "node": node}
    answer: GateAnswer = interrupt(request)
    return answer


class SqliteSaver(AsyncSqliteSaver):
    """LangGraph's SQLite saver, each committed write (a checkpoint, a task's writes) a kill point of the crash sweep
    (``crash_point``): what LangGraph repeats when the process dies between its own writes is measured too."""

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        saved = await super().aput(*args, **kwargs)
        crash_point()
        return saved

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        await super().aput_writes(*args, **kwargs)
        crash_point()


@asynccontextmanager
async def checkpointer(ctx: RunContext) -> AsyncIterator[BaseCheckpointSaver]:
    """LangGraph's saver for this run: SQLite in the run's state_dir, or memory when the run has no folder."""
    if ctx.state_dir is None:
        yield InMemorySaver()
        return
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    async with SqliteSaver.from_conn_string(str(ctx.state_dir / DATABASE)) as saver:
        yield saver


class GraphRun:
    """One run's graph on its thread (the run id), driven to its end through every interrupt."""

    def __init__(self, ctx: RunContext, graph: Pregel, *, recursion_limit: int, durability: Durability):
        self.ctx, self.graph, self.durability = ctx, graph, durability
        self.config: RunnableConfig = {
            "configurable": {"thread_id": ctx.trace.info.run_id},
            "recursion_limit": recursion_limit,
        }

    async def start(self, state: dict[str, Any]) -> dict[str, Any]:
        """Runs the graph from ``state`` to its end; the final state."""
        return await self._through(await self._invoke(state), None)

    async def resume(self, decision: HumanDecision) -> dict[str, Any]:
        """Answers the interrupts the saved graph waits at with ``decision``, then runs it to its end.

        A resume killed after it answered them left the graph further on: it goes on from its last checkpoint
        (LangGraph runs the steps not saved there again), or, had it ended, its final state is the end.
        """
        saved = await self.graph.aget_state(self.config)
        if saved.interrupts:
            return await self._through((saved.values, saved.interrupts), decision)
        if saved.next or saved.tasks:  # a task whose writes were saved and not yet applied is in tasks, not next
            return await self._through(await self._invoke(None), None)
        if saved.values:
            return dict(saved.values)
        where = self.ctx.state_dir / DATABASE if self.ctx.state_dir is not None else "memory"
        raise UserInputError(f"{where}: no LangGraph thread '{self.ctx.trace.info.run_id}' to resume")

    async def _invoke(self, payload: Any) -> tuple[dict[str, Any], Sequence[Interrupt]]:
        out = await self.graph.ainvoke(payload, self.config, version="v2", durability=self.durability)
        return out.value, out.interrupts

    async def _through(
        self, result: tuple[dict[str, Any], Sequence[Interrupt]], decided: HumanDecision | None
    ) -> dict[str, Any]:
        state, pending = result
        while pending:
            answers = {item.id: self._answer(item.value, decided) for item in pending}
            decided = None  # the decision brought to a resume answers the interrupts it found, no later ones
            resume = answers if len(answers) > 1 else next(iter(answers.values()))
            state, pending = await self._invoke(Command(resume=resume))
        return state

    def _answer(self, request: GateRequest, decided: HumanDecision | None) -> GateAnswer:
        """Records the approval request and stops the run at the gate (``ctx.suspend``): the decision, as the answer.

        A gate already open (approved at another interrupt of this batch, or by the decision a resume brings) is
        answered without asking again; a revision a resume brings answers its gate's interrupts.
        """
        ctx, gate, step = self.ctx, request["gate"], request["step"]
        if ctx.approved(gate):
            return {"decision": "approve", "note": "", "who": decided.who if decided is not None else ""}
        if decided is not None and decided.gate == gate and decided.decision == "revise":
            return {"decision": "revise", "note": decided.note, "who": decided.who}
        record = ctx.request_approval(gate, step=step, for_action=request["action"])
        if record.status != "wait_recorded":  # nobody can be asked: the node hears why, the run goes on
            detail = record.observation.get("detail") if isinstance(record.observation, dict) else None
            return {"blocked": observation_line(record), "reason": f"approval request {record.status}: {detail}"}
        where = {"node": request["node"]} if request["node"] else {"proposed": request["action"]}
        decision = ctx.suspend(step, "framework", gate, where)
        if decision.decision == "revise":
            return {"decision": "revise", "note": decision.note, "who": decision.who}
        return {"decision": "approve", "note": decision.note, "who": decision.who}
