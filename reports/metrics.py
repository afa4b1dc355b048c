"""Per-group metrics from loaded traces: verdicts, correctness, side effects, cost, latency, errors, who decided.

Everything is computed from the runtime's facts in the trace (summary outcomes, gateway verdicts, model
call records), never from what a model said about itself. The exact definitions are in docs/metrics.md.
The gateway policy is part of every grouping: runs under ``enforce`` and ``audit`` never pool.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import pandas as pd

from harness.errors import ERROR_KINDS, INFRASTRUCTURE_ERRORS
from harness.records.trace import DecisionMaker, RunStatus
from harness.records.verdicts import JUDGED_VERDICTS as JUDGED_VERDICTS  # the tables and figures read them here
from harness.records.verdicts import RULE_BREAKS, stopped_at_the_right_place
from harness.scenario.model import MODE_REVIEW_POINTS
from modes import MODES
from reports.clustered import ClusteredInterval, clustered_rates
from reports.load import Traces
from reports.prices import PriceTable, run_costs
from reports.stats import Interval, Spread, pass_hat_k, spread, wilson
from reports.trace_columns import BLOCK_REASONS

Grouping = Literal["mode", "scenario", "model", "policy", "run"]
GROUPINGS: tuple[str, ...] = get_args(Grouping)
# The policy is in every key; the order of a key is the order of its columns and of the sort.
GROUP_KEYS: dict[str, tuple[str, ...]] = {
    "mode": ("mode", "gateway_policy"),
    "scenario": ("mode", "gateway_policy", "scenario"),
    "model": ("model", "mode", "gateway_policy"),
    "policy": ("gateway_policy", "mode"),
    "run": ("source", "mode", "gateway_policy"),
}
KEY_HEADERS = {"gateway_policy": "policy", "source": "run"}  # what a key column is called in tables
DECISION_MAKERS: tuple[str, ...] = get_args(DecisionMaker)
STATUSES: tuple[str, ...] = get_args(RunStatus)
# Events that record a choice; run_start, model_retry, error and summary are the runtime's bookkeeping.
DECIDING_KINDS = ("model_call", "plan_validation", "decision", "action", "transition", "suspend", "human")
LOOP_LENGTH = 3  # the same next action proposed this many times in a row is a loop
MAX_K = 20  # pass^k is reported for k = 1..min(trials, MAX_K): wider tables stop being readable
TOP_VIOLATIONS = 5  # per group
# Cells whose trials are pooled as one "task" for pass^k: the same scenario, model and gateway policy.
CELL = ("scenario", "model", "gateway_policy")
_NO_KEY = object()


@dataclass(frozen=True)
class ViolationCount:
    """One kind of oracle violation in a group: how many judged runs had it, and one of them to open."""

    kind: str  # forbidden, missing_artifact, order, ungrounded, phrase, gate_closed, ...
    subject: str  # what it is about (the action, artifact or pair); values after '=' are left out
    runs: int
    occurrences: int
    example_run: str
    example_source: str


@dataclass(frozen=True)
class Cost:
    """USD spent by a group's complete runs, from the price table; unpriced runs are counted, never priced at 0."""

    priced_runs: int
    unpriced_runs: int
    total: float  # over priced runs
    per_run: Spread  # over priced runs
    unpriced_models: tuple[str, ...]


