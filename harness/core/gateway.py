"""The action gateway: the only path from a proposal to a side effect, and the record of every attempt."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from harness.choices import DEFAULT_GATEWAY_POLICY, GatewayPolicy
from harness.core.audit_hash import audit_hash
from harness.core.input_scanner import redact, scan
from harness.core.store import VirtualStore
from harness.core.tool_cache import ToolCache
from harness.records.checkpoint import HumanDecision
from harness.records.trace import ActionStatus
from harness.scenario.model import ActionSpec, Scenario
from harness.scenario.values import Precondition, Seen, value_problem

TOOK_EFFECT = ("committed", "read")  # statuses of an action that took effect
TOOK_PLACE = (*TOOK_EFFECT, "wait_recorded")  # ... or whose wait (an approval request) was recorded


@dataclass(frozen=True)
class ActionRecord:
    """One attempted action and the gateway's verdict on it."""

    step: int
    action: str
    args: Any
    status: ActionStatus
    reason: str | None  # why it was blocked or failed
    observation: Any  # what goes back to the agent
    side_effect: bool  # a write or irreversible action that committed
    violations: tuple[str, ...]  # rules it broke; under "audit" it still committed
    premature: bool  # a gated side effect committed without its approval
    gate: str | None = None  # a wait, or a mode's approval request: the gate it waits for
    duration_ms: int | None = None  # the call's simulated duration, where the action declares one (never slept)
    cache: str | None = None  # a cached action's call: "hit" (the stored result, nothing run) or "miss"
    redacted: tuple[str, ...] = ()  # what the input scanner replaced in the args ("card_number at note")
    input_hash: str | None = None  # sha256 of the canonical JSON of args (as recorded) and of the observation
    output_hash: str | None = None


@dataclass(frozen=True)
class GateDecision:
    """A decision at a gate, after which record it came, and the stop verdict the run had there."""

    decision: HumanDecision
    after_records: int
    verdict_here: str


