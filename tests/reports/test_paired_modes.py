"""Paired mode comparisons: modes compared on the same cells, exact McNemar, Holm over the whole table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reports.load import load_traces
from reports.metrics import classify_runs
from reports.paired import newcombe, paired_difference, paired_table, paired_tests
from reports.stats import mcnemar_exact
from tests.helpers.report_fixtures import Run, write_runs

STORIES = ("s1", "s2", "s3")


def runs_of(mode: str, right, **fields) -> list[Run]:
    """Three stories x four trials; ``right(story, trial)`` says which runs are stop-correct."""
    return [
        Run(
            f"{mode}-{story}-{trial}-{fields.get('gateway_policy', 'enforce')}",
            mode,
            scenario=story,
            trial=trial,
            stop_correct=right(story, trial),
            **fields,
        )
        for story in STORIES
        for trial in range(1, 5)
    ]


@pytest.fixture(scope="module")
def three_modes(tmp_path_factory):
    runs = [
        *runs_of("workflow", lambda s, t: True),
        *runs_of("react", lambda s, t: t == 1),  # right on trial 1 only
        *runs_of("plan_execute", lambda s, t: t <= 2),
    ]
    folder = write_runs(tmp_path_factory.mktemp("paired") / "run", runs)
    return classify_runs(load_traces([folder]))


def test_each_pair_of_modes_gets_an_exact_mcnemar_test_on_its_matched_cells(three_modes):
    keys, tests = paired_tests(three_modes)
    assert keys == ("gateway_policy",)
    found = {(t.mode_a, t.mode_b, t.metric): t for t in tests}
    test = found[("workflow", "react", "stop-correct")]
    assert (test.pairs, test.stories, test.only_a, test.only_b) == (12, 3, 9, 0)
    assert test.p == 2 * 0.5**9  # two-sided: twice P(all 9 discordant pairs go A's way)
    assert test.difference == pytest.approx(3 / 12 - 1)
    assert test.low <= test.difference <= test.high < 0


def test_holm_runs_over_every_test_of_the_table_and_the_caption_says_so(three_modes):
    table = paired_table(three_modes)
    tests = table.records
    assert len(tests) == 6 and all(t.tests == 6 for t in tests)  # 3 mode pairs x 2 outcomes
    smallest = min(tests, key=lambda t: t.p)
    assert smallest.p_holm == pytest.approx(min(1.0, 6 * smallest.p))
    assert all(t.p_holm >= t.p for t in tests)
    assert "Holm's step-down correction over all 6 tests in this table (3 mode pairs x 2 outcomes)" in table.note
    assert "exact two-sided McNemar" in table.note


def test_runs_of_another_policy_or_an_infrastructure_run_are_never_paired(tmp_path):
    runs = [
        *runs_of("workflow", lambda s, t: True),
        *runs_of("react", lambda s, t: False, gateway_policy="audit"),  # another slice: no partner under enforce
        *runs_of("react", lambda s, t: False)[:-1],
        Run("react-infra", "react", scenario="s3", trial=4, stop_correct=False, status="error", ending_error="network"),
    ]
    classified = classify_runs(load_traces([write_runs(tmp_path / "run", runs)]))
    _, tests = paired_tests(classified)
    enforce = [t for t in tests if t.key == ("enforce",) and t.metric == "stop-correct"]
    assert [(t.mode_a, t.mode_b, t.pairs) for t in enforce] == [("workflow", "react", 11)]
    assert all(t.key == ("enforce",) for t in tests)  # audit has one mode: nothing to pair


def test_without_discordant_pairs_the_difference_interval_is_newcombes_with_the_stories_as_n():
    same = np.array([True, False] * 6)
    low, high, method, k = paired_difference(same, same, np.repeat(["a", "b", "c"], 4))
    assert method == "Newcombe over stories" and k == 3
    assert (low, high) == pytest.approx(newcombe(same, same, 3)) and low < 0 < high
    assert mcnemar_exact(0, 0) == 1.0


def test_newcombe_by_hand_for_all_concordant_pairs():
    # Both always wrong over 8 pairs: each rate's Wilson upper bound is 0.3244, phi = 0, so the interval is +-0.3244.
    never = np.zeros(8, dtype=bool)
    low, high = newcombe(never, never, 8)
    assert high == pytest.approx(0.3244075648838801) and low == pytest.approx(-high)
    assert not math.isnan(low)
