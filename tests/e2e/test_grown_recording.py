"""Record-through against a real local endpoint: a grown matrix asks only its new story, and the result replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.models.recording import RECORDING_FILE, RecordEntry
from harness.records.trace import read_records
from tests.helpers.bench import bench_main
from tests.helpers.fault_server import FaultServer

MODES = "workflow,react"
OLD_STORY, NEW_STORY = "blog_brief_approval", "refund_confirmation"


def _live(monkeypatch, capsys, server: FaultServer, out: Path, scenarios: str, *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("LLM_API_URL", server.base_url)
    monkeypatch.setenv("LLM_MODEL", "fault-model")
    monkeypatch.setenv("LLM_API_KEY", "sk-record-through-test")
    code, _out, err = bench_main(
        monkeypatch, capsys, "run", "--live", "--mode", MODES, "--scenario", scenarios, "--trials", "2",
        "--seed", "3", "--out", str(out), *extra,
    )  # fmt: skip
    return code, err


@pytest.fixture
def recorded(tmp_path, monkeypatch, capsys) -> tuple[Path, int]:
    """A recording of the old story, and how many requests it asked the endpoint."""
    with FaultServer(["ok"]) as server:
        code, err = _live(monkeypatch, capsys, server, tmp_path / "old", OLD_STORY)
    assert code == 0, err
    return tmp_path / "old", server.served["ok"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_adding_a_story_asks_only_its_requests_and_the_result_replays_exactly(
    recorded, tmp_path, monkeypatch, capsys, workers
):
    old, asked_before = recorded
    new = tmp_path / "new"
    with FaultServer(["ok"]) as server:
        code, err = _live(
            monkeypatch, capsys, server, new, f"{OLD_STORY},{NEW_STORY}", "--record-through", str(old),
            "--workers", workers,
        )  # fmt: skip
    assert code == 0, err

    lines = list(read_records(new / RECORDING_FILE, RecordEntry))
    served = [line for line in lines if line.served_from is not None]
    asked = [line for line in lines if line.served_from is None]
    assert len(served) == asked_before and {line.scenario for line in served} == {OLD_STORY}
    assert asked and {line.scenario for line in asked} == {NEW_STORY}
    assert server.served["ok"] == len(asked)  # the endpoint saw the new story's requests and nothing else
    assert all(line.provenance is not None and line.provenance.recorded_at for line in lines)
    counts = json.loads((new / "manifest.json").read_text())["live"]["record_through"]
    assert counts == {"from": str(old.resolve()), "served": asked_before, "asked": len(asked)}

    code, out, err = bench_main(monkeypatch, capsys, "replay", str(new), "--out", str(tmp_path / "again"))
    assert code == 0, out + err


@pytest.mark.slow
def test_a_changed_prompt_is_asked_again(recorded, tmp_path, monkeypatch, capsys):
    """A story file edited so its task text changes: its requests hash differently, so every one is asked."""
    old, asked_before = recorded
    stories = tmp_path / "stories"
    stories.mkdir()
    source = Path(__file__).resolve().parents[2] / "scenarios" / f"{OLD_STORY}.yaml"
    text = source.read_text(encoding="utf-8")
    edited = text.replace("Write a technical blog post", "Write a short technical blog post", 1)
    (stories / source.name).write_text(edited, encoding="utf-8")
    with FaultServer(["ok"]) as server:
        code, err = _live(
            monkeypatch, capsys, server, tmp_path / "edited", OLD_STORY, "--record-through", str(old),
            "--scenarios-dir", str(stories),
        )  # fmt: skip
    assert code == 0, err
    assert server.served["ok"] >= asked_before
    counts = json.loads((tmp_path / "edited" / "manifest.json").read_text())["live"]["record_through"]
    assert counts["served"] == 0 and counts["asked"] == server.served["ok"]


@pytest.mark.slow
def test_two_recordings_grown_apart_serve_one_matrix_that_asks_nothing_new(recorded, tmp_path, monkeypatch, capsys):
    """`--record-through` twice: the old story from one recording, the new story from another; nothing is asked,
    the manifest names both folders, and the result replays exactly."""
    old, _asked = recorded
    with FaultServer(["ok"]) as server:
        code, err = _live(monkeypatch, capsys, server, tmp_path / "other", NEW_STORY)
    assert code == 0, err
    with FaultServer(["ok"]) as server:
        code, err = _live(
            monkeypatch, capsys, server, tmp_path / "both", f"{OLD_STORY},{NEW_STORY}",
            "--record-through", str(tmp_path / "other"), "--record-through", str(old),
        )  # fmt: skip
    assert code == 0, err
    assert server.served["ok"] == 0
    counts = json.loads((tmp_path / "both" / "manifest.json").read_text())["live"]["record_through"]
    assert counts["from"] == [str((tmp_path / "other").resolve()), str(old.resolve())] and counts["asked"] == 0
    lines = list(read_records(tmp_path / "both" / RECORDING_FILE, RecordEntry))
    assert {line.scenario for line in lines if line.served_from == str(old.resolve())} == {OLD_STORY}
    code, out, err = bench_main(monkeypatch, capsys, "replay", str(tmp_path / "both"), "--out", str(tmp_path / "r"))
    assert code == 0, out + err