class Gateway:
    """Checks each attempt (allowlist, role, arguments, gate, preconditions) and applies it to the store.

    Under the ``enforce`` policy a broken rule blocks the action. Under ``audit`` it commits and the
    broken rule is recorded: that measures what a control mode does with no gateway behind it.
    """

    def __init__(self, scenario: Scenario, store: VirtualStore, policy: GatewayPolicy = DEFAULT_GATEWAY_POLICY):
        self.scenario = scenario
        self.store = store
        self.policy = policy
        self.records: list[ActionRecord] = []
        self.decisions: list[GateDecision] = []  # every decision at a gate, in order, with where it fell

    def execute(
        self, name: str, args: Any, *, allowed: Collection[str], step: int, timeout_ms: int | None = None
    ) -> ActionRecord:
        """Attempts one action; never raises for anything the agent did.

        ``timeout_ms``: the caller stops waiting after that long; a call whose simulated duration (the action's
        ``latency_ms``) is longer fails with reason ``timeout`` and nothing of it is applied.
        """
        spec = self.scenario.action_map.get(name)
        if spec is None or spec.kind == "finish":
            reason = "unknown_action" if spec is None else "not_an_action"
            return self._record(step, name, args, "blocked", reason, {"blocked": reason}, ())
        found = self._scanned(spec, args)
        scanner = self.scenario.scanner
        if found and scanner is not None:  # the store, and the trace's gateway line, never see what was found
            args = redact(scanner, args)
        sensitive = ("sensitive_input",) if found and scanner is not None and scanner.action == "block" else ()
        problem = self.argument_problem(spec, args)
        if problem is not None:
            observation = {"blocked": "invalid_args", "detail": problem}
            return self._record(step, name, args, "blocked", "invalid_args", observation, (), redacted=found)
        violations = self._violations(spec, allowed, args) + sensitive
        if violations and self.policy == "enforce":
            detail = self._explain(spec, violations[0], args)
            if violations[0] == "sensitive_input":
                detail = f"'{name}' input holds sensitive data: {', '.join(found)}"
            observation = {"blocked": violations[0], "detail": detail}
            return self._record(step, name, args, "blocked", violations[0], observation, violations, redacted=found)
        return self._apply(step, spec, args, violations, timeout_ms, found)

    def _scanned(self, spec: ActionSpec, args: Any) -> tuple[str, ...]:
        """What the scenario's input scanner finds in a task action's args ("card_number at note"), if it scans it."""
        scanner = self.scenario.scanner
        if scanner is None or spec.kind != "task" or (scanner.actions is not None and spec.name not in scanner.actions):
            return ()
        return tuple(finding.describe() for finding in scan(scanner, args))

    @property
    def simulated_ms(self) -> int:
        """The run's simulated time: the declared durations of its calls so far (what a cache's ttl counts)."""
        return sum(record.duration_ms or 0 for record in self.records)

    def request_approval(self, gate: str, *, step: int, for_action: str | None = None) -> ActionRecord:
        """Records a mode's request for a gate's approval as a wait, so every suspension is in the record.

        The record goes under the gate's declared wait action (``approval:<gate>`` when it has none). Nobody can
        be asked to approve what cannot exist yet: when the gated action's (``for_action``) stored preconditions
        or any of the wait action's own ``requires`` (stored artifacts and order rules alike: a request a mode
        makes itself obeys the same rules as the wait action proposed by name) are unmet, the request is blocked
        (``enforce``) or recorded with the violation (``audit``).
        """
        wait = self.scenario.wait_for(gate)
        name = wait.name if wait is not None else f"approval:{gate}"
        target = self.scenario.action_map.get(for_action or "")
        stored = [needed for needed in (target.requires if target is not None else ()) if needed.path is not None]
        needs = [*(wait.requires if wait is not None else ()), *stored]
        missing = self.unmet(list(dict.fromkeys(needs)))
        violations = ("precondition",) if missing else ()
        if missing and self.policy == "enforce":
            asked_for = f" for '{for_action}'" if for_action else ""
            observation = {
                "blocked": "precondition",
                "gate": gate,
                "detail": f"approval '{gate}'{asked_for} cannot be asked for: {', '.join(missing)} missing",
            }
            return self._record(step, name, {}, "blocked", "precondition", observation, violations, gate=gate)
        self.store.wait_markers.append(gate)
        observation = {"wait_marker": gate, "approval": "approved" if self.store.approved(gate) else "pending"}
        if for_action:
            observation["requested_for"] = for_action
        return self._record(step, name, {}, "wait_recorded", None, observation, violations, gate=gate)

    def decide(self, decision: HumanDecision, verdict_here: str) -> None:
        """Applies a person's decision at a gate: an approval opens it; the decision is kept with its place."""
        if decision.decision == "approve":
            self.store.approvals.add(decision.gate)
        self.decisions.append(GateDecision(decision, len(self.records), verdict_here))

    def revising(self) -> frozenset[str]:
        """The gates whose latest decision sent the work back for a revision after the gate's latest recorded wait:
        that wait is answered, and the gate waits for the revised work to ask again."""
        latest = {d.decision.gate: d for d in self.decisions}
        asked = {r.gate: index for index, r in enumerate(self.records) if r.status == "wait_recorded"}
        return frozenset(
            gate
            for gate, d in latest.items()
            if d.decision.decision == "revise" and d.after_records > asked.get(gate, -1)
        )

    def argument_problem(self, spec: ActionSpec, args: Any) -> str | None:
        """The first way ``args`` fails the action's argument schema, or None."""
        return spec.validator.problem(args)  # compiled once per scenario load, shared by every run

    def arg_rule_problem(self, spec: ActionSpec, args: Any) -> str | None:
        """The first of the action's argument rules ``args`` break, in words, judged on the store now and the calls
        that took effect so far; None when every rule holds."""
        if not spec.arg_rules:
            return None
        seen = Seen(
            self.store.artifacts, [(r.action, r.args, r.observation) for r in self.records if r.status in TOOK_EFFECT]
        )
        for path, tests in spec.arg_rules.items():
            problem = value_problem(tests, args, path, seen)
            if problem is not None:
                return problem.reason
        return None

    def unmet(self, needs: Sequence[Precondition]) -> list[str]:
        """The preconditions that do not hold now, in words: a store path holding nothing or a value its tests
        refuse, an action that has not taken place yet in this run."""
        found: list[str] = []
        seen = Seen(
            self.store.artifacts, [(r.action, r.args, r.observation) for r in self.records if r.status in TOOK_EFFECT]
        )
        for needed in needs:
            if needed.action is not None:
                if not any(r.action == needed.action and r.status in TOOK_PLACE for r in self.records):
                    found.append(f"a call of {needed.action} that took place")
            elif not self.store.has(needed.path or ""):
                found.append(needed.path or "")
            elif needed.tests() and (problem := value_problem(needed, self.store.artifacts, needed.path or "", seen)):
                found.append(problem.reason)
        return found

    def already_committed(self, spec: ActionSpec) -> bool:
        """Whether an irreversible action has committed in this run already (it commits at most once)."""
        return spec.irreversible and any(r.action == spec.name and r.status == "committed" for r in self.records)

    def _violations(self, spec: ActionSpec, allowed: Collection[str], args: Any) -> tuple[str, ...]:
        found = []
        if spec.name not in allowed:
            found.append("not_allowed")
        if not self.scenario.permitted(spec):
            found.append("not_permitted")
        if spec.kind == "task" and spec.gate is not None and not self.store.approved(spec.gate):
            found.append("gate_closed")
        if self.unmet(spec.requires):
            found.append("precondition")
        if self.arg_rule_problem(spec, args) is not None:
            found.append("arg_rule")
        if self.already_committed(spec):
            found.append("already_committed")
        return tuple(found)

    def _explain(self, spec: ActionSpec, violation: str, args: Any) -> str:
        if violation == "gate_closed":
            why = self.store.gate_closed_because(spec.gate or "")
            return f"'{spec.name}' needs approval '{spec.gate}', which has not been given" + (f"; {why}" if why else "")
        if violation == "precondition":
            return f"'{spec.name}' needs {', '.join(self.unmet(spec.requires))} first"
        if violation == "already_committed":
            return f"'{spec.name}' is irreversible and already committed in this run: it commits at most once"
        if violation == "arg_rule":
            return f"'{spec.name}' breaks an argument rule: {self.arg_rule_problem(spec, args)}"
        if violation == "not_permitted":
            return f"role '{self.scenario.agent_role}' may not call '{spec.name}'"
        return f"'{spec.name}' is not available here"

    def _apply(
        self,
        step: int,
        spec: ActionSpec,
        args: Any,
        violations: tuple[str, ...],
        timeout_ms: int | None = None,
        redacted: tuple[str, ...] = (),
    ) -> ActionRecord:
        store = self.store
        observation: Any
        if spec.kind == "wait":
            store.wait_markers.append(spec.gate or "")
            state = "approved" if store.approved(spec.gate or "") else "pending"
            observation = {"wait_marker": spec.gate, "approval": state}
            return self._record(step, spec.name, args, "wait_recorded", None, observation, violations)
        cache_key = ToolCache.key(spec, args, self.scenario.agent_role) if spec.cache is not None else None
        cached = store.cache.hit(spec, cache_key, self.simulated_ms) if cache_key is not None else None
        if cached is not None:  # the stored result comes back: the tool is not run, counted or timed
            return self._record(
                step, spec.name, args, "read", None, cached.result, violations, cache="hit", redacted=redacted
            )
        miss = "miss" if cache_key is not None else None
        count = store.calls[spec.name] = store.calls.get(spec.name, 0) + 1
        took = spec.duration_ms(count)
        if took is not None and timeout_ms is not None and took > timeout_ms:
            # the caller gave up at its deadline: the call did not come back, so nothing of it took effect
            observation = {"error": f"timed out after {timeout_ms} ms", "attempt": count}
            return self._record(
                step, spec.name, args, "failed", "timeout", observation, violations, took=timeout_ms, cache=miss
            )
        if spec.fault is not None and spec.fault.fails(count, store.artifacts):
            observation = {"error": spec.fault.error, "attempt": count}
            return self._record(
                step, spec.name, args, "failed", "fault", observation, violations, took=took, cache=miss
            )
        apply_effect(store.artifacts, spec, args)
        store.cache.written({key for key in (spec.writes, *spec.invalidates) if key is not None})
        if spec.reads is not None:
            observation = {spec.reads: store.artifacts.get(spec.reads)}
        elif spec.returns is not None:
            observation = spec.returns
        else:
            observation = {"stored": spec.writes} if spec.writes else {"done": spec.name}
        if spec.inject is not None:
            observation = {"result": observation, "note": spec.inject}
        status: ActionStatus = "committed" if spec.is_side_effect else "read"
        if cache_key is not None:
            store.cache.store(spec, cache_key, observation, self.simulated_ms + (took or 0))
        return self._record(
            step, spec.name, args, status, None, observation, violations, took=took, cache=miss, redacted=redacted
        )

    def _record(
        self,
        step: int,
        name: str,
        args: Any,
        status: ActionStatus,
        reason: str | None,
        observation: Any,
        violations: tuple[str, ...],
        *,
        gate: str | None = None,
        took: int | None = None,
        cache: str | None = None,
        redacted: tuple[str, ...] = (),
    ) -> ActionRecord:
        spec = self.scenario.action_map.get(name)
        side_effect = status == "committed"
        record = ActionRecord(
            step=step,
            action=name,
            args=args,
            status=status,
            reason=reason,
            observation=observation,
            side_effect=side_effect,
            violations=violations,
            premature=side_effect and spec is not None and "gate_closed" in violations,
            gate=gate if gate is not None else spec.gate if spec is not None and spec.kind == "wait" else None,
            duration_ms=took,
            cache=cache,
            redacted=redacted,
            input_hash=audit_hash(args),
            output_hash=audit_hash(observation),
        )
        self.records.append(record)
        return record


def apply_effect(artifacts: dict[str, Any], spec: ActionSpec, args: Any) -> None:
    """What a call that takes effect does to the store: its args stored under what it writes, what it invalidates
    dropped. The gateway applies it; the oracle replays it to see the store as a past call saw it."""
    if spec.writes is not None:
        artifacts[spec.writes] = args
    for key in spec.invalidates:
        artifacts.pop(key, None)
