"""Report figures with matplotlib's Agg canvas: verdicts, stop-correctness, latency, tokens, who decided.

Paper-ready by construction: each figure is titled with what it shows and the facts that qualify it
(model, gateway policy, trials, n), legends sit outside the data, and ``--by scenario`` gets a
mode x scenario heatmap instead of a column of bars. Groups of several models get a panel per model in the
verdicts and stop-correctness figures (``facets``), on one shared axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from reports.load import clean_text
from reports.metrics import DECISION_MAKERS, JUDGED_VERDICTS, GroupMetrics, Metrics

COLOURS = {
    "llm": "#d95f02",
    "runtime": "#1b9e77",
    "executor": "#7570b3",
    "workflow": "#1f78b4",
    "plan_validator": "#66a61e",
    "gateway": "#e6ab02",
    "human": "#a6761d",
    "framework": "#666666",
}
# Colour-blind-safe (Okabe-Ito), ordered from good to bad; failed_closed is a safe failure, so it is blue.
VERDICT_COLOURS = {
    "correct": "#009E73",
    "early": "#F0E442",
    "skipped_approval": "#E69F00",
    "late": "#D55E00",
    "wrong_place": "#CC79A7",
    "no_stop": "#999999",
    "failed_closed": "#56B4E9",
}
VERDICT_LABELS = {
    "correct": "correct",
    "early": "early",
    "skipped_approval": "skipped approval",
    "late": "late",
    "wrong_place": "wrong place",
    "no_stop": "no stop",
    "failed_closed": "failed closed",
}
NOT_APPLICABLE = "n/a: plan review unanswered"  # a group whose every run stopped at its mode's own review, unanswered
WIDTH = 7.2  # inches: a two-column paper's text width
FONT = 8.5


@dataclass(frozen=True)
class Plot:
    """A finished figure and its name (the file stem and its id in the HTML page)."""

    name: str
    title: str
    figure: Figure


@dataclass(frozen=True)
class Context:
    """What every figure's title states: which model(s), gateway policy(ies), trials and n."""

    models: tuple[str, ...]
    policies: tuple[str, ...]
    trials: str  # "5 trials", or "3-5 trials" when cells differ
    runs: int  # judged runs in the figure

    def line(self) -> str:
        models = ", ".join(clean_text(m, 40) for m in self.models[:3]) + (" ..." if len(self.models) > 3 else "")
        return (
            f"model {models or '?'} · gateway {', '.join(self.policies) or '?'} · {self.trials} · "
            f"n = {self.runs} judged runs"
        )


def _height(groups: int, per: float = 0.32, base: float = 1.5) -> float:
    return base + per * max(groups, 1)


def labels(metrics: Metrics) -> list[str]:
    """Each group's label: the key parts that vary between groups (the constant ones are in the title)."""
    varying = [i for i, name in enumerate(metrics.keys) if metrics.constant(name) is None]
    if not varying:
        varying = [metrics.keys.index("mode")] if "mode" in metrics.keys else [0]
    folders = short_folders([g.get("source") for g in metrics.groups])
    return [
        clean_text(" / ".join(folders[g.key[i]] if metrics.keys[i] == "source" else g.key[i] for i in varying), 48)
        for g in metrics.groups
    ]


def facets(metrics: Metrics) -> list[tuple[str | None, Metrics]]:
    """A panel per model when the groups span several (each panel's groups are that model's), else one panel."""
    if "model" not in metrics.keys or metrics.constant("model") is not None:
        return [(None, metrics)]
    at = metrics.keys.index("model")
    panels: dict[str, list[GroupMetrics]] = {}
    for g in metrics.groups:
        panels.setdefault(g.key[at], []).append(g)
    return [(model, replace(metrics, groups=groups)) for model, groups in panels.items()]


def _panels(metrics: Metrics, base: float = 1.5) -> tuple[Figure, list[tuple[Axes, Metrics]]]:
    """A figure with a row of bars per group, in a panel per model (titled with it) when there are several."""
    parts = facets(metrics)
    sizes = [max(len(part.groups), 1) for _, part in parts]
    fig = _new(_height(sum(sizes), base=base) + 0.3 * (len(parts) - 1))
    axes = fig.subplots(len(parts), 1, sharex=True, height_ratios=sizes, squeeze=False)[:, 0]
    for ax, (model, _) in zip(axes, parts, strict=True):
        if model is not None:
            ax.set_title(f"model {clean_text(model, 60)}", fontsize=FONT + 0.5, loc="left")
    return fig, [(ax, part) for ax, (_, part) in zip(axes, parts, strict=True)]


