"""Paired mode comparisons: two modes on the same cells, so each story's difficulty cancels out.

Two runs are a pair when they share the story, the trial, the gateway policy, the model and the run folder:
one matrix runs every mode of a cell with the same seed, so they met the same story the same way. Per pair of
modes and binary outcome: the exact McNemar test (only the discordant pairs carry information), the
difference in rates with a paired cluster bootstrap interval over stories. Per pair of modes, run latency too:
the mean paired difference in seconds, the same bootstrap, and a sign-flip permutation test over stories.
Holm's correction runs over every test in the table, latency's included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from itertools import combinations

import numpy as np
import pandas as pd

from modes import MODES
from reports.clustered import QUANTILES, RESAMPLES, SEED, resampled_ratios, story_totals
from reports.metrics import judged_mask
from reports.stats import holm, mcnemar_exact, wilson_bounds
from reports.tables import Column, Seconds, Table, interval, key_columns

OUTCOMES = (("stop-correct", "stop_correct"), ("oracle passed", "oracle_passed"))  # binary, per judged run
LATENCY = "run latency (s)"  # the run's wall_ms, in seconds, per judged run
EXACT_SIGN_FLIPS = 16  # up to this many stories every one of the 2^k sign patterns is tried (65,536)
SIGN_FLIP_DRAWS = 20_000  # above it, this many random patterns (seeded with SEED)
SLICE = ("source", "model", "gateway_policy")  # pairs never cross these: one matrix, one model, one policy


@dataclass(frozen=True)
class PairedTest:
    """One outcome compared between two modes over their matched runs."""

    key: tuple[str, ...]  # the slice's shown columns (policy; model and run folder when they vary)
    mode_a: str
    mode_b: str
    metric: str
    pairs: int
    stories: int
    rate_a: float
    rate_b: float
    only_a: int | None  # pairs where A succeeded and B did not (None for latency)
    only_b: int | None
    low: float  # of B - A
    high: float
    interval_method: str
    p: float  # exact two-sided McNemar; for latency, the two-sided sign-flip permutation test
    p_holm: float = math.nan
    tests: int = 0  # how many tests Holm's correction was over

    @property
    def difference(self) -> float:
        return self.rate_b - self.rate_a

    @property
    def timed(self) -> bool:
        """A latency row: A, B and B - A are mean seconds, not rates."""
        return self.metric == LATENCY


def _mode_order(mode: str) -> tuple[int, str]:
    mode_class = MODES.get(mode)
    return (getattr(mode_class, "spectrum", 99), mode)


def paired_tests(runs: pd.DataFrame) -> tuple[tuple[str, ...], list[PairedTest]]:
    """Every pair of modes in every slice, over judged runs (``runs`` from ``reports.metrics.classify_runs``).

    Returns the slice's key columns shown (the policy; the model and run folder when they vary) and the tests,
    Holm-adjusted together.
    """
    judged = runs.loc[judged_mask(runs)]
    shown = tuple(c for c in SLICE if c == "gateway_policy" or judged[c].nunique() > 1)
    found: list[PairedTest] = []
    for slice_key, cells in judged.groupby(list(SLICE), observed=True, sort=True):
        values = dict(zip(SLICE, (str(v) for v in slice_key), strict=True))
        key = tuple(values[c] for c in shown)
        table = cells.drop_duplicates(["scenario", "trial", "mode"]).set_index(["scenario", "trial", "mode"])
        modes = sorted(table.index.get_level_values("mode").astype(str).unique(), key=_mode_order)
        for metric, column in OUTCOMES:
            wide = table[column].astype(float).unstack("mode")  # one row a (story, trial), NaN where a mode has none
            stories = wide.index.get_level_values("scenario").astype(str).to_numpy()
            for a, b in combinations(modes, 2):
                if a in wide and b in wide:
                    found.append(_test(key, a, b, metric, wide[a].to_numpy(), wide[b].to_numpy(), stories))
        seconds = (table["wall_ms"].astype(float) / 1000).unstack("mode")
        stories = seconds.index.get_level_values("scenario").astype(str).to_numpy()
        for a, b in combinations(modes, 2):
            if a in seconds and b in seconds:
                found.append(_latency_test(key, a, b, seconds[a].to_numpy(), seconds[b].to_numpy(), stories))
    adjusted = holm([t.p for t in found])
    tests = sum(not math.isnan(p) for p in adjusted)
    return shown, [replace(t, p_holm=q, tests=tests) for t, q in zip(found, adjusted, strict=True)]


def _test(
    key: tuple[str, ...], a: str, b: str, metric: str, x_a: np.ndarray, x_b: np.ndarray, stories: np.ndarray
) -> PairedTest:
    both = ~np.isnan(x_a) & ~np.isnan(x_b)
    x_a, x_b, stories = x_a[both] > 0, x_b[both] > 0, stories[both]
    pairs = len(x_a)
    if not pairs:
        return PairedTest(key, a, b, metric, 0, 0, math.nan, math.nan, 0, 0, math.nan, math.nan, "", math.nan)
    only_a, only_b = int((x_a & ~x_b).sum()), int((~x_a & x_b).sum())
    low, high, method, k = paired_difference(x_a, x_b, stories)
    return PairedTest(
        key,
        a,
        b,
        metric,
        pairs,
        k,
        float(x_a.mean()),
        float(x_b.mean()),
        only_a,
        only_b,
        low,
        high,
        method,
        mcnemar_exact(only_a, only_b),
    )


def _latency_test(
    key: tuple[str, ...], a: str, b: str, s_a: np.ndarray, s_b: np.ndarray, stories: np.ndarray
) -> PairedTest:
    both = ~np.isnan(s_a) & ~np.isnan(s_b)
    s_a, s_b, stories = s_a[both], s_b[both], stories[both]
    if not len(s_a):
        return PairedTest(key, a, b, LATENCY, 0, 0, math.nan, math.nan, None, None, math.nan, math.nan, "", math.nan)
    low, high, method, k, p = paired_mean_difference(s_a, s_b, stories)
    return PairedTest(
        key, a, b, LATENCY, len(s_a), k, float(s_a.mean()), float(s_b.mean()), None, None, low, high, method, p
    )


def _unit_totals(differences: np.ndarray, stories: np.ndarray) -> tuple[np.ndarray, int]:
    """Per unit (a story; for one story, a pair): the sum of its paired differences and its pairs, in canonical
    order (as in reports.clustered), and the number of stories."""
    k = len(np.unique(stories))
    units = stories if k > 1 else np.arange(len(differences))  # one story: the pairs are the unit
    totals = story_totals(units, np.column_stack([differences, np.ones(len(differences))]))
    return totals[np.lexsort(totals.T[::-1])], k


def _resampled_means(totals: np.ndarray, resamples: int, seed: int) -> np.ndarray | None:
    """The mean paired difference of each resample of the units (None for one unit: nothing to resample)."""
    return resampled_ratios(totals[:, :1], totals[:, 1:], resamples, seed)[:, 0] if len(totals) > 1 else None


def paired_mean_difference(
    s_a: np.ndarray, s_b: np.ndarray, stories: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float, str, int, float]:
    """95% interval of the mean of s_b - s_a over pairs, how it was found, the stories and a two-sided p.

    The interval is the paired cluster bootstrap of ``paired_difference`` (no floor: a duration has no
    Wilson interval); the p is ``sign_flip_p`` over the per-story mean differences (one story: the pairs).
    """
    totals, k = _unit_totals(np.asarray(s_b, dtype=float) - np.asarray(s_a, dtype=float), stories)
    mean = float(totals[:, 0].sum() / totals[:, 1].sum())
    p = sign_flip_p(totals[:, 0] / totals[:, 1], seed=seed)
    draws = _resampled_means(totals, resamples, seed)
    if draws is None:
        return mean, mean, "one pair", k, p
    low, high = np.quantile(draws, QUANTILES)
    if high > low:
        return float(low), float(high), "cluster bootstrap" if k > 1 else "bootstrap over pairs", k, p
    return mean, mean, "no spread (every story differs alike)", k, p


def sign_flip_p(means: np.ndarray, draws: int = SIGN_FLIP_DRAWS, seed: int = SEED) -> float:
    """Two-sided p of "no difference" from the per-story mean differences, by flipping their signs.

    Under no difference each story's difference is as likely negative as positive, so every pattern of signs
    is as likely as the one seen; p is the share of patterns whose |sum| is at least the observed |sum|.
    Exact (all 2^k patterns) up to ``EXACT_SIGN_FLIPS`` stories; beyond, ``draws`` random patterns with
    p = (hits + 1) / (draws + 1), which never gives 0.
    """
    means = np.asarray(means, dtype=float)
    k = len(means)
    if not k:
        return math.nan
    observed = abs(float(means.sum())) * (1 - 1e-9)  # sums in another order may differ in the last digit
    if k <= EXACT_SIGN_FLIPS:
        return _at_least(_sign_patterns(k), means, observed) / 2**k
    hits = sum(_at_least(signs, means, observed) for signs in _drawn_signs(k, draws, seed))
    return (hits + 1) / (draws + 1)


def _at_least(signs: np.ndarray, means: np.ndarray, observed: float) -> int:
    """How many sign patterns give a sum at least ``observed`` in size. numpy's own loop (einsum), not BLAS: a
    BLAS product this small waits for its worker threads to wake, ten times slower on a busy machine."""
    return int((np.abs(np.einsum("ij,j->i", signs, means)) >= observed).sum())


# A report tests dozens of pairs of modes over the same stories: the sign patterns made once per count of stories.
@cache
def _sign_patterns(k: int) -> np.ndarray:
    """Every pattern of k signs, one a row (2^k rows)."""
    signs = 1.0 - 2.0 * ((np.arange(2**k)[:, None] >> np.arange(k)) & 1)
    signs.flags.writeable = False
    return signs


@cache
def _drawn_signs(k: int, draws: int, seed: int) -> tuple[np.ndarray, ...]:
    """``draws`` random patterns of k signs from ``seed``, in blocks of at most 2^21 signs."""
    rng = np.random.default_rng(seed)
    block = max(1, (1 << 21) // k)
    blocks = tuple(rng.choice([-1.0, 1.0], size=(min(block, draws - start), k)) for start in range(0, draws, block))
    for signs in blocks:
        signs.flags.writeable = False
    return blocks


def paired_difference(
    x_a: np.ndarray, x_b: np.ndarray, stories: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float, str, int]:
    """95% interval of mean(x_b) - mean(x_a) over pairs: low, high, how it was found, and the stories.

    A paired cluster bootstrap: stories are drawn with replacement, each keeping its pairs (one story: the
    pairs are drawn). Never narrower than Newcombe's paired Wilson interval over the pairs; where the
    resamples have no spread (every pair alike), Newcombe's with the stories as n.
    """
    x_a, x_b = np.asarray(x_a, dtype=bool), np.asarray(x_b, dtype=bool)
    totals, k = _unit_totals(x_b.astype(float) - x_a, stories)
    floor = newcombe(x_a, x_b, len(x_a))
    draws = _resampled_means(totals, resamples, seed)
    if draws is not None:
        low, high = np.quantile(draws, QUANTILES)
        if high > low:
            method = "cluster bootstrap" if k > 1 else "bootstrap over pairs"
            return min(float(low), floor[0]), max(float(high), floor[1]), method, k
    if k > 1:
        return (*newcombe(x_a, x_b, k), "Newcombe over stories", k)
    return (*floor, "Newcombe over pairs", k)


def newcombe(x_a: np.ndarray, x_b: np.ndarray, n: float) -> tuple[float, float]:
    """Newcombe's (1998, method 10) interval for the paired difference B - A, Wilson's bounds at sample size n.

    n below the number of pairs (the stories) widens it for runs that are not independent.
    """
    both, only_a = float((x_a & x_b).sum()), float((x_a & ~x_b).sum())
    only_b, neither = float((~x_a & x_b).sum()), float((~x_a & ~x_b).sum())
    pairs = both + only_a + only_b + neither
    p_a, p_b = (both + only_a) / pairs, (both + only_b) / pairs
    low_a, high_a = wilson_bounds(p_a, n)
    low_b, high_b = wilson_bounds(p_b, n)
    spread = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    association = both * neither - only_a * only_b
    if association > 0:  # Newcombe's continuity correction of phi (else no discordant pair gives a point)
        association = max(association - pairs / 2, 0.0)
    phi = association / math.sqrt(spread) if spread > 0 else 0.0
    d = p_b - p_a
    below = math.sqrt(max(0.0, (p_b - low_b) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a) + (high_a - p_a) ** 2))
    above = math.sqrt(max(0.0, (high_b - p_b) ** 2 - 2 * phi * (high_b - p_b) * (p_a - low_a) + (p_a - low_a) ** 2))
    # Rounding leaves ~1e-17 where a bound is exactly 0 (it would print as -0.0%).
    return max(-1.0, round(d - below, 12)), min(1.0, round(d + above, 12))


def _value(test: PairedTest, value: float) -> float:
    return Seconds(value) if test.timed else value


def _interval(test: PairedTest) -> str:
    if test.timed and not math.isnan(test.low):
        return f"[{test.low:,.2f} s, {test.high:,.2f} s]"
    return interval(test.low, test.high)


PAIRED_COLUMNS: tuple[Column[PairedTest], ...] = (
    # keys: every part of a table split for width names the pair and the metric its p-values belong to
    Column("mode A", "text", lambda t: t.mode_a, key=True),
    Column("mode B", "text", lambda t: t.mode_b, key=True),
    Column("metric", "text", lambda t: t.metric, key=True),
    Column("pairs", "int", lambda t: t.pairs, "runs of A and B on the same story, trial, policy and model."),
    Column("stories", "int", lambda t: t.stories),
    Column("A", "pct", lambda t: _value(t, t.rate_a), "the rate, or for latency the mean seconds, over the pairs;"),
    Column("B", "pct", lambda t: _value(t, t.rate_b), "likewise."),
    Column("A only", "int", lambda t: t.only_a, "discordant pairs: A succeeded and B did not;"),
    Column("B only", "int", lambda t: t.only_b, "the other way round."),
    Column("B - A", "pct", lambda t: _value(t, t.difference), narrow=True),
    Column("95% CI", "ci", _interval, narrow=True, interval_of="B - A"),
    Column(
        "p",
        "p",
        lambda t: t.p,
        "exact two-sided McNemar test (binomial on the discordant pairs); for latency, a two-sided sign-flip "
        "permutation test on the per-story mean differences.",
    ),
    Column("p Holm", "p", lambda t: t.p_holm, narrow=True),
)


def paired_table(runs: pd.DataFrame) -> Table[PairedTest]:
    """The paired mode comparisons of a report: one row per slice, pair of modes and metric."""
    keys, tests = paired_tests(runs)
    count = tests[0].tests if tests else 0
    pairs = len({(t.key, t.mode_a, t.mode_b) for t in tests})
    about = (
        "Mode pairs on matched cells (same story, trial, gateway policy and model in one run folder: the same "
        "seed, the same cell); a pair with a run not judged (infrastructure, an unanswered plan review) is left "
        "out. 95% CI of B - A: paired cluster "
        f"bootstrap over stories ({RESAMPLES} resamples, seed {SEED}), never narrower than Newcombe's paired "
        "Wilson interval; Newcombe's with the stories as n where the resamples have no spread. Run latency: "
        "each run's wall time; B - A is the mean paired difference in seconds, its 95% CI the same bootstrap "
        "(no floor), its p a sign-flip permutation test on the per-story mean differences, exact over all 2^k "
        f"sign patterns up to {EXACT_SIGN_FLIPS} stories, else {SIGN_FLIP_DRAWS:,} random patterns (seed "
        f"{SEED}). p Holm: Holm's step-down correction over all {count} tests in this table ({pairs} mode pairs "
        f"x {len(OUTCOMES)} outcomes and run latency, one family); compare it, not p, with your alpha."
    )
    return Table("paired_modes", "Paired mode comparisons", (*key_columns(keys), *PAIRED_COLUMNS), tuple(tests), about)
