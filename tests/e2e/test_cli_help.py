"""--help reads plainly (choices as choices, no <bool> after flags, no <list[str]>), the CLI's choices are the
code's, and every unknown value is one line naming what to use instead."""

from __future__ import annotations

from typing import get_args

import pytest
from typer.testing import CliRunner

from harness.cli.app import app
from harness.cli.commands.report import REPORT_FORMATS, FigureVenue, ReportGrouping
from harness.matrix.pipeline.spec import GATEWAY_POLICIES
from harness.models.providers import PROVIDERS, RESPONSE_FORMATS
from reports.figures import VENUES
from reports.metrics import GROUPINGS
from reports.report import FORMATS
from tests.helpers.bench import bench_main

COMMANDS = [
    "list",
    "check-scenarios",
    "schema",
    "run",
    "replay",
    "probe",
    "resume",
    "serve-model",
    "report",
    "compare",
    "show",
    "runs",
    "gate-check",
]


def help_of(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_no_type_after_a_flag_and_no_python_list_types(command):
    text = help_of(command)
    assert "<bool>" not in text and "list[" not in text


def test_choices_are_shown_as_choices():
    run = help_of("run")
    assert f"<{'|'.join(GATEWAY_POLICIES)}>" in run
    assert f"<{'|'.join(RESPONSE_FORMATS)}>" in run
    assert "<auto|" + "|".join(PROVIDERS)[:30] in run
    assert "--replace " in run and "--live " in run  # the flags are listed, bare
    for command in ("report", "compare"):
        assert f"<{'|'.join(GROUPINGS)}>" in help_of(command)
    assert REPORT_FORMATS in help_of("report")
    assert "<live|local>" in help_of("probe")


def test_the_clis_choices_are_the_codes():
    assert get_args(ReportGrouping) == GROUPINGS
    assert tuple(REPORT_FORMATS.split(",")) == FORMATS
    assert set(get_args(FigureVenue)) == set(VENUES)


@pytest.mark.parametrize(
    "args, words",
    [
        (["run", "--model", "gpt-4o"], ["--model gpt-4o", "--model live with LLM_API_URL"]),
        (["run", "--model", "scripted:lazy"], ["lazy", "compliant, eager, looping, random"]),
        (["run", "--model", "replay:/no/such/dir"], ["replay:/no/such/dir", "recording.jsonl"]),
        (["run", "--mode", "reactt"], ["reactt", "react, react_guardrails"]),
        (["run", "--scenario", "nope"], ["nope", "blog_brief_approval"]),
        (["run", "--gateway", "off"], ["--gateway", "'enforce', 'audit'"]),
        (["run", "--live", "--provider", "acme"], ["--provider", "'auto', 'openai'"]),
        (["run", "--live", "--response-format", "xml"], ["--response-format", "'json_schema'"]),
        (["run", "--approver", "boss"], ["boss", "scripted:approve"]),
        (["report", "results", "--by", "day"], ["--by", "'mode', 'scenario', 'model'"]),
        (["report", "results", "--format", "pdf"], ["--format", "pdf", "md, csv, latex, html"]),
        (["compare", "a", "b", "--by", "day"], ["--by", "'mode'"]),
        (["probe", "--model", "gpt"], ["--model", "'live', 'local'"]),
        (["nosuchcommand"], ["nosuchcommand"]),
    ],
)
def test_an_unknown_value_is_one_line_naming_what_to_use(monkeypatch, capsys, tmp_path, args, words):
    code, out, err = bench_main(monkeypatch, capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0]
