"""Metrics on hand-made traces with known numbers: percentiles, tokens, infrastructure runs, loops, pass^k."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from reports import load_traces
from reports.metrics import classify_runs, compute
from tests.helpers.report_fixtures import Call, Run, write_runs

WALL = {
    "react": [120.0, 340.0, 95.0, 410.0, 1500.0, 220.0, 60.0, 700.0],
    "workflow": [30.0, 45.0, 38.0, 51.0, 29.0, 33.0, 47.0, 40.0],
}


def fixture_runs() -> list[Run]:
    runs = []
    # react: 8 runs on two scenarios (4 trials each), three of them stop-correct, one premature, one loop.
    correct = {"react": [True, False, False, True, False, True, False, False], "workflow": [True] * 8}
    for mode in ("react", "workflow"):
        for i, wall in enumerate(WALL[mode]):
            scenario = "blog_brief_approval" if i < 4 else "other_scenario"
            calls = [
                Call(
                    latency_ms=100.0 + 10 * i + j,
                    prompt=200 + i,
                    completion=20 + j,
                    action="create_brief" if mode == "react" else None,
                )
                for j in range(i % 3 + 1)
            ]
            runs.append(
                Run(
                    f"{mode}-{i}",
                    mode,
                    scenario=scenario,
                    trial=i % 4 + 1,
                    stop_correct=correct[mode][i],
                    status="suspended" if correct[mode][i] else "finished",
                    calls=calls,
                    wall_ms=wall,
                    actions=[("create_brief", "committed"), ("write_draft", "blocked")],
                    premature=1 if (mode, i) == ("react", 1) else 0,
                    wait_without_suspend=(mode, i) == ("react", 2),
                    deciders=["runtime"] if mode == "react" else ["workflow", "workflow"],
                )
            )
    # react: two runs ended by infrastructure (timeout after a retry; http_5xx), one by a parse error.
    runs.append(
        Run(
            "react-infra-1",
            "react",
            trial=5,
            stop_correct=False,
            status="error",
            ending_error="timeout",
            calls=[Call(900.0, 10, 0, "create_brief", retries=("timeout",))],
            wall_ms=5000.0,
            premature=1,
        )
    )
    runs.append(
        Run(
            "react-infra-2",
            "react",
            scenario="other_scenario",
            trial=5,
            stop_correct=False,
            status="error",
            ending_error="http_5xx",
            wall_ms=3000.0,
        )
    )
    runs.append(
        Run(
            "react-parse",
            "react",
            trial=6,
            stop_correct=False,
            status="error",
            ending_error="parse",
            calls=[Call(80.0, 5, 5, None, retries=("network",))],
            wall_ms=90.0,
        )
    )
    return runs


@pytest.fixture()
def traces(tmp_path):
    return load_traces(write_runs(tmp_path / "run", fixture_runs()))


def test_infrastructure_runs_are_out_of_the_correctness_denominator(traces):
    from scipy.stats import binomtest  # an independent oracle, imported where used

    react = compute(traces).by_key()[("react", "enforce")]
    assert react.runs == 11 and react.infrastructure == 2 and react.judged == 9
    # 3 correct of 8 ordinary runs; the parse-error run is the mode's (the model's) failure and is judged.
    assert (react.stop.successes, react.stop.n) == (3, 9)
    expected = binomtest(3, 9).proportion_ci(method="wilson")
    assert react.stop.low == pytest.approx(expected.low) and react.stop.high == pytest.approx(expected.high)
    assert react.error_runs == 3 and react.ended_by == {"timeout": 1, "http_5xx": 1, "parse": 1}
    assert react.mode_error_rate == pytest.approx(1 / 9)
    # The premature write in the timed-out run is reported apart, not as the mode's.
    assert react.premature_side_effects == 1 and react.infrastructure_premature == 1
    assert react.errors_seen == {"timeout": 2, "http_5xx": 1, "parse": 1, "network": 1}


def test_infrastructure_classification_survives_a_lost_error_line(tmp_path):
    folder = write_runs(
        tmp_path / "run", [Run("a", "react", status="error", stop_correct=False, ending_error="network")]
    )
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    (folder / "traces.jsonl").write_text("".join(line for line in lines if '"kind":"error"' not in line))
    runs = classify_runs(load_traces(folder))
    assert runs["infrastructure"].tolist() == [True]


def test_latency_percentiles_match_numpy(traces):
    metrics = compute(traces).by_key()
    for mode in ("react", "workflow"):
        walls = WALL[mode] + ([5000.0, 3000.0, 90.0] if mode == "react" else [])
        got = metrics[(mode, "enforce")].run_latency
        for q, value in zip((50, 95, 99), (got.p50, got.p95, got.p99), strict=False):
            assert value == pytest.approx(np.percentile(walls, q))
        assert got.mean == pytest.approx(statistics.fmean(walls))
        assert got.std == pytest.approx(statistics.stdev(walls))
    calls = [c.latency_ms for r in fixture_runs() if r.mode == "react" for c in r.calls]
    got = metrics[("react", "enforce")].call_latency
    assert got.n == len(calls)
    assert (got.p50, got.p95, got.p99) == pytest.approx(tuple(np.percentile(calls, [50, 95, 99])))


def test_tokens_steps_and_calls_per_run(traces):
    react = compute(traces).by_key()[("react", "enforce")]
    per_run = [sum(c.prompt + c.completion for c in r.calls) for r in fixture_runs() if r.mode == "react"]
    prompts = [sum(c.prompt for c in r.calls) for r in fixture_runs() if r.mode == "react"]
    assert react.total_tokens.mean == pytest.approx(statistics.fmean(per_run))
    assert react.total_tokens.p50 == pytest.approx(statistics.median(per_run))
    assert react.prompt_tokens.mean == pytest.approx(statistics.fmean(prompts))
    assert react.llm_calls.mean == pytest.approx(
        statistics.fmean([len(r.calls) for r in fixture_runs() if r.mode == "react"])
    )


def test_side_effects_and_wait_markers(traces):
    react = compute(traces).by_key()[("react", "enforce")]
    assert react.side_effects_committed == 8 and react.side_effects_blocked == 8
    assert react.wait_without_suspend == 1 and react.runs_with_premature == 1


def test_pass_k_per_scenario_cell_matches_brute_force(traces):
    metrics = compute(traces)
    react = metrics.by_key()[("react", "enforce")]
    # Judged react trials per scenario: the first 4 and the parse-error run on the blog, the last 4 on the other.
    blog = [True, False, False, True, False]
    other = [False, True, False, False]
    assert metrics.max_k == 4  # the fewest judged trials of any cell
    for k in range(1, 5):
        shares = [sum(all(s) for s in itertools.combinations(t, k)) / math.comb(len(t), k) for t in (blog, other)]
        assert react.pass_k[k - 1] == pytest.approx(sum(shares) / 2)


def test_loops_need_three_identical_proposals_in_a_row(tmp_path):
    runs = [
        Run("loop", "react", calls=[Call(1, action=a) for a in ["a", "b", "b", "b", "c"]]),
        Run("no-loop", "react", calls=[Call(1, action=a) for a in ["a", "a", "b", "a", "a"]]),
        Run("plan", "react", calls=[Call(1, action=None) for _ in range(4)]),
    ]
    runs = classify_runs(load_traces(write_runs(tmp_path / "run", runs)))
    assert dict(zip(runs["run_id"], runs["loop"], strict=False)) == {"loop": True, "no-loop": False, "plan": False}


def test_who_decided(traces):
    workflow = compute(traces).by_key()[("workflow", "enforce")]
    # Per run: calls (llm), 2 actions (gateway), 2 decisions (workflow); run_start and summary do not count.
    calls = sum(len(r.calls) for r in fixture_runs() if r.mode == "workflow")
    total = calls + 8 * 2 + 8 * 2
    assert workflow.decisions == total
    assert workflow.decision_share == pytest.approx(
        {"llm": calls / total, "gateway": 16 / total, "workflow": 16 / total}
    )


def test_groupings(traces):
    by_scenario = compute(traces, "scenario").by_key()
    assert set(by_scenario) == {
        (m, "enforce", s) for m in ("react", "workflow") for s in ("blog_brief_approval", "other_scenario")
    }
    assert by_scenario[("react", "enforce", "other_scenario")].infrastructure == 1
    by_model = compute(traces, "model")
    assert [g.key for g in by_model.groups] == [
        ("fixture:model", "workflow", "enforce"),
        ("fixture:model", "react", "enforce"),
    ]
