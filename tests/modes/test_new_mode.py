"""Adding a mode is one code file plus its registration: a throwaway mode, written into a temporary module and
registered by ``@mode``, goes through every check the registered modes go through, with no other file changed (no
golden trace, no sanity rows, no recording). Once as a naive mode, once as a hard gate."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.matrix.pipeline.driver import run
from harness.matrix.pipeline.spec import RunSpec
from harness.scenario.load import load_all
from modes import MODES, select_modes
from tests.helpers.bench import SCENARIOS, bench_main
from tests.helpers.mode_checks import (
    HARD_GATE_POLICIES,
    STORIES,
    WRITE_GOLDEN,
    check_audit_gateway_counts_premature_writes,
    check_declares_itself,
    check_every_policy_offline,
    check_golden,
    check_hard_gate_under_audit,
    check_naive_commits_early_unless_enforced,
    check_random_answers_and_decisions,
    check_report_matches_the_trace,
    golden_path,
    hard_gate_modes,
    naive_modes,
    not_covered_in,
)
from tests.helpers.sweeps import scaled
from tests.helpers.throwaway import throwaway_mode

LIBRARY = load_all(SCENARIOS)


@pytest.fixture(params=["naive", "hard_gate"])
def throwaway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The throwaway mode, registered for one test (naive, or a hard gate), then unregistered."""
    with throwaway_mode(tmp_path, hard_gate=request.param == "hard_gate") as name:
        yield name
    assert name not in MODES


def test_it_registers_declares_itself_and_is_listed(throwaway, monkeypatch, capsys):
    check_declares_itself(throwaway)
    assert throwaway in select_modes(["all"])
    assert (throwaway in hard_gate_modes()) == MODES[throwaway].hard_gate != (throwaway in naive_modes())
    code, out, err = bench_main(monkeypatch, capsys, "list")
    assert code == 0 and throwaway in out, err


def test_the_gate_checks_read_its_class(throwaway, blog):
    """The checks that apply to its kind, chosen by what its class declares."""
    check_audit_gateway_counts_premature_writes(blog, throwaway)
    if MODES[throwaway].hard_gate:
        for story in STORIES:
            for policy in HARD_GATE_POLICIES:
                check_hard_gate_under_audit(throwaway, story, policy)
    else:
        check_naive_commits_early_unless_enforced(throwaway)


@pytest.mark.parametrize("scenario", sorted(LIBRARY))
def test_every_scenario_with_every_scripted_policy(throwaway, scenario):
    check_every_policy_offline(LIBRARY[scenario], throwaway)


@pytest.mark.slow
def test_random_answers_and_decisions_keep_the_gates(throwaway, tmp_path):
    check_random_answers_and_decisions(throwaway, tmp_path / "random", runs=scaled(1000, 200))


def test_no_golden_trace_is_not_a_failure_and_the_variable_writes_one(throwaway, blog, tmp_path, monkeypatch):
    monkeypatch.delenv(WRITE_GOLDEN, raising=False)
    assert not golden_path(throwaway).exists()
    assert check_golden(blog, throwaway) is False  # the golden test skips it, saying how to write one
    monkeypatch.setenv(WRITE_GOLDEN, "1")
    assert check_golden(blog, throwaway, tmp_path) is True and golden_path(throwaway, tmp_path).exists()
    monkeypatch.delenv(WRITE_GOLDEN)
    assert check_golden(blog, throwaway, tmp_path) is True  # held to it from now on


@pytest.mark.slow
def test_check_scenarios_notes_it_as_not_covered_and_its_suggested_rows_cover_it(
    throwaway, tmp_path, monkeypatch, capsys
):
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios")
    assert code == 0 and "FAILED" not in out, err
    assert not_covered_in(out)[throwaway] == f"every scenario ({len(LIBRARY)})"

    code, suggested, err = bench_main(monkeypatch, capsys, "check-scenarios", "--suggest", throwaway)
    assert code == 0, err
    rows = yaml.safe_load(suggested)["eager"]
    assert set(rows) == set(LIBRARY) and all(set(row) == {throwaway} for row in rows.values())
    # Pasted into the table, as the author would after reviewing them, the rows are met and nothing is left out.
    folder = tmp_path / "scenarios"
    shutil.copytree(SCENARIOS, folder)
    table = yaml.safe_load((folder / "sanity.yaml").read_text(encoding="utf-8"))
    for scenario, row in rows.items():
        table["eager"][scenario].update(row)
    (folder / "sanity.yaml").write_text(yaml.safe_dump(table), encoding="utf-8")
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", str(folder))
    assert code == 0 and not err and throwaway not in not_covered_in(out), (out, err)
    per_scenario = 2 * len(table["eager"]["blog_brief_approval"])
    assert out.count(f" {per_scenario}/{per_scenario} ") == len(LIBRARY)


@pytest.mark.slow
def test_the_report_over_its_runs(throwaway, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "run"
    run(
        RunSpec(
            modes=(throwaway, "react"),
            scenarios=("blog_brief_approval",),
            model="scripted:random",
            trials=20,
            seed=3,
            out=folder,
        )
    )
    code, out, err = bench_main(
        monkeypatch, capsys, "report", str(folder), "--format", "md,csv", "--out", str(tmp_path / "r")
    )
    assert code == 0, err
    check_report_matches_the_trace(folder, tmp_path / "r", out, trials=20)
    assert throwaway in (tmp_path / "r" / "report.md").read_text()
