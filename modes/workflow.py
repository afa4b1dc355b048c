"""Workflow: code fixes the state transitions; the model only fills in the current node.

After a node the next state is chosen by code; an approval node that is not approved records the
approval request and ends the run with ``suspended``. Actions of later nodes are never offered to the model before their node.
"""

from __future__ import annotations

from collections import Counter

from harness.context import RunContext
from harness.outcome import DONE, ModeResult
from harness.scenario import Node
from modes.base import Mode, mode
from modes.prompting import decision_line, observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step

STEP_INSTRUCTIONS = ("You fill in one step of a fixed workflow. The workflow decides what happens next; "
                     "you only produce the arguments of the current action.")
STEP_ANSWER = "{<the arguments of the current action>}"
AGENT_INSTRUCTIONS = ("You work inside one node of a workflow with a limited set of tools. Choose one tool at "
                      "each turn from the observations; choose finish when the node's goal is met.")
AGENT_ANSWER = '{"step": {"action": "<one tool name>", "args": {<arguments>}}}'

Visit = ModeResult | str  # a result ends the run; a node id continues it


@mode("workflow")
class WorkflowMode(Mode):
    summary = "Code fixes the transitions; the model fills in the current node; approvals suspend the run."
    decides = "the workflow's code; the model only fills in the current node"
    visible = "only the current node's action (or an agent node's tools)"
    stopper = "the state machine: a return at an approval node"
    intervention = "every approval node suspends the run"
    autonomy = "the content of the current step"
    spectrum = 1
    hard_gate = True

    async def run(self, ctx: RunContext) -> ModeResult:
        return await WorkflowWalk(ctx).walk()


class WorkflowWalk:
    """One walk through a scenario's workflow graph."""

    def __init__(self, ctx: RunContext):
        self.ctx = ctx
        self.step = 0
        self.failures: Counter[str] = Counter()
        self.observations: list[str] = []
        self.trail: list[str] = []  # the nodes visited, in order

    async def walk(self) -> ModeResult:
        ctx = self.ctx
        nodes = ctx.scenario.node_map
        node = nodes[ctx.scenario.workflow.start]
        for _ in range(ctx.limits.max_transitions):
            self.trail.append(node.id)
            visit = await self.visit(node)
            if isinstance(visit, ModeResult):
                return visit
            ctx.transition(self.step, node.id, visit)
            node = nodes[visit]
        ctx.decide(self.step, "workflow", None, "step_limit", {"reason": "max_transitions"})
        return ModeResult("step_limit")

    async def visit(self, node: Node) -> Visit:
        ctx = self.ctx
        if node.type == "end":
            if node.status == "error":
                return self.error(node, f"workflow ended at error node '{node.id}'")
            ctx.decide(self.step, "workflow", None, "run_finished", {"node": node.id})
            return ModeResult("finished")
        if node.type == "approval":
            gate = node.gate or ""
            if not ctx.approved(gate):
                # The request is recorded before the run stops; a blocked one fails the node instead.
                self.step += 1
                record = ctx.request_approval(gate, step=self.step)
                self.observations.append(observation_line(record))
                if record.status != "wait_recorded":
                    return self.fail(node, f"approval request {record.status}: {record.observation.get('detail')}")
                decision = ctx.suspend(self.step, "workflow", gate, {"node": node.id})
                self.observations.append(decision_line(self.step, decision))
                if decision.decision == "revise":
                    return self.revision_target(node)
            ctx.decide(self.step, "workflow", gate, "approved", {"node": node.id})
            return self.succeed(node)
        if node.type == "validator":
            passed = ctx.holds(node.check)
            ctx.decide(self.step, "workflow", node.id, "pass" if passed else "fail", {"node": node.id})
            return self.succeed(node) if passed else self.fail(node, "check failed")
        if node.type == "agent":
            return await self.agent(node)
        action = node.action or ""
        if node.type == "model_step":
            spec = ctx.scenario.action_map[action]
            messages = [system_message(ctx.scenario, STEP_INSTRUCTIONS, [spec], STEP_ANSWER),
                        user_message(self.observations, f"Current step: {action}. Produce its arguments.")]
            reply = await ctx.propose("content", messages, spec.args, [action], step=self.step + 1)
            args = reply.proposal
        else:
            args = node.args
        self.step += 1
        record = ctx.act(action, args, allowed=[action], step=self.step)
        self.observations.append(observation_line(record))
        if record.status in DONE:
            return self.succeed(node)
        return self.fail(node, f"{action} {record.status}: {record.reason}")

    async def agent(self, node: Node) -> Visit:
        """An agent node: a bounded inner ReAct loop over the node's tools, ended by code or by finish."""
        ctx = self.ctx
        scenario = ctx.scenario
        finish = scenario.finish_action.name
        offered = [*node.tools, finish]
        tools = [scenario.action_map[name] for name in offered]
        system = system_message(scenario, AGENT_INSTRUCTIONS, tools, AGENT_ANSWER)
        schema = next_action_schema(tools)
        for _ in range(node.max_steps):
            if node.until is not None and ctx.holds(node.until):
                break
            messages = [system, user_message(self.observations, f"Node {node.id}: choose the next tool.")]
            reply = await ctx.propose("next_action", messages, schema, offered, step=self.step + 1)
            proposal = read_step(reply.proposal)
            if proposal.action == finish:
                ctx.decide(self.step, "workflow", node.id, "node_done", {"node": node.id, "by": "llm"})
                break
            self.step += 1
            record = ctx.act(proposal.action, proposal.args, allowed=node.tools, step=self.step)
            self.observations.append(observation_line(record))
        if node.until is not None and not ctx.holds(node.until):
            return self.fail(node, "readiness contract not met")
        return self.succeed(node)

    def revision_target(self, approval: Node) -> str:
        """Where a revision request at an approval node sends the run: back to the last node the model filled in."""
        nodes = self.ctx.scenario.node_map
        for visited in reversed(self.trail):
            if nodes[visited].type in ("model_step", "agent") and visited != approval.id:
                self.ctx.decide(self.step, "workflow", visited, "revise", {"node": approval.id})
                return visited
        return approval.id  # nothing the model wrote before it: ask again (bounded by max_transitions)

    def succeed(self, node: Node) -> Visit:
        self.failures[node.id] = 0
        for branch in node.branches:
            truth = self.ctx.evaluate(branch.when) if branch.when is not None else None
            if truth is not None and truth.value is None:
                # Code never routes on a fact it cannot read: falling through could skip an approval.
                return self.fail(node, f"branch condition cannot be evaluated: {truth.why}")
            if truth is None or truth.value:
                return branch.goto
        return node.next or ""

    def fail(self, node: Node, reason: str) -> Visit:
        """Applies the node's failure contract: retry, then fallback or return an error."""
        ctx = self.ctx
        self.failures[node.id] += 1
        contract = node.on_failure
        detail = {"node": node.id, "reason": reason, "failures": self.failures[node.id]}
        if contract is not None and self.failures[node.id] <= contract.retry:
            ctx.decide(self.step, "workflow", node.id, "retry", detail)
            return node.id
        if contract is not None and contract.fallback is not None:
            ctx.decide(self.step, "workflow", contract.fallback, "fallback", detail)
            return contract.fallback
        code = contract.return_error if contract is not None and contract.return_error else None
        return self.error(node, f"{code}: {reason}" if code else f"node '{node.id}' failed: {reason}")

    def error(self, node: Node, message: str) -> ModeResult:
        self.ctx.fail(self.step, "workflow", node.id, "workflow", message)
        return ModeResult("error")
