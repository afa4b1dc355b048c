"""The plumbing under runtime adapters (a mode a real agent framework runs): a state folder per run inside the run
folder, the mode groups, a framework that is not installed refused before anything runs, the frameworks' versions in
the manifest and their telemetry off, the gateway's state kept in the checkpoint of a stop and rebuilt from it.

The adapter here is a fake with no framework (tests/helpers/fake_runtime.py); bench resume of it in a new process is
tests/e2e/test_runtime_resume.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.core.clock import FakeClock
from harness.core.context import RunInfo, RunTrace
from harness.core.gateway import Gateway
from harness.core.store import VirtualStore
from harness.errors import UserInputError
from harness.matrix.cell.frameworks import ready_modes
from harness.matrix.cell.runtime_resume import rebuilt_gateway, restore_trace
from harness.matrix.commands.catalog import catalog
from harness.records.checkpoint import CheckpointStore, content_digest
from harness.records.folder import RUNTIME_DIR, foreign_files
from harness.records.trace import read_events
from harness.scenario.load import load_all
from modes import MODES, select_modes
from modes.base import is_runtime
from modes.runtimes.base import RuntimeMode, telemetry_off
from tests.helpers.bench import SCENARIOS, bench_main
from tests.helpers.fake_runtime import MISSING_NAME, NAME, STATE, FakeRuntime, fake_runtimes
from tests.helpers.registries import restored

BLOG = "blog_brief_approval"


TELEMETRY = telemetry_off()  # every registered adapter's own switches, merged


@pytest.fixture
def fake() -> Iterator[str]:
    with fake_runtimes() as name:
        yield name


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The telemetry switches as an unconfigured shell has them; restored after the test."""
    for name in TELEMETRY:
        monkeypatch.delenv(name, raising=False)


def suspended_run(folder: Path, mode: str = NAME) -> tuple[Path, str]:
    result = run(RunSpec(modes=[mode], scenarios=[BLOG], model="scripted:reference", out=folder))
    (run_id,) = CheckpointStore(result.folder).run_ids()
    return result.folder, run_id


def test_a_fresh_run_keeps_its_framework_state_in_its_own_folder_of_the_run_folder(fake, quiet_env, tmp_path):
    folder, run_id = suspended_run(tmp_path / "run")
    state = folder / RUNTIME_DIR / run_id / STATE
    assert state.is_file()  # the adapter wrote where bench pointed it: runtime/<run id>/ in the run folder
    assert json.loads(state.read_text())["step"] == 2  # stopped at the brief's approval, step 2
    assert foreign_files(folder) == []  # the frameworks' state is the run's: --replace may delete it


def test_a_run_without_a_run_folder_has_no_state_folder(fake):
    seen: list[Path | None] = []

    class Probe(FakeRuntime):
        async def run(self, ctx):  # type: ignore[no-untyped-def]
            seen.append(ctx.state_dir)
            return await super().run(ctx)

    from tests.helpers.bench import run_offline

    with restored(MODES):
        MODES.add("probe_runtime", Probe)
        _, outcomes = run_offline(load_all(SCENARIOS)[BLOG], ["probe_runtime"], "reference")
    assert seen == [None] and outcomes[0].status == "suspended"  # the fake keeps its state in memory then


def test_all_is_bench_s_own_modes_and_runtimes_every_adapter(fake):
    own = select_modes(["all"])
    adapters = select_modes(["runtimes"])
    assert own == select_modes([])  # no --mode: bench's own modes, as before there were adapters
    assert NAME in adapters and MISSING_NAME in adapters
    assert not any(is_runtime(MODES[name]) for name in own)
    assert all(is_runtime(MODES[name]) for name in adapters)
    assert set(own) | set(adapters) == set(MODES)
    assert select_modes(["all", "runtimes", NAME]) == own + adapters  # a mode named twice runs once
    assert select_modes([NAME, "react"]) == [NAME, "react"]  # named adapters, in the order given


def test_an_adapter_whose_framework_is_missing_is_refused_before_anything_runs_naming_its_extra(
    fake, monkeypatch, capsys, tmp_path
):
    with pytest.raises(UserInputError, match=r"pip install -e '\.\[no-such-extra\]'"):
        ready_modes([MISSING_NAME])
    out = tmp_path / "run"
    code, _, stderr = bench_main(
        monkeypatch, capsys, "run", "--mode", f"react,{MISSING_NAME}", "--scenario", BLOG, "--model",
        "scripted:reference", "--out", str(out),
    )  # fmt: skip
    assert code == 2
    assert stderr.count("\n") == 1 and "no-such-extra" in stderr and MISSING_NAME in stderr
    assert not out.exists()  # refused before the folder was taken