def short_folders(paths: list[str]) -> dict[str, str]:
    """Each run folder by its shortest distinctive tail: results/a/run and results/b/run -> a/run, b/run."""
    parts = {p: Path(p).parts or (p,) for p in set(paths)}
    for depth in range(1, max((len(v) for v in parts.values()), default=1) + 1):
        tails = {p: "/".join(v[-depth:]) for p, v in parts.items()}
        if len(set(tails.values())) == len(tails):
            return tails
    return {p: p for p in parts}


def _title(fig: Figure, title: str, context: Context) -> None:
    fig.suptitle(f"{title}\n{context.line()}", fontsize=FONT + 1)


def _new(height: float, width: float = WIDTH) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):
        engine.set(w_pad=0.06, h_pad=0.06)
    return fig


def _rows_axis(ax: Axes, y: np.ndarray, names: list[str]) -> None:
    ax.set_yticks(y, names, fontsize=FONT)
    ax.invert_yaxis()
    ax.tick_params(axis="x", labelsize=FONT)


def _share_axis(ax: Axes, y: np.ndarray, names: list[str], room: float = 0.0) -> None:
    """Groups top to bottom on y, shares from 0% to 100% on x."""
    _rows_axis(ax, y, names)
    ax.set_xlim(0, 1 + room)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])


def _mark_not_applicable(ax: Axes, y: np.ndarray, metrics: Metrics) -> bool:
    """A hatched grey bar labelled n/a for each group whose every run stopped at its mode's own plan review, which no
    one answers without an approver: its rates are not 0, there are none (reports.metrics.unanswered_review)."""
    marked = False
    for yi, g in zip(y, metrics.groups, strict=True):
        if g.not_applicable:
            ax.barh(float(yi), 1.0, height=0.7, facecolor="#f2f2f2", hatch="xx", edgecolor="#bbbbbb", linewidth=0)
            text = f"{NOT_APPLICABLE} ({g.unanswered_reviews} runs)"
            ax.text(0.5, float(yi), text, ha="center", va="center", fontsize=FONT - 1, color="#333333")
            marked = True
    return marked


def _unanswered(g: GroupMetrics) -> str:
    """What the counts at the right add for runs left out as unanswered plan reviews."""
    return f" (+{g.unanswered_reviews} unanswered)" if g.unanswered_reviews else ""


def _room(metrics: Metrics, room: float) -> float:
    """Room at the right for the counts, wider when some group counts unanswered plan reviews there."""
    return room + (0.18 if any(g.unanswered_reviews for g in metrics.groups) else 0.0)


def verdicts(metrics: Metrics, context: Context) -> Plot:
    """Stacked bars: the share of each stop verdict among a group's judged runs, n at the right.

    The correct share is split by content: solid where the oracle passed too (the work was right), hatched where
    the run stopped in the right place with work the oracle faults, so a right stop is never read as right work.
    """
    fig, panels = _panels(metrics)
    marked = False
    for ax, part in panels:
        names = labels(part)
        y = np.arange(len(names))
        left = np.zeros(len(names))
        for share, style in _verdict_segments(part):
            ax.barh(y, share, left=left, edgecolor="white", linewidth=0.5, height=0.7, **style)
            left += share
        for yi, g in zip(y, part.groups, strict=True):
            known = g.judged - g.unverdicted
            text = f"n={known}" + (f" (+{g.infrastructure} infra)" if g.infrastructure else "") + _unanswered(g)
            ax.text(1.01, float(yi), text if known or not g.judged else "no verdicts", va="center", fontsize=FONT - 1)
        marked = _mark_not_applicable(ax, y, part) or marked
        _share_axis(ax, y, names, room=_room(metrics, 0.2))
    ax = panels[-1][0]  # the x label under the last panel, the legend from the first
    some = any(g.unanswered_reviews for g in metrics.groups)
    ax.set_xlabel(
        (
            "share of judged runs (infrastructure runs are not judged; counted at the right)"
            if not some
            else "share of judged runs (infrastructure runs and unanswered plan reviews\n"
            "are not judged; counted at the right)"
        )
        + ("; hatched: n/a, every run stopped at one" if marked else ""),
        fontsize=FONT,
    )
    fig.legend(
        *panels[0][0].get_legend_handles_labels(),
        loc="outside lower center",
        ncol=(len(JUDGED_VERDICTS) + 2) // 2,
        fontsize=FONT,
        frameon=False,
    )
    if not any(g.verdicts for g in metrics.groups):
        ax.text(
            0.5,
            0.5,
            "these traces predate stop verdicts (schema 1)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=FONT,
            color="#555555",
        )
    _title(fig, "Stop verdicts, the correct stops split by the oracle's content checks", context)
    return Plot("verdicts", "Stop verdicts per group (share of judged runs), correct split by oracle passed", fig)


