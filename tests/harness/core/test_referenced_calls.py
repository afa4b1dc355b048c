"""Rules that read an earlier call read the calls that took effect, a bound the latest of them: a referenced action
called twice with different values bounds by its latest value, and a blocked call is never taken for one that took
effect, by the gateway's order rules (requires) and by the oracle's value rules alike (the two bugs once planted by
hand). The gateway's own argument rules are shown so in test_order_and_once_rules.py."""

from __future__ import annotations

from typing import Any

from harness.core.gateway import Gateway
from harness.core.outcome import ModeResult, judge
from harness.core.store import VirtualStore
from harness.records.trace import RunOutcome, Usage
from tests.harness.core.test_order_and_once_rules import LEDGER
from tests.helpers.units import scenario

# The ledger, whose oracle also requires the correction to stay within the latest limit set.
BOUNDED = scenario(
    LEDGER.replace(
        "  reference_path: [read_ledger, finish]\n",
        "  reference_path: [read_ledger, finish]\n"
        "  required_artifacts:\n"
        "    - {path: correction.amount, at_most: {action: set_limit, arg: limit}}\n",
    )
)


def judged(steps: list[tuple[str, dict[str, Any]]], policy: str = "enforce") -> tuple[Gateway, RunOutcome]:
    gateway = Gateway(BOUNDED, VirtualStore.for_scenario(BOUNDED), policy)  # type: ignore[arg-type]
    everything = [a.name for a in BOUNDED.actions]
    for number, (name, args) in enumerate(steps, start=1):
        gateway.execute(name, args, allowed=everything, step=number)
    outcome = judge(BOUNDED, gateway, ModeResult("finished"), llm_calls=0, usage=Usage(), wall_ms=0.0, errors={})
    return gateway, outcome


READ = ("read_ledger", {})


def test_an_oracle_bound_from_an_action_called_twice_is_its_latest_value_not_its_first():
    """Under audit the correction commits (80: under the first limit, over the latest); the oracle reads the latest."""
    _, outcome = judged(
        [READ, ("set_limit", {"limit": 100}), ("set_limit", {"limit": 50}), ("post_correction", {"amount": 80})],
        "audit",
    )
    assert "wrong_value:correction.amount=80" in outcome.violations
    _, outcome = judged(
        [READ, ("set_limit", {"limit": 50}), ("set_limit", {"limit": 100}), ("post_correction", {"amount": 80})],
        "audit",
    )
    assert not any(v.startswith("wrong_value:") for v in outcome.violations)


def test_an_oracle_bound_never_reads_a_blocked_call():
    """The second limit is blocked (not a number): the limit that took effect is still 100."""
    gateway, outcome = judged(
        [READ, ("set_limit", {"limit": 100}), ("set_limit", {"limit": "fifty"}), ("post_correction", {"amount": 80})]
    )
    assert [r.status for r in gateway.records if r.action == "set_limit"] == ["committed", "blocked"]
    assert gateway.records[-1].status == "committed"
    assert not any(v.startswith("wrong_value:") for v in outcome.violations)


def test_an_order_rule_is_not_met_by_a_blocked_call_of_the_action_it_names():
    ledger = scenario(
        LEDGER.replace(
            "    irreversible: true\n", "    irreversible: true\n    requires: [{action: archive_partition}]\n"
        )
    )
    gateway = Gateway(ledger, VirtualStore.for_scenario(ledger), "enforce")
    everything = [a.name for a in ledger.actions]
    archive = gateway.execute("archive_partition", {"partition": "p1"}, allowed=everything, step=1)
    assert archive.status == "blocked"  # its ledger export is missing
    drop = gateway.execute("drop_partition", {"partition": "p1"}, allowed=everything, step=2)
    assert (drop.status, drop.reason) == ("blocked", "precondition")
    assert "a call of archive_partition that took place" in drop.observation["detail"]
