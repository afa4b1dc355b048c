"""A runtime adapter with no framework, for the plumbing's tests: it keeps its own state in ``ctx.state_dir`` as a
framework would, stops at a gate through ``ctx.suspend`` and, once approved, commits the call it held back in
``resume``. It counts how often bench called ``run`` and ``resume``, and what the gateway held when it resumed.

``python -m tests.helpers.fake_runtime ARGS`` is ``bench ARGS`` with these modes registered (a new process, as a
user's ``bench resume`` is); ``--serve`` makes it a kill-sweep driver that knows them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.core import HumanDecision, ModeResult, RunContext
from modes import MODES
from modes.base import mode
from modes.prompting import observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step
from modes.runtimes.base import RuntimeMode

NAME = "fake_runtime"
MISSING_NAME = "fake_missing_runtime"
STATE = "fake_state.json"  # where the fake "framework" keeps its position: the step it stopped at, the held call
CALLS = "fake_calls.json"  # how often bench called run and resume, and what the gateway held at each resume
INSTRUCTIONS = "You are a test agent. Choose exactly one next action from the list; choose finish when done."
ANSWER = '{"step": {"action": "<one action name>", "args": {<arguments of that action>}}}'


class FakeRuntime(RuntimeMode):
    summary = "A test's framework-less runtime adapter: holds a gated call back until approved."
    decides = "the model"
    visible = "all actions"
    stopper = "the adapter, at every unapproved gate"
    spectrum = 99
    hard_gate = True
    framework = "json"  # always importable: the fake needs no extra
    extra = "fake-runtime"
    distributions = ("pytest",)

    async def drive(self, ctx: RunContext, decision: HumanDecision | None) -> ModeResult:
        if decision is None:
            _count(ctx, "run")
            return await self._loop(ctx, 1, [])
        assert ctx.state_dir is not None
        state = json.loads((ctx.state_dir / STATE).read_text(encoding="utf-8"))
        gateway = ctx.gateway
        seen = {"records": len(gateway.records), "artifacts": sorted(gateway.store.artifacts), "seq": ctx.trace.seq}
        _count(ctx, "resume", seen)
        return await self._after_stop(ctx, state, decision)

    async def _after_stop(self, ctx: RunContext, state: dict[str, Any], decision: HumanDecision) -> ModeResult:
        """The held-back call runs once its gate is open; sent back for a revision, the adapter asks again."""
        step, observations = state["step"], state["observations"]
        held = state.get("held")
        if decision.decision == "revise":
            for_action = held["action"] if held is not None else None
            record = ctx.request_approval(decision.gate, step=step + 1, for_action=for_action)
            return await self._stop(ctx, step + 1, record, held, [*observations, observation_line(record)])
        if held is not None:
            record = ctx.act(held["action"], held["args"], allowed=_offered(ctx), step=step)
            observations.append(observation_line(record))
        return await self._loop(ctx, step + 1, observations)

    async def _stop(
        self, ctx: RunContext, step: int, record: Any, held: dict[str, Any] | None, observations: list[str]
    ) -> ModeResult:
        """Saves the adapter's position (its "framework's" own checkpoint), then stops at the gate."""
        state = {"step": step, "held": held, "observations": observations}
        _write(ctx, STATE, state)
        decision = ctx.suspend(step, "framework", record.gate)
        return await self._after_stop(ctx, state, decision)

    async def _loop(self, ctx: RunContext, first: int, observations: list[str]) -> ModeResult:
        scenario = ctx.scenario
        offered = _offered(ctx)
        system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
        for step in range(first, ctx.limits.max_steps + 1):
            messages = [system, user_message(observations, "Choose the next action.")]
            reply = await ctx.propose("next_action", messages, next_action_schema(scenario.actions), offered, step=step)
            proposal = read_step(reply.proposal)
            if proposal.action == scenario.finish_action.name:
                ctx.decide(step, "framework", proposal.action, "run_finished")
                return ModeResult("finished")
            spec = scenario.action_map.get(proposal.action)
            gate = spec.gate if spec is not None else None
            held = None
            if spec is not None and spec.kind == "task" and gate is not None and not ctx.approved(gate):
                record = ctx.request_approval(gate, step=step, for_action=proposal.action)
                held = {"action": proposal.action, "args": proposal.args}
            else:
                record = ctx.act(proposal.action, proposal.args, allowed=offered, step=step)
            observations.append(observation_line(record))
            if record.status == "wait_recorded" and record.gate and not ctx.approved(record.gate):
                return await self._stop(ctx, step, record, held, observations)
        ctx.decide(ctx.limits.max_steps, "framework", None, "step_limit")
        return ModeResult("step_limit")


class FakeMissingRuntime(FakeRuntime):
    summary = "A test's runtime adapter whose framework is not installed."
    framework = "no_such_framework_for_bench_tests"
    extra = "no-such-extra"


def _offered(ctx: RunContext) -> list[str]:
    return [spec.name for spec in ctx.scenario.actions]


def _write(ctx: RunContext, name: str, value: Any) -> None:
    if ctx.state_dir is None:
        return
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    (ctx.state_dir / name).write_text(json.dumps(value), encoding="utf-8")


def _count(ctx: RunContext, call: str, seen: dict[str, Any] | None = None) -> None:
    if ctx.state_dir is None:
        return
    path = ctx.state_dir / CALLS
    calls = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"run": 0, "resume": 0, "seen": []}
    calls[call] += 1
    if seen is not None:
        calls["seen"].append(seen)
    _write(ctx, CALLS, calls)


def calls_of(folder: Path, run_id: str) -> dict[str, Any]:
    """What the fake counted for a run of ``folder``."""
    return json.loads((folder / "runtime" / run_id / CALLS).read_text(encoding="utf-8"))


def register() -> None:
    """Registers both fake modes (once)."""
    for name, cls in ((NAME, FakeRuntime), (MISSING_NAME, FakeMissingRuntime)):
        if name not in MODES:
            mode(name)(cls)


@contextmanager
def fake_runtimes() -> Iterator[str]:
    """Both fake modes registered for the length of a test; yields the working one's name."""
    register()
    try:
        yield NAME
    finally:
        MODES.remove(NAME)
        MODES.remove(MISSING_NAME)


if __name__ == "__main__":
    register()
    if sys.argv[1:] == ["--serve"]:  # a kill-sweep driver (tests/helpers/kill_sweep.py) that knows these modes
        from tests.helpers.kill_sweep import serve

        serve()
    else:
        from harness.cli.app import main

        main()
