"""A mode that exists for one test: written as a module file in a temporary folder, imported so that ``@mode``
registers it, unregistered afterwards. It proves that a new mode needs nothing but its own file."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path

from modes import MODES

NAME = "throwaway"
# A mode file as an author writes one: the model picks each next action; as a hard gate, an unapproved gated action
# first asks for its approval and a recorded wait suspends the run, so nothing gated commits before its approval.
SOURCE = '''
"""A throwaway mode: the model picks each next action{gate_doc}."""

from __future__ import annotations

from harness.core import ModeResult, RunContext
from modes.base import Mode, mode
from modes.prompting import observation_line, system_message, user_message
from modes.proposals import next_action_schema, read_step

INSTRUCTIONS = "You are a throwaway agent. Choose exactly one next action from the list; choose finish when done."
ANSWER = '{{"step": {{"action": "<one action name>", "args": {{<arguments of that action>}}}}}}'


@mode("{name}")
class Throwaway(Mode):
    summary = "A test's throwaway mode: the model picks each next action{gate_doc}."
    decides = "the model"
    visible = "all actions"
    stopper = "{stopper}"
    spectrum = 11
    hard_gate = {hard_gate}
    naive = {naive}

    async def run(self, ctx: RunContext) -> ModeResult:
        scenario = ctx.scenario
        offered = [spec.name for spec in scenario.actions]
        system = system_message(scenario, INSTRUCTIONS, scenario.actions, ANSWER)
        schema = next_action_schema(scenario.actions)
        observations: list[str] = []
        for step in range(1, ctx.limits.max_steps + 1):
            messages = [system, user_message(observations, "Choose the next action.")]
            proposal = read_step((await ctx.propose("next_action", messages, schema, offered, step=step)).proposal)
            if proposal.action == scenario.finish_action.name:
                ctx.decide(step, "runtime", proposal.action, "run_finished")
                return ModeResult("finished")
            spec = scenario.action_map.get(proposal.action)
            gate = spec.gate if spec is not None and spec.kind == "task" else None
            if self.hard_gate and gate is not None and not ctx.approved(gate):
                record = ctx.request_approval(gate, step=step, for_action=proposal.action)
            else:
                record = ctx.act(proposal.action, proposal.args, allowed=offered, step=step)
            observations.append(observation_line(record))
            if self.hard_gate and record.status == "wait_recorded" and record.gate and not ctx.approved(record.gate):
                ctx.suspend(step, "runtime", record.gate)
        ctx.decide(ctx.limits.max_steps, "runtime", None, "step_limit")
        return ModeResult("step_limit")
'''
_modules = count(1)


def mode_source(*, hard_gate: bool) -> str:
    """The throwaway mode's file: a hard gate, or naive (only the gateway blocks)."""
    return SOURCE.format(
        name=NAME,
        hard_gate=hard_gate,
        naive=not hard_gate,
        gate_doc="; an unapproved gate suspends the run" if hard_gate else "",
        stopper="the runtime, at every unapproved gate" if hard_gate else "only the model's finish, or the step limit",
    )


@contextmanager
def throwaway_mode(folder: Path, *, hard_gate: bool) -> Iterator[str]:
    """Writes the throwaway mode into ``folder``, imports it (it registers itself), yields its name, unregisters it."""
    path = folder / "throwaway_mode.py"
    path.write_text(mode_source(hard_gate=hard_gate), encoding="utf-8")
    module_name = f"throwaway_mode_{next(_modules)}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        assert NAME in MODES
        yield NAME
    finally:
        MODES.remove(NAME)
        sys.modules.pop(module_name, None)
