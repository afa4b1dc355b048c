"""Intervals that respect the design: runs of one story share its difficulty, so the story is what is resampled.

A percentile cluster bootstrap: each of ``RESAMPLES`` resamples draws as many stories as there are, with
replacement, and keeps every run of each drawn story; its rate is its successes over its runs. Only the
per-story totals enter (never the runs), so it costs resamples x stories however many runs there are. The
seed is fixed and the stories are put in a canonical order first, so the same runs give the same interval.

One story: the runs are the unit (a bootstrap over runs, drawn exactly as a binomial). When the resamples
have no spread (every run has the same outcome, or every story the same rate), a percentile interval would
be a point, so Wilson's interval is given instead, with the stories as n (the runs for one story). The
interval is never narrower than Wilson's over the runs (which assumes independent runs): clustering can only
widen it, and a percentile bootstrap over a handful of stories is too narrow on its own.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from reports.stats import Interval, wilson_bounds

RESAMPLES = 2000
SEED = 24  # fixed and stated: the report's intervals are reproducible to the digit
LEVEL = 0.95
QUANTILES = ((1 - LEVEL) / 2, (1 + LEVEL) / 2)
_BLOCK = 1 << 21  # at most this many resample x story weights in memory at once

CLUSTER_BOOTSTRAP = "cluster bootstrap"
RUN_BOOTSTRAP = "bootstrap over runs"
WILSON_STORIES = "Wilson over stories"
WILSON_RUNS = "Wilson over runs"
DESCRIPTION = (
    f"percentile cluster bootstrap over stories ({RESAMPLES} resamples, seed {SEED}): a resample draws stories "
    "with replacement and keeps each one's runs; for one story, a bootstrap over its runs; where the resamples "
    "have no spread (all runs alike), Wilson's interval with the stories (one story: the runs) as n; never "
    "narrower than Wilson's over the runs"
)


@dataclass(frozen=True)
class ClusteredInterval(Interval):
    """A rate with its clustered interval: how many stories it rests on and how its bounds were found."""

    clusters: int = 0
    method: str = ""


def story_totals(stories: ArrayLike, values: ArrayLike) -> np.ndarray:
    """Per-story sums of each column of ``values`` (runs x columns), stories in order of their codes."""
    _, index = np.unique(stories, return_inverse=True)
    columns = _columns(values)
    k = int(index.max()) + 1 if len(index) else 0
    return np.stack([np.bincount(index, weights=columns[:, j], minlength=k) for j in range(columns.shape[1])], 1)


def _columns(values: ArrayLike) -> np.ndarray:
    """A float array of rows x columns; a flat one is one column."""
    array = np.asarray(values, dtype=float)
    return array[:, None] if array.ndim == 1 else array


def clustered_rates(
    stories: ArrayLike, outcomes: ArrayLike, counted: ArrayLike | None = None
) -> list[ClusteredInterval]:
    """One clustered interval per column of ``outcomes`` (runs x rates, 0/1), over the runs ``counted`` marks."""
    outcomes = _columns(outcomes)
    counted = np.ones_like(outcomes) if counted is None else _columns(counted)
    totals = story_totals(stories, np.hstack([outcomes * counted, counted]))
    m = outcomes.shape[1]
    return cluster_bootstrap(totals[:, :m], totals[:, m:])


def cluster_bootstrap(
    successes: ArrayLike, trials: ArrayLike, resamples: int = RESAMPLES, seed: int = SEED
) -> list[ClusteredInterval]:
    """Per rate (a column), its interval from per-story ``successes`` and ``trials`` (stories x rates, or x 1).

    Every rate is resampled with the same draws of stories, so rates of one group move together.
    """
    s = _columns(successes)
    n = np.broadcast_to(_columns(trials), s.shape)
    order = np.lexsort(np.hstack([s, n]).T[::-1]) if len(s) else np.array([], dtype=np.int64)
    s, n = s[order], n[order]  # canonical order: the interval does not depend on how stories were listed
    bounds = np.full((2, s.shape[1]), np.nan)
    if len(s) > 1:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a rate no resample has runs for: NaN bounds
            rates = resampled_ratios(s, n, resamples, seed)
            quantile = np.nanquantile if np.isnan(rates).any() else np.quantile  # nanquantile is 10x slower
            bounds = quantile(rates, QUANTILES, axis=0)
    return [_interval(s[:, j], n[:, j], bounds[:, j], resamples, seed) for j in range(s.shape[1])]


def resampled_ratios(s: np.ndarray, n: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """resamples x columns: each row draws the k stories (rows of s and n) with replacement, sum(s) / sum(n)."""
    k = len(s)
    block = max(1, _BLOCK // k)
    parts = []
    for start in range(0, resamples, block):
        weights = _weights(k, resamples, seed) if block >= resamples else _draw(k, start, block, resamples, seed)
        numerator, denominator = weights @ s, weights @ n
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append(np.where(denominator > 0, numerator / denominator, np.nan))
    return np.vstack(parts)


@lru_cache(maxsize=64)
def _weights(k: int, resamples: int, seed: int) -> np.ndarray:
    """How often each of k stories is drawn in each resample: they depend on k alone, so groups share them."""
    weights = _draw(k, 0, resamples, resamples, seed)
    weights.flags.writeable = False
    return weights


def _draw(k: int, start: int, block: int, resamples: int, seed: int) -> np.ndarray:
    """Resamples start .. start + block of k stories (a stream per block, so a block is the same wherever made)."""
    rng = np.random.default_rng([seed, start])
    rows = min(block, resamples - start)
    drawn = rng.integers(0, k, size=(rows, k)) + (np.arange(rows) * k)[:, None]
    return np.bincount(drawn.ravel(), minlength=rows * k).reshape(rows, k).astype(float)


def _interval(s: np.ndarray, n: np.ndarray, bounds: np.ndarray, resamples: int, seed: int) -> ClusteredInterval:
    present = n > 0
    k, successes, total = int(present.sum()), float(s.sum()), float(n.sum())
    if total <= 0:
        return ClusteredInterval(int(successes), 0, math.nan, math.nan, math.nan, 0, "")
    rate = successes / total
    if k == 1:
        low, high = _run_bootstrap(int(total), rate, resamples, seed)
        if high > low:
            return _made(successes, total, rate, low, high, k, RUN_BOOTSTRAP)
        return _made(successes, total, rate, *wilson_bounds(rate, total), k, WILSON_RUNS)
    low, high = bounds
    if high > low:
        return _made(successes, total, rate, float(low), float(high), k, CLUSTER_BOOTSTRAP)
    return _made(successes, total, rate, *wilson_bounds(rate, k), k, WILSON_STORIES)


@lru_cache(maxsize=1024)  # a report's one-story groups repeat the same few (runs, rate): drawn once each
def _run_bootstrap(total: int, rate: float, resamples: int, seed: int) -> tuple[float, float]:
    """One story: the runs are the unit; resampling them is a binomial draw of its successes."""
    draws = np.random.default_rng(seed).binomial(total, rate, size=resamples) / total
    low, high = np.quantile(draws, QUANTILES)
    return float(low), float(high)


def _made(
    successes: float, total: float, rate: float, low: float, high: float, k: int, method: str
) -> ClusteredInterval:
    # Never narrower than Wilson's over the runs: clustering can only widen an interval, and with few stories
    # (or one run each) the percentile bootstrap alone is too narrow. This also keeps the rate inside.
    floor_low, floor_high = wilson_bounds(rate, total)
    return ClusteredInterval(int(successes), int(total), rate, min(low, floor_low), max(high, floor_high), k, method)