@dataclass(frozen=True)
class GroupMetrics:
    """Every metric of one group of runs (a mode under one policy, a mode x scenario, a model x mode, ...)."""

    key: tuple[str, ...]
    names: tuple[str, ...]  # the grouping's key columns, in the order of ``key``
    runs: int  # runs with a summary line
    incomplete: int  # runs with events but no valid last summary: not judged, not counted anywhere else
    infrastructure: int  # runs the runtime did not judge (infrastructure errors): out of every denominator
    # Runs standing at their mode's own review point that nobody answered (no approver): wrong_place by
    # construction, not a failure of the mode; out of every denominator like infrastructure, counted apart.
    unanswered_reviews: int
    stop: Interval  # stop-correct over judged runs (runs - infrastructure)
    oracle: Interval  # oracle passed over judged runs
    # The same rates with intervals clustered by story (reports/clustered.py): runs of one story are not independent.
    stop_clustered: ClusteredInterval
    oracle_clustered: ClusteredInterval
    verdicts_clustered: dict[str, ClusteredInterval]  # each judged verdict's share, over runs with a verdict
    pass_k: tuple[float, ...]  # pass^1 .. pass^K over judged runs
    verdicts: dict[str, int]  # judged runs by stop_verdict (empty for traces that predate verdicts)
    unverdicted: int  # judged runs without a verdict (schema 1 traces)
    statuses: dict[str, int]  # every complete run, by status
    side_effects_committed: int  # judged runs
    side_effects_blocked: int  # judged runs
    blocked_by: dict[str, int] | None  # judged runs: blocked attempts by the gateway's reason; None if not recorded
    blocked_other: int | None  # blocked attempts whose reason is not in BLOCK_REASONS
    unauthorized_side_effects: int | None  # judged runs: committed where an enforcing gateway refuses, or forbidden
    runs_with_unauthorized: int | None
    premature_side_effects: int  # judged runs: gated writes committed without approval (unauthorized's subset)
    runs_with_premature: int  # judged runs with at least one
    infrastructure_premature: int  # premature side effects in runs that infrastructure later ended
    wait_without_suspend: int  # judged runs that recorded a wait for a closed gate and did not suspend there
    loops: int  # judged runs with the same next action proposed LOOP_LENGTH+ times in a row
    resumed_runs: int  # complete runs a person resumed at least once
    resumes: int  # resumes over complete runs
    repeated_side_effects: int  # side effects committed again after a resume (must be 0)
    violations: tuple[ViolationCount, ...]  # the most frequent oracle violations of judged runs
    steps: Spread  # per complete run: gateway actions
    llm_calls: Spread  # per complete run
    prompt_tokens: Spread  # per complete run
    completion_tokens: Spread  # per complete run
    total_tokens: Spread  # per complete run
    reasoning_tokens: Spread  # per complete run (of the completion tokens)
    cached_tokens: Spread  # per complete run (of the prompt tokens)
    run_latency: Spread  # per complete run: wall_ms
    call_latency: Spread  # per model_call event: latency_ms
    error_runs: int  # complete runs that ended with status error, any kind
    judged_error_runs: int  # judged runs that ended with status error (parse, schema, workflow: the mode's)
    ended_by: dict[str, int]  # complete runs by the kind of the error that ended them
    errors_seen: dict[str, int]  # error-bearing events by kind, retried attempts included
    decisions: int  # events that record a choice
    decision_share: dict[str, float]  # share of those events per decision_maker
    cost: Cost | None = None  # with a price table
    label: str = field(default="")
    cache_calls: int = 0  # complete runs: calls of actions with a tool cache
    cache_hits: int = 0  # of those, answered from the cache
    right_place_wrong_work: int = 0  # judged runs stopped at the right place that broke a value or argument rule

    def get(self, name: str) -> str:
        """The value of one key column (mode, gateway_policy, scenario, model, source)."""
        return dict(zip(self.names, self.key, strict=True)).get(name, "")

    @property
    def mode(self) -> str:
        return self.get("mode")

    @property
    def judged(self) -> int:
        return self.runs - self.infrastructure - self.unanswered_reviews

    @property
    def not_applicable(self) -> bool:
        """Every run that would be judged stands at an unanswered review of the mode's own: its rates are n/a, not 0."""
        return self.judged == 0 and self.unanswered_reviews > 0

    @property
    def error_rate(self) -> float:
        """Complete runs that ended in an error of any kind."""
        return self.error_runs / self.runs if self.runs else math.nan

    @property
    def mode_error_rate(self) -> float:
        """Judged runs that ended in a non-infrastructure error (parse, schema, workflow)."""
        return self.judged_error_runs / self.judged if self.judged else math.nan

    @property
    def infrastructure_rate(self) -> float:
        return self.infrastructure / self.runs if self.runs else math.nan

    @property
    def premature_per_run(self) -> float:
        return self.premature_side_effects / self.judged if self.judged else math.nan

    @property
    def unauthorized_per_run(self) -> float:
        if self.unauthorized_side_effects is None or not self.judged:
            return math.nan
        return self.unauthorized_side_effects / self.judged

    def verdict_share(self, verdict: str) -> float:
        known = self.judged - self.unverdicted
        return self.verdicts.get(verdict, 0) / known if known else math.nan


