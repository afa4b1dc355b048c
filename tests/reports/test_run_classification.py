"""Which runs the report leaves out as infrastructure runs: the runtime's verdict when the trace has one, else
(schema 1) the error that ended the run, and when that error line was lost, the outcome's error counts.
Each rule is shown both ways: a run it must count and a run it must not."""

from __future__ import annotations

import json

import pytest

from reports import load_traces
from reports.metrics import classify_runs
from tests.helpers.report_fixtures import Call, Run, write_lines


def schema_1(line: str) -> str:
    """A line as schema 1 wrote it: no verdict, no unauthorized count, no blocked reasons, no resumes."""
    data = json.loads(line)
    data["schema_version"] = 1
    if data.get("outcome"):
        for key in ("stop_verdict", "unauthorized_side_effects", "blocked_by", "resumes", "repeated_side_effects"):
            data["outcome"].pop(key)
    return json.dumps(data)


def classified(tmp_path, run: Run, *, old: bool = True, lose_error_line: bool = False) -> dict:
    lines = run.lines()
    if lose_error_line:
        lines = [line for line in lines if json.loads(line)["kind"] != "error"]
    if old:
        lines = [schema_1(line) for line in lines]
    runs = classify_runs(load_traces(write_lines(tmp_path / "run", lines)))
    assert len(runs) == 1
    row = runs.iloc[0]
    ending = row["ending_error"]
    return {"infrastructure": bool(row["infrastructure"]), "ending_error": None if ending != ending else ending}


def error_run(ending: str | None, retries: tuple[str, ...] = (), status: str = "error") -> Run:
    calls = [Call(10.0, 1, 1, "note", retries=retries)] if retries else []
    return Run("r", "react", status=status, stop_correct=False, ending_error=ending, calls=calls)


# ---------------------------------------------------------------- schema 1: the ending error decides


@pytest.mark.parametrize("kind", ["network", "timeout", "http_4xx", "http_5xx", "replay_miss", "internal"])
def test_a_run_ended_by_an_infrastructure_error_is_an_infrastructure_run(tmp_path, kind):
    assert classified(tmp_path, error_run(kind)) == {"infrastructure": True, "ending_error": kind}


@pytest.mark.parametrize("kind", ["parse", "schema", "workflow"])
def test_a_run_ended_by_the_models_or_modes_error_is_judged_even_after_network_retries(tmp_path, kind):
    assert classified(tmp_path, error_run(kind, retries=("network",))) == {
        "infrastructure": False,
        "ending_error": kind,
    }


def test_the_last_error_event_is_the_one_that_ended_the_run(tmp_path):
    run = error_run("parse")
    events = run.events()
    error = next(e for e in events if e.kind == "error")
    earlier = error.model_copy(update={"seq": error.seq, "error": error.error.model_copy(update={"kind": "timeout"})})
    later = error.model_copy(update={"seq": error.seq + 1})
    summary = events[-1].model_copy(update={"seq": error.seq + 2})
    lines = [e.model_dump_json() for e in [*events[: error.seq], earlier, later, summary]]
    runs = classify_runs(load_traces(write_lines(tmp_path / "run", [schema_1(line) for line in lines])))
    assert runs["ending_error"].tolist() == ["parse"] and runs["infrastructure"].tolist() == [False]


def test_a_run_that_did_not_end_in_error_is_never_an_infrastructure_run(tmp_path):
    run = error_run(None, retries=("network", "timeout"), status="finished")
    assert classified(tmp_path, run) == {"infrastructure": False, "ending_error": None}


# ---------------------------------------------------------------- schema 1: the error line was lost


def test_a_lost_error_line_with_only_infrastructure_errors_counted_is_an_infrastructure_run(tmp_path):
    got = classified(tmp_path, error_run("network", retries=("timeout",)), lose_error_line=True)
    assert got == {"infrastructure": True, "ending_error": None}


def test_a_lost_error_line_with_a_parse_error_counted_is_judged(tmp_path):
    got = classified(tmp_path, error_run("parse", retries=("network",)), lose_error_line=True)
    assert got == {"infrastructure": False, "ending_error": None}


@pytest.mark.parametrize("kind", ["schema", "workflow"])
def test_a_lost_error_line_with_any_error_of_the_mode_counted_is_judged(tmp_path, kind):
    got = classified(tmp_path, error_run(kind, retries=("http_5xx",)), lose_error_line=True)
    assert got["infrastructure"] is False


def test_a_lost_error_line_with_no_error_counted_is_judged(tmp_path):
    run = Run("r", "react", status="error", stop_correct=False)
    assert classified(tmp_path, run, lose_error_line=True) == {"infrastructure": False, "ending_error": None}


# ---------------------------------------------------------------- schema 2: the runtime's verdict decides


def test_the_runtimes_verdict_decides_over_the_error_events(tmp_path):
    judged = Run("r", "react", status="error", stop_correct=False, ending_error="timeout", verdict="failed_closed")
    assert classified(tmp_path / "a", judged, old=False)["infrastructure"] is False
    unjudged = Run("r", "react", status="error", stop_correct=False, ending_error="parse", verdict="infrastructure")
    assert classified(tmp_path / "b", unjudged, old=False)["infrastructure"] is True


def test_an_interrupted_run_is_an_infrastructure_run_by_its_verdict(tmp_path):
    run = Run("r", "react", status="interrupted", stop_correct=False, verdict="infrastructure")
    assert classified(tmp_path, run, old=False) == {"infrastructure": True, "ending_error": None}


def test_a_lost_error_line_in_a_schema_2_trace_keeps_the_runtimes_verdict(tmp_path):
    run = error_run("network")
    assert classified(tmp_path / "a", run, old=False, lose_error_line=True)["infrastructure"] is True
    parse = error_run("parse", retries=("network",))
    assert classified(tmp_path / "b", parse, old=False, lose_error_line=True)["infrastructure"] is False
