"""Per-group metrics from loaded traces: correctness, side effects, cost, latency, errors, who decided.

Everything is computed from the runtime's facts in the trace (summary outcomes, gateway verdicts, model
call records), never from what a model said about itself. The exact definitions are in README.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import pandas as pd

from harness.errors import ERROR_KINDS, INFRASTRUCTURE_ERRORS
from harness.trace import DecisionMaker, RunStatus
from modes import MODES
from reports.load import Traces
from reports.stats import Interval, Spread, pass_hat_k, spread, wilson

Grouping = Literal["mode", "scenario", "model"]
GROUPINGS: tuple[str, ...] = get_args(Grouping)
GROUP_KEYS: dict[str, tuple[str, ...]] = {"mode": ("mode",), "scenario": ("mode", "scenario"), "model": ("model", "mode")}
DECISION_MAKERS: tuple[str, ...] = get_args(DecisionMaker)
STATUSES: tuple[str, ...] = get_args(RunStatus)
# Events that record a choice; run_start, model_retry, error and summary are the runtime's bookkeeping.
DECIDING_KINDS = ("model_call", "plan_validation", "decision", "action", "transition", "suspend")
LOOP_LENGTH = 3  # the same next action proposed this many times in a row is a loop
MAX_K = 20  # pass^k is reported for k = 1..min(trials, MAX_K): wider tables stop being readable
# Cells whose trials are pooled as one "task" for pass^k: the same scenario, model and gateway policy.
CELL = ("scenario", "model", "gateway_policy")


@dataclass(frozen=True)
class GroupMetrics:
    """Every metric of one group of runs (a mode, a mode x scenario, or a model x mode)."""

    key: tuple[str, ...]
    runs: int  # runs with a summary line
    incomplete: int  # runs with events but no summary line: not judged, not counted anywhere else
    infrastructure: int  # runs ended by an infrastructure error: out of every correctness denominator
    stop: Interval  # stop-correct over judged runs (runs - infrastructure)
    oracle: Interval  # oracle passed over judged runs
    pass_k: tuple[float, ...]  # pass^1 .. pass^K over judged runs
    statuses: dict[str, int]  # every complete run, by status
    side_effects_committed: int  # judged runs
    side_effects_blocked: int  # judged runs
    premature_side_effects: int  # judged runs: gated writes committed without approval
    runs_with_premature: int  # judged runs with at least one
    infrastructure_premature: int  # premature side effects in runs that infrastructure later ended
    wait_without_suspend: int  # judged runs that recorded a wait marker and went on
    loops: int  # judged runs with the same next action proposed LOOP_LENGTH+ times in a row
    steps: Spread  # per complete run: gateway actions
    llm_calls: Spread  # per complete run
    prompt_tokens: Spread  # per complete run
    completion_tokens: Spread  # per complete run
    total_tokens: Spread  # per complete run
    run_latency: Spread  # per complete run: wall_ms
    call_latency: Spread  # per model_call event: latency_ms
    error_runs: int  # complete runs that ended with status error, any kind
    ended_by: dict[str, int]  # complete runs by the kind of the error that ended them
    errors_seen: dict[str, int]  # error-bearing events by kind, retried attempts included
    decisions: int  # events that record a choice
    decision_share: dict[str, float]  # share of those events per decision_maker
    label: str = field(default="")

    @property
    def judged(self) -> int:
        return self.runs - self.infrastructure

    @property
    def error_rate(self) -> float:
        """Complete runs that ended in an error of any kind."""
        return self.error_runs / self.runs if self.runs else math.nan

    @property
    def mode_error_rate(self) -> float:
        """Judged runs that ended in a non-infrastructure error (parse, schema, workflow)."""
        return (self.error_runs - self.infrastructure) / self.judged if self.judged else math.nan

    @property
    def infrastructure_rate(self) -> float:
        return self.infrastructure / self.runs if self.runs else math.nan

    @property
    def premature_per_run(self) -> float:
        return self.premature_side_effects / self.judged if self.judged else math.nan


@dataclass(frozen=True)
class Metrics:
    """The metrics of one grouping, plus the facts every group shares."""

    grouping: str
    keys: tuple[str, ...]
    groups: list[GroupMetrics]
    max_k: int

    def by_key(self) -> dict[tuple[str, ...], GroupMetrics]:
        return {g.key: g for g in self.groups}


def classify_runs(traces: Traces) -> pd.DataFrame:
    """The runs frame plus ``ending_error``, ``infrastructure`` and ``loop``, all from trace facts.

    A run is an infrastructure run when its status is ``error`` and the kind of its last ``error``
    event is in ``harness.errors.INFRASTRUCTURE_ERRORS``. If that event was lost (a corrupt line), the
    outcome's error counts decide: some infrastructure kind and no parse, schema or workflow error.
    """
    runs = traces.runs.copy()
    events = traces.events
    errors = events.loc[events["kind"] == "error", ["run_id", "seq", "error_kind"]]
    last = errors.sort_values(["run_id", "seq"], kind="stable").drop_duplicates("run_id", keep="last")
    ending = pd.Series(last["error_kind"].astype(object).to_numpy(), index=last["run_id"].to_numpy())
    runs["ending_error"] = runs["run_id"].map(ending).where(runs["status"] == "error")
    infra_seen = runs[[f"errors_{k}" for k in ERROR_KINDS if k in INFRASTRUCTURE_ERRORS]].sum(axis=1)
    other_seen = runs[[f"errors_{k}" for k in ERROR_KINDS if k not in INFRASTRUCTURE_ERRORS]].sum(axis=1)
    lost = (runs["status"] == "error") & runs["ending_error"].isna()
    by_event = runs["ending_error"].isin(list(INFRASTRUCTURE_ERRORS))
    runs["infrastructure"] = (runs["status"] == "error") & (by_event | (lost & (infra_seen > 0) & (other_seen == 0)))
    runs["loop"] = runs["run_id"].isin(looping_runs(events))
    return runs


def looping_runs(events: pd.DataFrame) -> np.ndarray:
    """Run ids where one next action was proposed LOOP_LENGTH or more times in a row."""
    calls = events.loc[(events["kind"] == "model_call") & events["action"].notna(), ["run_id", "seq", "action"]]
    if calls.empty:
        return np.array([], dtype=object)
    calls = calls.sort_values(["run_id", "seq"], kind="stable")
    run = calls["run_id"].to_numpy()
    action = calls["action"].astype(object).to_numpy()
    same = np.zeros(len(calls), dtype=bool)
    same[1:] = (run[1:] == run[:-1]) & (action[1:] == action[:-1])
    streak = np.cumsum(~same)  # one id per stretch of identical consecutive proposals
    lengths = np.bincount(streak)
    return np.unique(run[lengths[streak] >= LOOP_LENGTH])


def compute(traces: Traces, grouping: Grouping = "mode", runs: pd.DataFrame | None = None) -> Metrics:
    """Metrics for every group of ``grouping``; pass ``runs`` from ``classify_runs`` to reuse it."""
    keys = GROUP_KEYS[grouping]
    runs = classify_runs(traces) if runs is None else runs
    events = traces.events
    max_k = _max_k(runs, keys)
    run_groups = _split(runs, keys)
    # Only the columns each step needs: copying a million rows of run ids and timestamps per group is slow.
    kind = events["kind"]
    event_keys = {_key(k) for k in events.groupby(list(keys), observed=True).size().index}
    calls = events.loc[kind == "model_call", [*keys, "latency_ms"]]
    call_groups = _split(calls, keys)
    deciding = events.loc[kind.isin(DECIDING_KINDS), [*keys, "decision_maker"]]
    shares = deciding.groupby([*keys, "decision_maker"], observed=True).size()
    with_errors = events.loc[events["error_kind"].notna(), [*keys, "error_kind"]]
    seen = with_errors.groupby([*keys, "error_kind"], observed=True).size()
    incomplete = _incomplete(events, runs, keys)
    groups = []
    for key in sorted(set(run_groups) | event_keys, key=_order_key(keys)):
        group = run_groups.get(key, runs.iloc[:0])
        groups.append(_group(key, group, call_groups.get(key, calls.iloc[:0]), _sub(shares, key),
                             _sub(seen, key), incomplete.get(key, 0), max_k))
    return Metrics(grouping=grouping, keys=keys, groups=groups, max_k=max_k)


def _group(key: tuple[str, ...], runs: pd.DataFrame, calls: pd.DataFrame, shares: pd.Series, seen: pd.Series,
           incomplete: int, max_k: int) -> GroupMetrics:
    infra = runs["infrastructure"].to_numpy(dtype=bool)
    judged = runs.loc[~infra]
    cells = judged.groupby(list(CELL), observed=True)["stop_correct"].agg(["sum", "size"])
    per_task = [(int(c), int(n)) for c, n in zip(cells["sum"], cells["size"])]
    decisions = int(shares.sum())
    ended = runs.loc[runs["status"] == "error", "ending_error"].dropna().astype(str).value_counts()
    return GroupMetrics(
        key=key,
        runs=len(runs),
        incomplete=int(incomplete),
        infrastructure=int(infra.sum()),
        stop=wilson(int(judged["stop_correct"].sum()), len(judged)),
        oracle=wilson(int(judged["oracle_passed"].sum()), len(judged)),
        pass_k=tuple(pass_hat_k(per_task, k) for k in range(1, max_k + 1)),
        statuses={s: int(n) for s, n in runs["status"].astype(str).value_counts().items()},
        side_effects_committed=int(judged["side_effects_committed"].sum()),
        side_effects_blocked=int(judged["side_effects_blocked"].sum()),
        premature_side_effects=int(judged["premature_side_effects"].sum()),
        runs_with_premature=int((judged["premature_side_effects"] > 0).sum()),
        infrastructure_premature=int(runs.loc[infra, "premature_side_effects"].sum()),
        wait_without_suspend=int(judged["wait_marker_without_suspend"].sum()),
        loops=int(judged["loop"].sum()),
        steps=spread(runs["steps"].to_numpy(dtype=float)),
        llm_calls=spread(runs["llm_calls"].to_numpy(dtype=float)),
        prompt_tokens=spread(runs["prompt_tokens"].to_numpy(dtype=float)),
        completion_tokens=spread(runs["completion_tokens"].to_numpy(dtype=float)),
        total_tokens=spread(runs["total_tokens"].to_numpy(dtype=float)),
        run_latency=spread(runs["wall_ms"].to_numpy(dtype=float)),
        call_latency=spread(calls["latency_ms"].to_numpy(dtype=float)),
        error_runs=int((runs["status"] == "error").sum()),
        ended_by={str(k): int(n) for k, n in ended.items()},
        errors_seen={str(k): int(n) for k, n in seen.items()},
        decisions=decisions,
        decision_share={str(k): int(n) / decisions for k, n in shares.items()} if decisions else {},
        label=" / ".join(key),
    )


def _max_k(runs: pd.DataFrame, keys: tuple[str, ...]) -> int:
    """k runs up to the fewest judged trials of any cell (the matrix's trial count), at most MAX_K."""
    judged = runs.loc[~runs["infrastructure"]]
    if judged.empty:
        return 0
    sizes = judged.groupby([*dict.fromkeys([*keys, *CELL])], observed=True).size()
    return int(min(sizes.min(), MAX_K))


def _key(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in (value if isinstance(value, tuple) else (value,)))


def _split(frame: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], pd.DataFrame]:
    if frame.empty:
        return {}
    return {_key(k): g for k, g in frame.groupby(list(keys), observed=True, sort=False)}


