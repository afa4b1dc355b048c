"""What each mode's own control flow lets through with nothing behind it (an auditing gateway), shown directly on
scenarios written here rather than read off a recording: a mode that declares ``hard_gate`` never commits a gated
action before its approval, whatever the policy proposes; a mode that declares ``naive`` does, when the policy goes
for the gate. Which modes are which is read from their classes (tests/helpers/mode_checks.py)."""

from __future__ import annotations

import pytest

from modes.base import MODES
from tests.helpers.mode_checks import (
    HARD_GATE_POLICIES,
    STORIES,
    check_declares_itself,
    check_hard_gate_under_audit,
    check_naive_commits_early_unless_enforced,
    hard_gate_modes,
    naive_modes,
)


@pytest.mark.parametrize("story", sorted(STORIES))
@pytest.mark.parametrize("mode", hard_gate_modes())
@pytest.mark.parametrize("policy", HARD_GATE_POLICIES)
def test_a_hard_gate_mode_never_commits_a_premature_side_effect_under_audit(mode, story, policy):
    check_hard_gate_under_audit(mode, story, policy)


@pytest.mark.parametrize("mode", naive_modes())
def test_a_naive_mode_commits_the_gated_action_early_when_nothing_blocks_it(mode):
    check_naive_commits_early_unless_enforced(mode)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_declares_itself_without_contradiction(mode):
    check_declares_itself(mode)


def test_both_kinds_are_declared_by_the_modes_themselves():
    """Guards the parametrisations above: read from the classes, neither list is empty, and they never overlap."""
    assert hard_gate_modes() and naive_modes() and not set(hard_gate_modes()) & set(naive_modes())
    assert {"workflow", "react_guardrails", "plan_validated"} <= set(hard_gate_modes())
    assert {"react", "plan_execute"} <= set(naive_modes())
