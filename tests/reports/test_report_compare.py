"""``bench compare``: verdicts first, only changed metrics, warnings for unlike sides, exports."""

from __future__ import annotations

import csv
import json
from dataclasses import replace

import pytest

from reports.clustered import cluster_bootstrap
from reports.compare import compare
from reports.load import load_traces
from reports.report import OLDER_VERDICTS, status_lines
from reports.tables import interval
from tests.helpers.bench import bench_main
from tests.helpers.report_fixtures import Run, write_lines, write_runs


def runs(correct: int, n: int, prefix: str, **fields) -> list[Run]:
    return [
        Run(
            f"{prefix}{i}",
            "react",
            trial=i,
            stop_correct=i <= correct,
            status="suspended" if i <= correct else "finished",
            **fields,
        )
        for i in range(1, n + 1)
    ]


def test_verdicts_come_first_and_only_changed_metrics_follow(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(8, 10, "a"))
    b = write_runs(tmp_path / "b", runs(5, 10, "b"))
    code, out, _err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert code == 1
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].startswith("A: ") and lines[1].startswith("B: ")
    assert lines[2].split()[:4] == ["mode", "policy", "n", "A"]  # the verdict table comes right after
    assert "REGRESSION: stop-correct dropped 80.0% -> 50.0%" in lines[4]
    changed = out[out.index("metric") :]
    [clustered] = cluster_bootstrap([8], [10])  # one story: the interval over its runs, as the headline's
    assert "stop-correct" in changed and f"80.0% {interval(clustered.low, clustered.high)} n=10" in changed
    assert "-30.0 pts" in changed
    assert "steps / run" not in changed  # unchanged metrics are left out
    assert "tokens / run" not in changed


def test_unlike_sides_are_warned_about(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(4, 4, "a"))
    b = write_runs(tmp_path / "b", runs(8, 8, "b", model="other:model", gateway_policy="audit"))
    (a / "manifest.json").write_text(json.dumps({"model_source": "replay"}))
    (b / "manifest.json").write_text(json.dumps({"model_source": "live"}))
    code, out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert code == 0, out + err
    assert "warning: gateway policies differ: A enforce; B audit (compared as if equal)" in err
    assert "warning: models differ: A fixture:model; B other:model" in err
    assert "warning: model sources differ: A replay; B live" in err
    assert "judged runs differ: react has n = 4 in A, 8 in B" in err
    assert "react" in out and "ok" in out  # paired across the policy difference


def test_twin_runs_are_tested_paired_with_holm_and_the_p_value_is_printed(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(10, 10, "a"))
    b = write_runs(tmp_path / "b", runs(2, 10, "b"))  # the same story and trials: every run of A has its twin
    code, out, _ = bench_main(monkeypatch, capsys, "compare", str(a), str(b), "--alpha", "0.05")
    assert code == 1
    # 8 pairs where only A was right, none the other way: 0.5^8; Holm over 3 tests (the side effects: p = 1).
    assert "one-sided exact McNemar p = 0.00391, Holm-adjusted p = 0.0117 over 3 tests, alpha 0.05" in out
    assert "runs paired by (scenario, mode, trial, gateway_policy, model)" in out and "Holm's correction" in out


def test_sides_of_different_cells_are_tested_unpaired_with_fisher_and_holm(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(10, 10, "a"))
    b = write_runs(tmp_path / "b", [replace(r, trial=r.trial + 10) for r in runs(2, 10, "b")])  # other trials
    code, out, _ = bench_main(monkeypatch, capsys, "compare", str(a), str(b), "--alpha", "0.05")
    assert code == 1
    # scipy: fisher_exact([[2, 8], [10, 0]], "less") = 0.000357; Holm over 3 tests triples it.
    assert "one-sided Fisher p = 0.000357, Holm-adjusted p = 0.00107 over 3 tests, alpha 0.05" in out
    assert "unpaired" in out


def test_two_recordings_of_the_same_cells_show_no_significant_change(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(5, 10, "a"))
    b = write_runs(tmp_path / "b", runs(5, 10, "b"))
    code, out, _ = bench_main(monkeypatch, capsys, "compare", str(a), str(b), "--alpha", "0.05")
    assert code == 0 and "REGRESSION" not in out and "no metric changed" in out


def test_a_planted_drop_is_flagged_only_when_it_survives_holm(tmp_path):
    # 13 of 20 twin pairs flip from right to wrong: McNemar p = 0.5^13, far below alpha after Holm over 3 tests.
    a = write_runs(tmp_path / "a", runs(20, 20, "a"))
    b = write_runs(tmp_path / "b", runs(7, 20, "b"))
    [change] = compare([a], [b], alpha=0.01).changes
    assert change.regressions and change.regressions[0].startswith("stop-correct dropped 100.0% -> 35.0%")
    # one flipped pair of 20 is a change, but no evidence: p = 0.5, not flagged
    c = write_runs(tmp_path / "c", runs(19, 20, "c"))
    [change] = compare([a], [c], alpha=0.01).changes
    assert change.regressions == [] and compare([a], [c]).changes[0].regressions  # without alpha any change counts