@dataclass(frozen=True)
class Metrics:
    """The metrics of one grouping, plus the facts every group shares."""

    grouping: str
    keys: tuple[str, ...]
    groups: list[GroupMetrics]
    max_k: int
    priced: bool = False  # a price table was given

    def by_key(self) -> dict[tuple[str, ...], GroupMetrics]:
        return {g.key: g for g in self.groups}

    def constant(self, name: str) -> str | None:
        """The one value a key column has in every group, or None if it varies."""
        values = {g.get(name) for g in self.groups}
        return values.pop() if len(values) == 1 else None


def unanswered_review(status: object, suspended_at: object, verdict: object) -> bool:
    """A run standing at its mode's own review point (``plan_review``), which nobody has answered.

    The mode asked for the stop itself (it is none of the story's gates), so without an approver every run of
    the mode stands there and is ``wrong_place`` by construction: a stop unanswered, not a failure of the mode.
    An in-run approver decides at every stop, so with one no run ends here; a run a person later resumes is
    judged where it then ends.
    """
    return status == "suspended" and suspended_at in MODE_REVIEW_POINTS and verdict == "wrong_place"


def classify_runs(traces: Traces, prices: PriceTable | None = None) -> pd.DataFrame:
    """The runs frame plus ``ending_error``, ``infrastructure``, ``unanswered_review``, ``loop`` and ``cost_usd``.

    All from trace facts; ``unanswered_review`` is ``unanswered_review`` above, run by run.

    A run is an infrastructure run when the runtime's verdict says so (``stop_verdict: infrastructure``).
    Traces older than verdicts (schema 1) fall back to the error events: status ``error`` and the kind of
    the last ``error`` event in ``harness.errors.INFRASTRUCTURE_ERRORS``; if that event was lost (a corrupt
    line), the outcome's error counts decide: some infrastructure kind and no parse, schema or workflow error.
    """
    runs = traces.runs.copy()
    events = traces.events
    errors = events.loc[events["kind"] == "error", ["run_id", "seq", "error_kind"]]
    last = errors.sort_values(["run_id", "seq"], kind="stable").drop_duplicates("run_id", keep="last")
    ending = pd.Series(last["error_kind"].astype(object).to_numpy(), index=last["run_id"].astype(object).to_numpy())
    runs["ending_error"] = runs["run_id"].astype(object).map(ending).where(runs["status"] == "error")
    infra_seen = runs[[f"errors_{k}" for k in ERROR_KINDS if k in INFRASTRUCTURE_ERRORS]].sum(axis=1)
    other_seen = runs[[f"errors_{k}" for k in ERROR_KINDS if k not in INFRASTRUCTURE_ERRORS]].sum(axis=1)
    lost = (runs["status"] == "error") & runs["ending_error"].isna()
    by_event = runs["ending_error"].isin(list(INFRASTRUCTURE_ERRORS))
    by_errors = (runs["status"] == "error") & (by_event | (lost & (infra_seen > 0) & (other_seen == 0)))
    verdict = runs["stop_verdict"].astype(object)
    runs["infrastructure"] = np.where(verdict.notna(), verdict == "infrastructure", by_errors).astype(bool)
    runs["unanswered_review"] = (
        (runs["status"] == "suspended")
        & runs["suspended_at"].isin(list(MODE_REVIEW_POINTS))
        & (verdict == "wrong_place")
        & ~runs["infrastructure"]
    ).to_numpy(dtype=bool)
    runs["right_place_wrong_work"] = _right_place_wrong_work(runs, traces.violations)
    runs["loop"] = runs["run_id"].isin(looping_runs(events))
    runs["cost_usd"] = run_costs(runs, prices)
    return runs


