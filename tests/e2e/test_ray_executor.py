"""The Ray executor on a two-node cluster started here: the same traces and report tables as the local executors,
every cell exactly once when a node is removed mid-matrix, a --resume that runs only what is missing, a worker
running another bench refused in one line, and a live model's matrix (its recording written by the driver) that
replays.

One cluster for the module (two nodes of one CPU each, a small object store, no dashboard), so the file stays
within a couple of minutes on 2 busy cores.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray executor needs the [ray] extra (pip install 'bench[ray]')")

from ray.cluster_utils import Cluster  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from harness import RunSpec, run  # noqa: E402
from harness.cli.app import app  # noqa: E402
from harness.errors import UserInputError  # noqa: E402
from harness.matrix.executors import ray_executor  # noqa: E402
from harness.models.recording import RecordEntry  # noqa: E402
from harness.records.manifest import read_manifest  # noqa: E402
from harness.records.trace import read_events  # noqa: E402
from reports.report import metrics_for  # noqa: E402
from reports.tables import to_csv, verdicts_table  # noqa: E402
from tests.helpers.bench import without_time  # noqa: E402
from tests.helpers.fault_server import FaultServer  # noqa: E402

MATRIX = {
    "model": "scripted:random",
    "modes": ("react", "workflow", "plan_execute"),
    "scenarios": ("blog_brief_approval", "refund_amount", "refund_confirmation"),
    "trials": 3,
}
NODE = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024}


@pytest.fixture(scope="module")
def cluster() -> Any:
    """A head node and one worker node, and this process connected as the driver."""
    started = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    started.add_node(**NODE)
    started.wait_for_nodes()
    ray.init(address=started.address, logging_level=logging.ERROR, log_to_driver=False)
    yield started
    ray.shutdown()
    started.shutdown()


def summaries(folder: Path) -> Counter[str]:
    """How many summary lines each run id has."""
    events = map(json.loads, (folder / "traces.jsonl").read_text().splitlines())
    return Counter(e["run_id"] for e in events if e["kind"] == "summary")


def verdicts(folder: Path) -> str:
    return to_csv(verdicts_table(metrics_for([folder])[1]))


def run_matrix(folder: Path, **changes: Any) -> Any:
    return run(RunSpec(**MATRIX | {"out": folder} | changes))


@pytest.mark.slow
def test_ray_gives_the_same_traces_and_report_tables_as_one_process_and_two_workers(cluster, tmp_path):
    one = run_matrix(tmp_path / "one", workers=1).folder
    two = run_matrix(tmp_path / "two", workers=2).folder
    result = run_matrix(tmp_path / "ray", executor="ray")
    assert result.manifest.status == "complete" and result.manifest.executor == "ray"
    assert without_time(one) == without_time(two) == without_time(result.folder)
    assert verdicts(one) == verdicts(two) == verdicts(result.folder)
    assert set(summaries(result.folder).values()) == {1} and len(summaries(result.folder)) == 27


@pytest.mark.slow
def test_a_node_removed_mid_matrix_leaves_every_cell_exactly_once(cluster, tmp_path, monkeypatch):
    spare = cluster.add_node(**NODE)  # the node to lose: the module's others stay for the next tests
    cluster.wait_for_nodes()
    spare_id, started = spare.node_id, tmp_path / "a task started on the spare node"
    real = ray_executor.run_ray_batch

    def held_on_spare(order: Any, keys: Any) -> Any:
        """Runs on the workers (pickled by value): a task on the spare node waits there until the node is gone; the
        other nodes' tasks wait until it has one (else they could end the matrix before the spare node starts)."""
        if ray.get_runtime_context().get_node_id() == spare_id:
            started.touch()
            time.sleep(120)
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return real(order, keys)

    lost: list[str] = []
    answer = ray_executor._answer

    def watched(ray_module: Any, reference: Any, batch: Any) -> Any:
        got = answer(ray_module, reference, batch)
        if got is None:
            lost.append(batch.last_error)
        return got

    monkeypatch.setattr(ray_executor, "run_ray_batch", held_on_spare)
    monkeypatch.setattr(ray_executor, "_answer", watched)
    monkeypatch.setattr(ray_executor, "BATCH_UNITS", 4)
    written = Counter[str]()

    def on_done(cell: Any, outcome: Any) -> None:
        written["units"] += 1
        if written["units"] == 1:  # the spare node holds a task by now: it is lost with the node
            cluster.remove_node(spare, allow_graceful=False)

    result = run(RunSpec(**MATRIX | {"out": tmp_path / "lost", "executor": "ray"}), on_done=on_done)
    whole = run_matrix(tmp_path / "whole", workers=1).folder
    assert result.manifest.status == "complete"
    assert lost and "NodeDiedError" in lost[0]  # the spare node's batch was lost, and sent again
    assert set(summaries(result.folder).values()) == {1} and len(summaries(result.folder)) == 27
    assert without_time(result.folder) == without_time(whole)
    assert read_manifest(result.folder).duplicate_units == 0


