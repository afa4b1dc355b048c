"""The replay comparison on traces made here: a run that differs only in its outcome, or in one event's field,
is a divergence; ids, timestamps and the run's wall time are not."""

from __future__ import annotations

from harness.matrix.commands.trace_diff import Divergence, by_run, compare_runs, compare_traces, normalised
from harness.records.trace import TraceEvent
from tests.helpers.report_fixtures import Call, Run


def run(run_id="a", **facts) -> list[TraceEvent]:
    facts = {"calls": [Call(12.0, 3, 4, "note")], "actions": [("note", "committed")], **facts}
    return Run(run_id, "react", **facts).events()


def edited(events: list[TraceEvent], index: int, **changes) -> list[TraceEvent]:
    out = list(events)
    out[index] = out[index].model_copy(update=changes)
    return out


def outcome_edited(events: list[TraceEvent], **changes) -> list[TraceEvent]:
    summary = events[-1]
    assert summary.kind == "summary" and summary.outcome is not None
    return edited(events, len(events) - 1, outcome=summary.outcome.model_copy(update=changes))


def test_the_same_run_with_other_ids_times_and_wall_time_does_not_diverge():
    recorded = run("a")
    replayed = [e.model_copy(update={"run_id": "b", "ts": "2030-01-01T00:00:00.000+00:00"}) for e in recorded]
    replayed = outcome_edited(replayed, wall_ms=999.0)
    replayed = edited(replayed, len(replayed) - 1, latency_ms=999.0)
    key = ("blog_brief_approval", "react", 1)
    assert compare_runs(recorded, replayed, key) is None
    assert compare_traces(recorded, replayed) == []


def test_a_run_that_differs_only_in_its_outcome_diverges_at_its_summary():
    recorded = run()
    replayed = outcome_edited(recorded, stop_verdict="late", stop_correct=False)
    (found,) = compare_traces(recorded, replayed)
    assert found.run == ("blog_brief_approval", "react", 1)
    assert found.seq == len(recorded) - 1 and found.fields == ("outcome",)
    # only the outcome's keys that differ are shown, so the changed verdict is never cut off
    assert found.recorded.endswith('outcome={"stop_correct": true, "stop_verdict": "correct"}')
    assert found.replayed.endswith('outcome={"stop_correct": false, "stop_verdict": "late"}')


def test_an_outcome_counter_alone_is_a_divergence():
    recorded = run()
    assert compare_traces(recorded, outcome_edited(recorded, premature_side_effects=1))


def test_a_model_calls_latency_is_compared_in_a_replay():
    recorded = run()
    index = next(i for i, e in enumerate(recorded) if e.kind == "model_call")
    (found,) = compare_traces(recorded, edited(recorded, index, latency_ms=13.0))
    assert (found.seq, found.fields) == (index, ("latency_ms",))
    assert found.recorded.endswith("latency_ms=12.0") and found.replayed.endswith("latency_ms=13.0")


def test_the_first_differing_event_is_named_with_every_field_that_differs():
    recorded = run()
    index = next(i for i, e in enumerate(recorded) if e.kind == "action")
    (found,) = compare_traces(recorded, edited(recorded, index, result="blocked", step=9))
    assert found.seq == index and found.fields == ("step", "result")
    assert found.recorded.startswith("action decision_maker=gateway action=note result=committed")
    assert "result=blocked" in found.replayed and "step=9" in found.replayed


def test_a_replay_that_ends_earlier_or_goes_on_longer_diverges_on_presence():
    recorded = run()
    shorter = compare_runs(recorded, recorded[:-1], ("s", "m", 1))
    assert shorter is not None and (shorter.seq, shorter.fields) == (len(recorded) - 1, ("presence",))
    assert shorter.replayed == "(no event: the run ended earlier)" and shorter.recorded.startswith("summary")
    longer = compare_runs(recorded[:-1], recorded, ("s", "m", 1))
    assert longer is not None and longer.recorded == "(no event: the run ended earlier)"


def test_runs_only_one_side_has_are_divergences():
    a, b = run("a"), Run("b", "react", trial=2).events()
    found = compare_traces(a, b)
    assert [(d.run, d.seq, d.recorded, d.replayed) for d in found] == [
        (("blog_brief_approval", "react", 1), None, "recorded", "not replayed"),
        (("blog_brief_approval", "react", 2), None, "not recorded", "replayed"),
    ]


def test_events_are_grouped_by_run_and_ordered_by_seq():
    events = run("a") + Run("b", "workflow").events()
    grouped = by_run(list(reversed(events)))
    assert set(grouped) == {("blog_brief_approval", "react", 1), ("blog_brief_approval", "workflow", 1)}
    assert [e.seq for e in grouped[("blog_brief_approval", "react", 1)]] == list(range(len(run())))


def test_normalised_drops_only_ids_times_and_the_summarys_wall_time():
    recorded = run()
    data = normalised(recorded[1])
    assert "run_id" not in data and "ts" not in data and data["seq"] == 1
    summary = normalised(recorded[-1])
    assert summary["latency_ms"] is None and summary["outcome"]["wall_ms"] is None
    assert summary["outcome"]["stop_verdict"] == "correct"


def test_a_divergence_describes_where_and_what():
    d = Divergence(("s", "m", 3), 4, ("result",), "action result=a", "action result=b")
    assert (
        d.describe()
        == "s / m / trial 3: event 4 differs in result\n    recorded: action result=a\n    replayed: action result=b"
    )
    whole = Divergence(("s", "m", 3), None, (), "recorded", "not replayed")
    assert whole.describe() == "s / m / trial 3: recorded vs not replayed"


def test_a_long_value_is_cut_in_the_description():
    recorded = run()
    index = next(i for i, e in enumerate(recorded) if e.kind == "action")
    (found,) = compare_traces(recorded, edited(recorded, index, args={"text": "x" * 500}))
    assert found.fields == ("args",) and found.replayed.endswith("...") and len(found.replayed) < 300


def test_an_error_is_shown_with_its_kind_and_message():
    recorded = Run("a", "react", status="error", stop_correct=False, ending_error="parse").events()
    index = next(i for i, e in enumerate(recorded) if e.kind == "error")
    changed = edited(recorded, index, step=7)
    (found,) = compare_traces(recorded, changed)
    assert "error=parse: ended" in found.recorded


def with_hashes(events: list[TraceEvent], value: str) -> list[TraceEvent]:
    """The gateway lines given audit hashes (as a replay made after the hashes existed writes them)."""
    return [
        e.model_copy(update={"detail": {**(e.detail or {}), "input_hash": value, "output_hash": value}})
        if e.kind == "action"
        else e
        for e in events
    ]


def test_audit_hashes_only_the_replay_has_are_not_drift():
    recorded = run()
    assert any(e.kind == "action" for e in recorded)
    assert compare_traces(recorded, with_hashes(recorded, "sha256:aa")) == []


def test_audit_hashes_both_sides_have_are_compared():
    recorded = with_hashes(run(), "sha256:aa")
    (divergence,) = compare_traces(recorded, with_hashes(run(), "sha256:bb"))
    assert divergence.fields == ("detail",) and "input_hash" in divergence.recorded
