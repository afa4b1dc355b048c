"""``bench report`` and ``bench compare`` end to end, on real harness runs and on hand-made traces."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from modes import select_modes
from tests.helpers.bench import bench_in_process as bench
from tests.helpers.report_fixtures import Call, Run, write_runs

MODES = tuple(select_modes([]))
FIGURES = ("verdicts", "stop_correctness", "latency", "tokens", "decision_share")


def real_run(folder: Path, policy: str, trials: int) -> Path:
    result = bench(
        "run",
        "--mode",
        "all",
        "--scenario",
        "blog_brief_approval",
        "--model",
        f"scripted:{policy}",
        "--trials",
        str(trials),
        "--seed",
        "3",
        "--out",
        str(folder),
    )
    assert result.returncode == 0, result.stderr
    return folder


@pytest.fixture(scope="module")
def random_run(tmp_path_factory) -> Path:
    return real_run(tmp_path_factory.mktemp("random") / "run", "random", 20)


def summaries(folder: Path) -> list[dict]:
    lines = (folder / "traces.jsonl").read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["kind"] == "summary"]


def test_report_writes_every_format_and_matches_the_trace(random_run, tmp_path):
    out = tmp_path / "report"
    result = bench("report", str(random_run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    correct = Counter(s["mode"] for s in summaries(random_run) if s["outcome"]["stop_correct"])
    # No approver: a run left at its mode's own plan review is not judged (docs/metrics.md: unanswered reviews).
    unanswered = Counter(s["mode"] for s in summaries(random_run) if s["outcome"]["suspended_at"] == "plan_review")
    assert unanswered["hybrid_planner"] == 20
    for mode in MODES:
        assert mode in result.stdout
    with open(out / "tables" / "correctness_by_mode.csv") as handle:
        rows = {row["mode"]: row for row in csv.DictReader(handle)}
    for mode in MODES:
        judged = 20 - unanswered[mode]
        assert int(rows[mode]["stop-correct"]) == correct[mode]
        assert (int(rows[mode]["judged (n)"]), int(rows[mode]["unanswered reviews"])) == (judged, unanswered[mode])
        rate = rows[mode]["rate"]
        assert rate == "n/a" if not judged else float(rate) == pytest.approx(correct[mode] / judged)
    for name in FIGURES:
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    latex = (out / "tables" / "spectrum.tex").read_text()
    assert "\\toprule" in latex and "\\bottomrule" in latex and "react\\_guardrails" in latex
    markdown = (out / "report.md").read_text()
    assert "| mode " in markdown and "![Stop-correctness" in markdown
    assert "the model, from the observations" in markdown  # the seed-000 table uses the mode classes
    assert (out / "report.html").stat().st_size > 10_000


@pytest.mark.slow
def test_report_defaults_to_the_run_folder_and_format_subset(random_run, tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    (copy / "traces.jsonl").write_bytes((random_run / "traces.jsonl").read_bytes())
    result = bench("report", str(copy), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert (copy / "report" / "tables" / "main_by_mode.csv").exists()
    assert not (copy / "report" / "report.html").exists() and not list((copy / "report" / "tables").glob("*.tex"))
    assert (copy / "report" / "figures" / "latency.png").exists()


@pytest.mark.slow
def test_corrupt_lines_are_skipped_with_a_warning_and_counted(random_run, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    lines = (random_run / "traces.jsonl").read_text().splitlines(keepends=True)
    lines.insert(25, '{"run_id": "abc", "kind": "mod\x00\n')
    lines[-1] = lines[-1][:40]
    (folder / "traces.jsonl").write_text("".join(lines))
    result = bench("report", str(folder))
    assert result.returncode == 0, result.stderr
    assert "line 26: skipped" in result.stderr and f"line {len(lines)}: skipped" in result.stderr
    assert "2 skipped" in result.stdout
    assert "2 lines skipped" in (folder / "report" / "report.md").read_text()
    assert "2 lines skipped" in (folder / "report" / "report.html").read_text()


@pytest.mark.slow
def test_by_model_over_two_runs(tmp_path):
    a = write_runs(tmp_path / "a", [Run("a1", "react", calls=[Call(100.0, 10, 2, "x")]), Run("a2", "workflow")])
    b = write_runs(tmp_path / "b", [Run("b1", "react", model="other:model", stop_correct=False, status="finished")])
    result = bench("report", str(a), str(b), "--by", "model", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[0].split()
    assert header[:2] == ["model", "mode"]
    assert (tmp_path / "out" / "tables" / "metrics_by_model.csv").exists()
    assert "other:model" in result.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--format", "md,pdf"], "--format"),
        (["--by", "weather"], "--by"),
    ],
)
def test_report_user_errors_are_one_line(random_run, args, needle, tmp_path):
    result = bench("report", str(random_run), "--out", str(tmp_path / "out"), *args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and needle in result.stderr


def test_report_on_a_folder_without_traces(tmp_path):
    result = bench("report", str(tmp_path))
    assert result.returncode == 2 and "traces.jsonl" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_infrastructure_errors_never_count_against_a_mode(tmp_path):
    good = [Run(f"g{i}", "react", trial=i) for i in range(1, 5)]
    base = write_runs(tmp_path / "a", good)
    flaky = write_runs(
        tmp_path / "b",
        good
        + [
            Run(f"n{i}", "react", trial=4 + i, status="error", stop_correct=False, ending_error=kind)
            for i, kind in enumerate(["network", "timeout", "http_5xx", "replay_miss"], 1)
        ],
    )
    result = bench("compare", str(base), str(flaky))
    assert result.returncode == 0, result.stdout + result.stderr
    report = bench("report", str(flaky))
    assert report.returncode == 0
    row = next(line for line in report.stdout.splitlines() if line.startswith("react"))
    assert "100.0%" in row  # 4 of 4 judged; the 4 infrastructure runs are reported on their own
    with open(flaky / "report" / "tables" / "errors_by_mode.csv") as handle:
        errors = next(csv.DictReader(handle))
    assert errors["infra runs"] == "4" and float(errors["mode error rate"]) == 0.0


def test_compare_flags_a_drop_in_stop_correctness(tmp_path):
    compliant = real_run(tmp_path / "compliant", "compliant", 3)
    eager = real_run(tmp_path / "eager", "eager", 3)
    worse = bench("compare", str(compliant), str(eager))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "REGRESSION: stop-correct dropped" in worse.stdout
    assert "stop-correct" in worse.stdout and "B - A" in worse.stdout
    same = bench("compare", str(compliant), str(compliant))
    assert same.returncode == 0 and "REGRESSION" not in same.stdout


def test_compare_alpha_flags_only_significant_changes(tmp_path):
    def runs(correct: int, n: int, prefix: str) -> list:
        return [Run(f"{prefix}{i}", "react", trial=i, stop_correct=i <= correct) for i in range(1, n + 1)]

    base = write_runs(tmp_path / "a", runs(10, 10, "a"))
    slightly = write_runs(tmp_path / "b", runs(9, 10, "b"))  # twin runs, 1 discordant pair: McNemar p = 0.5
    much = write_runs(tmp_path / "c", runs(2, 10, "c"))  # 8 discordant pairs: p = 0.5^8, x 3 tests by Holm
    assert bench("compare", str(base), str(slightly)).returncode == 1  # default: any drop
    quiet = bench("compare", str(base), str(slightly), "--alpha", "0.05")
    assert quiet.returncode == 0 and "REGRESSION" not in quiet.stdout
    loud = bench("compare", str(base), str(much), "--alpha", "0.05")
    assert loud.returncode == 1 and "one-sided exact McNemar p = " in loud.stdout and "Holm" in loud.stdout
    bad = bench("compare", str(base), str(much), "--alpha", "2")
    assert bad.returncode == 2 and "--alpha" in bad.stderr


def test_compare_flags_a_rise_in_premature_side_effects(tmp_path):
    runs = [Run(f"r{i}", "plan_execute", trial=i, stop_correct=False, status="finished") for i in range(1, 5)]
    a = write_runs(tmp_path / "a", runs)
    runs[0].premature = 1
    b = write_runs(tmp_path / "b", runs)
    result = bench("compare", str(a), str(b))
    assert result.returncode == 1
    assert "premature side effects rose" in result.stdout
    assert bench("compare", str(b), str(a)).returncode == 0  # fewer premature writes is no regression


def test_nothing_but_bad_lines_is_a_user_error(tmp_path):
    from harness.errors import UserInputError
    from reports.report import build_report

    (tmp_path / "traces.jsonl").write_text('garbage\n{"half": \n')
    with pytest.raises(UserInputError, match=r"no trace events.*2 lines skipped"):
        build_report([tmp_path])


@pytest.mark.slow
def test_runs_without_a_summary_are_counted_not_judged(tmp_path):
    from reports.report import build_report

    folder = write_runs(tmp_path / "run", [Run("done", "react"), Run("cut", "react")])
    lines = (folder / "traces.jsonl").read_text().splitlines(keepends=True)
    (folder / "traces.jsonl").write_text("".join(lines[:-1]))  # the second run's summary never arrived
    result = build_report([folder])
    assert result.runs == 1 and result.incomplete == 1
    assert any("no valid last summary" in w for w in result.warnings)
    with open(result.out / "tables" / "correctness_by_mode.csv") as handle:
        row = next(csv.DictReader(handle))
    assert (row["runs"], row["incomplete"], row["judged (n)"]) == ("1", "1", "1")