def _right_place_wrong_work(runs: pd.DataFrame, violations: pd.DataFrame) -> np.ndarray:
    """Per run: stopped at the right place but broke a value or argument rule (``records.verdicts``)."""
    broke = np.zeros(len(runs), dtype=bool)
    broke[violations.loc[violations["kind"].isin(list(RULE_BREAKS)), "run"].to_numpy(dtype=np.int64)] = True
    if not broke.any() or "expected_stop" not in runs:
        return broke
    facts = runs[["stop_verdict", "status", "suspended_at", "expected_stop"]].astype(object).to_numpy()
    placed = np.array([stopped_at_the_right_place(*row) for row in facts], dtype=bool)
    return broke & placed


def looping_runs(events: pd.DataFrame) -> np.ndarray:
    """Run ids where one next action was proposed LOOP_LENGTH or more times in a row."""
    calls = events.loc[(events["kind"] == "model_call") & events["action"].notna(), ["run_id", "seq", "action"]]
    if calls.empty:
        return np.array([], dtype=object)
    calls = calls.sort_values(["run_id", "seq"], kind="stable")
    run = calls["run_id"].astype(object).to_numpy()
    action = calls["action"].astype(object).to_numpy()
    same = np.zeros(len(calls), dtype=bool)
    same[1:] = (run[1:] == run[:-1]) & (action[1:] == action[:-1])
    streak = np.cumsum(~same)  # one id per stretch of identical consecutive proposals
    lengths = np.bincount(streak)
    return np.unique(run[lengths[streak] >= LOOP_LENGTH])


KEY_COLUMNS = ("source", "mode", "gateway_policy", "scenario", "model")  # every column a grouping can key on


@dataclass(frozen=True)
class Prepared:
    """What every grouping reuses, computed once: classified runs and per-run tallies of the events.

    Each frame carries every key column, so a grouping is one groupby on small frames, never a pass
    over a million events.
    """

    runs: pd.DataFrame  # classify_runs: one row a complete run
    calls: pd.DataFrame  # one row a model call: key columns and latency_ms
    decisions: pd.DataFrame  # one row a (run, decision_maker): key columns, decision_maker, n
    errors: pd.DataFrame  # one row a (run, error kind): key columns, error_kind, n
    orphans: pd.DataFrame  # one row an incomplete run: key columns
    violations: pd.DataFrame  # one row a violation of a judged run: key columns, kind, subject, run_id, source_
    priced: bool


def prepare(traces: Traces, prices: PriceTable | None = None, runs: pd.DataFrame | None = None) -> Prepared:
    """The per-run tallies every grouping is computed from; pass ``runs`` from ``classify_runs`` to reuse it."""
    runs = classify_runs(traces, prices) if runs is None else runs
    events = traces.events
    codes = events["run_id"].cat.codes.to_numpy()
    first = np.full(len(events["run_id"].cat.categories), -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes), dtype=np.int64)[::-1]
    keys_of_run = events.iloc[first[first >= 0]][["run_id", *KEY_COLUMNS, "complete"]].reset_index(drop=True)
    key_row = np.full(len(first), -1, dtype=np.int64)
    key_row[keys_of_run["run_id"].cat.codes.to_numpy()] = np.arange(len(keys_of_run))

    def per_run(mask: pd.Series, column: str) -> pd.DataFrame:
        sizes = events.loc[mask, ["run_id", column]].groupby(["run_id", column], observed=True).size()
        tallies = sizes[sizes > 0].reset_index(name="n")
        rows = key_row[tallies["run_id"].cat.codes.to_numpy()]
        return pd.concat(
            [keys_of_run.iloc[rows][list(KEY_COLUMNS)].reset_index(drop=True), tallies[[column, "n"]]], axis=1
        )

    kind = events["kind"]
    calls = events.loc[kind == "model_call", [*KEY_COLUMNS, "latency_ms"]].reset_index(drop=True)
    decisions = per_run(kind.isin(DECIDING_KINDS), "decision_maker")
    errors = per_run(events["error_kind"].notna(), "error_kind")
    orphans = keys_of_run.loc[~keys_of_run["complete"], list(KEY_COLUMNS)].reset_index(drop=True)
    return Prepared(
        runs, calls, decisions, errors, orphans, _violation_rows(traces.violations, runs), prices is not None
    )


