"""Workflow: code fixes the state transitions; the model only fills in the current node.

After a node the next state is chosen by code; an approval node that is not approved records the
approval request and ends the run with ``suspended``. Actions of later nodes are never offered to the model
before their node. The walk here is shared by the workflow family (seed 003's modes 1, 2, 3 and 6): each of the
other three widens exactly one freedom (``WorkflowMode.routes``, ``fills_params``, ``falls_back``).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, ClassVar

from harness.core import (
    DONE,
    FailureContract,
    HumanDecision,
    ModelError,
    ModeResult,
    Node,
    RouteChoice,
    RunContext,
    StepTimedOut,
    check_for,
)
from modes.base import Mode, mode
from modes.plan_subflow import run_plan_subflow
from modes.prompting import decision_line, observation_line, system_message, user_message
from modes.proposals import read_route, route_schema
from modes.subagent import SubAgent, run_subagent

STEP_INSTRUCTIONS = (
    "You fill in one step of a fixed workflow. The workflow decides what happens next; "
    "you only produce the arguments of the current action."
)
STEP_ANSWER = "{<the arguments of the current action>}"
PARAM_INSTRUCTIONS = (
    "You fill in the open parameters of one step of a fixed workflow. The step's template fixes everything "
    "else; you cannot add, skip or reorder steps. Stay within each parameter's constraints."
)
PARAM_ANSWER = "{<a value for each open parameter>}"
ROUTE_INSTRUCTIONS = (
    "You choose where a fixed workflow goes next. Its rules allow only some branches at this point; "
    "choose one of those. Code refuses any other."
)
ROUTE_ANSWER = '{"route": "<one branch>"}'
FALLBACK_INSTRUCTIONS = (
    "A step of a fixed workflow failed. You may use only the tools listed to resolve the failure; choose "
    "finish when it is resolved. The workflow then checks the result and goes on, or stops."
)

Visit = ModeResult | str  # a result ends the run; a node id continues it


@mode("workflow")
class WorkflowMode(Mode):
    summary = "Code fixes the transitions; the model fills in the current node; approvals suspend the run."
    decides = "the workflow's code; the model only fills in the current node"
    visible = "only the current node's action (or an agent node's tools)"
    stopper = "the state machine: a return at an approval node"
    intervention = "all branch logic written in code; every approval node suspends the run"
    autonomy = "none over the path: the content of the current step"
    spectrum = 1
    published_p95_ms = 120.0
    published_error_rate = 0.0001
    story = "bank transfer compliance check (bank_transfer_compliance)"
    typical_story = "bank_transfer_compliance"
    hard_gate = True
    # The freedoms the workflow family widens, one a mode: who picks among branches marked route_by: model, who
    # fills a parameter template's slots, and whether a node's declared failure hands over to a ReAct loop.
    routes: ClassVar[str] = "code"
    fills_params: ClassVar[bool] = False
    falls_back: ClassVar[bool] = False

    async def run(self, ctx: RunContext) -> ModeResult:
        return await WorkflowWalk(ctx, self).walk()


class WorkflowWalk:
    """One walk through a scenario's workflow graph."""

    def __init__(self, ctx: RunContext, style: WorkflowMode | None = None):
        self.ctx = ctx
        self.style = style or WorkflowMode()
        self.step = 0
        self.failures: Counter[str] = Counter()
        self.observations: list[str] = []
        self.trail: list[str] = []  # the nodes visited, in order
        self.fell_back: set[str] = set()  # nodes whose fallback loop ran since they last succeeded
        self.visits: Counter[str] = Counter()  # entries into each node, against its loop budget (max_visits)
        self.rerun: str | None = None  # the node its own failure contract runs again next: that is no new entry

    async def walk(self) -> ModeResult:
        """Walks the graph to an end; the state machine bounds itself and fails closed: a node entered more times
        than its loop budget, or a walk that reaches the transition limit, ends the run with an error there."""
        ctx = self.ctx
        nodes = ctx.scenario.node_map
        node = nodes[ctx.scenario.workflow.start]
        for _ in range(ctx.limits.max_transitions):
            visit = await self.enter(node)
            if isinstance(visit, ModeResult):
                return visit
            ctx.transition(self.step, node.id, visit)
            node = nodes[visit]
        return self.out_of_transitions(node)

    async def enter(self, node: Node) -> Visit:
        """One step of the walk: the entry into ``node`` is counted against its loop budget, then the node is run."""
        self.trail.append(node.id)
        return self.over_budget(node) or await self.visit(node)

    def out_of_transitions(self, node: Node) -> ModeResult:
        """The walk reached the transition limit at ``node``: the run ends there with an error."""
        limit = self.ctx.limits.max_transitions
        return self.error(node, f"the walk reached limits.max_transitions ({limit}) without an end")

    def over_budget(self, node: Node) -> ModeResult | None:
        """Counts an entry into ``node``; past its loop budget the run ends there with the node's error (its
        ``on_failure.return_error`` code, if any), never its retries, fallback loop or fallback node, which lead back
        into the loop. None: within the budget (or a node with none, on no loop of its own: load-checked)."""
        if self.rerun == node.id:  # its own failure contract runs it again: the same entry
            self.rerun = None
            return None
        self.rerun = None
        self.visits[node.id] += 1
        if node.max_visits is None or self.visits[node.id] <= node.max_visits:
            return None
        visits = self.visits[node.id]
        reason = f"node '{node.id}' entered {visits} times, over its loop budget (max_visits: {node.max_visits})"
        code = node.on_failure.return_error if node.on_failure is not None else None
        return self.error(node, f"{code}: {reason}" if code else reason)

    async def visit(self, node: Node) -> Visit:
        ctx = self.ctx
        if node.type == "end":
            if node.status == "error":
                return self.error(node, f"workflow ended at error node '{node.id}'")
            ctx.decide(self.step, "workflow", None, "run_finished", {"node": node.id})
            return ModeResult("finished")
        if node.type == "approval":
            gate = node.gate or ""
            if not self.gate_open(gate):
                self.step += 1
                decision = self.stop_at_gate(node, gate)
                if isinstance(decision, str):  # the request was blocked: nobody can be asked, the node fails
                    return await self.fail(node, decision)
                self.observations.append(decision_line(self.step, decision))
                if decision.decision == "revise":
                    return self.revision_target(node)
                if decision.decision == "reject":  # the story goes on after it: the rejection edge, or the end
                    where = {"node": node.id, "to": node.on_reject}
                    ctx.decide(self.step, "workflow", gate, "rejected", where)
                    return node.on_reject or ModeResult("rejected_by_human", suspended_at=gate)
            ctx.decide(self.step, "workflow", gate, "approved", {"node": node.id})
            return await self.succeed(node)
        if node.type == "validator":
            passed = ctx.holds(node.check)
            ctx.decide(self.step, "workflow", node.id, "pass" if passed else "fail", {"node": node.id})
            return await self.succeed(node) if passed else await self.fail(node, "check failed")
        if node.type == "agent":
            return await self.agent(node)
        if node.type == "plan":
            return await self.plan_subflow(node)
        action = node.action or ""
        spec = ctx.scenario.action_map[action]
        if ctx.gateway.already_committed(spec):  # a revision walk back over it: it commits at most once
            reason = f"'{action}' is irreversible and already committed in this run"
            ctx.decide(self.step, "workflow", action, "skipped", {"node": node.id, "reason": reason})
            return await self.succeed(node)
        if node.type == "model_step" and node.params is not None:
            args = await self.template_args(node)
        elif node.type == "model_step":
            messages = [
                system_message(ctx.scenario, STEP_INSTRUCTIONS, [spec], STEP_ANSWER),
                user_message(self.observations, f"Current step: {action}. Produce its arguments."),
            ]
            try:
                reply = await ctx.propose(
                    "content", messages, spec.args, [action], step=self.step + 1, timeout_ms=node.timeout_ms
                )
            except StepTimedOut as late:  # the step's deadline passed before its content came: the step failed
                return await self.fail(node, f"timeout: {late}")
            args = reply.proposal
        else:
            args = node.args
        self.step += 1
        record = ctx.act(action, args, allowed=[action], step=self.step, timeout_ms=node.timeout_ms)
        self.observations.append(observation_line(record))
        if record.status in DONE:
            return await self.succeed(node)
        return await self.fail(node, f"{action} {record.status}: {record.reason}")

    def gate_open(self, gate: str) -> bool:
        """Whether an approval node's gate lets the walk through without stopping (a runtime adapter decides from
        its own saved state, so a node it runs again after a resume asks the same question)."""
        return self.ctx.approved(gate)

    def stop_at_gate(self, node: Node, gate: str) -> HumanDecision | str:
        """Records the approval request, then stops the run at the gate: the decision, or why the request was blocked.

        The request is recorded before the run stops; a blocked one is returned as the node's failure reason.
        """
        record = self.ctx.request_approval(gate, step=self.step)
        self.observations.append(observation_line(record))
        if record.status != "wait_recorded":
            return f"approval request {record.status}: {record.observation.get('detail')}"
        return self.ctx.suspend(self.step, "workflow", gate, {"node": node.id})

    async def template_args(self, node: Node) -> dict[str, Any]:
        """A parameter template's arguments: the fixed part and each slot's default, or, under workflow_param, the
        model's values for the slots, refused as a whole (defaults kept) when one breaks the template: found by code's
        check here, or already by the model port's check of the answer against the slots' schema (a live model's
        answer: a ``schema`` error, which here is the same refusal, not the end of the run)."""
        ctx = self.ctx
        params = node.params or {}
        slots: dict[str, Any] = params.get("properties", {})
        defaults = {name: slot["default"] for name, slot in slots.items()}
        if not self.style.fills_params:
            return {**node.args, **defaults}
        action = node.action or ""
        template = ctx.scenario.action_map[action].model_copy(update={"args": params})
        fixed = ", ".join(f"{key}={value!r}" for key, value in node.args.items()) or "none"
        messages = [
            system_message(ctx.scenario, PARAM_INSTRUCTIONS, [template], PARAM_ANSWER),
            user_message(
                self.observations,
                f"Current step: {action}. Fixed by the template: {fixed}. Fill in each slot within its limits: "
                + json.dumps(slots, ensure_ascii=False, sort_keys=True),
            ),
        ]
        try:
            answer = (
                await ctx.propose("content", messages, params, [action], step=self.step + 1, catalog=[template])
            ).proposal
        except ModelError as exc:
            if exc.kind != "schema":
                raise
            answer = None  # read, but outside the template (a slot out of its limits, a key it has no slot for)
            reason: str | None = f"the answer does not fit the template: {exc}"
        else:
            reason = "the answer is not an object of slot values"
        filled = dict(defaults)
        if isinstance(answer, dict):
            filled.update({name: answer[name] for name in slots if name in answer})
            reason = check_for(params).problem(filled)
        if reason is not None:
            ctx.decide(self.step, "workflow", action, "refused", {"guard": "params", "node": node.id, "reason": reason})
            self.observations.append(f"step {self.step}: {action} parameters refused by the workflow: {reason}")
            return {**node.args, **defaults}
        ignored = sorted(set(answer) - set(slots))
        if ignored:  # what the model wrote outside the slots never reaches the action
            ctx.decide(self.step, "workflow", action, "ignored", {"guard": "params", "node": node.id, "keys": ignored})
        return {**node.args, **filled}

    async def agent(self, node: Node) -> Visit:
        """An agent node: a bounded inner ReAct loop over the node's tools, handed back to code (seed 001)."""
        handback = await run_subagent(
            self.ctx,
            SubAgent(where=node.id, tools=node.tools, max_steps=node.max_steps, until=node.until, output=node.output),
            step=self.step,
            observations=self.observations,
        )
        self.step = handback.step
        if not handback.met:
            return await self.fail(node, handback.reason or "contract not met")
        return await self.succeed(node, suggested=handback.suggested_route)

    async def plan_subflow(self, node: Node) -> Visit:
        """A plan node: a Plan-and-Execute sub-flow within the node's contract, handed back to code (seed 001)."""
        handback = await run_plan_subflow(self.ctx, node, step=self.step, observations=self.observations)
        self.step = handback.step
        if not handback.met:
            return await self.fail(node, handback.reason or "completion condition not met")
        return await self.succeed(node)

    def revision_target(self, approval: Node) -> str:
        """Where a revision request at an approval node sends the run: back to the last node the model filled in."""
        nodes = self.ctx.scenario.node_map
        for visited in reversed(self.trail):
            if nodes[visited].type in ("model_step", "agent", "plan") and visited != approval.id:
                self.ctx.decide(self.step, "workflow", visited, "revise", {"node": approval.id})
                return visited
        return approval.id  # nothing the model wrote before it: ask again (bounded by max_transitions)

    async def succeed(self, node: Node, suggested: str | None = None) -> Visit:
        """The way out of a node that did its work: code's route, or one the rules allow that the model picked."""
        ctx = self.ctx
        self.failures[node.id] = 0
        self.fell_back.discard(node.id)
        code_route: str | None = None
        allowed: list[str] = []
        for branch in node.branches:
            truth = ctx.evaluate(branch.when) if branch.when is not None else None
            if truth is not None and truth.value is None:
                if code_route is None:
                    # Code never routes on a fact it cannot read: falling through could skip an approval.
                    return await self.fail(node, f"branch condition cannot be evaluated: {truth.why}")
                continue  # past code's own route: a branch nobody can show to hold is simply not allowed
            if truth is None or truth.value:
                code_route = code_route or branch.goto
                if branch.goto not in allowed:
                    allowed.append(branch.goto)
        if code_route is None:
            code_route = node.next or ""
            allowed = [code_route]
        by_model = self.style.routes == "model" and node.route_by == "model"
        if not by_model:
            allowed = [code_route]
        if suggested is not None:
            return self.checked_route(node, suggested, allowed, code_route, "suggested_route")
        if by_model and len(allowed) > 1:
            return self.checked_route(node, await self.ask_route(node, allowed), allowed, code_route, "route")
        return code_route

    async def ask_route(self, node: Node, allowed: list[str]) -> str:
        """Asks the model which branch to take; every branch is shown, with whether the rules allow it now."""
        ctx = self.ctx
        targets = list(dict.fromkeys(branch.goto for branch in node.branches))
        described = {b.goto: b.description for b in reversed(node.branches) if b.description}
        lines = [
            f"- {t}: {described.get(t, f'go to {t}')} ({'allowed now' if t in allowed else 'not allowed now'})"
            for t in targets
        ]
        messages = [
            system_message(ctx.scenario, ROUTE_INSTRUCTIONS, [], ROUTE_ANSWER),
            user_message(self.observations, f"Node {node.id} is done. Branches:\n" + "\n".join(lines)),
        ]
        routes = tuple(RouteChoice(t, t in allowed, self.leads_to(t)) for t in targets)
        reply = await ctx.propose("route", messages, route_schema(targets), targets, step=self.step, routes=routes)
        return read_route(reply.proposal)

    def checked_route(self, node: Node, proposed: str, allowed: list[str], code_route: str, guard: str) -> str:
        """Takes the model's route where the rules allow it from this node; otherwise code's, traced as refused."""
        detail = {"guard": guard, "node": node.id, "allowed": allowed}
        if proposed in allowed:
            self.ctx.decide(self.step, "workflow", proposed, "accepted", detail)
            return proposed
        self.ctx.decide(self.step, "workflow", proposed, "refused", {**detail, "taken": code_route})
        self.observations.append(
            f"step {self.step}: route '{proposed}' refused by the workflow (allowed: {', '.join(allowed)}); "
            f"going to '{code_route}'"
        )
        return code_route

    def leads_to(self, target: str, depth: int = 4) -> tuple[tuple[str, Any], ...]:
        """The first actions down a route (following code's way), with their fixed arguments where fixed."""
        nodes, seen = self.ctx.scenario.node_map, set()
        found: list[tuple[str, Any]] = []
        current: str | None = target
        while current is not None and current not in seen and len(found) < depth:
            seen.add(current)
            node = nodes[current]
            if node.type == "action" and node.action:
                found.append((node.action, node.args))
            elif node.type == "model_step" and node.action:
                found.append((node.action, None))
            elif node.type in ("agent", "plan"):
                found += [(tool, None) for tool in node.callable_tools]
            elif node.type == "approval" and node.gate:
                wait = self.ctx.scenario.wait_for(node.gate)
                found.append((wait.name if wait else f"approval:{node.gate}", None))
            current = node.next or next((b.goto for b in node.branches), None)
        return tuple(found)

    async def fail(self, node: Node, reason: str) -> Visit:
        """Applies the node's failure contract: retry, then (workflow_fallback_react) a ReAct loop, then fallback or
        return an error."""
        ctx = self.ctx
        self.failures[node.id] += 1
        contract = node.on_failure
        detail: dict[str, Any] = {"node": node.id, "reason": reason, "failures": self.failures[node.id]}
        if contract is not None and self.failures[node.id] <= contract.retry:
            ctx.decide(self.step, "workflow", node.id, "retry", detail)
            self.rerun = node.id
            return node.id
        if (
            contract is not None
            and contract.react is not None
            and self.style.falls_back
            and node.id not in self.fell_back
        ):
            loop = contract.react
            self.fell_back.add(node.id)  # once until the node succeeds: a loop that did not help is not run again
            ctx.decide(self.step, "workflow", node.id, "fallback_react", {**detail, "tools": list(loop.tools)})
            handback = await run_subagent(
                ctx,
                SubAgent(
                    where=node.id,
                    tools=loop.tools,
                    max_steps=loop.max_steps,
                    until=loop.until,
                    instructions=FALLBACK_INSTRUCTIONS,
                    question=f"Step {node.id} failed: {reason}. Choose the next tool.",
                ),
                step=self.step,
                observations=self.observations,
            )
            self.step = handback.step
            if handback.met:  # control returns to the workflow: the node runs again, its retries fresh
                self.failures[node.id] = 0
                self.rerun = node.id
                return node.id
            reason = f"{reason}; fallback loop: {handback.reason}"
            detail = {**detail, "reason": reason}
        if contract is not None and contract.alert is not None:
            ctx.alert(self.step, "workflow", contract.alert, {**detail, "then": self.after_alert(node, contract)})
        if contract is not None and contract.terminate is not None:
            why = f"{contract.terminate}: {reason}"
            self.ctx.fail(self.step, "workflow", node.id, "workflow", f"terminated: {why}")
            return ModeResult("error", terminated=why)
        if contract is not None and contract.fallback is not None:
            ctx.decide(self.step, "workflow", contract.fallback, "fallback", detail)
            return contract.fallback
        code = contract.return_error if contract is not None and contract.return_error else None
        if contract is not None and contract.alert is not None and code is None:
            way_on = self.way_on(node)  # the person is told; the walk goes on along the node's declared path
            ctx.decide(self.step, "workflow", way_on, "continue_after_alert", detail)
            return way_on
        return self.error(node, f"{code}: {reason}" if code else f"node '{node.id}' failed: {reason}")

    def after_alert(self, node: Node, contract: FailureContract) -> str:
        """What the walk does once the person is alerted, in words for the alert event."""
        if contract.terminate is not None:
            return f"terminate ({contract.terminate})"
        if contract.fallback is not None:
            return f"fallback to {contract.fallback}"
        if contract.return_error is not None:
            return f"return_error ({contract.return_error})"
        return f"continue to {self.way_on(node)}"

    @staticmethod
    def way_on(node: Node) -> str:
        """A node's declared way out after an alerted failure: its next, else its default branch (load-checked)."""
        return node.next or next(b.goto for b in node.branches if b.when is None)

    def error(self, node: Node, message: str) -> ModeResult:
        self.ctx.fail(self.step, "workflow", node.id, "workflow", message)
        return ModeResult("error")
