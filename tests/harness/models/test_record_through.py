"""Record-through: what an earlier recording holds is served, only the misses reach the model, and both are written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.core.clock import SystemClock
from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.errors import UserInputError
from harness.models.exchange import Exchange, model_time_ms
from harness.models.record_through import RecordThrough
from harness.models.recording import RECORDING_FILE, RecordEntry, RecordingModel, request_hash, served_counts
from harness.records.manifest import LiveManifest, Manifest
from harness.records.trace import ErrorInfo, TraceWriter

LABEL = "smollm2-135m"


def _request(step: int, text: str) -> ModelRequest:
    return ModelRequest(
        purpose="next_action",
        messages=({"role": "user", "content": text},),
        response_schema={"type": "object"},
        offered=("finish",),
        view=PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=5),
        meta=RequestMeta(scenario="blog_brief_approval", mode="react", step=step, trial=1),
    )


def _answer(text: str, latency_ms: float = 250.0) -> Exchange:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}], "usage": {"total_tokens": 7}}
    return Exchange(request={"messages": []}, response=body, latency_ms=latency_ms)


def _entry(request: ModelRequest, exchange: Exchange, occurrence: int = 0, model: str = LABEL) -> RecordEntry:
    meta = request.meta
    return RecordEntry(
        scenario=meta.scenario,
        mode=meta.mode,
        trial=meta.trial,
        step=meta.step,
        purpose=request.purpose,
        request_hash=request_hash(request),
        occurrence=occurrence,
        model=model,
        exchange=exchange,
    )


def _recording(folder: Path, entries: list[RecordEntry], temperature: float = 0.7) -> Path:
    folder.mkdir(parents=True)
    Manifest(
        modes=["react"],
        scenarios=["blog_brief_approval"],
        model=LABEL,
        model_source="live",
        trials=1,
        seed=0,
        gateway_policy="enforce",
        concurrency=1,
        start_time="2026-12-01T00:00:00+00:00",
        bench_commit="abc123",
        live=LiveManifest(endpoint="http://127.0.0.1:1/v1", sampling={"temperature": temperature, "max_tokens": 512}),
    ).write(folder)
    with TraceWriter(folder / RECORDING_FILE) as writer:
        for entry in entries:
            writer.write(entry)
    return folder


class CountingModel:
    """A live model stand-in that answers every request it is asked and counts them."""

    label = LABEL

    def __init__(self) -> None:
        self.asked: list[ModelRequest] = []

    async def exchange(self, request: ModelRequest) -> Exchange:
        self.asked.append(request)
        return _answer('{"action": "finish"}', latency_ms=5.0)


def _complete(model: RecordingModel, *requests: ModelRequest) -> None:
    async def ask() -> None:
        for request in requests:
            await model.complete(request)

    asyncio.run(ask())


def test_a_recorded_request_is_served_and_only_the_miss_reaches_the_model(tmp_path):
    first, second = _request(1, "brief"), _request(2, "draft")
    old = _recording(tmp_path / "old", [_entry(first, _answer('{"action": "finish"}'))])
    through = RecordThrough.load((old,), LABEL, {"temperature": 0.7, "max_tokens": 512})
    inner, lines = CountingModel(), []
    model = RecordingModel(inner, lines.append, through=through)

    _complete(model, first, second)

    assert inner.asked == [second]
    assert [line.served_from for line in lines] == [str(old), None]
    assert lines[0].provenance is not None and lines[0].provenance.bench_commit == "abc123"  # from the old manifest
    assert lines[1].provenance is not None and lines[1].provenance.recorded_at  # asked now, stamped now
    assert model.model_ms == pytest.approx(model_time_ms(lines[0].exchange))


def test_several_recordings_serve_together_and_the_first_named_answers_a_request_both_hold(tmp_path):
    """Two recordings grown apart (an old one and a newer one of other stories or trials) serve one matrix: each
    request from the folder that holds it, the first named winning, and only what neither holds is asked."""
    shared, only_old, only_new, neither = (_request(step, words) for step, words in enumerate("abcd", start=1))
    old = _recording(tmp_path / "old", [_entry(shared, _answer('{"old": 1}')), _entry(only_old, _answer("{}"))])
    new = _recording(tmp_path / "new", [_entry(shared, _answer('{"new": 1}')), _entry(only_new, _answer("{}"))])
    inner, lines = CountingModel(), []
    model = RecordingModel(inner, lines.append, through=RecordThrough.load((new, old), LABEL))

    _complete(model, shared, only_old, only_new, neither)

    assert inner.asked == [neither]
    assert [line.served_from for line in lines] == [str(new), str(old), str(new), None]
    assert lines[0].exchange.response["choices"][0]["message"]["content"] == '{"new": 1}'


def test_a_repeat_beyond_what_was_recorded_is_asked(tmp_path):
    request = _request(1, "same words")
    old = _recording(tmp_path / "old", [_entry(request, _answer('{"action": "finish"}'), occurrence=0)])
    inner = CountingModel()
    model = RecordingModel(inner, lambda entry: None, through=RecordThrough.load((old,), LABEL))

    _complete(model, request, request)

    assert len(inner.asked) == 1  # the second occurrence was never recorded


def test_a_changed_prompt_is_a_miss(tmp_path):
    old = _recording(tmp_path / "old", [_entry(_request(1, "old words"), _answer("{}"))])
    inner = CountingModel()
    model = RecordingModel(inner, lambda entry: None, through=RecordThrough.load((old,), LABEL))

    _complete(model, _request(1, "new words"))

    assert len(inner.asked) == 1


def test_a_recorded_failure_is_asked_again_not_served(tmp_path):
    request = _request(1, "brief")
    failed = Exchange(request={}, error=ErrorInfo(kind="timeout", message="read timed out"))
    old = _recording(tmp_path / "old", [_entry(request, failed)])
    inner = CountingModel()
    model = RecordingModel(inner, lambda entry: None, through=RecordThrough.load((old,), LABEL))

    _complete(model, request)

    assert inner.asked == [request]


def test_another_models_recording_is_refused_in_one_line(tmp_path):
    old = _recording(tmp_path / "old", [_entry(_request(1, "brief"), _answer("{}"))])

    with pytest.raises(UserInputError, match="recorded smollm2-135m, this run asks gpt-x") as refused:
        RecordThrough.load((old,), "gpt-x")
    assert "\n" not in str(refused.value)


def test_a_recording_with_other_sampling_is_refused(tmp_path):
    old = _recording(tmp_path / "old", [_entry(_request(1, "brief"), _answer("{}"))], temperature=0.0)

    with pytest.raises(UserInputError, match=r"temperature 0\.0, this run asks temperature 0\.7"):
        RecordThrough.load((old,), LABEL, {"temperature": 0.7})


def test_a_folder_without_a_recording_is_refused(tmp_path):
    with pytest.raises(UserInputError, match=r"no recording\.jsonl there"):
        RecordThrough.load((tmp_path,), LABEL)


def test_served_and_asked_are_counted_from_the_recording_file(tmp_path):
    request = _request(1, "brief")
    old = _recording(tmp_path / "old", [_entry(request, _answer("{}"))])
    path = tmp_path / "new.jsonl"
    with TraceWriter(path) as writer:
        model = RecordingModel(CountingModel(), writer.write, through=RecordThrough.load((old,), LABEL))
        _complete(model, request, _request(2, "draft"), _request(3, "post"))

    assert served_counts(path) == {LABEL: (1, 2)}


def test_without_record_through_a_live_run_keeps_the_matrix_clock():
    clock = SystemClock()
    assert RecordingModel(CountingModel(), lambda entry: None).run_clock(clock) is clock