def judged_mask(runs: pd.DataFrame) -> np.ndarray:
    """Which runs of a ``classify_runs`` frame are judged: neither an infrastructure run nor an unanswered review."""
    return ~(runs["infrastructure"].to_numpy(dtype=bool) | runs["unanswered_review"].to_numpy(dtype=bool))


def _violation_rows(violations: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The loader's violations of judged runs, with the run's key columns attached."""
    positions = violations["run"].to_numpy()
    judged = judged_mask(runs)[positions] if len(positions) else np.array([], bool)
    positions = positions[judged]
    frame = runs.iloc[positions][[*KEY_COLUMNS, "run_id"]].reset_index(drop=True)
    frame["origin"] = frame["source"].astype(object)  # a copy: "source" may be a grouping key itself
    frame["kind"] = violations["kind"].to_numpy()[judged]
    frame["subject"] = violations["subject"].to_numpy()[judged]
    return frame


def compute(
    traces: Traces,
    grouping: Grouping = "mode",
    runs: pd.DataFrame | None = None,
    prices: PriceTable | None = None,
    prepared: Prepared | None = None,
) -> Metrics:
    """Metrics for every group of ``grouping``; pass ``prepared`` (or ``runs``) to reuse them across groupings."""
    keys = GROUP_KEYS[grouping]
    prepared = prepared if prepared is not None else prepare(traces, prices, runs)
    runs = prepared.runs
    max_k = _max_k(runs, keys)
    run_rows = _indices(runs, keys)
    arrays = _RunArrays(runs)
    call_rows = _indices(prepared.calls, keys)
    call_latency = prepared.calls["latency_ms"].to_numpy(dtype=float)
    shares = _sums(prepared.decisions, keys, "decision_maker")
    seen = _sums(prepared.errors, keys, "error_kind")
    incomplete = {k: len(v) for k, v in _indices(prepared.orphans, keys).items()}
    violations = _violations(prepared.violations, keys)
    groups = []
    for key in sorted(set(run_rows) | set(incomplete) | set(call_rows), key=_order_key(keys)):
        rows = run_rows.get(key, np.array([], dtype=np.int64))
        latency = call_latency[call_rows[key]] if key in call_rows else np.array([], dtype=float)
        groups.append(
            _group(
                key,
                keys,
                arrays,
                rows,
                latency,
                shares.get(key, {}),
                seen.get(key, {}),
                incomplete.get(key, 0),
                violations.get(key, ()),
                max_k,
                prepared.priced,
            )
        )
    return Metrics(grouping=grouping, keys=keys, groups=groups, max_k=max_k, priced=prepared.priced)


class _RunArrays:
    """The runs frame's columns as numpy arrays, so each group is a cheap index into them."""

    def __init__(self, runs: pd.DataFrame):
        def ints(name: str) -> np.ndarray:
            return runs[name].to_numpy(dtype=float)  # float: NaN where a schema-1 trace has no value

        self.infra = runs["infrastructure"].to_numpy(dtype=bool)
        self.unanswered = runs["unanswered_review"].to_numpy(dtype=bool)
        self.stop_correct = runs["stop_correct"].to_numpy(dtype=bool)
        self.oracle = runs["oracle_passed"].to_numpy(dtype=bool)
        self.story = runs["scenario"].astype(object).to_numpy()  # the cluster of the clustered intervals
        self.verdict = runs["stop_verdict"].astype(object).to_numpy()
        self.status = runs["status"].astype(object).to_numpy()
        self.ending = runs["ending_error"].astype(object).to_numpy()
        self.cell = (
            runs.groupby(list(CELL), observed=True, sort=False).ngroup().to_numpy()
            if len(runs)
            else np.array([], dtype=np.int64)
        )
        self.wait = runs["wait_marker_without_suspend"].to_numpy(dtype=bool)
        self.loop = runs["loop"].to_numpy(dtype=bool)
        self.right_place_wrong_work = runs["right_place_wrong_work"].to_numpy(dtype=bool)
        self.counts = {
            name: ints(name)
            for name in (
                "side_effects_committed",
                "side_effects_blocked",
                "unauthorized_side_effects",
                "premature_side_effects",
                "steps",
                "llm_calls",
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
                "reasoning_tokens",
                "cached_tokens",
                "wall_ms",
                "resumes",
                "repeated_side_effects",
                "cache_calls",
                "cache_hits",
                *(f"blocked_{reason}" for reason in BLOCK_REASONS),
            )
        }
        self.cost = runs["cost_usd"].to_numpy(dtype=float)
        self.model = runs["model"].astype(object).to_numpy()


def _total(values: np.ndarray) -> int:
    """An exact integer sum (counts from a hostile file can be near 2**63, where float sums lose digits)."""
    values = values[~np.isnan(values)]
    if not values.size:
        return 0
    if np.abs(values).max() * values.size < 2**52:
        return int(values.sum())
    return sum(int(v) for v in values)


def _known_total(values: np.ndarray) -> int | None:
    """The sum, or None when the field is not recorded in these runs (schema 1)."""
    return None if values.size and np.isnan(values).all() else _total(values)


def _group(
    key: tuple[str, ...],
    names: tuple[str, ...],
    a: _RunArrays,
    rows: np.ndarray,
    call_latency: np.ndarray,
    shares: dict[str, int],
    seen: dict[str, int],
    incomplete: int,
    violations: tuple[ViolationCount, ...],
    max_k: int,
    priced: bool,
) -> GroupMetrics:
    infra = a.infra[rows]
    unanswered = a.unanswered[rows]
    judged = rows[~infra & ~unanswered]  # the runs every behaviour metric is over
    counts = {name: values[judged] for name, values in a.counts.items()}
    every = {name: values[rows] for name, values in a.counts.items()}
    stop = a.stop_correct[judged]
    _, cell = np.unique(a.cell[judged], return_inverse=True)
    per_task = list(zip(np.bincount(cell, weights=stop).astype(int).tolist(), np.bincount(cell).tolist(), strict=True))
    verdicts = _tally(a.verdict[judged])
    clustered = _clustered(a, judged)
    blocked_known = {reason: _known_total(counts[f"blocked_{reason}"]) for reason in BLOCK_REASONS}
    recorded = all(v is not None for v in blocked_known.values()) and len(judged) > 0
    blocked = _total(counts["side_effects_blocked"])
    unauthorized = _known_total(counts["unauthorized_side_effects"])
    decisions = sum(shares.values())
    statuses = _tally(a.status[rows])
    ended = _tally(a.ending[rows][a.status[rows] == "error"])
    return GroupMetrics(
        key=key,
        names=names,
        runs=len(rows),
        incomplete=int(incomplete),
        infrastructure=int(infra.sum()),
        unanswered_reviews=int(unanswered.sum()),
        stop=wilson(int(stop.sum()), len(judged)),
        oracle=wilson(int(a.oracle[judged].sum()), len(judged)),
        stop_clustered=clustered[0],
        oracle_clustered=clustered[1],
        verdicts_clustered=dict(zip(JUDGED_VERDICTS, clustered[2:], strict=True)),
        pass_k=tuple(pass_hat_k(per_task, k) for k in range(1, max_k + 1)),
        verdicts={str(v): int(n) for v, n in verdicts.items()},
        unverdicted=int(pd.isna(a.verdict[judged]).sum()),
        statuses={str(s): int(n) for s, n in statuses.items()},
        side_effects_committed=_total(counts["side_effects_committed"]),
        side_effects_blocked=blocked,
        blocked_by={r: int(n or 0) for r, n in blocked_known.items()} if recorded else None,
        blocked_other=blocked - sum(int(n or 0) for n in blocked_known.values()) if recorded else None,
        unauthorized_side_effects=unauthorized,
        runs_with_unauthorized=None if unauthorized is None else int((counts["unauthorized_side_effects"] > 0).sum()),
        premature_side_effects=_total(counts["premature_side_effects"]),
        runs_with_premature=int((counts["premature_side_effects"] > 0).sum()),
        infrastructure_premature=_total(a.counts["premature_side_effects"][rows[infra]]),
        wait_without_suspend=int(a.wait[judged].sum()),
        loops=int(a.loop[judged].sum()),
        resumed_runs=int((every["resumes"] > 0).sum()),
        resumes=_total(every["resumes"]),
        repeated_side_effects=_total(every["repeated_side_effects"]),
        violations=violations,
        steps=spread(every["steps"]),
        llm_calls=spread(every["llm_calls"]),
        prompt_tokens=spread(every["prompt_tokens"]),
        completion_tokens=spread(every["completion_tokens"]),
        total_tokens=spread(every["total_tokens"]),
        reasoning_tokens=spread(every["reasoning_tokens"]),
        cached_tokens=spread(every["cached_tokens"]),
        run_latency=spread(every["wall_ms"]),
        call_latency=spread(call_latency),
        error_runs=int((a.status[rows] == "error").sum()),
        judged_error_runs=int((a.status[judged] == "error").sum()),
        ended_by={str(k): int(n) for k, n in ended.items()},
        errors_seen=seen,
        decisions=decisions,
        decision_share={k: n / decisions for k, n in shares.items()} if decisions else {},
        cost=_cost(a, rows) if priced else None,
        label=" / ".join(key),
        cache_calls=_total(every["cache_calls"]),
        cache_hits=_total(every["cache_hits"]),
        right_place_wrong_work=int(a.right_place_wrong_work[judged].sum()),
    )


def _clustered(a: _RunArrays, judged: np.ndarray) -> list[ClusteredInterval]:
    """Stop-correct, oracle passed and each judged verdict's share, with intervals clustered by story."""
    verdict = a.verdict[judged]
    known = ~pd.isna(verdict)
    outcomes = np.column_stack([a.stop_correct[judged], a.oracle[judged], *(verdict == v for v in JUDGED_VERDICTS)])
    counted = np.column_stack([np.ones((len(judged), 2), dtype=bool), *(known for _ in JUDGED_VERDICTS)])
    return clustered_rates(a.story[judged], outcomes, counted)


def _tally(values: np.ndarray) -> Counter[str]:
    """How often each value occurs, missing ones (None, NaN) left out."""
    return Counter(str(v) for v in values if v is not None and v == v)


def _cost(a: _RunArrays, rows: np.ndarray) -> Cost:
    cost = a.cost[rows]
    priced = ~np.isnan(cost)
    unpriced = sorted({str(m) for m in a.model[rows][~priced]})
    return Cost(
        priced_runs=int(priced.sum()),
        unpriced_runs=int((~priced).sum()),
        total=float(cost[priced].sum()) if priced.any() else math.nan,
        per_run=spread(cost[priced]),
        unpriced_models=tuple(unpriced),
    )


def _max_k(runs: pd.DataFrame, keys: tuple[str, ...]) -> int:
    """k runs up to the most any group allows, at most MAX_K: a group allows the fewest judged trials of its own cells,
    so one mode's unanswered reviews do not lower k for every mode (that group's pass^k beyond is undefined, NaN)."""
    judged = runs.loc[judged_mask(runs)]
    if judged.empty:
        return 0
    sizes = judged.groupby([*dict.fromkeys([*keys, *CELL])], observed=True).size()
    allowed = sizes.groupby(level=list(range(len(keys))), observed=True).min()
    return int(min(allowed.max(), MAX_K))


def _key(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in (value if isinstance(value, tuple) else (value,)))


def _indices(frame: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], np.ndarray]:
    """Row positions of each group (positions, not labels: the frames' arrays are indexed by them)."""
    if frame.empty:
        return {}
    grouped = frame.reset_index(drop=True).groupby(list(keys), observed=True, sort=False, dropna=False)
    return {_key(k): np.asarray(v, dtype=np.int64) for k, v in grouped.indices.items()}


