"""Every example agent of examples/agents/ as a process, on three stories, with a model that waits and one that
pushes on, under an enforcing and an auditing gateway, next to the in-process adapters of the same frameworks:
every run judged, nothing gated committed early under enforce, and the model that waits stopped at the right gate
by every agent. Prints the table of verdicts (docs/agents.md shows it). The quick suite runs a sample (the plain
loop, one story); CI all of it (``BENCH_FULL_SWEEPS=1``, tests/helpers/sweeps.py)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from harness.matrix.pipeline.driver import RunSpec, run
from harness.records.trace import read_events
from modes.runtimes.process import register_process_agent
from tests.helpers.agent_examples import langgraph_agent, python_agent, typescript_agent
from tests.helpers.bench import bench_process
from tests.helpers.sweeps import FULL_SWEEPS

pytestmark = pytest.mark.agent_examples

STORIES = ("blog_brief_approval", "refund_confirmation", "blog_two_gates")
EXAMPLES = {  # each example, and the in-process adapter of its framework where there is one
    "plain loop (mcp + httpx)": (lambda: python_agent("plain_loop.py"), None),
    "Agents SDK": (lambda: python_agent("openai_agents_mcp.py"), "openai_agents"),
    "PydanticAI": (lambda: python_agent("pydantic_ai_mcp.py"), "pydantic_ai"),
    "LangGraph": (langgraph_agent, "langgraph_react"),
    "TypeScript": (typescript_agent, None),
}


# The quick suite runs the plain loop on the first story; CI (BENCH_FULL_SWEEPS=1) every example on all three.
STORIES_RUN = STORIES if FULL_SWEEPS else STORIES[:1]


@pytest.mark.slow
@pytest.mark.parametrize("example", list(EXAMPLES) if FULL_SWEEPS else list(EXAMPLES)[:1])
def test_an_example_agent_is_judged_and_commits_nothing_gated_early_under_enforce(example, tmp_path):
    command, adapter = EXAMPLES[example][0](), EXAMPLES[example][1]
    labels = {register_process_agent(f"agent:{command}", command): f"{example}, process"}
    if adapter is not None:
        labels[adapter] = f"{example}, in-process"
    verdicts: dict[tuple[str, str, str, str], str] = {}
    premature: dict[tuple[str, str], int] = defaultdict(int)
    for gateway in ("enforce", "audit"):
        spec = RunSpec(
            modes=tuple(labels), scenarios=STORIES_RUN, models=("scripted:reference", "scripted:eager"), trials=1,
            gateway=gateway, concurrency=4, workers=1, out=tmp_path / gateway,
        )  # fmt: skip
        for event in read_events(run(spec).traces):
            if event.outcome is not None:
                key = (labels[event.mode], event.scenario, event.model.removeprefix("scripted:"), gateway)
                verdicts[key] = event.outcome.stop_verdict
                premature[(labels[event.mode], gateway)] += event.outcome.premature_side_effects
    print(_table(verdicts, list(labels.values())))
    assert len(verdicts) == len(labels) * len(STORIES_RUN) * 2 * 2  # every run has its summary
    assert "infrastructure" not in verdicts.values()
    for label in labels.values():
        assert premature[(label, "enforce")] == 0, label
        for story in STORIES_RUN:  # the model that waits: every agent stops where the story says
            assert verdicts[(label, story, "reference", "enforce")] == "correct", (label, story)


def _table(verdicts: dict[tuple[str, str, str, str], str], labels: list[str]) -> str:
    columns = [(story, model, gateway) for story in STORIES_RUN for model in ("reference", "eager")
               for gateway in ("enforce", "audit")]  # fmt: skip
    head = ["agent", *(f"{s.split('_')[0]}…{s.split('_')[-1]} {m} {g}" for s, m, g in columns)]
    rows = [[label, *(verdicts.get((label, *column), "-") for column in columns)] for label in labels]
    widths = [max(len(str(row[i])) for row in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
                     for row in [head, *rows])  # fmt: skip


@pytest.mark.local_model
def test_the_typescript_agent_on_the_bundled_model_is_recorded_and_its_recording_replays(tmp_path):
    spec = f"agent:{typescript_agent()}"
    folder = tmp_path / "local"
    ran = bench_process(
        "run", "--mode", spec, "--scenario", "blog_brief_approval", "--model", "local", "--out", str(folder),
        timeout=900,
    )  # fmt: skip
    assert ran.returncode in (0, 1), ran.stderr  # 1: a run judged wrong; never a usage error
    events = list(read_events(folder / "traces.jsonl"))
    calls = [e for e in events if e.kind == "model_call"]
    assert calls and sum((e.usage.total_tokens if e.usage else 0) for e in calls) > 0  # tokens counted on bench's side
    assert (folder / "recording.jsonl").is_file()
    replayed = bench_process("replay", str(folder), "--out", str(tmp_path / "replayed"), timeout=600)
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]
