"""Intervals clustered by story: wider than Wilson's when a story decides the outcome, about Wilson's when not."""

from __future__ import annotations

import numpy as np
import pytest

from reports.clustered import (
    CLUSTER_BOOTSTRAP,
    RUN_BOOTSTRAP,
    WILSON_RUNS,
    WILSON_STORIES,
    cluster_bootstrap,
    clustered_rates,
)
from reports.load import load_traces
from reports.metrics import compute
from reports.stats import wilson
from reports.tables import interval, main_table
from tests.helpers.report_fixtures import Run, write_runs


def width(low: float, high: float) -> float:
    return high - low


def test_the_interval_is_much_wider_than_wilson_when_each_story_is_all_right_or_all_wrong():
    # 13 stories x 5 trials: 10 stories always right, 3 always wrong. Wilson sees 65 independent runs.
    [clustered] = cluster_bootstrap([5] * 10 + [0] * 3, [5] * 13)
    independent = wilson(50, 65)
    assert clustered.method == CLUSTER_BOOTSTRAP and clustered.clusters == 13
    assert clustered.rate == independent.rate
    assert width(clustered.low, clustered.high) > 1.5 * width(independent.low, independent.high)


def test_the_interval_is_about_wilson_when_outcomes_do_not_cluster():
    outcomes = np.random.default_rng(7).random((60, 5)) < 0.7  # 60 stories x 5 trials, independent draws
    [clustered] = cluster_bootstrap(outcomes.sum(axis=1), np.full(60, 5))
    independent = wilson(int(outcomes.sum()), outcomes.size)
    ratio = width(clustered.low, clustered.high) / width(independent.low, independent.high)
    assert 1.0 <= ratio < 1.2  # never narrower than Wilson's (the floor), and not much wider


def test_the_interval_is_deterministic_and_ignores_the_order_of_stories():
    successes, trials = [5, 0, 3, 4, 1, 5, 2], [5, 5, 5, 5, 5, 5, 5]
    first = cluster_bootstrap(successes, trials)
    assert cluster_bootstrap(successes, trials) == first
    assert cluster_bootstrap(successes[::-1], trials[::-1]) == first
    assert cluster_bootstrap(successes, trials, seed=25) != first  # the seed is what fixes it


def test_one_story_makes_the_runs_the_unit():
    [some] = cluster_bootstrap([3], [8])
    assert some.method == RUN_BOOTSTRAP and some.clusters == 1
    assert some.low <= wilson(3, 8).low and some.high >= wilson(3, 8).high
    [none] = cluster_bootstrap([0], [8])  # no spread to resample: Wilson over the runs, said so
    assert none.method == WILSON_RUNS and (none.low, none.high) == (wilson(0, 8).low, wilson(0, 8).high)


def test_runs_all_alike_fall_back_to_wilson_with_the_stories_as_n():
    [alike] = cluster_bootstrap([0, 0, 0, 0], [5, 5, 5, 5])  # 20 runs, 4 stories, never right
    assert alike.method == WILSON_STORIES and alike.n == 20
    assert alike.high == pytest.approx(wilson(0, 4).high) and alike.high > wilson(0, 20).high


def test_several_rates_share_the_draws_and_respect_their_denominators():
    stories = np.array(["a", "a", "b", "b", "c", "c"])
    outcomes = np.array([[1, 1], [1, 0], [0, 0], [0, 1], [1, 1], [1, 1]])
    counted = np.array([[1, 1], [1, 1], [1, 1], [1, 0], [1, 1], [1, 1]])  # the second rate has no value for run 4
    stop, other = clustered_rates(stories, outcomes, counted)
    assert (stop.successes, stop.n, stop.clusters) == (4, 6, 3)
    assert (other.successes, other.n) == (3, 5)
    assert clustered_rates(stories, outcomes[:, :1])[0] == stop  # alone or with others: the same interval


def test_nothing_to_count_is_undefined():
    [empty] = cluster_bootstrap([], [])
    assert empty.n == 0 and np.isnan(empty.rate) and np.isnan(empty.low)


@pytest.fixture(scope="module")
def clustered_metrics(tmp_path_factory):
    runs = [
        Run(f"{story}-{trial}", "react", scenario=story, trial=trial, stop_correct=right)
        for story, right in (("s1", True), ("s2", True), ("s3", True), ("s4", False), ("s5", False))
        for trial in range(1, 7)
    ]
    folder = write_runs(tmp_path_factory.mktemp("clustered") / "run", runs)
    return compute(load_traces([folder]))


def test_the_metrics_carry_clustered_intervals_wider_than_wilson_for_clustered_stories(clustered_metrics):
    [group] = clustered_metrics.groups
    assert group.stop_clustered.clusters == 5 and group.stop_clustered.rate == group.stop.rate == 0.6
    assert width(group.stop_clustered.low, group.stop_clustered.high) > 1.5 * width(group.stop.low, group.stop.high)
    assert group.verdicts_clustered["correct"].rate == 0.6 and group.oracle_clustered.n == 30


def test_the_headline_interval_is_the_clustered_one_and_says_so(clustered_metrics):
    table = main_table(clustered_metrics)
    [group] = clustered_metrics.groups
    [row] = table.display_rows()
    shown = dict(zip(table.headers, row, strict=True))["95% CI"]
    assert shown == interval(group.stop_clustered.low, group.stop_clustered.high)
    assert shown != interval(group.stop.low, group.stop.high)
    assert "95% CI: cluster bootstrap over stories (2000 resamples, seed 24)" in table.note
