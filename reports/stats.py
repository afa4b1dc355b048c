"""The statistics the reports use: Wilson intervals, pass^k, percentiles and exact tests, each with its definition."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

# Two-sided 95%: the 97.5th percentile of the standard normal (1.959963984540054).
Z95 = NormalDist().inv_cdf(0.975)
PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class Interval:
    """A proportion with its Wilson score interval."""

    successes: int
    n: int
    rate: float
    low: float
    high: float


def wilson(successes: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval (no continuity correction); n = 0 gives NaN everywhere."""
    if n <= 0:
        return Interval(successes, n, math.nan, math.nan, math.nan)
    low, high = wilson_bounds(successes / n, n, z)
    return Interval(successes, n, successes / n, low, high)


def wilson_bounds(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's bounds for a share p of n; n may be fractional (an effective sample size, such as the stories)."""
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At a share of 0 or 1 a bound is exactly 0 or 1; floating point leaves ~1e-17 of noise there.
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def pass_hat_k(per_task: Sequence[tuple[int, int]], k: int) -> float:
    """tau-bench's pass^k: mean over tasks of C(c, k) / C(n, k), with c successes in n trials.

    The chance that k trials drawn without replacement from a task's trials all succeed, averaged
    over tasks. NaN when some task has fewer than k trials (the estimator is undefined there).
    """
    if k < 1 or not per_task or any(n < k for _, n in per_task):
        return math.nan
    return sum(math.comb(c, k) / math.comb(n, k) for c, n in per_task) / len(per_task)


@dataclass(frozen=True)
class Spread:
    """Location and spread of a sample: linear-interpolated percentiles, mean, sample std (ddof=1)."""

    n: int
    p50: float
    p95: float
    p99: float
    mean: float
    std: float


def spread(values: Sequence[float] | np.ndarray) -> Spread:
    """Percentiles by linear interpolation between order statistics (numpy's default, Hyndman-Fan 7)."""
    array = np.asarray(values, dtype=float)
    array = array[~np.isnan(array)]
    if array.size == 0:
        return Spread(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    p50, p95, p99 = linear_percentiles(array, PERCENTILES)
    std = float(array.std(ddof=1)) if array.size > 1 else math.nan
    return Spread(int(array.size), float(p50), float(p95), float(p99), float(array.mean()), std)


SMALL_SAMPLE = 64  # up to this many values, percentiles are computed here rather than by numpy's machinery


def linear_percentiles(values: np.ndarray, percentiles: Sequence[float]) -> list[float]:
    """``np.percentile(values, percentiles)`` (linear, Hyndman-Fan 7), the same floats bit for bit: a small sample
    (a report's groups hold a few runs each) in plain Python, where numpy's set-up is most of the time; a larger
    one by numpy itself. ``values``: finite or infinite, never NaN."""
    if values.size > SMALL_SAMPLE:
        return [float(p) for p in np.percentile(values, percentiles)]
    ordered = sorted(values.tolist())
    last = len(ordered) - 1
    found = []
    for percentile in percentiles:
        at = last * (percentile / 100)  # numpy's virtual index, (n - 1) q
        below = float(math.floor(at))
        if at >= last:  # numpy reads the last value for both ends
            below = float(last)
        gamma = at - below
        low = ordered[int(below)]
        high = ordered[min(int(below) + 1, last)]
        step = high - low
        # numpy's _lerp: from below for gamma < 0.5, from above from 0.5 on (monotone and exact at the ends)
        found.append(high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma)
    return found


def fisher_less(successes_a: int, n_a: int, successes_b: int, n_b: int) -> float:
    """One-sided Fisher exact test: the chance of B having this few successes or fewer if A and B shared a rate.

    Under that null hypothesis, with the total number of successes fixed, B's successes follow a
    hypergeometric distribution; the p-value is its lower tail at B's count. NaN when a side is empty.
    """
    if n_a <= 0 or n_b <= 0:
        return math.nan
    total, successes = n_a + n_b, successes_a + successes_b
    tail = sum(
        math.comb(successes, x) * math.comb(total - successes, n_b - x)
        for x in range(max(0, successes - n_a), successes_b + 1)
    )
    return min(1.0, tail / math.comb(total, n_b))


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), exactly (integer arithmetic, one division)."""
    if k <= 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


def mcnemar_exact(only_a: int, only_b: int, alternative: str = "two-sided") -> float:
    """Exact McNemar test on the discordant pairs: A yes and B no (``only_a``), A no and B yes (``only_b``).

    With no difference between A and B, each discordant pair is either kind with chance 1/2, so ``only_a``
    is Binomial(only_a + only_b, 1/2). Two-sided: twice the smaller tail, at most 1. ``"a_more"``: the
    one-sided p that A succeeds more often than B (the upper tail at ``only_a``). No discordant pair: 1.
    """
    n = only_a + only_b
    if n == 0:
        return 1.0
    if alternative == "a_more":
        return binomial_tail(only_a, n)
    return min(1.0, 2 * binomial_tail(max(only_a, only_b), n))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p-values times (m - i + 1), kept non-decreasing, at most 1.

    Comparing each adjusted p to alpha controls the chance of any false flag among the m tests at alpha.
    NaN p-values (tests that could not be made) stay NaN and do not count in m.
    """
    order = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    adjusted = [math.nan] * len(p_values)
    m, running = len(order), 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
