"""The statistics the reports use: Wilson intervals, pass^k and percentiles, each with its exact definition."""

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
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 or n successes a bound is exactly 0 or 1; floating point leaves ~1e-17 of noise there.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(successes, n, p, low, high)


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
    p50, p95, p99 = np.percentile(array, PERCENTILES)
    std = float(array.std(ddof=1)) if array.size > 1 else math.nan
    return Spread(int(array.size), float(p50), float(p95), float(p99), float(array.mean()), std)


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
