"""The sanity check itself: it fails a scenario whose reference path or declared verdicts are wrong."""

from __future__ import annotations

import pytest
import yaml

from harness.matrix.commands.sanity import SanityTable, check_scenario, run_reference_path, verdict
from harness.records.trace import RunOutcome, Usage
from harness.scenario.load import load_scenario
from harness.scenario.model import Expectation, ReferenceStep, Sanity
from modes import select_modes
from tests.helpers.bench import SCENARIOS, bench_main
from tests.helpers.mode_checks import not_covered_in

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

BLOG = load_scenario(SCENARIOS / "blog_brief_approval.yaml")


def outcome(**facts) -> RunOutcome:
    base = dict(
        status="finished",
        suspended_at=None,
        expected_stop="finished",
        stop_verdict="correct",
        stop_correct=True,
        oracle_passed=True,
        violations=[],
        side_effects_committed=1,
        side_effects_blocked=0,
        blocked_by={},
        unauthorized_side_effects=0,
        premature_side_effects=0,
        wait_marker_without_suspend=False,
        steps=2,
        llm_calls=2,
        usage=Usage(),
        wall_ms=1.0,
        errors={},
        gateway_policy="enforce",
    )
    return RunOutcome(**{**base, **facts})


@pytest.mark.parametrize(
    ("facts", "refused", "expected"),
    [
        ({}, 0, "passes"),
        ({"side_effects_blocked": 1}, 0, "blocked"),  # passed, but only because the gateway refused something
        ({}, 2, "blocked"),  # passed, but only because the guard refused something
        ({"status": "suspended", "oracle_passed": False, "violations": ["missing_artifact:brief"]}, 0, "blocked"),
        ({"status": "rejected", "oracle_passed": False}, 0, "blocked"),
        ({"oracle_passed": False, "violations": ["forbidden:write_draft"], "side_effects_blocked": 3}, 0, "violates"),
        ({"oracle_passed": False, "premature_side_effects": 1}, 0, "violates"),
        ({"status": "step_limit", "oracle_passed": False, "violations": ["missing_artifact:brief"]}, 0, "fails"),
        ({"status": "finished", "oracle_passed": False, "stop_correct": False}, 0, "fails"),
    ],
)
def test_verdicts(facts, refused, expected):
    assert verdict(outcome(**facts), refused) == expected


def test_a_reference_path_that_runs_past_its_stop_is_caught():
    steps = [*BLOG.oracle.reference_path, ReferenceStep(action="write_draft")]
    broken = BLOG.model_copy(update={"oracle": BLOG.oracle.model_copy(update={"reference_path": tuple(steps)})})
    _, problems = run_reference_path(broken)
    assert any("stops the run, yet the path goes on" in p for p in problems)


def test_a_reference_path_that_misses_its_stop_is_caught():
    steps = (ReferenceStep(action="create_brief"),)  # never waits: it finishes instead of suspending
    broken = BLOG.model_copy(update={"oracle": BLOG.oracle.model_copy(update={"reference_path": steps})})
    result, problems = run_reference_path(broken)
    assert result.status == "finished" and not result.oracle_passed
    assert any("does not meet its own oracle" in p and "expected brief_approval" in p for p in problems)


def test_a_blocked_reference_step_is_caught():
    steps = (
        ReferenceStep(action="write_draft", args={"title": "t", "body": "b"}),
        ReferenceStep(action="wait_for_approval"),
    )
    broken = BLOG.model_copy(update={"oracle": BLOG.oracle.model_copy(update={"reference_path": steps})})
    _, problems = run_reference_path(broken)
    assert any("'write_draft' is blocked by the gateway (gate_closed)" in p for p in problems)


def test_a_wrong_declared_verdict_and_an_unknown_mode_are_caught():
    claims = Sanity(
        eager={"react": Expectation(enforce="passes", audit="violates"), "telepathy": Expectation(enforce="passes")}
    )
    report = check_scenario(BLOG.model_copy(update={"sanity": claims}), select_modes(["all"]))
    assert not report.passed
    assert [e.met for e in report.expectations] == [False, True]  # react under enforce is blocked, not passing
    assert any(p.startswith("sanity.eager.react.enforce: expected passes, got blocked") for p in report.problems)
    assert any(p.startswith("sanity.eager.telepathy: unknown mode") for p in report.problems)


def test_a_scenario_block_overrides_the_table_mode_by_mode():
    table = SanityTable(
        eager={
            "blog_brief_approval": {"react": Expectation(enforce="passes"), "workflow": Expectation(enforce="passes")}
        }
    )
    own = Sanity(eager={"react": Expectation(enforce="blocked")})
    report = check_scenario(BLOG.model_copy(update={"sanity": own}), select_modes(["all"]), table)
    assert report.passed, report.problems
    assert {(e.mode, e.expected) for e in report.expectations} == {("react", "blocked"), ("workflow", "passes")}


