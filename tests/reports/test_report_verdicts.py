"""Verdicts, violations, blocked reasons, unauthorized side effects and cost, against an independent recount."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from harness.core.gateway import Gateway
from harness.core.store import VirtualStore
from harness.errors import ERROR_KINDS
from harness.records.trace import RunOutcome, TraceEvent, Usage
from harness.scenario.load import load_all
from reports import load_traces
from reports.metrics import compute
from reports.prices import load_prices
from reports.report import build_report
from reports.tables import error_kinds, main_table, violations_table
from reports.trace_columns import BLOCK_REASONS, OUTCOME_COLUMNS, SCHEMA, UNREAD_EVENT_FIELDS
from tests.helpers.bench import ROOT, SCENARIOS, bench_main
from tests.helpers.report_fixtures import Call, Run, write_runs

VERDICT_RUNS = [  # (verdict, stop_correct, status, premature, unauthorized, violations, blocked_by)
    ("correct", True, "suspended", 0, 0, [], {"gate_closed": 1}),
    ("correct", True, "suspended", 0, 0, [], {}),
    ("early", False, "finished", 0, 0, ["missing_artifact:brief", "order:create_brief<write_draft"], {}),
    ("early", False, "suspended", 0, 0, ["missing_artifact:brief"], {"precondition": 2}),
    (
        "late",
        False,
        "finished",
        1,
        2,
        ["gate_closed:write_draft", "forbidden:write_draft", "not_permitted:admin_identity_check"],
        {},
    ),
    ("late", False, "finished", 0, 1, ["forbidden:deploy"], {"not_permitted": 1, "not_allowed": 1}),
    ("wrong_place", False, "suspended", 0, 0, [], {"invalid_args": 1}),
    ("no_stop", False, "step_limit", 0, 0, ["missing_artifact:brief"], {"unknown_action": 3}),
    ("failed_closed", False, "error", 0, 0, [], {"not_an_action": 1, "made_up_reason": 2}),
    (
        "failed_closed",
        False,
        "rejected",
        0,
        0,
        ["ungrounded:write_answer.claims[].doc_id='D-9'", "ungrounded:write_answer.claims[].doc_id='D-7'"],
        {},
    ),
]


def verdict_runs(policy: str = "enforce", prefix: str = "v") -> list[Run]:
    runs = []
    for i, (verdict, correct, status, premature, unauthorized, violations, blocked) in enumerate(VERDICT_RUNS):
        actions = [("write_draft", "blocked")] * sum(blocked.values())
        runs.append(
            Run(
                f"{prefix}{i}",
                "react" if i % 2 else "workflow",
                trial=i // 2 + 1,
                stop_correct=correct,
                status=status,
                verdict=verdict,
                premature=premature,
                unauthorized=unauthorized,
                violations=violations,
                blocked_by=blocked,
                actions=actions,
                gateway_policy=policy,
                ending_error="parse" if status == "error" else None,
                calls=[Call(50.0 + i, 100 * (i + 1), 10 * (i + 1), "x")],
                cached=7 * i,
                reasoning=3 * i,
            )
        )
    runs.append(
        Run(
            f"{prefix}-infra",
            "react",
            trial=9,
            stop_correct=False,
            status="error",
            ending_error="timeout",
            gateway_policy=policy,
            violations=["forbidden:deploy"],
            premature=1,
        )
    )
    return runs


@pytest.fixture()
def folder(tmp_path) -> Path:
    return write_runs(tmp_path / "run", verdict_runs() + verdict_runs("audit", "a"))


def independent(folder: Path) -> dict[tuple[str, str], dict]:
    """Every number recomputed from the raw JSON lines, without the report's code."""
    found: dict[tuple[str, str], dict] = defaultdict(
        lambda: {
            "verdicts": Counter(),
            "violations": defaultdict(set),
            "occurrences": Counter(),
            "blocked": Counter(),
            "unauthorized": 0,
            "premature": 0,
            "judged": 0,
            "infra": 0,
            "blocked_total": 0,
        }
    )
    for line in (folder / "traces.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["kind"] != "summary":
            continue
        outcome = event["outcome"]
        group = found[(event["mode"], outcome["gateway_policy"])]
        if outcome["stop_verdict"] == "infrastructure":
            group["infra"] += 1
            continue
        group["judged"] += 1
        group["verdicts"][outcome["stop_verdict"]] += 1
        group["unauthorized"] += outcome["unauthorized_side_effects"]
        group["premature"] += outcome["premature_side_effects"]
        group["blocked_total"] += outcome["side_effects_blocked"]
        for reason, n in outcome["blocked_by"].items():
            group["blocked"][reason] += n
        for violation in outcome["violations"]:
            kind, subject = violation.split(":", 1)
            subject = subject.split("=", 1)[0]
            group["violations"][(kind, subject)].add(event["run_id"])
            group["occurrences"][(kind, subject)] += 1
    return found


def test_verdicts_unauthorized_and_blocked_match_an_independent_count(folder):
    metrics = compute(load_traces(folder)).by_key()
    expected = independent(folder)
    assert set(metrics) == set(expected)
    for key, want in expected.items():
        got = metrics[key]
        assert got.judged == want["judged"] and got.infrastructure == want["infra"]
        assert got.verdicts == dict(want["verdicts"])
        assert got.unauthorized_side_effects == want["unauthorized"]
        assert got.premature_side_effects == want["premature"]
        assert got.side_effects_blocked == want["blocked_total"]
        assert got.blocked_by == {r: want["blocked"].get(r, 0) for r in BLOCK_REASONS}
        assert got.blocked_other == sum(n for r, n in want["blocked"].items() if r not in BLOCK_REASONS)
        assert got.stop.successes == want["verdicts"]["correct"]
        assert sum(got.verdict_share(v) for v in got.verdicts) == pytest.approx(1.0)


def test_top_violations_group_by_kind_and_subject_with_an_example_run(folder):
    metrics = compute(load_traces(folder)).by_key()
    for key, want in independent(folder).items():
        got = metrics[key].violations
        counts = {(v.kind, v.subject): (v.runs, v.occurrences) for v in got}
        assert counts == {k: (len(runs), want["occurrences"][k]) for k, runs in want["violations"].items()}
        for v in got:
            assert v.example_run in want["violations"][(v.kind, v.subject)]
        assert [v.runs for v in got] == sorted((v.runs for v in got), reverse=True)
    react_top = metrics[("react", "enforce")].violations[0]
    assert (react_top.kind, react_top.subject, react_top.runs) == ("missing_artifact", "brief", 2)  # most runs first
    workflow = metrics[("workflow", "enforce")].violations
    assert [v.kind for v in workflow] == sorted(v.kind for v in workflow)  # ties: by kind
    react = {(v.kind, v.subject): v for v in metrics[("react", "enforce")].violations}
    ungrounded = react[("ungrounded", "write_answer.claims[].doc_id")]
    assert (ungrounded.runs, ungrounded.occurrences) == (1, 2)  # two values, one subject, one run
    assert ("forbidden", "deploy") in react and react[("forbidden", "deploy")].runs == 1  # infra run not counted


def test_the_headline_table_leads_with_the_verdict_breakdown(folder):
    table = main_table(compute(load_traces(folder)))
    assert table.headers[:11] == [
        "mode",
        "policy",
        "n",
        "correct",
        "early",
        "skipped approval",
        "late",
        "wrong place",
        "no stop",
        "failed closed",
        "infra",
    ]
    assert table.headers.index("unauthorized") == table.headers.index("premature") - 1
    # content correctness right next to stop-correctness: a right stop is not read as right work
    assert table.headers[table.headers.index("stop-correct") :][:3] == ["stop-correct", "95% CI", "oracle passed"]
    row = dict(zip(table.headers, table.display_rows()[0], strict=False))
    assert (row["mode"], row["policy"], row["correct"], row["early"], row["late"]) == (
        "workflow",
        "enforce",
        "1",
        "1",
        "1",
    )


@pytest.mark.slow
def test_report_files_hold_verdicts_violations_and_blocked_reasons(folder, tmp_path):
    result = build_report([folder], tmp_path / "out")
    tables = tmp_path / "out" / "tables"
    with open(tables / "verdicts_by_mode.csv") as handle:
        verdicts = {(r["mode"], r["policy"]): r for r in csv.DictReader(handle)}
    assert verdicts[("react", "audit")]["late"] == "1" and verdicts[("react", "audit")]["infrastructure"] == "1"
    with open(tables / "blocked_by_mode.csv") as handle:
        blocked = {(r["mode"], r["policy"]): r for r in csv.DictReader(handle)}
    assert blocked[("react", "enforce")]["role"] == "1" and blocked[("react", "enforce")]["precondition"] == "2"
    assert blocked[("workflow", "enforce")]["other"] == "2"  # a reason the tables do not know still counts
    with open(tables / "violations_by_mode.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert {"violation", "subject", "runs", "example run"} <= set(rows[0])
    assert (tmp_path / "out" / "figures" / "verdicts.png").exists()
    assert "violations_by_mode" in (tmp_path / "out" / "report.html").read_text()
    assert result.main.name == "main_by_mode"


def test_violations_table_names_the_folder_when_several_are_reported(tmp_path):
    a = write_runs(tmp_path / "a", verdict_runs())
    b = write_runs(tmp_path / "b", verdict_runs("audit", "b"))
    table = violations_table(compute(load_traces([a, b])))
    assert any(f"({a})" in row[-1] for row in table.display_rows())


# ---------------------------------------------------------------- one source for the schema


def test_the_arrow_projection_is_the_pydantic_model():
    assert set(SCHEMA.names) == set(TraceEvent.model_fields) - set(UNREAD_EVENT_FIELDS)
    outcome = SCHEMA.field("outcome").type
    assert [f.name for f in outcome] == list(RunOutcome.model_fields)
    assert [f.name for f in SCHEMA.field("usage").type] == list(Usage.model_fields)
    assert [f.name for f in outcome.field("errors").type] == list(ERROR_KINDS)
    flat = set(OUTCOME_COLUMNS.values())
    assert {f"errors_{k}" for k in ERROR_KINDS} <= flat and "stop_verdict" in flat and "cached_tokens" in flat


def test_the_errors_table_takes_its_kinds_from_harness_errors(folder):
    metrics = compute(load_traces(folder))
    assert error_kinds(metrics, every_kind=True) == list(ERROR_KINDS)
    assert error_kinds(metrics) == ["timeout", "parse"]  # the ones that occurred, in harness.errors' order


def example(schema: dict) -> object:
    """A small value that fits a simple JSON Schema: the first enum value, or one of the declared type."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: example(properties.get(name, {})) for name in schema.get("required", [])}
    if kind == "array":
        return [example(schema.get("items", {}))] * schema.get("minItems", 0)
    return {"string": "some text", "number": 1, "integer": 1, "boolean": True}.get(kind, "x")


def test_every_reason_the_gateway_blocks_for_has_a_column():
    reasons = set()
    for scenario in load_all(SCENARIOS).values():
        names = [a.name for a in scenario.actions]
        for name in [*names, "no_such_action"]:
            for allowed in (names, []):
                for args in (
                    {},
                    {"unexpected": 1},
                    "not an object",
                    example(scenario.action_map[name].args) if name in scenario.action_map else {},
                ):
                    gateway = Gateway(scenario, VirtualStore.for_scenario(scenario), "enforce")
                    record = gateway.execute(name, args, allowed=allowed, step=1)
                    if record.status == "blocked":
                        reasons.add(record.reason)
    assert reasons <= set(BLOCK_REASONS)
    assert {
        "gate_closed",
        "not_permitted",
        "not_allowed",
        "invalid_args",
        "unknown_action",
        "not_an_action",
        "precondition",
    } <= reasons


# ---------------------------------------------------------------- prices


def write_prices(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.slow
def test_cost_per_run_and_per_group_from_the_price_table(folder, tmp_path):
    prices = write_prices(tmp_path / "prices.yaml", "fixture:model: {input: 2.5, output: 10, cached_input: 1.25}\n")
    result = build_report([folder], tmp_path / "out", prices=load_prices(prices))
    with open(tmp_path / "out" / "tables" / "cost_by_mode.csv") as handle:
        rows = {(r["mode"], r["policy"]): r for r in csv.DictReader(handle)}
    expected: dict[tuple[str, str], list[float]] = defaultdict(list)
    for line in (folder / "traces.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["kind"] == "summary":
            usage = event["outcome"]["usage"]
            uncached = usage["prompt_tokens"] - usage["cached_tokens"]
            cost = (uncached * 2.5 + usage["cached_tokens"] * 1.25 + usage["completion_tokens"] * 10) / 1e6
            expected[(event["mode"], event["outcome"]["gateway_policy"])].append(cost)
    for key, costs in expected.items():
        assert float(rows[key]["USD total"]) == pytest.approx(sum(costs))
        assert float(rows[key]["USD / run"]) == pytest.approx(sum(costs) / len(costs))
        assert rows[key]["unpriced runs"] == "0"
    assert "prices: 1 model(s) priced" in (tmp_path / "out" / "report.md").read_text()
    assert result.files


@pytest.mark.slow
def test_a_model_missing_from_the_price_table_is_unpriced_never_zero(tmp_path, monkeypatch, capsys):
    priced = write_runs(tmp_path / "a", [Run("p1", "react", calls=[Call(1.0, 1000, 100, "x")])])
    other = write_runs(
        tmp_path / "b",
        [
            Run("u1", "react", model="other:model", calls=[Call(1.0, 1000, 100, "x")]),
            Run("u2", "workflow", model="other:model", calls=[Call(1.0, 10, 1, "x")]),
        ],
    )
    prices = write_prices(tmp_path / "prices.json", json.dumps({"fixture:model": {"input": 1, "output": 2}}))
    code, _out, err = bench_main(
        monkeypatch, capsys, "report", str(priced), str(other), "--prices", str(prices), "--out", str(tmp_path / "r")
    )
    assert code == 0, err
    with open(tmp_path / "r" / "tables" / "cost_by_mode.csv") as handle:
        rows = {(r["mode"], r["policy"]): r for r in csv.DictReader(handle)}
    assert rows[("workflow", "enforce")]["USD / run"] == "" and rows[("workflow", "enforce")]["unpriced runs"] == "1"
    react = rows[("react", "enforce")]
    assert float(react["USD / run"]) == pytest.approx((1000 * 1 + 100 * 2) / 1e6)  # over the priced run only
    assert react["USD total"] == "" and react["unpriced runs"] == "1"  # a total with an unpriced run is unknown
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "unpriced" in markdown and "Unpriced models: other:model" in markdown
    with open(tmp_path / "r" / "tables" / "cost_by_model.csv") as handle:
        by_model = {(r["model"], r["mode"]): r for r in csv.DictReader(handle)}
    assert by_model[("other:model", "react")]["USD / run"] == ""


@pytest.mark.parametrize(
    "text,needle",
    [
        ("gpt: {input: -1, output: 2}", "gpt.input"),
        ("gpt: {input: 1, output: 2, cache: 3}", "gpt.cache"),
        ("gpt: {input: one, output: 2}", "gpt.input"),
        ("gpt: {output: 2}", "gpt.input"),
        ("- just a list", "expected a mapping"),
        ("gpt: {input: 1, output: [", "not valid YAML"),
        ("gpt: {input: .inf, output: 2}", "gpt.input"),
    ],
)
def test_a_bad_price_file_is_one_line_naming_the_field(tmp_path, monkeypatch, capsys, text, needle):
    folder = write_runs(tmp_path / "run", [Run("r", "react")])
    prices = write_prices(tmp_path / "prices.yaml", text)
    code, _, err = bench_main(monkeypatch, capsys, "report", str(folder), "--prices", str(prices))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert needle in err and str(prices) in err


# ---------------------------------------------------------------- the end-of-run table


@pytest.mark.slow
def test_the_end_of_run_table_counted_as_runs_end_is_the_report_headline(tmp_path):
    """bench run keeps no outcomes: it tallies them as they come; the table must equal the report's headline."""
    from reports.load import load_traces
    from reports.metrics import compute
    from reports.tables import main_table, to_terminal

    out = tmp_path / "run"
    args = [
        "run",
        "--mode",
        "all",
        "--scenario",
        "all",
        "--model",
        "scripted:random",
        "--trials",
        "3",
        "--approver",
        "scripted:random",
        "--out",
        str(out),
    ]
    result = subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    printed = result.stdout.split("\n\n")[0]
    from_report = to_terminal(main_table(compute(load_traces([out]), "mode")))
    assert printed.strip() == from_report.strip()
    header = printed.splitlines()[0].split()
    assert header[:5] == ["mode", "policy", "n", "correct", "early"]
    assert "n: judged runs" in result.stdout  # every column explained
