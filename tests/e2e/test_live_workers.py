"""A live model in worker processes: one endpoint checked once, --concurrency bounding requests across workers, the
recording written by the driver with each unit, the manifest's live facts as one process writes them, and a replay
of the folder matching it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness import RunSpec, run
from harness.cli.app import app
from harness.models.recording import RecordEntry
from harness.records.manifest import read_manifest
from harness.records.trace import read_events
from tests.helpers.bench import without_time
from tests.helpers.fault_server import FaultServer
from tests.helpers.provider_servers import ProviderServer

KEY = "sk-workers-MARKER-7f3a"
MATRIX = {"modes": ("react", "workflow"), "scenarios": ("blog_brief_approval", "refund_amount"), "trials": 2}


def live_run(server: FaultServer, folder: Path, workers: int, concurrency: int) -> Path:
    env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": KEY}
    spec = RunSpec.build(env=env, model="live", workers=workers, concurrency=concurrency, out=folder, **MATRIX)  # type: ignore[arg-type]
    result = run(spec)
    assert result.manifest.status == "complete"
    return result.folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path, FaultServer]:
    """The same live matrix from one process and from two workers (four requests in flight, held until four are)."""
    root = tmp_path_factory.mktemp("live-workers")
    with FaultServer(["ok"]) as server:
        one = live_run(server, root / "one", workers=1, concurrency=4)
    with FaultServer(["ok"], hold_until=4) as server:
        two = live_run(server, root / "two", workers=2, concurrency=4)
    return one, two, server


@pytest.mark.slow
def test_two_live_workers_keep_every_request_within_the_global_concurrency(folders):
    _, _, server = folders
    assert server.max_in_flight == 4 and not server.held_too_long  # both workers' shares were in flight together


@pytest.mark.slow
def test_live_workers_write_the_same_traces_as_one_process(folders):
    one, two, _ = folders
    assert without_time(one) == without_time(two)
    assert read_manifest(two).workers == 2 and read_manifest(one).workers == 1


@pytest.mark.slow
def test_the_driver_writes_each_units_recording_with_it_and_never_the_key(folders):
    _, two, _ = folders
    entries = [RecordEntry.model_validate_json(line) for line in (two / "recording.jsonl").open()]
    calls = [(e.scenario, e.mode, e.trial) for e in read_events(two / "traces.jsonl") if e.kind == "model_call"]
    assert sorted((e.scenario, e.mode, e.trial) for e in entries) == sorted(calls)
    assert KEY not in (two / "recording.jsonl").read_text()


@pytest.mark.slow
def test_the_manifest_says_about_the_endpoint_what_one_process_says(folders):
    one, two, _ = folders
    live_one, live_two = read_manifest(one).live, read_manifest(two).live
    assert live_one is not None and live_two is not None
    differ = {"client", "endpoint"}  # each folder had its own server, on its own port
    assert live_two.model_dump(exclude=differ) == live_one.model_dump(exclude=differ)
    assert live_two.client == live_one.client  # the global bound, not a worker's share


@pytest.mark.slow
def test_bench_replay_of_a_folder_recorded_by_two_workers_matches_it(folders, tmp_path):
    _, two, _ = folders
    result = CliRunner().invoke(app, ["replay", str(two), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert "8 runs, every run's events and outcome match the recording" in result.output


@pytest.mark.slow
def test_each_step_down_the_workers_clients_learnt_is_in_the_manifest_once(tmp_path):
    env = {"LLM_API_URL": "", "LLM_MODEL": "o3-mini", "LLM_API_KEY": KEY}
    with ProviderServer("openai") as server:
        env["LLM_API_URL"] = server.base_url
        spec = RunSpec.build(
            env=env,
            model="live",
            workers=2,
            concurrency=2,
            out=tmp_path / "adapted",
            live={"provider": "generic", "disable_thinking": True, "retries": 0, "backoff_s": 0},
            **MATRIX,  # type: ignore[arg-type]
        )
        result = run(spec)
    assert result.manifest.status == "complete"
    live = read_manifest(result.folder).live
    assert live is not None
    adapted = [(a["what"], a["before"], a["after"]) for a in live.model_extra["adaptations"]]
    assert ("token_param", "max_tokens", "max_completion_tokens") in adapted
    assert len(adapted) == len(set(adapted)) == 3  # each once, though both workers' clients met each refusal


@pytest.mark.local_model
def test_local_model_workers_share_the_one_server_the_driver_started(tmp_path):
    from tests.e2e.test_local_model import llama_servers

    before = llama_servers()
    seen: list[int] = []
    spec = RunSpec(
        model="local", modes=("react",), scenarios=("blog_brief_approval",), trials=2, workers=2, concurrency=2
    )
    result = run(
        spec.model_copy(update={"out": tmp_path / "local"}),
        on_done=lambda cell, outcome: seen.append(len(llama_servers() - before)),
    )
    assert result.manifest.status == "complete" and result.manifest.workers == 2
    assert seen and set(seen) == {1}  # one server while the workers ran, never one each
    assert llama_servers() - before == set()
    live = read_manifest(result.folder).live
    assert live is not None and live.local_model
    replay = CliRunner().invoke(app, ["replay", str(result.folder), "--out", str(tmp_path / "again")])
    assert replay.exit_code == 0, replay.output
