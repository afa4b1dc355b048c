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

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, interrupt

from harness.core import ActionRecord, HumanDecision, RunContext, UserInputError, audit_hash, crash_point
from modes.prompting import observation_line
from modes.runtimes.base import stop_for_approval
from modes.runtimes.langgraph_base import Durability, GateAnswer, GateRequest
from modes.runtimes.langgraph_calls import CallBook, unanswered_calls
from modes.runtimes.langgraph_reviews import AnswerFunction, Review, Verdict, read, reply

DATABASE = "langgraph.sqlite"  # the checkpointer's file in the run's state_dir


def ask_approval(
    gate: str,
    step: int,
    *,
    action: str | None = None,
    node: str | None = None,
    call: str | None = None,
    args: Any = None,
) -> GateAnswer:
    """Stops the graph here until ``gate`` is decided (LangGraph's ``interrupt``); on resume, the answer.

    LangGraph re-runs the calling node from its start on resume: what it did before this call happens again. It
    hands a task's resume values to its ``interrupt()`` calls in order, so in a batch of tool calls run by one task
    an answer may reach a call it was not given for: an answer naming another gate or call is passed over and this
    call interrupts again, with its own request (``call``: the tool call's id; its arguments' digest goes with it).
    """
    request: GateRequest = {"gate": gate, "step": step, "action": action, "node": node}
    if call is not None:
        request = {**request, "call": call, "digest": audit_hash(args)}
    answer: GateAnswer = interrupt(request)
    while not answers(answer, request):
        answer = interrupt(request)
    return answer


def answers(answer: GateAnswer, request: GateRequest) -> bool:
    """Whether an answer was given for this request: the same gate and, where both name one, the same call (an answer
    of an older bench names neither and is taken as it is)."""
    if "gate" not in answer:
        return True
    call = request.get("call")
    return answer["gate"] == request["gate"] and (call is None or answer.get("call") in (None, call))


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
    """One run's graph on its thread (the run id), driven to its end through every interrupt.

    ``book``: the run's tool calls and the approvals bound to them (a user's graph may call bench's tools outside
    ``ToolNode``); ``answer``: a user's own answer function for payloads bench does not read (langgraph_reviews).
    """

    def __init__(
        self,
        ctx: RunContext,
        graph: Pregel,
        *,
        recursion_limit: int,
        durability: Durability,
        book: CallBook | None = None,
        answer: AnswerFunction | None = None,
    ):
        self.ctx, self.graph, self.durability = ctx, graph, durability
        self.book, self.own_answer = book or CallBook(), answer
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
        self.book.note(_messages(saved.values))
        if saved.interrupts:
            return await self._through((dict(saved.values), saved.interrupts), decision)
        if saved.next or saved.tasks:  # a task whose writes were saved and not yet applied is in tasks, not next
            return await self._through(await self._invoke(None), None)
        if saved.values:
            return dict(saved.values)
        where = self.ctx.state_dir / DATABASE if self.ctx.state_dir is not None else "memory"
        raise UserInputError(f"{where}: no LangGraph thread '{self.ctx.trace.info.run_id}' to resume")

    async def _invoke(self, payload: Any) -> tuple[dict[str, Any], Sequence[Interrupt]]:
        out = await self.graph.ainvoke(payload, self.config, version="v2", durability=self.durability)
        value = out.value if isinstance(out.value, dict) else {}
        return value, out.interrupts

    async def _through(
        self, result: tuple[dict[str, Any], Sequence[Interrupt]], decided: HumanDecision | None
    ) -> dict[str, Any]:
        state, pending = result
        while pending:
            waiting = unanswered_calls(_messages(state))
            answers = {item.id: self._answer(item.value, waiting, decided) for item in pending}
            decided = None  # the decision brought to a resume answers the interrupts it found, no later ones
            resume = answers if len(answers) > 1 else next(iter(answers.values()))
            state, pending = await self._invoke(Command(resume=resume))
        return state

    def _answer(self, payload: Any, waiting: Sequence[Mapping[str, Any]], decided: HumanDecision | None) -> Any:
        """One interrupt's answer, in the shape it asked in: each call it asks about decided at its gate."""
        shape, reviews = read(payload, waiting, self.ctx.scenario)
        verdicts = [self._decide(review, decided) for review in reviews]
        return reply(shape, payload, reviews, verdicts, self.own_answer)

    def _decide(self, review: Review, decided: HumanDecision | None) -> Verdict:
        """The decision at the gate guarding one call: given already (the gate is open, or a revision a resume brings
        for it), or asked for now (``ctx.request_approval``, then ``ctx.suspend``: the run stops here unless an
        approver decides in-run). An approval is bound to the call (its id and arguments' digest). A call no gate
        guards is approved, as a person would, and traced (``review_answered``)."""
        ctx, gate = self.ctx, review.gate
        step = review.step if review.step is not None else self.book.step_of(review.call, review.action, review.args)
        who = decided.who if decided is not None else ""
        if gate is None:
            ctx.decide(step, "framework", review.action, "review_answered", {"gate": None, "answer": "approve"})
            return Verdict(True, action=review.action)
        if ctx.approved(gate):
            return self._approved(review, Verdict(True, who=who, gate=gate, action=review.action))
        if decided is not None and decided.gate == gate and decided.decision == "revise":
            return Verdict(False, decided.note, decided.who, gate, review.action)
        spec = ctx.scenario.action_map.get(review.action or "")
        asked = review.action if spec is not None and spec.kind == "task" else None
        where: dict[str, Any] = {"node": review.node} if review.node else {"proposed": review.action}
        if review.call is not None and review.step is None:  # an agent's own payload: what the approval binds to
            where |= {"call": review.call, "digest": review.digest}
        decision = stop_for_approval(ctx, gate, step=step, detail=where, action=asked)
        if isinstance(decision, ActionRecord):  # nobody can be asked: the call hears why, the run goes on
            detail = decision.observation.get("detail") if isinstance(decision.observation, dict) else None
            why = f"approval request {decision.status}: {detail}"
            return Verdict(False, why, gate=gate, action=review.action, blocked=observation_line(decision))
        if decision.decision in ("revise", "reject"):  # a rejection reaches here only where the story goes on
            refused = decision.decision == "reject"
            return Verdict(False, decision.note, decision.who, gate, review.action, rejected=refused)
        return self._approved(review, Verdict(True, decision.note, decision.who, gate, review.action))

    def _approved(self, review: Review, verdict: Verdict) -> Verdict:
        if review.call is not None:
            self.book.approve(review.call, review.digest)
        return verdict


def _messages(state: Any) -> list[Any]:
    messages = state.get("messages") if isinstance(state, Mapping) else None
    return list(messages) if isinstance(messages, list) else []
