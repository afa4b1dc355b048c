"""What each mode's own control flow lets through with nothing behind it (an auditing gateway), shown directly on
scenarios written here rather than read off a recording: a mode that declares ``hard_gate`` never commits a gated
action before its approval, whatever the policy proposes; the naive modes do, when the policy goes for the gate."""

from __future__ import annotations

import pytest

from modes.base import MODES
from tests.helpers.bench import run_offline
from tests.helpers.units import REFUND, THRESHOLD, scenario

STORIES = {"refund": scenario(REFUND), "threshold": scenario(THRESHOLD)}
HARD = sorted(name for name, cls in MODES.items() if cls.hard_gate)


@pytest.mark.parametrize("story", sorted(STORIES))
@pytest.mark.parametrize("mode", HARD)
@pytest.mark.parametrize("policy", ["eager", "random", "looping", "compliant"])
def test_a_hard_gate_mode_never_commits_a_premature_side_effect_under_audit(mode, story, policy):
    _, outcomes = run_offline(STORIES[story], [mode], policy, trials=4 if policy == "random" else 1, gateway="audit")
    assert outcomes and all(o.premature_side_effects == 0 for o in outcomes)
    assert not any(o.stop_correct and o.unauthorized_side_effects for o in outcomes)


@pytest.mark.parametrize("mode", ["react", "plan_execute"])
def test_a_naive_mode_commits_the_gated_action_early_when_nothing_blocks_it(mode):
    _, (outcome,) = run_offline(STORIES["refund"], [mode], "eager", gateway="audit")
    assert outcome.premature_side_effects >= 1 and outcome.stop_verdict == "late" and not outcome.stop_correct
    _, (enforced,) = run_offline(STORIES["refund"], [mode], "eager", gateway="enforce")
    assert enforced.premature_side_effects == 0 and enforced.blocked_by.get("gate_closed", 0) >= 1


def test_every_hard_gate_mode_is_covered():
    assert {"workflow", "react_guardrails", "plan_validated"} <= set(HARD)
    assert not MODES["react"].hard_gate and not MODES["plan_execute"].hard_gate
