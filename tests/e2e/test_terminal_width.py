"""What bench prints fits the terminal: ``COLUMNS=80`` gives no line over 80 characters, help lines are whole."""

from __future__ import annotations

from itertools import takewhile

import pytest

from tests.helpers.bench import bench_main


def _over(text: str, limit: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > limit]


@pytest.mark.parametrize("columns", [80, 60])
def test_list_fits_the_width_columns_asks_for(monkeypatch, capsys, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, err = bench_main(monkeypatch, capsys, "list")
    assert code == 0, err
    assert _over(out, columns) == []
    assert "workflow_fallback_react" in out  # a mode's name is never broken across lines


def test_a_recorded_run_prints_its_headline_one_line_a_mode_within_80_columns(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = bench_main(
        monkeypatch, capsys, "run", "--mode", "workflow,react", "--scenario", "blog_brief_approval", "--out",
        str(tmp_path / "run"),
    )  # fmt: skip
    assert code in (0, 1), err
    assert _over(out, 80) == [] and _over(err, 80) == []
    lines = out.splitlines()
    assert [line.split()[0] for line in lines if line.startswith(("workflow ", "react "))] == ["workflow", "react"]
    assert "stop-" in out and "correct" in out  # one line per mode under stacked headers
    assert "in every row: policy enforce" in out  # a column with one value is said once, not dropped


def test_help_lists_each_command_with_its_whole_first_sentence(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = bench_main(monkeypatch, capsys, "--help")
    assert code == 0
    commands = out.split("Commands:")[1]
    assert "..." not in commands
    assert "who can stop a run) and the scenarios." in " ".join(commands.split())
    assert _over(out, 80) == []


@pytest.mark.slow
def test_the_main_job_prints_its_headline_one_line_per_mode_at_160_columns(monkeypatch, capsys, tmp_path):
    from modes import MODES, select_modes

    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = bench_main(monkeypatch, capsys, "run", "--out", str(tmp_path / "main"))
    assert code in (0, 1), err
    assert _over(out, 160) == []
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1  # the rule under the headers
    rows = list(takewhile(lambda name: name in MODES, (line.split(" ")[0] for line in lines[start:])))
    assert sorted(rows) == sorted(select_modes(["all"]))  # each of bench's own modes once: one line a mode