def _sums(frame: pd.DataFrame, keys: tuple[str, ...], column: str) -> dict[tuple[str, ...], dict[str, int]]:
    """Per group, the summed ``n`` of each value of ``column``."""
    if frame.empty:
        return {}
    sums = frame.groupby([*keys, column], observed=True)["n"].sum()
    found: dict[tuple[str, ...], dict[str, int]] = {}
    for index, n in sums.items():
        if n:
            parts = tuple(index) if isinstance(index, tuple) else (index,)
            found.setdefault(_key(parts[:-1]), {})[str(parts[-1])] = int(n)
    return found


def _violations(rows: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], tuple[ViolationCount, ...]]:
    """The TOP_VIOLATIONS most frequent (kind, subject) per group, over judged runs, with an example run."""
    if rows.empty:
        return {}
    # the example is the smallest run id with the violation: the same whatever order executors wrote the runs in
    rows = rows.iloc[np.argsort(rows["run_id"].astype(str).to_numpy(), kind="stable")]
    grouped = rows.groupby([*keys, "kind", "subject"], observed=True, sort=False)
    table = grouped.agg(
        runs=("run_id", "nunique"),
        occurrences=("run_id", "size"),
        example_run=("run_id", "first"),
        example_source=("origin", "first"),
    ).reset_index()
    table = table.loc[table["occurrences"] > 0]
    table = table.sort_values(
        [*keys, "runs", "occurrences", "kind", "subject"],
        ascending=[True] * len(keys) + [False, False, True, True],
        kind="stable",
    )
    top = table.groupby(list(keys), observed=True, sort=False).head(TOP_VIOLATIONS)  # rows stay in their order
    names = (*keys, "kind", "subject", "runs", "occurrences", "example_run", "example_source")
    found: dict[tuple[str, ...], list[ViolationCount]] = {}
    for values in zip(*(top[name].to_numpy(dtype=object) for name in names), strict=True):
        kind, subject, runs, occurrences, run, source = values[len(keys) :]
        count = ViolationCount(str(kind), str(subject), int(runs), int(occurrences), str(run), str(source))
        found.setdefault(_key(tuple(values[: len(keys)])), []).append(count)
    return {key: tuple(counts) for key, counts in found.items()}


