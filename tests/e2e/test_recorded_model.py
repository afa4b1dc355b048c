"""The committed recording of the real local model.

It replays offline with no drift, and ``bench run`` defaults to it.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.matrix.commands.recorded_replay import replay
from harness.matrix.pipeline.driver import Matrix, run
from harness.matrix.pipeline.spec import RunSpec
from harness.models import RECORDED_MODEL
from harness.models.recording import RECORDING_FILE
from harness.records.trace import read_events
from harness.scenario.load import load_all
from tests.helpers.bench import ROOT, SCENARIOS
from tests.helpers.throwaway import throwaway_mode


def test_committed_recording_is_there_and_real():
    manifest = json.loads((RECORDED_MODEL / "manifest.json").read_text())
    assert (
        manifest["model_source"] == "live"
        and manifest["live"]["local_model"] is True
        and manifest["status"] == "complete"
    )
    assert manifest["model"] == "smollm2-135m"
    calls = [e for e in read_events(RECORDED_MODEL / "traces.jsonl") if e.kind == "model_call"]
    assert calls and all(e.latency_ms > 0 and e.usage.total_tokens > 0 for e in calls)  # real usage, real latency
    assert (RECORDED_MODEL / RECORDING_FILE).stat().st_size > 0


RECORDINGS = sorted(p.parent for p in RECORDED_MODEL.parent.glob(f"*/{RECORDING_FILE}"))


def test_the_audit_recording_is_committed_too():
    assert RECORDED_MODEL in RECORDINGS and RECORDED_MODEL.with_name("smollm2-135m-audit") in RECORDINGS
    audit = json.loads((RECORDED_MODEL.with_name("smollm2-135m-audit") / "manifest.json").read_text())
    assert audit["gateway_policy"] == "audit" and audit["model_source"] == "live"


@pytest.mark.slow
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_committed_recording_replays_without_drift(recording, tmp_path):
    """Fails when a prompt, a mode, a scenario or the parsing changed since the recording: re-record (README)."""
    result = CliRunner().invoke(app, ["replay", str(recording), "--out", str(tmp_path / "replay")])
    assert result.exit_code == 0, result.output
    assert "every run's events and outcome match the recording" in result.output


class _Planned(Exception):
    """Stops a replay once its matrix is planned: the plan is what is checked, not hundreds of runs."""

    def __init__(self, matrix: Matrix):
        self.matrix = matrix


def _stop(matrix: Matrix) -> None:
    raise _Planned(matrix)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_a_mode_the_recording_does_not_hold_is_left_out_not_an_error(recording, tmp_path):
    """Each recording is compared with its own manifest: a mode registered since it was made is not replayed (no
    miss, no drift), so adding a mode never forces a re-recording; re-recording stays a deliberate act."""
    manifest = json.loads((recording / "manifest.json").read_text())
    held = (manifest["modes"], manifest["scenarios"], manifest["trials"])
    with throwaway_mode(tmp_path, hard_gate=False) as name:
        with pytest.raises(_Planned) as ran:  # bench run --model replay:DIR
            run(RunSpec(model=f"replay:{recording}", out=tmp_path / "run"), on_plan=_stop)
        with pytest.raises(_Planned) as replayed:  # bench replay DIR
            replay(recording, out=tmp_path / "replay", on_plan=_stop)
    for matrix in (ran.value.matrix, replayed.value.matrix):
        assert name not in matrix.modes
        assert (matrix.modes, [s.id for s in matrix.scenarios], matrix.trials) == held


def test_bench_run_without_a_model_replays_the_committed_recording(tmp_path):
    out = tmp_path / "default"
    result = CliRunner().invoke(app, ["run", "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    recorded = json.loads((RECORDED_MODEL / "manifest.json").read_text())
    assert manifest["model_source"] == "replay" and manifest["replay_of"] == str(RECORDED_MODEL)
    assert manifest["model"] == "smollm2-135m"
    assert (manifest["modes"], manifest["trials"], manifest["seed"]) == (
        recorded["modes"],
        recorded["trials"],
        recorded["seed"],
    )
    events = list(read_events(out / "traces.jsonl"))
    assert not [e for e in events if e.error is not None and e.error.kind == "replay_miss"]
    assert (
        sum(e.kind == "summary" for e in events)
        == len(recorded["modes"]) * len(manifest["scenarios"]) * recorded["trials"]
    )


REQUIRE_WHOLE_LIBRARY = "BENCH_REQUIRE_RECORDED"  # .ci/run sets it: in CI a story without its recording fails


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name)
def test_every_story_of_the_library_is_in_the_committed_recording(recording):
    """The main job and the findings speak for the whole library only if the recording holds every story. A story
    just written is a warning on a developer's machine (record it through the committed recording: only its
    requests reach the model, docs/live-models.md) and a failure in CI, where main must be recorded whole."""
    manifest = json.loads((recording / "manifest.json").read_text())
    missing = sorted(set(load_all(SCENARIOS)) - set(manifest["scenarios"]))
    if not missing:
        return
    message = (
        f"{recording.name} does not hold {', '.join(missing)}: bench run --mode all --scenario all --model local "
        f"--gateway {manifest['gateway_policy']} --trials {manifest['trials']} "
        f"--record-through {recording.relative_to(ROOT)} --out NEW, then replace the folder with NEW"
    )
    if os.environ.get(REQUIRE_WHOLE_LIBRARY):
        pytest.fail(message)
    warnings.warn(message, stacklevel=1)
