"""What bench prints fits the terminal: ``COLUMNS=80`` gives no line over 80 characters, help lines are whole."""

from __future__ import annotations

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


def test_a_recorded_run_prints_its_headline_and_notes_within_80_columns(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = bench_main(
        monkeypatch, capsys, "run", "--mode", "workflow,react", "--scenario", "blog_brief_approval", "--out",
        str(tmp_path / "run"),
    )  # fmt: skip
    assert code in (0, 1), err
    assert _over(out, 80) == [] and _over(err, 80) == []
    assert "stop-correct:" in out  # the headline as one block per mode, every column named


def test_help_lists_each_command_with_its_whole_first_sentence(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = bench_main(monkeypatch, capsys, "--help")
    assert code == 0
    commands = out.split("Commands:")[1]
    assert "..." not in commands
    assert "who can stop a run) and the scenarios." in " ".join(commands.split())
    assert _over(out, 80) == []