@pytest.mark.slow
def test_resume_on_ray_runs_only_the_missing_cells(cluster, tmp_path):
    whole = run_matrix(tmp_path / "whole", workers=1).folder
    folder = run_matrix(tmp_path / "cut", workers=1).folder
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    kept_runs = {json.loads(line)["run_id"] for line in lines[: len(lines) // 3]}
    (folder / "traces.jsonl").write_text("".join(line for line in lines if json.loads(line)["run_id"] in kept_runs))
    manifest = json.loads((folder / "manifest.json").read_text()) | {"status": "interrupted"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    result = run(RunSpec(resume=folder, executor="ray"))
    assert result.manifest.status == "complete" and result.manifest.continued == 1
    assert without_time(folder) == without_time(whole)


@pytest.mark.slow
def test_a_worker_running_another_bench_is_refused_in_one_line(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_executor, "_code_fingerprint", lambda: ("0.0.0-other", None, None))  # the driver's
    with pytest.raises(UserInputError, match=r"^--executor ray: node \w+ runs another version \(bench 0.0.0-other"):
        run_matrix(tmp_path / "refused", executor="ray")
    assert not (tmp_path / "refused").exists()  # no run was written: the folder the run made is removed


@pytest.mark.slow
def test_a_live_model_on_ray_is_judged_as_in_one_process_and_its_recording_replays(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_executor, "BATCH_UNITS", 1)  # a task a unit: both nodes' tasks ask the endpoint
    key = "sk-ray-MARKER-51c2"
    live = {"modes": ("react", "workflow"), "scenarios": ("blog_brief_approval", "refund_amount"), "trials": 1}
    with FaultServer(["ok"], delay_s=0.05) as server:
        env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": key}

        def live_run(name: str, **changes: Any) -> Any:
            spec = RunSpec.build(env=env, model="live", concurrency=2, out=tmp_path / name, **live | changes)  # type: ignore[arg-type]
            return run(spec)

        one = live_run("one", workers=1)
        result = live_run("ray", executor="ray")
    assert result.manifest.status == "complete" and result.manifest.executor == "ray"
    assert server.max_in_flight <= 2  # --concurrency bounds the requests of every task together
    assert without_time(result.folder) == without_time(one.folder)
    assert verdicts(result.folder) == verdicts(one.folder)
    entries = [RecordEntry.model_validate_json(line) for line in (result.folder / "recording.jsonl").open()]
    events = read_events(result.folder / "traces.jsonl")
    calls = [(e.scenario, e.mode, e.trial) for e in events if e.kind == "model_call"]
    assert calls and sorted((e.scenario, e.mode, e.trial) for e in entries) == sorted(calls)
    assert key not in (result.folder / "recording.jsonl").read_text()
    ray_live, one_live = read_manifest(result.folder).live, read_manifest(one.folder).live
    assert ray_live is not None and one_live is not None
    assert ray_live.model_dump() == one_live.model_dump()  # the same server: the same facts, the global bound
    replay = CliRunner().invoke(app, ["replay", str(result.folder), "--out", str(tmp_path / "again")])
    assert replay.exit_code == 0, replay.output


def server_running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.local_model
def test_the_local_model_on_ray_asks_a_server_on_each_node_and_its_recording_replays(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_executor, "BATCH_UNITS", 1)  # a task a unit: both nodes' servers are asked
    local = {"model": "local", "modes": ("workflow",), "scenarios": ("blog_brief_approval",), "trials": 2}
    result = run(RunSpec(**local | {"out": tmp_path / "ray", "executor": "ray", "concurrency": 2}))  # type: ignore[arg-type]
    assert result.manifest.status == "complete" and result.manifest.executor == "ray"
    live = read_manifest(result.folder).live
    assert live is not None and live.local_model and live.model_dump()["ray_model_servers"] == 2
    events = list(read_events(result.folder / "traces.jsonl"))
    calls = [e for e in events if e.kind == "model_call"]
    assert calls and {e.model for e in events} == {"smollm2-135m"}
    assert all(e.usage.completion_tokens > 0 for e in calls)  # a real model answered on each node
    assert not [e for e in events if e.kind == "error" and e.error.kind in ("network", "timeout", "http_5xx")]
    assert set(summaries(result.folder).values()) == {1} and len(summaries(result.folder)) == 2
    entries = (result.folder / "recording.jsonl").read_text().splitlines()
    assert len(entries) == len(calls)
    replay = CliRunner().invoke(app, ["replay", str(result.folder), "--out", str(tmp_path / "again")])
    assert replay.exit_code == 0, replay.output


@pytest.mark.local_model
def test_a_model_server_dies_with_its_actor_and_every_server_stops_with_the_matrix(cluster):
    from harness.matrix.executors.ray_model_servers import node_model_servers
    from harness.models.config import LiveOptions
    from tests.helpers.bench import wait_for

    with node_model_servers(ray, LiveOptions(), 2) as servers:
        pids = dict(servers.pids)
        assert len(pids) == 2 and all(map(server_running, pids.values()))
        (lost, lost_pid), (kept, kept_pid) = pids.items()
        ray.kill(servers.actors[lost], no_restart=True)  # as Ray does with a node's actors when the node dies
        wait_for(lambda: not server_running(lost_pid), 30, "the killed actor's server to end")
        assert server_running(kept_pid)
        assert servers.forget_dead(ray) == [lost] and servers.pick() == kept
    wait_for(lambda: not server_running(kept_pid), 30, "the last server to stop with the matrix")


@pytest.mark.local_model
def test_a_model_server_that_does_not_come_up_stops_the_matrix_in_one_line(cluster, monkeypatch):
    from harness.matrix.executors import ray_model_servers
    from harness.models.config import LiveOptions

    # no time at all: the wait ends before its first look (a small positive time once let a first look reach a
    # server another test had started on the same port, which answered)
    monkeypatch.setattr(ray_model_servers, "STARTUP_TIMEOUT_S", 0.0)
    with (
        pytest.raises(UserInputError, match=r"^--executor ray: the model server on node \w+: .*did not answer within"),
        ray_model_servers.node_model_servers(ray, LiveOptions(), 1),
    ):
        pass
