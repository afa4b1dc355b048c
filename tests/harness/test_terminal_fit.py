"""Tables and text fitted to the terminal's width: nothing over the limit, nothing cut, COLUMNS respected."""

from __future__ import annotations

import pytest

from harness.terminal import fit_table, width, wrap

HEADERS = ["mode", "policy", "n", "correct", "early", "stop-correct", "95% CI"]
NUMERIC = [False, False, True, True, True, True, True]
ROWS = [
    ["workflow_fallback_react", "enforce", "24", "22", "0", "91.7%", "[74.2%, 100.0%]"],
    ["react", "audit", "24", "1", "18", "4.2%", "[0.0%, 20.2%]"],
]
PROSE_HEADERS = ["mode", "what it does", "who decides the next step"]
PROSE = [["react", "The model picks every next action from the tools; the loop ends at its own finish.", "the model"]]


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_a_table_that_fits_is_one_line_per_row():
    text = fit_table(HEADERS, ROWS, NUMERIC, 200)
    assert len(text.splitlines()) == 2 + len(ROWS)  # header, rule, rows


@pytest.mark.parametrize("limit", [40, 60, 80, 99])
def test_no_line_goes_past_the_limit_and_every_value_is_still_there(limit):
    text = fit_table(HEADERS, ROWS, NUMERIC, limit)
    assert _widest(text) <= limit
    flat = " ".join(text.split())
    for row in ROWS:
        for value in row:
            assert value in flat
    for header in HEADERS[2:]:  # the key columns' headers title a block only when the table is one
        assert all(word in flat for word in header.replace("-", "- ").split())  # a stacked header breaks at "-"


def test_a_narrow_numeric_table_becomes_one_block_per_row_titled_by_its_key():
    text = fit_table(HEADERS, ROWS, NUMERIC, 60)
    blocks = text.split("\n\n")
    assert [block.splitlines()[0] for block in blocks] == ["workflow_fallback_react / enforce", "react / audit"]
    assert "stop-correct: 91.7%" in blocks[0]


def test_prose_columns_wrap_in_their_cells_before_the_table_turns_into_blocks():
    text = fit_table(PROSE_HEADERS, PROSE, [False, False, False], 80)
    assert _widest(text) <= 80
    assert any(line.startswith("----") for line in text.splitlines())  # still a table: header, rule, rows
    assert "own finish." in text


def test_no_limit_leaves_the_table_whole():
    assert _widest(fit_table(HEADERS, ROWS, NUMERIC, None)) > 60


def test_wrap_indents_continuations_and_leaves_short_lines_alone():
    text = wrap("short\n" + "word " * 30, 40)
    lines = text.splitlines()
    assert lines[0] == "short"
    assert all(len(line) <= 40 for line in lines)
    assert all(line.startswith("  ") for line in lines[2:])


def test_columns_sets_the_width_and_a_pipe_without_it_has_no_limit(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert width() == 72
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert width() is None


WIDE_HEADERS = ["mode", "policy", "n", "unanswered review", "stop-correct", "95% CI", "unauthorized"]
WIDE_NUMERIC = [False, False, True, True, True, True, True]
WIDE_ROWS = [
    ["workflow", "enforce", "24", "0", "91.7%", "[74.2%, 100.0%]", "0"],
    ["hybrid_planner", "enforce", "1", "23", "0.0%", "[0.0%, 79.3%]", "0"],
]


def _one_line_per_row(text: str, rows: list[list[str]]) -> bool:
    return all(sum(line.startswith(row[0] + " ") for line in text.splitlines()) == 1 for row in rows)


def test_long_headers_stack_over_short_numbers_so_each_row_keeps_one_line():
    simple = fit_table(WIDE_HEADERS, WIDE_ROWS, WIDE_NUMERIC, None)
    limit = _widest(simple) - 10
    text = fit_table(WIDE_HEADERS, WIDE_ROWS, WIDE_NUMERIC, limit)
    assert _widest(text) <= limit
    assert _one_line_per_row(text, WIDE_ROWS) and "policy" in text.splitlines()[1]
    head = text.split("\n---")[0].splitlines()
    assert head[0].split() == ["unanswered", "stop-"]  # stacks bottom-aligned, a hyphenated word broken after "-"
    assert head[1].split()[-5:] == ["review", "correct", "95%", "CI", "unauthorized"]
    assert "95% CI" in head[1]  # a header as narrow as its column's values stays on one line


def test_a_column_with_one_value_in_every_row_is_said_once_only_when_the_table_needs_the_room():
    assert "in every row" not in fit_table(WIDE_HEADERS, WIDE_ROWS, WIDE_NUMERIC, 80)  # the stacked table fits whole
    text = fit_table(WIDE_HEADERS, WIDE_ROWS, WIDE_NUMERIC, 70)
    assert _widest(text) <= 70
    assert _one_line_per_row(text, WIDE_ROWS)
    assert text.splitlines()[-1] == "in every row: policy enforce, unauthorized 0"
    assert "policy" not in text.split("\n---")[0]


def test_one_row_has_no_column_to_say_once():
    text = fit_table(WIDE_HEADERS, WIDE_ROWS[:1], WIDE_NUMERIC, 50)
    assert "in every row" not in text
    assert text.startswith("workflow / enforce")  # a block: the row's key, then every pair


def test_a_wrapped_line_continues_under_its_own_column():
    row = "   1     1  gateway         read_order: read " + "word " * 20
    lines = wrap(row, 60).splitlines()
    assert all(len(line) <= 60 for line in lines)
    assert all(line.startswith(" " * 28) and line[28] != " " for line in lines[1:])  # under "what", not column 2
    label = "  stop verdict  correct: stopped where the oracle says, with the required work done and more"
    continuation = wrap(label, 60).splitlines()[1]
    assert continuation.startswith(" " * 16) and continuation[16] != " "  # under the value, after its label


def test_an_indented_line_without_columns_continues_two_in_from_its_own_indent():
    line = "    screen_then_approve (precedence 1, obeyed): " + "Screen every transfer first. " * 4
    lines = wrap(line, 70).splitlines()
    assert all(continuation.startswith(" " * 6) and continuation[6] != " " for continuation in lines[1:])
