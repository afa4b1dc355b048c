"""Markdown tables are set without tabulate's per-cell type inference, character for character as tabulate sets
them; a cell tabulate must set itself (a line break, a wide character) still goes through it."""

from __future__ import annotations

import pytest
from tabulate import tabulate

from reports.tables import _plain, github_table

CASES = [
    (["mode", "stop-correct", "n"], [["react", "91.7%", "24"], ["plan_execute", " 8.3% ", ""]], [False, True, True]),
    (["a very long header", "x"], [["s", "1"]], [False, True]),
    (["scenario", "p"], [["a \\| b", "< 0.001"], ["·–→≥ é", "n/a"]], [False, True]),
    (["mode", "n"], [], [False, True]),
]


@pytest.mark.parametrize(("headers", "rows", "right"), CASES)
def test_a_plain_table_is_set_as_tabulates_github_format_sets_it(headers, rows, right):
    align = ["right" if r else "left" for r in right]
    expected = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True, colalign=align)
    assert github_table(headers, rows, right) == expected


def test_cells_with_a_line_break_or_a_wide_character_are_left_to_tabulate():
    assert _plain(["react", "91.7% [74.2%, 100.0%]", "·", "→"])
    assert not _plain(["two\nlines"])
    assert not _plain(["模式"])
    assert not _plain(["e\u0301"])  # a combining accent: no column of its own