def test_the_manifest_records_the_versions_of_the_frameworks_in_the_matrix(fake, quiet_env, tmp_path):
    folder, _ = suspended_run(tmp_path / "with")
    versions = json.loads((folder / "manifest.json").read_text())["versions"]
    assert versions["pytest"] == metadata.version("pytest")  # the fake adapter's "framework" distribution
    plain = run(RunSpec(modes=["react"], scenarios=[BLOG], model="scripted:reference", out=tmp_path / "without"))
    assert "pytest" not in json.loads((plain.folder / "manifest.json").read_text())["versions"]


def test_selecting_an_adapter_turns_every_framework_s_telemetry_off(fake, quiet_env):
    import os

    ready_modes(["react"])
    assert not any(name in os.environ for name in TELEMETRY)  # bench's own modes leave the environment alone
    ready_modes([NAME])
    assert {name: os.environ.get(name) for name in TELEMETRY} == TELEMETRY


def test_each_adapter_owns_its_telemetry_switches_and_the_runner_merges_them():
    adapters = [cls for cls in MODES.values() if issubclass(cls, RuntimeMode)]
    assert {name: value for cls in adapters for name, value in cls.telemetry_off} == TELEMETRY
    assert dict(MODES["openai_agents"].telemetry_off) == {"OPENAI_AGENTS_DISABLE_TRACING": "1"}
    assert {"LANGSMITH_TRACING", "OPENAI_AGENTS_DISABLE_TRACING", "PYDANTIC_AI_NO_BANNER"} <= set(TELEMETRY)


def test_bench_list_shows_each_adapter_with_its_framework_and_whether_it_is_installed(fake):
    rows = {row[0]: row for row in catalog().runtimes}
    assert rows[NAME][2:] == ("pytest (bench[fake-runtime])", "yes")
    assert rows[MISSING_NAME][3] == "no: pip install -e '.[no-such-extra]'"
    assert not {row[0] for row in catalog().modes} & set(rows)  # the main table is bench's own modes


def test_an_adapter_s_stop_keeps_the_gateway_state_its_resume_rebuilds(fake, quiet_env, tmp_path):
    folder, run_id = suspended_run(tmp_path / "run")
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None and checkpoint.runtime is not None
    events = [e for e in read_events(folder / "traces.jsonl") if e.run_id == run_id]
    actions = [e for e in events if e.kind == "action"]
    state = checkpoint.runtime
    assert [(r.action, r.status) for r in state.records] == [(e.action, e.result) for e in actions]
    assert state.last_step == events[-2].step and events[-2].kind == "suspend"  # where the decision's event goes
    assert state.llm_calls == sum(e.kind == "model_call" for e in events) == events[-1].outcome.llm_calls

    scenario = load_all(SCENARIOS)[BLOG]
    fresh = Gateway(scenario, VirtualStore.for_scenario(scenario), "enforce")
    gateway = rebuilt_gateway(scenario, checkpoint, fresh)
    assert [(r.action, r.status, r.step) for r in gateway.records] == [(e.action, e.result, e.step) for e in actions]
    assert gateway.store.has("brief") and not gateway.store.approved("brief_approval")
    from harness.matrix.cell.restore import store_snapshot

    assert content_digest(store_snapshot(gateway)) == content_digest(checkpoint.store)
    trace = RunTrace(lambda event: None, RunInfo(run_id, BLOG, NAME, "m", 1), FakeClock())
    restore_trace(trace, checkpoint)
    assert (trace.seq, trace.last_step, trace.llm_calls) == (checkpoint.next_seq, state.last_step, state.llm_calls)


def test_a_built_in_mode_s_stop_keeps_its_checkpoint_as_before(quiet_env, tmp_path):
    folder, run_id = suspended_run(tmp_path / "run", "workflow")
    checkpoint = CheckpointStore(folder).load(run_id)
    assert checkpoint is not None and checkpoint.runtime is None  # replayed on resume, as ever
    assert "runtime" not in checkpoint.model_dump_json(exclude_none=True)
    assert not (folder / RUNTIME_DIR).exists()  # created only by a framework that writes there
