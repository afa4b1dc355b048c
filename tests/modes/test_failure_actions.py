"""The workflow's failure contract beyond retry, fallback and return_error (seed 003): alert (a person is told and
the walk goes on along the declared path) and terminate (the run ends at once, failed closed, the reason in its
outcome); and a step's timeout_ms, a step failure like any other."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import yaml

from harness.core.model_port import ModelReply, ModelRequest
from harness.core.step_deadline import StepTimedOut, answer_within
from harness.records.trace import Usage
from tests.helpers.answers import Answers, mode_run
from tests.helpers.units import scenario

STORY = """
id: unit_contract
title: Unit failure contract
source: unit tests
task: Fetch, then report.
rules:
  - {id: report, text: Report what was fetched., precedence: 1, obeyed: true}
actions:
  - name: fetch
    description: Fetch the record (broken today).
    effect: read
    returns: {ok: true}
    fault: {fail_first: 100, error: "HTTP 404"}
  - {name: ask_person, description: Ask a person for the record., effect: read, returns: {ok: true}}
  - {name: slow_fetch, description: A slow fetch., effect: read, latency_ms: 1500, returns: {ok: true}}
  - name: report
    description: Write the report.
    effect: write
    writes: report
    args: {type: object, properties: {text: {type: string}}, required: [text]}
  - {name: finish, kind: finish, description: End the run.}
workflow:
  start: first
  nodes:
    - {id: first, type: action, action: fetch, next: write}
    - {id: ask, type: action, action: ask_person, next: write}
    - {id: write, type: model_step, action: report, next: done}
    - {id: done, type: end}
oracle:
  expected_stop: finished
  reference_path: [ask_person, {action: report, args: {text: done}}, finish]
"""

REPORT = {"text": "done"}


def story(first: dict[str, Any], write: dict[str, Any] | None = None):
    raw = yaml.safe_load(STORY)
    raw["workflow"]["nodes"][0] = {"id": "first", "type": first.pop("type", "action"), "next": "write", **first}
    if write is not None:
        raw["workflow"]["nodes"][2].update(write)
    return scenario(yaml.safe_dump(raw))


def kinds(events, kind: str):
    return [e for e in events if e.kind == kind]


def test_alert_tells_the_person_and_the_walk_goes_on_along_the_declared_path():
    s = story({"action": "fetch", "on_failure": {"alert": "oncall"}})
    outcome, events = mode_run(s, "workflow", REPORT)
    (alert,) = kinds(events, "alert")
    assert (alert.action, alert.detail["node"], alert.detail["then"]) == ("oncall", "first", "continue to write")
    assert "fetch failed" in alert.detail["reason"]
    assert next(e.result for e in kinds(events, "decision") if e.action == "write") == "continue_after_alert"
    assert outcome.status == "finished" and "report" in [e.action for e in kinds(events, "action")]


def test_alert_then_fallback_alerts_first_and_falls_back():
    s = story({"action": "fetch", "on_failure": {"retry": 1, "alert": "oncall", "fallback": "ask"}})
    outcome, events = mode_run(s, "workflow", REPORT)
    order = [(e.kind, e.result) for e in events if e.kind in ("alert", "decision") and e.result != "run_finished"]
    assert order == [("decision", "retry"), ("alert", "alerted"), ("decision", "fallback")]
    assert outcome.status == "finished"


def test_terminate_ends_the_run_at_once_failed_closed_with_the_reason_in_the_outcome():
    s = story({"action": "fetch", "on_failure": {"retry": 1, "terminate": "RECORDS_DOWN"}})
    outcome, events = mode_run(s, "workflow", REPORT)
    assert [e.result for e in kinds(events, "action")] == ["failed", "failed"]  # the retry, then nothing more
    assert outcome.status == "error" and outcome.stop_verdict == "failed_closed"
    assert outcome.terminated is not None and outcome.terminated.startswith("RECORDS_DOWN: fetch failed")
    assert not kinds(events, "model_call")


def test_an_action_slower_than_its_steps_timeout_fails_the_step_into_its_contract():
    s = story({"action": "slow_fetch", "timeout_ms": 800, "on_failure": {"fallback": "ask"}})
    outcome, events = mode_run(s, "workflow", REPORT)
    slow = next(e for e in kinds(events, "action") if e.action == "slow_fetch")
    assert (slow.result, slow.detail["reason"], slow.detail["duration_ms"]) == ("failed", "timeout", 800)
    assert "fallback" in [e.result for e in kinds(events, "decision")] and outcome.status == "finished"


def test_an_action_within_its_steps_timeout_is_not_cut_off():
    s = story({"action": "slow_fetch", "timeout_ms": 2000, "on_failure": {"fallback": "ask"}})
    outcome, events = mode_run(s, "workflow", REPORT)
    assert [e.result for e in kinds(events, "action") if e.action == "slow_fetch"] == ["read"]
    assert outcome.status == "finished" and "fallback" not in [e.result for e in kinds(events, "decision")]


class SlowLive(Answers):
    """A model answering on real time (not scripted, not a replay) that takes far longer than the step allows."""

    label = "live:slow"

    def for_run(self, seed: int) -> SlowLive:
        return self

    async def complete(self, request: ModelRequest) -> ModelReply:
        await asyncio.sleep(30)
        return await super().complete(request)


def test_a_live_models_answer_past_the_steps_timeout_fails_the_step():
    s = story({"action": "ask_person"}, write={"timeout_ms": 50, "on_failure": {"alert": "editor", "fallback": "done"}})
    outcome, events = mode_run(s, "workflow", model=SlowLive(REPORT))
    (alert,) = kinds(events, "alert")
    assert alert.detail["node"] == "write" and alert.detail["reason"].startswith("timeout: no answer from the model")
    assert not kinds(events, "model_call") and "report" not in [e.action for e in kinds(events, "action")]
    assert outcome.status == "finished"


class Recorded:
    """A replay's model: its answers took their time when recorded (it keeps model time)."""

    def __init__(self, label: str, latency_ms: float):
        self.label, self.latency_ms = label, latency_ms

    def run_clock(self, base):
        return base

    async def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(proposal={}, text="{}", usage=Usage(), latency_ms=self.latency_ms)


def test_a_replay_is_held_to_the_timeout_by_its_recorded_latency_and_a_scripted_policy_never_is():
    late = Recorded("SmolLM2", 900.0)
    with pytest.raises(StepTimedOut, match="900 ms when recorded"):
        asyncio.run(answer_within(late, late.complete(None), 800))  # type: ignore[arg-type]
    in_time = Recorded("SmolLM2", 700.0)
    assert asyncio.run(answer_within(in_time, in_time.complete(None), 800)).latency_ms == 700.0  # type: ignore[arg-type]
    scripted = Answers({})
    scripted.label = "scripted:eager"
    assert asyncio.run(answer_within(scripted, scripted.complete(None), 1)) is not None  # type: ignore[arg-type]