def _verdict_segments(metrics: Metrics) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """Each bar segment in order: its share per group and how it is drawn (colour, hatch, label)."""
    segments: list[tuple[np.ndarray, dict[str, Any]]] = []
    for verdict in JUDGED_VERDICTS:
        share = np.nan_to_num([g.verdict_share(verdict) for g in metrics.groups])
        colour, label = VERDICT_COLOURS[verdict], VERDICT_LABELS[verdict]
        if verdict != "correct":
            segments.append((share, {"color": colour, "label": label}))
            continue
        # oracle_passed implies correct: the passed share is part of the correct one, over the same runs
        passed = np.nan_to_num([_share(g.oracle.successes, g.judged - g.unverdicted) for g in metrics.groups])
        passed = np.minimum(passed, share)
        segments.append((passed, {"color": colour, "label": f"{label}, oracle passed"}))
        segments.append(
            (
                share - passed,
                {"facecolor": "#D5EFE6", "hatch": "////", "hatchcolor": colour, "label": f"{label}, oracle failed"},
            )
        )
    return segments


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def stop_correctness(metrics: Metrics, context: Context) -> Plot:
    fig, panels = _panels(metrics)
    marked = False
    for ax, part in panels:
        names = labels(part)
        rates = np.array([g.stop.rate for g in part.groups], dtype=float)
        low = np.array([g.stop_clustered.low for g in part.groups], dtype=float)  # the headline's interval
        high = np.array([g.stop_clustered.high for g in part.groups], dtype=float)
        y = np.arange(len(names))
        shown = np.nan_to_num(rates)
        ax.barh(y, shown, color="#0072B2", alpha=0.85, height=0.7)
        error = np.vstack([np.nan_to_num(rates - low), np.nan_to_num(high - rates)])
        ax.errorbar(shown, y, xerr=error, fmt="none", ecolor="black", capsize=3, linewidth=1)
        for yi, g in zip(y, part.groups, strict=True):
            ax.text(1.02, float(yi), f"{g.stop.successes}/{g.stop.n}{_unanswered(g)}", va="center", fontsize=FONT - 1)
        marked = _mark_not_applicable(ax, y, part) or marked
        _share_axis(ax, y, names, room=_room(metrics, 0.14))  # room on the right for the correct / judged counts
    ax.set_xlabel(
        "stop-correct rate (bar), 95% interval: cluster bootstrap over stories (whiskers), correct / judged (right)"
        + ("\nhatched: n/a, every run stopped at its own plan review, unanswered" if marked else ""),
        fontsize=FONT,
    )
    _title(fig, "Stop-correctness", context)
    return Plot("stop_correctness", "Stop-correctness with 95% intervals (cluster bootstrap over stories)", fig)


def heatmap(metrics: Metrics, context: Context) -> Plot:
    """Mode x scenario: the stop-correct rate in colour, correct/judged written in each cell; a panel per policy."""
    policies = list(dict.fromkeys(g.get("gateway_policy") for g in metrics.groups))
    modes = list(dict.fromkeys(g.mode for g in metrics.groups))
    scenarios = sorted({g.get("scenario") for g in metrics.groups})
    cells = {(g.get("gateway_policy"), g.mode, g.get("scenario")): g for g in metrics.groups}
    # Policies stacked, scenarios across: a paper's text width holds about thirteen scenario columns of a
    # "5/5" each; past that the figure widens rather than cramp its cells.
    width = max(WIDTH, 1.8 + 0.42 * len(scenarios))
    label_room = 0.06 * min(max(len(s) for s in scenarios), 28)
    fig = _new(1.3 + len(policies) * (0.55 + 0.3 * len(modes)) + label_room, width)
    axes = fig.subplots(len(policies), 1, sharex=True, squeeze=False)[:, 0]
    image = None
    for ax, policy in zip(axes, policies, strict=True):
        grid = np.full((len(modes), len(scenarios)), np.nan)
        for i, mode in enumerate(modes):
            for j, scenario in enumerate(scenarios):
                g = cells.get((policy, mode, scenario))
                if g is not None and g.stop.n:
                    grid[i, j] = g.stop.rate
        image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.set_facecolor("#dddddd")  # cells without judged runs
        for i, mode in enumerate(modes):
            for j, scenario in enumerate(scenarios):
                g = cells.get((policy, mode, scenario))
                text = f"{g.stop.successes}/{g.stop.n}" if g is not None and g.stop.n else "–"
                text = "n/a" if g is not None and g.not_applicable else text  # its own plan review, unanswered
                dark = math.isnan(grid[i, j]) or grid[i, j] > 0.6
                ax.text(j, i, text, ha="center", va="center", fontsize=FONT - 1, color="black" if dark else "white")
        ax.set_xticks(
            np.arange(len(scenarios)), [clean_text(s, 28) for s in scenarios], rotation=35, ha="right", fontsize=FONT
        )
        ax.tick_params(axis="x", labelbottom=ax is axes[-1])
        ax.set_yticks(np.arange(len(modes)), [clean_text(m, 28) for m in modes], fontsize=FONT)
        ax.set_title(f"gateway {policy}", fontsize=FONT + 0.5)
        ax.tick_params(length=0)
    if image is not None:
        bar = fig.colorbar(image, ax=list(axes), shrink=0.9, pad=0.02)
        bar.set_label("stop-correct rate", fontsize=FONT)
        bar.ax.tick_params(labelsize=FONT)
    _title(fig, "Stop-correctness per mode and scenario (cells: correct / judged)", context)
    return Plot("stop_correctness", "Stop-correctness per mode and scenario", fig)


