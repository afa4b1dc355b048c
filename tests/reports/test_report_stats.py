"""The report's statistics against independent computations: scipy, numpy, brute force and hand formulas."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reports.stats import fisher_less, holm, linear_percentiles, mcnemar_exact, pass_hat_k, spread, wilson


@pytest.mark.parametrize(
    "successes,n", [(0, 1), (1, 1), (0, 5), (4, 5), (5, 5), (3, 10), (17, 20), (1, 40), (250, 1000)]
)
def test_wilson_matches_scipy(successes, n):
    from scipy.stats import binomtest  # an independent oracle, imported where used

    expected = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    got = wilson(successes, n)
    assert got.rate == successes / n
    assert got.low == pytest.approx(float(expected.low), abs=1e-12)
    assert got.high == pytest.approx(float(expected.high), abs=1e-12)


def test_wilson_by_hand_for_four_of_five():
    # p = 0.8, n = 5, z = 1.96: centre (0.8 + 1.96^2/10) / (1 + 1.96^2/5), half-width by the same formula.
    z, n, p = 1.959963984540054, 5, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    got = wilson(4, 5)
    assert (round(got.low, 4), round(got.high, 4)) == (0.3755, 0.9638)
    assert got.low == pytest.approx(centre - half) and got.high == pytest.approx(centre + half)


def test_wilson_without_runs_is_undefined():
    assert math.isnan(wilson(0, 0).rate) and math.isnan(wilson(0, 0).low)


def brute_force_pass_k(tasks: list[list[bool]], k: int) -> float:
    """The definition itself: over every k-subset of a task's trials, the share where all succeeded."""
    shares = []
    for trials in tasks:
        subsets = list(itertools.combinations(trials, k))
        shares.append(sum(all(s) for s in subsets) / len(subsets))
    return sum(shares) / len(shares)


def test_pass_hat_k_matches_brute_force():
    tasks = [[True, True, False, True, True], [False, False, True, False, True], [True] * 5, [False] * 5]
    per_task = [(sum(t), len(t)) for t in tasks]
    for k in range(1, 6):
        assert pass_hat_k(per_task, k) == pytest.approx(brute_force_pass_k(tasks, k))
    assert pass_hat_k(per_task, 1) == pytest.approx(np.mean([4 / 5, 2 / 5, 1, 0]))
    assert pass_hat_k(per_task, 2) == pytest.approx(np.mean([math.comb(4, 2) / 10, 1 / 10, 1, 0]))


def test_pass_hat_k_undefined_beyond_the_trials():
    assert math.isnan(pass_hat_k([(3, 3), (1, 2)], 3))
    assert math.isnan(pass_hat_k([], 1))


def test_spread_matches_numpy_and_hand_values():
    values = [float(v) for v in range(1, 11)]  # 1..10
    got = spread(values)
    # Linear interpolation: rank (n-1)q = 9 * 0.95 = 8.55 -> 9 + 0.55 * (10 - 9).
    assert got.p95 == pytest.approx(9.55) and got.p50 == pytest.approx(5.5) and got.p99 == pytest.approx(9.91)
    assert got.mean == 5.5 and got.std == pytest.approx(statistics.stdev(values))
    rng = np.random.default_rng(3)
    sample = rng.lognormal(6, 0.7, 1001)
    got = spread(sample)
    for q, value in zip((50, 95, 99), (got.p50, got.p95, got.p99), strict=False):
        assert value == pytest.approx(np.percentile(sample, q, method="linear"))
    assert got.std == pytest.approx(np.std(sample, ddof=1))


def test_spread_of_nothing_and_of_one():
    assert spread([]).n == 0 and math.isnan(spread([]).p50)
    one = spread([7.0])
    assert one.p50 == one.p99 == 7.0 and math.isnan(one.std)


@pytest.mark.parametrize(
    "sa,na,sb,nb",
    [
        (5, 5, 0, 5),
        (5, 5, 4, 5),
        (8, 10, 3, 10),
        (3, 10, 8, 10),
        (0, 4, 0, 4),
        (40, 40, 31, 40),
        (12, 20, 11, 20),
        (1, 1, 0, 3),
    ],
)
def test_fisher_less_matches_scipy(sa, na, sb, nb):
    from scipy.stats import fisher_exact  # an independent oracle, imported where used

    # rows: B then A; columns: success, failure. "less": B's odds of success are lower than A's.
    _, expected = fisher_exact([[sb, nb - sb], [sa, na - sa]], alternative="less")
    assert fisher_less(sa, na, sb, nb) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_fisher_less_by_hand_and_undefined_without_runs():
    # A 5/5, B 0/5: only one table this extreme; C(5,0) * C(5,5) / C(10,5) = 1/252.
    assert fisher_less(5, 5, 0, 5) == pytest.approx(1 / 252)
    assert math.isnan(fisher_less(0, 0, 1, 3))


def test_mcnemar_exact_by_hand():
    from scipy.stats import binomtest  # an independent oracle, imported where used

    # 1 pair only A got right, 6 only B: under no difference the 7 discordant pairs split as Binomial(7, 1/2);
    # two-sided p = 2 x P(X >= 6) = 2 x (C(7,6) + C(7,7)) / 2^7 = 16/128.
    assert mcnemar_exact(1, 6) == 0.125 == mcnemar_exact(6, 1)
    assert mcnemar_exact(1, 6) == pytest.approx(binomtest(1, 7, 0.5).pvalue)
    assert mcnemar_exact(6, 1, "a_more") == 8 / 128  # one-sided: A right more often than B
    assert mcnemar_exact(1, 6, "a_more") == 1 - 1 / 128  # P(X >= 1)
    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(3, 3) == 1.0


def test_holm_by_hand():
    # sorted: 0.005 x 4 = 0.02; 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, kept at 0.06 (non-decreasing).
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = holm([0.2, math.nan, 0.6])  # a test that could not be made is not counted
    assert adjusted[0] == pytest.approx(0.4) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.6)
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_p_values_are_shown_in_one_format_with_a_floor():
    from reports.tables import show

    assert [show(p, "p") for p in (1.0, 0.047, 0.000128, 4.77e-07, 0.001)] == [
        "1.00",
        "0.0470",
        "< 0.001",
        "< 0.001",
        "0.00100",
    ]


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=1, max_size=80),
    st.lists(st.integers(0, 100), min_size=1, max_size=6),
)
@settings(max_examples=400, deadline=None)
def test_linear_percentiles_are_numpys_bit_for_bit_small_samples_and_large(values, percentiles):
    array = np.array(values)
    with np.errstate(invalid="ignore"):  # inf - inf: numpy says nan, and so must the small-sample path
        expected = [float(p) for p in np.percentile(array, percentiles)]
    found = linear_percentiles(array, percentiles)
    assert [(math.isnan(e), e if not math.isnan(e) else 0) for e in expected] == [
        (math.isnan(f), f if not math.isnan(f) else 0) for f in found
    ]