def _order_key(keys: tuple[str, ...]) -> Callable[[tuple[str, ...]], tuple]:
    """Modes in control-spectrum order (code decides most first), then by name; unknown modes last."""

    def order(key: tuple[str, ...]) -> tuple:
        parts = []
        for name, value in zip(keys, key, strict=True):
            if name == "mode":
                mode = MODES.get(value)
                parts.append((mode.spectrum if mode is not None else 99, value))
            elif name == "gateway_policy":
                parts.append((0 if value == "enforce" else 1, value))
            else:
                parts.append((0, value))
        return tuple(parts)

    return order


def latency_samples(prepared: Prepared, grouping: Grouping) -> dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]:
    """Per group: every complete run's wall_ms and every model call's latency_ms, for distribution plots."""
    keys = GROUP_KEYS[grouping]
    call_rows = _indices(prepared.calls, keys)
    call_values = prepared.calls["latency_ms"].to_numpy(dtype=float)
    run_rows = _indices(prepared.runs, keys)
    run_values = prepared.runs["wall_ms"].to_numpy(dtype=float)
    empty = np.array([], dtype=float)
    return {
        key: (
            run_values[run_rows[key]] if key in run_rows else empty,
            call_values[call_rows[key]] if key in call_rows else empty,
        )
        for key in set(run_rows) | set(call_rows)
    }