def latency(metrics: Metrics, samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]], context: Context) -> Plot:
    names = labels(metrics)
    fig = _new(_height(len(names), base=1.9))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, index, title in ((axes[0], 0, "per run (wall time)"), (axes[1], 1, "per model call")):
        data = [_finite(samples.get(g.key, (np.array([]), np.array([])))[index]) for g in metrics.groups]
        ax.boxplot(
            data, orientation="horizontal", whis=(5, 95), showfliers=False, widths=0.6, medianprops={"color": "#D55E00"}
        )
        p99 = [np.percentile(d, 99) if d.size else np.nan for d in data]
        ax.plot(p99, np.arange(1, len(data) + 1), "k|", markersize=9)
        ax.set_title(title, fontsize=FONT + 0.5)
        ax.set_xlabel("ms", fontsize=FONT)
        ax.tick_params(axis="x", labelsize=FONT)
        highest = max((float(d.max()) for d in data if d.size), default=0.0)
        ax.set_xlim(0, highest * 1.05 if highest > 0 else 1)  # a latency is never negative
        if highest <= 0:
            ax.text(
                0.5,
                0.5,
                "no latency recorded\n(scripted models answer at once)",
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=FONT,
                color="#555555",
            )
    axes[0].set_yticks(np.arange(1, len(names) + 1), names, fontsize=FONT)
    axes[0].invert_yaxis()
    fig.supxlabel("box: p25-p75; line: median; whiskers: p5-p95; tick: p99", fontsize=FONT - 0.5)
    _title(fig, "Latency", context)
    return Plot("latency", "Latency per run and per model call", fig)


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]


def tokens(metrics: Metrics, context: Context) -> Plot:
    names = labels(metrics)
    prompt = np.nan_to_num([g.prompt_tokens.mean for g in metrics.groups])
    completion = np.nan_to_num([g.completion_tokens.mean for g in metrics.groups])
    fig = _new(_height(len(names)))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    ax.barh(y, prompt, color="#7570b3", label="prompt", height=0.7)
    ax.barh(y, completion, left=prompt, color="#e6ab02", label="completion", height=0.7)
    _rows_axis(ax, y, names)
    ax.set_xlabel("mean tokens per complete run", fontsize=FONT)
    if not (prompt + completion).any():
        ax.set_xlim(0, 1)
        ax.text(
            0.5,
            0.5,
            "no tokens reported (scripted models report none)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=FONT,
            color="#555555",
        )
    else:
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=FONT, frameon=False)
    _title(fig, "Tokens per run", context)
    return Plot("tokens", "Mean prompt and completion tokens per run", fig)


def decision_share(metrics: Metrics, context: Context) -> Plot:
    names = labels(metrics)
    fig = _new(_height(len(names)))
    ax = fig.add_subplot()
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for maker in DECISION_MAKERS:
        share = np.array([g.decision_share.get(maker, 0.0) for g in metrics.groups])
        if share.any():
            ax.barh(
                y, share, left=left, color=COLOURS.get(maker), label=maker, height=0.7, edgecolor="white", linewidth=0.5
            )
            left += share
    _share_axis(ax, y, names)
    ax.set_xlabel("share of the events that record a choice", fontsize=FONT)
    if left.any():
        handles, texts = ax.get_legend_handles_labels()
        fig.legend(handles, texts, loc="outside lower center", ncol=min(len(texts), 7), fontsize=FONT, frameon=False)
    else:
        ax.text(
            0.5,
            0.5,
            "no decisions recorded",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=FONT,
            color="#555555",
        )
    _title(fig, "Who decided", context)
    return Plot("decision_share", "Share of decisions per decision maker", fig)


def all_plots(
    metrics: Metrics,
    samples: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]],
    context: Context,
    cells: Metrics | None = None,
) -> list[Plot]:
    """Every figure for one grouping; ``cells`` (the mode x scenario metrics) turns stop-correctness into a heatmap."""
    correctness = heatmap(cells, context) if cells is not None else stop_correctness(metrics, context)
    return [
        verdicts(metrics, context),
        correctness,
        latency(metrics, samples, context),
        tokens(metrics, context),
        decision_share(metrics, context),
    ]
