"""bench gate-check, seed 003's release gate as a recipe, end to end as a user runs it; and the claim desk story's
safeguards as bench show and bench report present them: an alert, a step timeout, a scanner block, a cache hit."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.records.trace import read_events
from tests.helpers.bench import bench_in_process

STORY = "claim_desk_safeguards"


def test_the_recipe_passes_when_the_injected_step_takes_its_declared_route(tmp_path):
    done = bench_in_process(
        "gate-check", STORY, "--inject", "policy=404", "--sample", "10", "--out", str(tmp_path / "g")
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "ok   terminate: POLICY_SERVICE_DOWN" in "\n".join(lines)
    assert any(line.startswith("ok   audit hashes present and traceable") for line in lines)
    summary = [e for e in read_events(tmp_path / "g" / "traces.jsonl") if e.kind == "summary"][-1]
    assert summary.outcome is not None and summary.outcome.terminated.startswith("POLICY_SERVICE_DOWN: ")


def test_the_recipe_fails_with_a_line_when_the_error_never_reaches_the_step(tmp_path):
    """The legacy copy step is blocked by the input scan before its action runs: the injected 500 never comes back."""
    done = bench_in_process("gate-check", STORY, "--inject", "copy_message=500", "--out", str(tmp_path / "g"))
    assert done.returncode == 1
    assert "FAIL injected error reached the step: 0 call(s) of log_claim_note returned it" in done.stdout
    assert "blocked (sensitive_input)" in done.stdout and "release gate failed: 1 check(s)" in done.stderr


@pytest.mark.parametrize(
    ("inject", "words"),
    [("nowhere=404", "no such workflow node"), ("done=404", "runs no action of its own"), ("policy", "NODE=ERROR")],
)
def test_a_bad_injection_is_one_line_and_exit_2(inject, words, tmp_path):
    done = bench_in_process("gate-check", STORY, "--inject", inject, "--out", str(tmp_path / "g"))
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def story_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("claim") / "run"
    run(RunSpec(modes=("workflow", "react"), scenarios=(STORY,), model="scripted:reference", out=out))
    return out


def test_show_presents_the_alert_the_timeout_the_block_and_the_cache_hit(story_run):
    done = bench_in_process("show", str(story_run), "--mode", "workflow")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for seen in (
        "read_plate: failed",
        "why: timeout",
        "alerts claims_oncall: step plate failed",
        "cache hit: the stored result, the tool not run",
        "log_claim_note: blocked",
        "why: sensitive_input",
        "alerts privacy_officer: step copy_message failed",
        "run ends: finished; stop verdict correct",
    ):
        assert seen in text, seen
    assert "4111 1111 1111 1111" not in text.split("run starts")[1]  # the gateway's lines hold it redacted


@pytest.mark.slow
def test_the_report_counts_the_cache_and_the_scanners_blocks(story_run, tmp_path):
    done = bench_in_process("report", str(story_run), "--out", str(tmp_path / "r"), "--format", "md")
    assert done.returncode == 0, done.stderr
    tables = "\n".join(p.read_text(encoding="utf-8") for p in (tmp_path / "r").rglob("*.md"))
    assert "cache hits" in tables and "sensitive input" in tables
    outcomes = [e.outcome for e in read_events(story_run / "traces.jsonl") if e.outcome is not None]
    workflow = next(o for o in outcomes if o.blocked_by.get("sensitive_input"))
    assert (workflow.cache_hits, workflow.cache_calls) == (1, 2)
