"""Which of ``bench compare``'s regressions hold up under sampling: one family of one-sided tests, Holm-corrected.

A regression is B doing worse than A at a good outcome per judged run: stop-correct, free of premature side
effects, free of unauthorized ones. When the two sides are recordings of one matrix (the same cells: every
(scenario, mode, trial) once on each side), each run of A has its twin in B and the test is the exact
McNemar test on the pairs; otherwise the sides are independent samples and the test is Fisher's exact test.
Every test of the comparison (each group x each outcome) is one family: Holm's correction keeps the chance
of any false flag at alpha, however many groups are compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from reports.metrics import GroupMetrics, judged_mask
from reports.stats import fisher_less, holm, mcnemar_exact

PAIR_ON = ("scenario", "mode", "trial")  # plus the policy and model, unless the sides differ in them wholesale
CHECKS = ("stop-correct", "premature", "unauthorized")


@dataclass(frozen=True)
class Test:
    """One one-sided test that B's good-outcome rate is below A's."""

    p: float
    p_holm: float
    family: int  # how many tests the Holm correction ran over
    paired: bool

    @property
    def name(self) -> str:
        return "exact McNemar" if self.paired else "Fisher"


@dataclass(frozen=True)
class Family:
    """Every test of one comparison, by (group key, check)."""

    tests: dict[tuple[tuple[str, ...], str], Test]
    paired: bool
    pair_on: tuple[str, ...]

    def of(self, key: tuple[str, ...]) -> dict[str, Test]:
        """One group's tests, by check."""
        return {check: test for (group, check), test in self.tests.items() if group == key}

    def describe(self) -> str:
        """The sentence a reader needs: which test, on what, and which correction over how many tests."""
        count = sum(not math.isnan(t.p) for t in self.tests.values())
        test = (
            f"one-sided exact McNemar test on runs paired by ({', '.join(self.pair_on)}): the two sides hold the "
            "same cells"
            if self.paired
            else "one-sided Fisher exact test (the sides are not two recordings of one matrix: unpaired)"
        )
        return f"significance: {test}; Holm's correction over {count} tests (each group x {', '.join(CHECKS)})"


def _column(check: str) -> str:
    return "stop_correct" if check == "stop-correct" else f"{check}_side_effects"


def _good(check: str, values: pd.Series) -> np.ndarray:
    """Per judged run: the good outcome the check counts (stop-correct, or free of the side effect)."""
    return values.to_numpy(dtype=bool) if check == "stop-correct" else values.to_numpy(dtype=float) == 0


def _good_counts(g: GroupMetrics, check: str) -> int | None:
    if check == "stop-correct":
        return g.stop.successes
    with_any = g.runs_with_premature if check == "premature" else g.runs_with_unauthorized
    return None if with_any is None else g.judged - with_any


def pair_columns(runs_a: pd.DataFrame, runs_b: pd.DataFrame) -> tuple[str, ...] | None:
    """The columns that pair A's runs with B's, or None when the sides are not recordings of one matrix."""
    columns = [*PAIR_ON]
    for column in ("gateway_policy", "model"):
        va, vb = set(runs_a[column].astype(str)), set(runs_b[column].astype(str))
        if not (len(va) == len(vb) == 1 and va != vb):  # a side-wide difference (audit vs enforce) still pairs
            columns.append(column)
    keys_a = runs_a[columns].astype(str).apply(tuple, axis=1) if len(runs_a) else pd.Series([], dtype=object)
    keys_b = runs_b[columns].astype(str).apply(tuple, axis=1) if len(runs_b) else pd.Series([], dtype=object)
    if not len(keys_a) or keys_a.duplicated().any() or keys_b.duplicated().any() or set(keys_a) != set(keys_b):
        return None
    return tuple(columns)


def family(
    groups: Sequence[tuple[tuple[str, ...], GroupMetrics | None, GroupMetrics | None]],
    keys: tuple[str, ...],
    runs_a: pd.DataFrame | None = None,
    runs_b: pd.DataFrame | None = None,
) -> Family:
    """The tests of every group present on both sides; paired when the classified runs of both sides pair up."""
    columns = pair_columns(runs_a, runs_b) if runs_a is not None and runs_b is not None else None
    found: dict[tuple[tuple[str, ...], str], float] = {}
    if columns is not None:
        assert runs_a is not None and runs_b is not None
        joined = _joined(runs_a, runs_b, columns)
        group_by = [k if k in columns else f"{k}_a" for k in keys]  # a pairing column is one column, unsuffixed
        by_group: dict[tuple[str, ...], pd.DataFrame] = (
            {_key(k): frame for k, frame in joined.groupby(group_by, observed=True)} if group_by else {(): joined}
        )
        for key, a, b in groups:
            if a is not None and b is not None and key in by_group:
                for check in CHECKS:
                    found[(key, check)] = _mcnemar(by_group[key], check)
    else:
        for key, a, b in groups:
            if a is not None and b is not None and a.judged and b.judged:
                for check in CHECKS:
                    good_a, good_b = _good_counts(a, check), _good_counts(b, check)
                    if good_a is not None and good_b is not None:
                        found[(key, check)] = fisher_less(good_a, a.judged, good_b, b.judged)
    names = list(found)
    adjusted = holm([found[n] for n in names])
    count = sum(not math.isnan(p) for p in adjusted)
    paired = columns is not None
    tests = {n: Test(found[n], q, count, paired) for n, q in zip(names, adjusted, strict=True)}
    return Family(tests, paired, columns or PAIR_ON)


def _key(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in (value if isinstance(value, tuple) else (value,)))


def _joined(runs_a: pd.DataFrame, runs_b: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """One row a pair of judged twins: A's and B's columns suffixed _a and _b."""
    judged_a = runs_a.loc[judged_mask(runs_a)]
    judged_b = runs_b.loc[judged_mask(runs_b)]
    frames = []
    for runs, suffix in ((judged_a, "_a"), (judged_b, "_b")):
        frame = runs.astype(dict.fromkeys(columns, str))
        frames.append(frame.rename(columns={c: f"{c}{suffix}" for c in frame.columns if c not in columns}))
    return frames[0].merge(frames[1], on=list(columns), how="inner")


def _mcnemar(pairs: pd.DataFrame, check: str) -> float:
    column = _column(check)
    if pairs[f"{column}_a"].isna().any() or pairs[f"{column}_b"].isna().any():
        return math.nan  # not recorded on a side (schema 1)
    a, b = _good(check, pairs[f"{column}_a"]), _good(check, pairs[f"{column}_b"])
    return mcnemar_exact(int((a & ~b).sum()), int((~a & b).sum()), "a_more")
