"""Paired mode comparisons: modes compared on the same cells, exact McNemar, Holm over the whole table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reports.load import load_traces
from reports.metrics import classify_runs
from reports.paired import LATENCY, newcombe, paired_difference, paired_table, paired_tests, sign_flip_p
from reports.stats import mcnemar_exact
from reports.tables import to_csv, to_markdown
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
    assert len(tests) == 9 and all(t.tests == 9 for t in tests)  # 3 mode pairs x (2 outcomes + run latency)
    smallest = min(tests, key=lambda t: t.p)
    assert smallest.p_holm == pytest.approx(min(1.0, 9 * smallest.p))
    assert all(t.p_holm >= t.p for t in tests)
    assert "over all 9 tests in this table (3 mode pairs x 2 outcomes and run latency, one family)" in table.note
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


EIGHT_STORIES = tuple(f"t{i}" for i in range(8))


def timed_runs(mode: str, extra_ms: float, jitter: bool = False) -> list[Run]:
    """Eight stories x three trials, each run's wall time varying by story and trial, plus ``extra_ms``.

    ``jitter`` adds +-0.3 s by story and +-0.1 s by trial, zero on average: the stories differ, the mean does not.
    """
    return [
        Run(
            f"{mode}-{story}-{trial}",
            mode,
            scenario=story,
            trial=trial,
            stop_correct=True,
            wall_ms=1000.0 + 700 * i + 130 * trial + extra_ms + jitter * (300 * (-1) ** i + 100 * (trial - 2)),
        )
        for i, story in enumerate(EIGHT_STORIES)
        for trial in range(1, 4)
    ]


def test_two_seconds_planted_on_every_run_of_mode_b_is_found_with_an_interval_around_two(tmp_path):
    runs = [*timed_runs("workflow", 0.0), *timed_runs("react", 2000.0, jitter=True)]
    classified = classify_runs(load_traces([write_runs(tmp_path / "run", runs)]))
    table = paired_table(classified)
    (test,) = [t for t in table.records if t.metric == LATENCY]
    assert (test.mode_a, test.mode_b, test.pairs, test.stories) == ("workflow", "react", 24, 8)
    assert test.difference == pytest.approx(2.0)  # the jitter averages out
    assert 0 < test.low < 2.0 < test.high  # the stories' differences (1.7 s or 2.3 s) give the interval its width
    assert test.p == 2 / 2**8  # every story slower under B: only "all +" and "all -" reach |sum|
    assert test.p_holm >= test.p and test.tests == 3
    row = next(line for line in to_markdown(table).splitlines() if LATENCY in line)
    assert f"{test.rate_a:,.2f} s" in row and f"{test.rate_b:,.2f} s" in row and f"[{test.low:,.2f} s," in row
    csv_row = next(line for line in to_csv(table).splitlines() if LATENCY in line)
    assert repr(test.rate_b) in csv_row.split(",")  # CSV keeps the plain number of seconds


def test_identical_latencies_differ_by_zero_with_p_one(three_modes):
    _, tests = paired_tests(three_modes)
    latency = [t for t in tests if t.metric == LATENCY]
    assert len(latency) == 3  # one per pair of modes
    assert all((t.difference, t.low, t.high, t.p) == (0.0, 0.0, 0.0, 1.0) for t in latency)
    assert all(t.only_a is None and t.only_b is None for t in latency)


def test_exact_sign_flip_p_by_hand():
    # Four stories all slower under B: of the 16 sign patterns only all-plus and all-minus reach |sum| = 4.
    assert sign_flip_p(np.array([0.5, 1.0, 2.0, 3.0])) == 2 / 16
    # [1, 1, 1, -1]: |sum| = 2; patterns with 0, 1, 3 or 4 plus signs reach it: (1 + 4 + 4 + 1) / 16.
    assert sign_flip_p(np.array([1.0, 1.0, 1.0, -1.0])) == 10 / 16


def test_above_sixteen_stories_the_sign_flips_are_seeded_random_draws():
    every_story_slower = np.ones(20)
    p = sign_flip_p(every_story_slower)
    assert p == sign_flip_p(every_story_slower)  # seeded: the same p every time
    assert 1 / 20_001 <= p < 0.001  # (hits + 1) / (draws + 1): never 0, and 2 of 2^20 patterns reach the sum
    assert sign_flip_p(np.tile([1.0, -1.0], 10)) == 1.0  # sum 0: every pattern reaches it
