"""The ``openai_agents`` mode keeps one saved run state a stop: a resume killed after it saved its next stop, before
its trace said so, is carried out again from the stop its decision belongs to. (The crash sweep,
scripts/runtime_crashes.py, found it: with one file, overwritten at the next stop, the next ``bench resume`` found no
paused call at the decided gate and the run ended in an error, its approval lost.)
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version

import pytest

pytest.importorskip("agents")

from harness.core import HumanDecision
from harness.models.scripted import ScriptedSource
from modes.runtimes.openai_agents import OpenAIAgents
from modes.runtimes.openai_agents_sdk import STATE_FILE, state_file
from tests.modes.runtimes.test_openai_agents import (
    PINNED,
    carried,
    committed,
    fresh_context_after,
    judged,
    run_mode,
    scripted_ctx,
    story,
)


def test_a_resume_that_saved_its_next_stop_is_carried_out_again_from_the_stop_its_decision_belongs_to(tmp_path):
    ctx, _ = scripted_ctx(story("blog_two_gates"), "eager", state_dir=tmp_path)
    stopped = run_mode(ctx)  # eager calls write_draft at once: the SDK pauses it for the synopsis' approval
    assert (stopped.status, stopped.suspended_at) == ("suspended", "synopsis_approval")
    approve = HumanDecision(gate="synopsis_approval", decision="approve", who="tester")
    killed = fresh_context_after(ctx, approve, ScriptedSource("eager").for_run(0))
    reached = judged(killed, asyncio.run(carried(OpenAIAgents().resume(killed, approve))))
    assert (reached.status, reached.suspended_at) == ("suspended", "publish_approval")
    assert (tmp_path / STATE_FILE).is_file() and (tmp_path / state_file(1)).is_file()  # each stop its own state
    # killed there: what it did is the run's, its decision is carried out again, from the first stop's state
    again = fresh_context_after(killed, None, ScriptedSource("eager").for_run(0))
    outcome = judged(again, asyncio.run(carried(OpenAIAgents().resume(again, approve))))
    assert (outcome.status, outcome.suspended_at) == ("suspended", "publish_approval")
    if version("openai-agents") == PINNED:  # the SDK's state does not know the approved call ran: it runs it again
        assert committed(again, "write_draft") == 2 and outcome.repeated_side_effects == 1
