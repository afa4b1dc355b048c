"""Seed 003's control spectrum, as bench measures it story by story, and the article's own figures kept apart.

Pooling every story per mode mixes a mode's own story with stories it was never meant for, and printing the
article's production figures next to bench's invites comparing values from two different systems. So there are
three tables: each of the seed's modes on its own typical story, every mode on every story, and the article's
published figures on their own, captioned as another system's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from modes import MODES, Mode
from reports.metrics import GroupMetrics, Metrics
from reports.tables import MISSING, Column, Table, key_columns

OWN_STORY_MARK = "*"  # after a grid cell: the mode on its own typical story


def _spectrum(mode: str) -> int:
    cls = MODES.get(mode)
    return cls.spectrum if cls is not None else 99


def _in_the_seed(cls: type[Mode] | None) -> bool:
    """Whether the mode is one of seed 003's seven (the seed gives it a typical story)."""
    return cls is not None and cls.story is not None


def _modes(metrics: Metrics) -> list[str]:
    """The modes of the traces, in the groups' order (control-spectrum order), each once."""
    return list(dict.fromkeys(g.mode for g in metrics.groups))


@dataclass(frozen=True)
class OwnStory:
    """One of seed 003's modes on its own typical story, under one key (policy, model...); None: not in the traces."""

    mode: str
    key: tuple[str, ...]  # the grouping's key without the scenario
    group: GroupMetrics | None


def _measured(read: Callable[[GroupMetrics], Any]) -> Callable[[OwnStory], Any]:
    return lambda row: read(row.group) if row.group is not None else None


OWN_STORY_COLUMNS: tuple[Column[OwnStory], ...] = (
    Column("typical story (scenario)", "text", lambda r: MODES[r.mode].story),
    Column("n", "int", _measured(lambda g: g.judged), "judged runs of the mode on its own story;"),
    Column("stop-correct", "pct", _measured(lambda g: g.stop.rate), "of them."),
    Column("P95 per run (ms)", "ms", _measured(lambda g: g.run_latency.p95)),
    Column(
        "error rate",
        "pct",
        _measured(lambda g: g.error_rate),
        "runs that ended with status error, any kind (the article's is per request);",
    ),
    Column(
        "runs",
        "int",
        _measured(lambda g: g.runs),
        "complete runs, infrastructure included: P95 and error rate are over these.",
    ),
)


def spectrum_table(stories: Metrics) -> Table[OwnStory]:
    """Seed 003's seven modes in its order, each measured on the story the seed gives it (``typical_story``)."""
    rest = tuple(k for k in stories.keys if k != "scenario")
    rows: list[OwnStory] = []
    for mode in _modes(stories):
        cls = MODES.get(mode)
        if cls is None or not _in_the_seed(cls):
            continue
        own = [g for g in stories.groups if g.mode == mode and g.get("scenario") == cls.typical_story]
        rows += [OwnStory(mode, tuple(g.get(k) for k in rest), g) for g in own]
        if not own:
            rows.append(OwnStory(mode, tuple(mode if k == "mode" else MISSING for k in rest), None))
    about = (
        "spectrum: 1 = code decides everything, 7 = the model does (seed 003's order). Each mode on the story seed "
        "003 gives it, measured in these traces; – where that story is not in them (a run folder made before a "
        "story was added, such as react's research_assistant in a recording without it). Every mode on every story "
        "is the next table; the article's own figures are in a table of their own."
    )
    return Table(
        "spectrum",
        "The control spectrum: each mode on its own story",
        (Column("spectrum", "int", lambda r: _spectrum(r.mode)), *key_columns(rest), *OWN_STORY_COLUMNS),
        tuple(rows),
        about,
    )


@dataclass(frozen=True)
class StoryRow:
    """One story (under one policy, model...) and each mode's runs on it."""

    key: tuple[str, ...]  # the scenario, then the grouping's other keys but the mode
    cells: dict[str, GroupMetrics] = field(default_factory=dict)


def _cell(mode: str) -> Callable[[StoryRow], str | None]:
    """A mode's stop-correct runs of its judged ones on the row's story, marked on the mode's own story."""

    def shown(row: StoryRow) -> str | None:
        g = row.cells.get(mode)
        if g is None:
            return None
        cls = MODES.get(mode)
        own = cls is not None and cls.typical_story == row.key[0]
        return f"{g.stop.successes}/{g.stop.n}{OWN_STORY_MARK if own else ''}"

    return shown


def story_grid_table(stories: Metrics) -> Table[StoryRow]:
    """Every mode on every story: stop-correct k of n judged runs per cell, the spectrum's modes as columns."""
    names = ("scenario", *(k for k in stories.keys if k not in ("mode", "scenario")))
    rows: dict[tuple[str, ...], StoryRow] = {}
    for g in stories.groups:
        key = tuple(g.get(k) for k in names)
        rows.setdefault(key, StoryRow(key)).cells[g.mode] = g
    about = (
        f"k/n: stop-correct runs of n judged; {OWN_STORY_MARK}: the mode on its own story (seed 003's typical "
        "story, the table above); –: the mode did not run the story. Columns in control-spectrum order."
    )
    return Table(
        "spectrum_by_story",
        "Every mode on every story: stop-correct of judged runs",
        (*key_columns(names), *(Column(mode, "text", _cell(mode)) for mode in _modes(stories))),
        tuple(sorted(rows.values(), key=lambda row: row.key[0])),  # by story; the policies keep their order
        about,
    )


PUBLISHED_COLUMNS: tuple[Column[type[Mode]], ...] = (
    Column("spectrum", "int", lambda cls: cls.spectrum),
    Column("mode", "text", lambda cls: cls.name),
    Column("human intervention point", "text", lambda cls: cls.intervention),
    Column("model autonomy", "text", lambda cls: cls.autonomy),
    Column("typical story", "text", lambda cls: cls.story),
    Column("published P95 (ms)", "ms", lambda cls: cls.published_p95_ms),
    Column("published error rate", "pct", lambda cls: cls.published_error_rate),
)


def published_table() -> Table[type[Mode]]:
    """The article's table as it published it: its seven modes with their production P95 and error rate."""
    seed = sorted((cls for cls in MODES.values() if _in_the_seed(cls)), key=lambda cls: cls.spectrum)
    about = (
        "Production figures from another system: what seed 003's article published for its own deployments (A100 "
        "servers, its own models, tools and stories; error rate per request). Nothing here was measured by bench "
        "and none of it is comparable in value with bench's tables; only the order of the modes carries over."
    )
    return Table(
        "spectrum_published",
        "Seed 003's published figures (production figures from another system, not comparable in value)",
        PUBLISHED_COLUMNS,
        tuple(seed),
        about,
    )


def spectrum_tables(stories: Metrics) -> list[Table[Any]]:
    """The spectrum on each mode's own story, every mode on every story, then the article's figures apart."""
    return [spectrum_table(stories), story_grid_table(stories), published_table()]