def _sub(series: pd.Series, key: tuple[str, ...]) -> pd.Series:
    """The last index level of ``series`` for the rows of one group."""
    if series.empty:
        return series
    try:
        part = series.loc[key if len(key) > 1 else key[0]]
    except KeyError:
        return series.iloc[:0]
    return part if isinstance(part, pd.Series) else pd.Series([part])


def _incomplete(events: pd.DataFrame, runs: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], int]:
    orphans = events.loc[~events["complete"], ["run_id", *keys]].drop_duplicates("run_id")
    counts = orphans.groupby(list(keys), observed=True).size()
    return {_key(k): int(n) for k, n in counts.items()}


def _order_key(keys: tuple[str, ...]) -> Callable[[tuple[str, ...]], tuple]:
    """Modes in control-spectrum order (code decides most first), then by name; unknown modes last."""

    def order(key: tuple[str, ...]) -> tuple:
        parts = []
        for name, value in zip(keys, key):
            if name == "mode":
                mode = MODES.get(value)
                parts.append((mode.spectrum if mode is not None else 99, value))
            else:
                parts.append((0, value))
        return tuple(parts)

    return order


def latency_samples(traces: Traces, runs: pd.DataFrame, grouping: Grouping) -> dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]:
    """Per group: every complete run's wall_ms and every model call's latency_ms, for distribution plots."""
    keys = GROUP_KEYS[grouping]
    events = traces.events
    calls = _split(events.loc[events["kind"] == "model_call", [*keys, "latency_ms"]], keys)
    per_run = _split(runs[[*keys, "wall_ms"]], keys)
    empty = np.array([], dtype=float)
    return {key: (per_run[key]["wall_ms"].to_numpy(dtype=float) if key in per_run else empty,
                  calls[key]["latency_ms"].to_numpy(dtype=float) if key in calls else empty)
            for key in set(per_run) | set(calls)}
