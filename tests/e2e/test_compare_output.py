"""What ``bench compare`` prints: its own line breaks stay line breaks, text from the compared files stays escaped."""

from __future__ import annotations

from tests.helpers.bench import bench_main
from tests.helpers.report_fixtures import Run, write_runs


def _runs(prefix: str, correct: int, model: str = "fixture:model") -> list[Run]:
    return [Run(f"{prefix}{i}", "react", trial=i, stop_correct=i <= correct, model=model) for i in range(1, 5)]


def test_the_regression_count_is_its_own_line_after_a_blank_one(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", _runs("a", 4))
    b = write_runs(tmp_path / "b", _runs("b", 1))
    code, out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert code == 1, err
    assert err.splitlines()[-2:] == ["", "1 regression(s)"]
    assert "\\n" not in err and "\\n" not in out
    assert out.splitlines()[-2:] == ["", f"comparison written to {tmp_path / 'cmp'} (5 files)"]


def test_control_text_from_the_compared_files_stays_escaped(tmp_path, monkeypatch, capsys):
    hostile = "evil\n\x1b[2Jmodel"
    a = write_runs(tmp_path / "a", _runs("a", 4, hostile))
    b = write_runs(tmp_path / "b", _runs("b", 1, hostile))
    code, out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert code == 1, err
    assert "\x1b" not in out + err
    sides = [line for line in out.splitlines() if line.startswith(("A: ", "B: "))]
    assert len(sides) == 2 and all("evil?" in line and "model" in line for line in sides), out