def test_a_rise_in_unauthorized_side_effects_is_a_regression(tmp_path):
    base = runs(0, 4, "a")
    worse = runs(0, 4, "b")
    worse[0].unauthorized = 1  # a role-denied commit: unauthorized, not premature
    a, b = write_runs(tmp_path / "a", base), write_runs(tmp_path / "b", worse)
    [change] = compare([a], [b]).changes
    assert change.regressions == ["unauthorized side effects rose 0.000 -> 0.250 per run"]


def test_format_md_csv_latex_are_written_to_out(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs(8, 10, "a"))
    b = write_runs(tmp_path / "b", runs(5, 10, "b", gateway_policy="audit"))
    out = tmp_path / "cmp"
    code, stdout, _ = bench_main(
        monkeypatch, capsys, "compare", str(a), str(b), "--format", "md,csv,latex", "--out", str(out)
    )
    assert code == 1 and f"comparison written to {out}" in stdout
    markdown = (out / "compare.md").read_text()
    assert markdown.index("REGRESSION") < markdown.index("metrics that changed")
    assert "**warning:** gateway policies differ" in markdown
    with open(out / "compare_changes.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["metric"] == "stop-correct" and rows[0]["B - A"] == "-30.0 pts"
    latex = (out / "compare_verdicts.tex").read_text()
    assert "\\caption{" in latex and "\\label{tab:compare-verdicts}" in latex


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--format", "md"], "--format needs --out"),
        (["--format", "pdf", "--out", "x"], "--format"),
        (["--alpha", "1.5"], "--alpha"),
    ],
)
def test_compare_user_errors_are_one_line(tmp_path, monkeypatch, capsys, args, needle):
    a = write_runs(tmp_path / "a", runs(1, 1, "a"))
    code, _, err = bench_main(monkeypatch, capsys, "compare", str(a), str(a), *args)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_compare_of_the_committed_enforce_and_audit_recordings(tmp_path, monkeypatch, capsys):
    from harness.models import RECORDED_MODEL

    audit = RECORDED_MODEL.with_name("smollm2-135m-audit")
    code, out, err = bench_main(
        monkeypatch, capsys, "compare", str(RECORDED_MODEL), str(audit), "--format", "md", "--out", str(tmp_path / "c")
    )
    assert code == 1  # plan_execute and react commit premature side effects once nothing blocks them
    assert err.splitlines()[0].startswith("warning: gateway policies differ: A enforce; B audit")
    table = [line for line in out.splitlines() if line.strip()][2:]
    assert table[0].split()[:1] == ["mode"]
    assert any(
        line.startswith("react ") and "REGRESSION" in line and "premature side effects rose" in line for line in table
    )
    assert (tmp_path / "c" / "compare.md").exists()


def test_sides_of_different_trace_schemas_are_warned_about_and_a_schema_2_report_says_its_rules(tmp_path):
    old_lines = []
    for run in runs(3, 4, "o"):
        for line in run.lines():
            data = json.loads(line)
            data["schema_version"] = 2
            old_lines.append(json.dumps(data))
    old = write_lines(tmp_path / "old", old_lines)
    new = write_runs(tmp_path / "new", runs(3, 4, "n"))
    assert any(w.startswith("trace schemas differ: A 2, B ") for w in compare([old], [new]).warnings)
    assert not any("trace schemas" in w for w in compare([new], [new]).warnings)
    assert OLDER_VERDICTS in status_lines(load_traces([old]))
    assert OLDER_VERDICTS not in status_lines(load_traces([new]))


def _decimals(cell: str) -> int | None:
    number = cell.split()[0].rstrip("%").replace(",", "")
    return len(number.split(".")[1]) if "." in number else 0 if number.lstrip("+-").isdigit() else None


@pytest.mark.slow
@pytest.mark.parametrize("columns", ["125", "110"])
def test_compare_shows_each_metric_at_one_precision_and_wraps_the_metric_only_when_the_width_needs_it(
    tmp_path, monkeypatch, capsys, columns
):
    from harness.models import RECORDED_MODEL

    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = bench_main(monkeypatch, capsys, "compare", str(RECORDED_MODEL), str(RECORDED_MODEL.with_name(
        "smollm2-135m-audit")))  # fmt: skip
    assert code == 1
    comparison = compare([RECORDED_MODEL], [RECORDED_MODEL.with_name("smollm2-135m-audit")])
    table = comparison.table()
    for record, row in zip(table.records, table.display_rows(), strict=True):
        a, b, change = row[-3:]
        if record.metric.fmt == "num" and "–" not in row:  # rates: 0.1% and 0.1 pts; latencies: 0.1 ms
            assert _decimals(a) == _decimals(b) == _decimals(change) == record.metric.decimals, row
    printed = out.split("B - A")[1].splitlines()[2:]
    wrapped = any(line.startswith(" ") for line in printed)  # a continuation of the metric column
    assert all(len(line) <= int(columns) for line in printed)
    assert wrapped == (columns == "110")  # 125 columns hold the longest metric whole
