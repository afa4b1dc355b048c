"""The Ray driver's bookkeeping, without Ray: one result per unit, a lost unit written as an infrastructure error
the report does not judge, and a worker of another version told apart in a few words."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness.matrix.executors.ray_executor import BatchDone, Fingerprint, RayStats
from harness.matrix.executors.unit_batch import WorkerSetup
from harness.matrix.executors.unit_ledger import UnitLedger, lost_unit
from harness.matrix.pipeline.exit_status import RunEnds
from harness.matrix.pipeline.spec import RunSpec
from harness.models.choice import choose
from harness.models.config import LiveOptions
from harness.scenario.load import load_all
from tests.helpers.bench import SCENARIOS


def test_a_second_result_for_a_unit_is_dropped_and_counted_while_its_batch_is_in_flight_twice():
    ledger = UnitLedger()
    ledger.sent(7)
    ledger.sent(7)  # lost (as far as the driver knew), sent again
    assert ledger.first(7, "a") and ledger.first(7, "b")
    ledger.settled(7)
    assert not ledger.first(7, "a")
    ledger.settled(7)
    assert ledger.duplicates == 1
    ledger.sent(8)
    assert ledger.first(8, "a")  # another batch's unit is its own


def test_a_lost_unit_is_written_as_a_run_an_infrastructure_error_ended(tmp_path: Path):
    scenario = load_all(SCENARIOS)["refund_amount"]
    setup = WorkerSetup(
        folder=tmp_path,
        model=choose("scripted:random"),
        options=LiveOptions(),
        concurrency=1,
        seed=0,
        gateway_policy="enforce",
        approver=None,
        scenarios=(scenario,),
        with_events=False,
        driver_pid=os.getpid(),
        label="scripted:random",
    )
    unit = lost_unit(setup, ("refund_amount", "react", 2), "Ray lost this unit's task 3 times; last: NodeDiedError")
    events = [json.loads(line) for line in unit.lines.decode().splitlines()]
    assert [e["kind"] for e in events] == ["run_start", "error", "summary"]
    assert {e["run_id"] for e in events} == {unit.run_id}
    assert "lost this unit's task 3 times" in events[1]["error"]["message"]
    ends = RunEnds()
    ends.add_outcome(events[-1]["outcome"])
    assert ends.runs == 1 and ends.infrastructure == {"internal": 1}


def test_a_fingerprint_names_what_differs_and_ignores_an_unknown_commit():
    driver = Fingerprint("0.1.0", "abc", "p1", (("refund_amount", "d1"),))
    assert driver.mismatch(driver) is None
    assert driver.mismatch(Fingerprint("0.1.0", None, "p1", (("refund_amount", "d1"),))) is None
    assert "bench 0.1.0 on the driver, 0.2.0" in (driver.mismatch(Fingerprint("0.2.0", "abc", "p1", ())) or "")
    assert "modes' code p1" in (driver.mismatch(Fingerprint("0.1.0", "abc", "p2", ())) or "")
    assert "scenario refund_amount" in (
        driver.mismatch(Fingerprint("0.1.0", "abc", "p1", (("refund_amount", "x"),))) or ""
    )


def test_ray_takes_live_and_local_models_and_refuses_an_address_without_the_executor_in_one_line():
    env = {"LLM_API_URL": "http://x", "LLM_MODEL": "m", "LLM_API_KEY": "k"}
    assert RunSpec.build(model="live", executor="ray", env=env).executor == "ray"
    assert RunSpec.build(model="local", executor="ray").executor == "ray"
    with pytest.raises(UserInputError, match=r"^--ray-address needs --executor ray$"):
        RunSpec.build(model="scripted:random", ray_address="ray://head:10001")


def test_each_step_down_the_tasks_clients_learnt_is_kept_once_with_the_last_error():
    step = {"what": "token_param", "before": "max_tokens", "after": "max_completion_tokens"}
    other = {"what": "tool_choice", "before": "required", "after": "auto"}
    stats = RayStats()
    stats.learnt(BatchDone([], {"adaptations": [step]}, "HTTP 500"))
    stats.learnt(BatchDone([], {"adaptations": [step, other]}, None))
    stats.learnt(BatchDone([], None, None))
    assert stats.facts["adaptations"] == [step, other]
    assert stats.last_error == "HTTP 500"
