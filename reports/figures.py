"""Report figures with matplotlib's Agg canvas: stop-correctness, latency, tokens and who decided, per group."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from reports.metrics import DECISION_MAKERS, Metrics

COLOURS = {"llm": "#d95f02", "runtime": "#1b9e77", "executor": "#7570b3", "workflow": "#1f78b4",
           "plan_validator": "#66a61e", "gateway": "#e6ab02", "human": "#a6761d"}


@dataclass(frozen=True)
class Plot:
    """A finished figure and its name (the file stem and its id in the HTML page)."""

    name: str
    title: str
    figure: Figure


def _height(groups: int) -> float:
    return 1.6 + 0.42 * max(groups, 1)


def _labels(metrics: Metrics) -> list[str]:
    return [g.label for g in metrics.groups]


def stop_correctness(metrics: Metrics) -> Plot:
    labels = _labels(metrics)
    rates = np.array([g.stop.rate for g in metrics.groups], dtype=float)
    low = np.array([g.stop.low for g in metrics.groups], dtype=float)
    high = np.array([g.stop.high for g in metrics.groups], dtype=float)
    fig = Figure(figsize=(7.5, _height(len(labels))), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    shown = np.nan_to_num(rates)
    ax.barh(y, shown, color="#1f78b4", alpha=0.85)
    error = np.vstack([np.nan_to_num(rates - low), np.nan_to_num(high - rates)])
    ax.errorbar(shown, y, xerr=error, fmt="none", ecolor="black", capsize=4, linewidth=1)
    for yi, g in zip(y, metrics.groups):
        ax.text(1.02, yi, f"{g.stop.successes}/{g.stop.n}", va="center", fontsize=8)
    _share_axis(ax, y, labels, room=0.12)  # room on the right for the correct / judged counts
    ax.set_xlabel("stop-correct runs (bars: rate; whiskers: Wilson 95% interval; right: correct / judged)")
    ax.set_title("Stop-correctness")
    return Plot("stop_correctness", "Stop-correctness with Wilson 95% intervals", fig)


def latency(metrics: Metrics, samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]) -> Plot:
    labels = _labels(metrics)
    fig = Figure(figsize=(10, _height(len(labels))), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, index, title in ((axes[0], 0, "per run (wall ms)"), (axes[1], 1, "per model call (ms)")):
        data = [_finite(samples.get(g.key, (np.array([]), np.array([])))[index]) for g in metrics.groups]
        ax.boxplot(data, orientation="horizontal", whis=(5, 95), showfliers=False, widths=0.6,
                   medianprops={"color": "#d95f02"})
        p99 = [np.percentile(d, 99) if d.size else np.nan for d in data]
        ax.plot(p99, np.arange(1, len(data) + 1), "k|", markersize=10, label="p99")
        ax.set_title(title)
        ax.set_xlabel("ms (box: p25-p75, line: p50, whiskers: p5-p95, tick: p99)")
    axes[0].set_yticks(np.arange(1, len(labels) + 1), labels)
    axes[0].invert_yaxis()
    fig.suptitle("Latency distribution")
    return Plot("latency", "Latency per run and per model call", fig)


def _share_axis(ax: Axes, y: np.ndarray, labels: list[str], room: float = 0.0) -> None:
    """Groups top to bottom on y, shares from 0% to 100% on x."""
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1 + room)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def tokens(metrics: Metrics) -> Plot:
    labels = _labels(metrics)
    prompt = np.nan_to_num([g.prompt_tokens.mean for g in metrics.groups])
    completion = np.nan_to_num([g.completion_tokens.mean for g in metrics.groups])
    fig = Figure(figsize=(7.5, _height(len(labels))), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    ax.barh(y, prompt, color="#7570b3", label="prompt")
    ax.barh(y, completion, left=prompt, color="#e6ab02", label="completion")
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("mean tokens per run")
    ax.set_title("Tokens per run")
    ax.legend(loc="lower right", fontsize=8)
    if not (prompt + completion).any():
        ax.set_xlim(0, 1)
        ax.text(0.5, 0.5, "no tokens reported (scripted models report none)", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="#555555")
    return Plot("tokens", "Mean prompt and completion tokens per run", fig)


def decision_share(metrics: Metrics) -> Plot:
    labels = _labels(metrics)
    fig = Figure(figsize=(8.5, _height(len(labels))), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(labels))
    left = np.zeros(len(labels))
    for maker in DECISION_MAKERS:
        share = np.array([g.decision_share.get(maker, 0.0) for g in metrics.groups])
        if share.any():
            ax.barh(y, share, left=left, color=COLOURS.get(maker), label=maker)
            left += share
    _share_axis(ax, y, labels)
    ax.set_xlabel("share of the events that record a choice")
    ax.set_title("Who decided")
    if left.any():
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    else:
        ax.text(0.5, 0.5, "no decisions recorded", transform=ax.transAxes, ha="center", va="center",
                fontsize=9, color="#555555")
    return Plot("decision_share", "Share of decisions per decision maker", fig)


def all_plots(metrics: Metrics, samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]]) -> list[Plot]:
    return [stop_correctness(metrics), latency(metrics, samples), tokens(metrics), decision_share(metrics)]