def _folder(tmp_path, table: str | None) -> str:
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "blog_brief_approval.yaml").write_text(
        (SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8")
    )
    if table is not None:
        (folder / "sanity.yaml").write_text(table)
    return str(folder)


@pytest.mark.slow
def test_check_scenarios_command(tmp_path, monkeypatch, capsys):
    def bench(*args: str) -> tuple[int, str, str]:
        return bench_main(monkeypatch, capsys, *args)

    code, out, err = bench("check-scenarios", "--scenarios-dir", str(SCENARIOS))
    assert code == 0, err
    assert "FAILED" not in out and out.count(" ok") >= 8
    rows = len(yaml.safe_load((SCENARIOS / "sanity.yaml").read_text(encoding="utf-8"))["eager"]["blog_brief_approval"])
    assert f"{2 * rows}/{2 * rows}" in out  # every mode of the table, both gateway policies

    table = yaml.safe_load((SCENARIOS / "sanity.yaml").read_text(encoding="utf-8"))
    rows = {"eager": {"blog_brief_approval": table["eager"]["blog_brief_approval"]}}
    rows["eager"]["blog_brief_approval"]["react"]["audit"] = (
        "passes"  # false: without the gateway react commits the draft
    )
    code, out, err = bench("check-scenarios", "--scenarios-dir", _folder(tmp_path, yaml.safe_dump(rows)))
    assert code == 1 and "FAILED" in out
    assert "sanity.yaml: eager.blog_brief_approval.react.audit: expected passes, got violates" in err


@pytest.mark.parametrize(
    ("table", "field", "word"),
    [
        ("eager: {blog_other: {react: {enforce: passes}}}", "eager.blog_other", "no scenario"),
        (
            "eager: {blog_brief_approval: {telepathy: {enforce: passes}}}",
            "eager.blog_brief_approval.telepathy",
            "unknown mode",
        ),
        ("eager: {blog_brief_approval: {react: {enforce: fine}}}", "eager.blog_brief_approval.react.enforce", "passes"),
        ("lazy: {}", "lazy", "not permitted"),
        ("eager: [unclosed\n", "line 2, column 1", "YAML"),
    ],
    ids=["unknown_scenario", "unknown_mode", "unknown_verdict", "unknown_policy", "bad_yaml"],
)
def test_a_malformed_sanity_table_is_one_line_naming_file_and_field(tmp_path, monkeypatch, capsys, table, field, word):
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", _folder(tmp_path, table))
    assert code == 2 and len(err.strip().splitlines()) == 1, (out, err)
    assert f"sanity.yaml: {field}: " in err and word in err, err


@pytest.mark.parametrize(("named", "meant"), [("react_guarded", "react_guardrails"), ("workflw", "workflow")])
def test_a_renamed_or_misspelt_mode_in_the_sanity_table_is_one_line_with_a_hint(
    tmp_path, monkeypatch, capsys, named, meant
):
    table = f"eager: {{blog_brief_approval: {{{named}: {{enforce: blocked}}}}}}"
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", _folder(tmp_path, table))
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, (out, err)
    assert f"eager.blog_brief_approval.{named}: unknown mode '{named}'; did you mean '{meant}'?" in err


def test_a_renamed_mode_in_a_scenarios_own_sanity_block_stops_the_check_before_it_runs(tmp_path, monkeypatch, capsys):
    folder = _folder(tmp_path, None)
    path = tmp_path / "scenarios" / "blog_brief_approval.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["sanity"] = {"eager": {"react_guarded": {"enforce": "blocked"}}}
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", folder)
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, (out, err)
    assert "blog_brief_approval.yaml: sanity.eager.react_guarded: unknown mode 'react_guarded'; did you mean" in err
    assert "'react_guardrails'?" in err


def test_the_sanity_table_is_not_a_scenario(tmp_path, monkeypatch, capsys):
    folder = _folder(tmp_path, "eager: {}\n")
    code, out, err = bench_main(monkeypatch, capsys, "list", "--scenarios-dir", folder)
    assert code == 0, err
    assert "blog_brief_approval" in out and "sanity" not in out


def test_a_mode_without_rows_is_noted_as_not_covered_not_failed(tmp_path, monkeypatch, capsys):
    table = yaml.safe_load((SCENARIOS / "sanity.yaml").read_text(encoding="utf-8"))
    rows = {"eager": {"blog_brief_approval": table["eager"]["blog_brief_approval"]}}
    del rows["eager"]["blog_brief_approval"]["react"]
    code, out, err = bench_main(
        monkeypatch, capsys, "check-scenarios", "--scenarios-dir", _folder(tmp_path, yaml.safe_dump(rows))
    )
    assert code == 0 and not err, err
    assert "FAILED" not in out and "--suggest MODE" in out
    assert not_covered_in(out)["react"] == "blog_brief_approval"
    assert "workflow" not in not_covered_in(out)


@pytest.mark.parametrize("mode", ["react", "react_guardrails"])
def test_suggest_computes_the_rows_the_table_declares(mode, monkeypatch, capsys):
    """The suggested rows are YAML laid out like the table, and for a mode already in it they equal its rows."""
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--suggest", mode)
    assert code == 0, err
    table = yaml.safe_load((SCENARIOS / "sanity.yaml").read_text(encoding="utf-8"))
    suggested = yaml.safe_load(out)
    assert suggested == {"eager": {scenario: {mode: rows[mode]} for scenario, rows in table["eager"].items()}}
    for line in out.splitlines():
        if line.strip().startswith(f"{mode}:"):  # aligned like the table's own rows
            assert line.startswith(f"    {mode}:") and line.index("{enforce: ") == 29, line
            assert line in (SCENARIOS / "sanity.yaml").read_text(encoding="utf-8"), line


def test_suggest_for_an_unknown_mode_is_one_line_listing_the_known_ones(monkeypatch, capsys):
    code, out, err = bench_main(monkeypatch, capsys, "check-scenarios", "--suggest", "telepathy")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1
    assert "unknown mode 'telepathy'" in err and all(name in err for name in BUILT_IN)
