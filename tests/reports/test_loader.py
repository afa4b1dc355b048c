"""The report loader on traces made here: what each row holds, line numbers across chunks and blank lines, every
reason a line is skipped, duplicates, versions, last summaries and each run's gateway policy."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.errors import UserInputError
from harness.records.trace import SCHEMA_VERSION
from reports import load_traces
from reports.load import clean_text, trace_path
from tests.helpers.report_fixtures import Call, Run, write_lines, write_runs


def lines_of(*runs: Run) -> list[str]:
    return [line for run in runs for line in run.lines()]


def test_a_run_folder_or_its_trace_file_or_a_string_all_load_the_same(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("a", "react")])
    for given in (folder, folder / "traces.jsonl", str(folder)):
        traces = load_traces(given)
        assert traces.runs["run_id"].tolist() == ["a"] and traces.sources == [str(folder / "traces.jsonl")]


def test_the_same_file_named_twice_is_read_once_with_a_warning(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("a", "react")])
    traces = load_traces([folder, folder / "traces.jsonl"])
    assert len(traces.runs) == 1 and traces.warnings == [f"{folder / 'traces.jsonl'}: given more than once; read once"]


def test_a_trace_that_cannot_be_read_is_one_user_error(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    (folder / "traces.jsonl").mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(UserInputError, match=r"no traces\.jsonl found"):
        trace_path(folder)
    readable = write_runs(tmp_path / "other", [Run("a", "react")])

    def refused(path, chunk_bytes):
        raise PermissionError(13, "Permission denied")
        yield  # a generator, like the real reader

    monkeypatch.setattr("reports.load._read_file", refused)
    with pytest.raises(UserInputError) as error:
        load_traces(readable)
    assert str(error.value) == f"{readable / 'traces.jsonl'}: cannot read (Permission denied)"


def test_events_rows_hold_the_fields_of_each_line(tmp_path):
    run = Run("a", "react", calls=[Call(12.5, 7, 3, "note", retries=("timeout",))], cached=2, reasoning=1)
    traces = load_traces(write_runs(tmp_path / "run", [run]))
    events = traces.events
    assert events["line"].tolist() == list(range(1, len(run.events()) + 1))
    assert events["seq"].tolist() == list(range(len(run.events())))
    call = events.loc[events["kind"] == "model_call"].iloc[0]
    assert (call["action"], call["latency_ms"], call["prompt_tokens"], call["completion_tokens"]) == (
        "note",
        12.5,
        7,
        3,
    )
    assert (call["cached_tokens"], call["reasoning_tokens"], call["total_tokens"], call["purpose"]) == (
        2,
        1,
        10,
        "next_action",
    )
    retry = events.loc[events["kind"] == "model_retry"].iloc[0]
    assert retry["error_kind"] == "timeout" and retry["decision_maker"] == "runtime"
    assert set(events["source"]) == {str(tmp_path / "run")} and events["complete"].all()
    assert traces.lines == len(run.events()) and traces.schema_version == SCHEMA_VERSION and traces.skipped == []


def test_runs_rows_hold_the_last_summarys_outcome(tmp_path):
    run = Run(
        "a",
        "react",
        status="finished",
        stop_correct=False,
        premature=1,
        violations=["forbidden:deploy", "ungrounded:write.claims[].doc_id='D-9'", "missing_action:read"],
        blocked_by={"gate_closed": 2, "precondition": 1},
        actions=[("deploy", "committed"), ("deploy", "blocked"), ("deploy", "blocked"), ("x", "blocked")],
    )
    traces = load_traces(write_runs(tmp_path / "run", [run]))
    (row,) = traces.runs.itertuples()
    assert (row.status, row.stop_verdict, row.stop_correct, row.premature_side_effects) == (
        "finished",
        "late",
        False,
        1,
    )
    assert (row.blocked_gate_closed, row.blocked_precondition, row.side_effects_committed) == (2, 1, 1)
    assert (row.summaries, row.scenario, row.model, row.trial, row.gateway_policy) == (
        1,
        "blog_brief_approval",
        "fixture:model",
        1,
        "enforce",
    )
    assert list(row.violations) == run.violations
    violations = traces.violations
    assert violations[["run", "kind", "subject"]].values.tolist() == [
        [0, "forbidden", "deploy"],
        [0, "ungrounded", "write.claims[].doc_id"],
        [0, "missing_action", "read"],
    ]
    assert violations["text"].tolist() == run.violations


def test_line_numbers_survive_blank_lines_and_small_chunks(tmp_path):
    lines = lines_of(Run("a", "react"), Run("b", "react", trial=2))
    spaced = []
    for line in lines:
        spaced += [line, "", "  "]
    folder = write_lines(tmp_path / "run", spaced)
    for chunk in (64, 1000, 1 << 20):
        traces = load_traces(folder, chunk_bytes=chunk)
        assert traces.events["line"].tolist() == [1 + 3 * i for i in range(len(lines))]
        assert traces.lines == len(lines) and traces.skipped == []


def test_a_last_line_without_its_newline_is_read(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("a", "react")])
    path = folder / "traces.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    for chunk in (50, 1 << 20):
        traces = load_traces(folder, chunk_bytes=chunk)
        assert traces.runs["run_id"].tolist() == ["a"] and traces.skipped == []


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("not json", "not JSON (truncated or corrupt)"),
        ("[1, 2]", "not a JSON object"),
        ('"text"', "not a JSON object"),
        ('{"run_id": "x"}', "not a trace event (no "),
    ],
)
def test_each_kind_of_bad_line_is_skipped_and_named(tmp_path, bad, reason):
    good = lines_of(Run("a", "react"))
    folder = write_lines(tmp_path / "run", [good[0], bad, *good[1:]])
    traces = load_traces(folder)
    (skipped,) = traces.skipped
    assert (skipped.path, skipped.line) == (str(folder / "traces.jsonl"), 2)
    assert skipped.reason.startswith(reason) and traces.lines == len(good) + 1
    assert traces.runs["run_id"].tolist() == ["a"]


def test_a_line_missing_a_required_field_is_named_with_the_field(tmp_path):
    good = lines_of(Run("a", "react"))
    data = json.loads(good[1])
    del data["kind"]
    traces = load_traces(write_lines(tmp_path / "run", [good[0], json.dumps(data), *good[2:]]))
    assert [(s.line, s.reason) for s in traces.skipped] == [(2, "not a trace event (no kind)")]


@pytest.mark.parametrize(("field", "value"), [("kind", "mystery"), ("decision_maker", "oracle")])
def test_a_value_outside_its_closed_set_is_named(tmp_path, field, value):
    good = lines_of(Run("a", "react"))
    data = json.loads(good[1])
    data[field] = value
    traces = load_traces(write_lines(tmp_path / "run", [good[0], json.dumps(data), *good[2:]]))
    assert [(s.line, s.reason) for s in traces.skipped] == [(2, f"not a trace event (unknown {field})")]


def test_a_field_of_the_wrong_type_is_named_and_only_its_line_skipped(tmp_path):
    good = lines_of(Run("a", "react", calls=[Call(1.0)]), Run("b", "react", trial=2))
    data = json.loads(good[1])
    data["seq"] = "one"
    traces = load_traces(write_lines(tmp_path / "run", [good[0], json.dumps(data), *good[2:]]))
    (skipped,) = traces.skipped
    assert skipped.line == 2 and skipped.reason.startswith("a field has the wrong type or value (")
    assert sorted(traces.runs["run_id"]) == ["a", "b"] and len(traces.events) == len(good) - 1


def test_two_objects_on_one_line_are_named(tmp_path):
    good = lines_of(Run("a", "react"))
    traces = load_traces(write_lines(tmp_path / "run", [good[0], good[1] + " " + good[1], *good[2:]]))
    assert [s.line for s in traces.skipped] == [2]


def test_skipped_lines_are_listed_in_file_then_line_order(tmp_path):
    a = write_lines(tmp_path / "a", ["junk", *lines_of(Run("a", "react")), "junk"])
    b = write_lines(tmp_path / "b", ["junk", *lines_of(Run("b", "react"))])
    traces = load_traces([b, a])
    assert [(Path(s.path).parent.name, s.line) for s in traces.skipped] == [("b", 1), ("a", 1), ("a", 4)]


def test_an_unfinished_resume_leaves_the_run_incomplete_with_a_warning(tmp_path):
    events = Run("a", "react", calls=[Call(1.0)]).events()
    extra = events[1].model_copy(update={"seq": len(events)})
    lines = [e.model_dump_json() for e in [*events, extra]]
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert len(traces.runs) == 0 and traces.incomplete_runs == 1 and not traces.events["complete"].any()
    assert traces.warnings == [
        "1 run(s) have events after their last summary (a resume that did not finish); they are not judged"
    ]


def test_a_resumed_run_counts_its_summaries_and_reads_its_last(tmp_path):
    first = Run("a", "react", status="suspended").events()
    second = Run("a", "react", status="finished", stop_correct=False, resumes=1).events()
    shifted = [e.model_copy(update={"seq": e.seq + len(first)}) for e in second[1:]]
    traces = load_traces(write_lines(tmp_path / "run", [e.model_dump_json() for e in [*first, *shifted]]))
    (row,) = traces.runs.itertuples()
    assert (row.status, row.summaries, row.resumes) == ("finished", 2, 1)
    assert row.line == len(first) + len(shifted)


def test_identical_duplicates_are_read_once_and_different_ones_are_an_error(tmp_path):
    lines = lines_of(Run("a", "react", calls=[Call(1.0), Call(2.0)], actions=[("note", "committed")]))
    traces = load_traces(write_lines(tmp_path / "twice", lines + lines))
    assert len(traces.runs) == 1 and len(traces.events) == len(lines)
    assert traces.warnings[0].startswith(f"{tmp_path / 'twice' / 'traces.jsonl'}: {len(lines)} line(s) repeat")
    assert "(first: line " + str(len(lines) + 1) + " = line 1); read once" in traces.warnings[0]
    changed = [line.replace('"fixture:model"', '"other:model"') for line in lines]
    with pytest.raises(UserInputError) as error:
        load_traces([write_lines(tmp_path / "x", lines), write_lines(tmp_path / "y", changed)])
    message = str(error.value)
    assert message.startswith("run a seq 0 is on two different lines: ")
    assert f"{tmp_path / 'x' / 'traces.jsonl'}:1 and {tmp_path / 'y' / 'traces.jsonl'}:1" in message
    assert f"(and {len(lines) - 3} more)" in message and message.endswith(
        "report them one at a time, or compare them with bench compare"
    )


def test_a_version_this_bench_does_not_read_or_a_mix_of_versions_is_an_error(tmp_path):
    lines = lines_of(Run("a", "react"))
    future = [line.replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":7') for line in lines]
    known = ", ".join(str(v) for v in range(1, SCHEMA_VERSION + 1))
    with pytest.raises(UserInputError, match=rf"schema_version 7 is not one this bench reads \({known}\)"):
        load_traces(write_lines(tmp_path / "f", future))


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda o: o.pop("wall_ms"), "summary outcome lacks wall_ms"),
        (lambda o: o.update(status="paused"), "summary outcome: unknown status"),
        (lambda o: o.update(stop_verdict="great"), "summary outcome: unknown stop_verdict"),
        (lambda o: o.update(stop_correct=False), "summary outcome: stop_correct contradicts stop_verdict"),
    ],
)
def test_an_impossible_summary_is_skipped_and_its_run_left_incomplete(tmp_path, edit, reason):
    lines = lines_of(Run("a", "react"), Run("b", "react", trial=2))
    index = max(i for i, line in enumerate(lines) if '"run_id":"a"' in line)
    data = json.loads(lines[index])
    edit(data["outcome"])
    lines[index] = json.dumps(data)
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert [(s.line, s.reason) for s in traces.skipped] == [(index + 1, reason)]
    assert traces.runs["run_id"].tolist() == ["b"] and traces.incomplete_runs == 1


def test_a_summary_without_an_outcome_is_skipped(tmp_path):
    lines = lines_of(Run("a", "react"))
    data = json.loads(lines[-1])
    data["outcome"] = None
    lines[-1] = json.dumps(data)
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert [s.reason for s in traces.skipped] == ["summary without an outcome"] and len(traces.runs) == 0


def test_outcome_fields_added_later_read_as_zero_and_a_nullable_one_may_be_absent(tmp_path):
    lines = lines_of(Run("a", "react", status="finished"))
    data = json.loads(lines[-1])
    for key in ("resumes", "repeated_side_effects", "suspended_at"):
        data["outcome"].pop(key, None)
    lines[-1] = json.dumps(data)
    traces = load_traces(write_lines(tmp_path / "run", lines))
    (row,) = traces.runs.itertuples()
    assert (row.resumes, row.repeated_side_effects) == (0, 0) and traces.skipped == []


def test_each_runs_policy_comes_from_its_summary_then_its_start_then_its_manifest(tmp_path):
    def edited(run: Run, *, start: str | None, summary: bool) -> list[str]:
        out = []
        for line in run.lines():
            data = json.loads(line)
            if data["kind"] == "summary" and not summary:
                continue  # the run never finished: only its start can say
            if data["kind"] == "run_start":
                data["detail"].pop("gateway_policy")
                if start is not None:
                    data["detail"]["gateway_policy"] = start
            out.append(json.dumps(data))
        return out

    finished = edited(Run("c", "react", gateway_policy="audit"), start="enforce", summary=True)
    started = edited(Run("s", "react"), start="audit", summary=False)
    folder = write_lines(tmp_path / "m", edited(Run("m", "react"), start=None, summary=False))
    (folder / "manifest.json").write_text(json.dumps({"gateway_policy": "audit", "status": "complete"}))
    bare = write_lines(tmp_path / "u", edited(Run("u", "react"), start=None, summary=False))
    traces = load_traces([write_lines(tmp_path / "c", finished + started), folder, bare])
    events = traces.events
    policies = dict(zip(events["run_id"].astype(str), events["gateway_policy"].astype(str), strict=True))
    assert policies == {"c": "audit", "s": "audit", "m": "audit", "u": "unknown"}
    assert traces.runs["gateway_policy"].astype(str).tolist() == ["audit"]
    assert [info.folder for info in traces.run_info] == [str(folder)]


def test_a_broken_manifest_is_a_warning(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("a", "react")])
    (folder / "manifest.json").write_text("{not json")
    traces = load_traces(folder)
    assert len(traces.runs) == 1
    assert traces.warnings == [f"{folder / 'manifest.json'}: unreadable manifest (JSONDecodeError)"]


def test_an_empty_trace_loads_as_empty_tables(tmp_path):
    traces = load_traces(write_lines(tmp_path / "run", []))
    assert len(traces.events) == 0 and len(traces.runs) == 0 and traces.schema_version is None
    assert traces.incomplete_runs == 0 and len(traces.violations) == 0


def test_clean_text_shows_control_characters_and_cuts_long_values():
    assert clean_text("a\x1bb\nc\x85") == "a?b?c?"
    assert clean_text("x" * 10, limit=10) == "x" * 10
    assert clean_text("x" * 11, limit=10) == "x" * 7 + "..."
    assert len(clean_text("y" * 500)) == 200


# ---------------------------------------------------------------- the slow path's reasons, and duplicates' bytes


def edited_line(line: str, **outcome_or_fields) -> str:
    data = json.loads(line)
    for key, value in outcome_or_fields.items():
        if key.startswith("outcome__"):
            data["outcome"][key.removeprefix("outcome__")] = value
        else:
            data[key] = value
    return json.dumps(data)


def test_a_long_type_error_is_cut_at_eighty_characters_and_names_the_file(tmp_path):
    lines = lines_of(Run("a", "react"), Run("b", "react", trial=2))
    lines[1] = edited_line(lines[1], outcome__unauthorized_side_effects="many")
    folder = write_lines(tmp_path / "run", lines)
    (skipped,) = load_traces(folder).skipped
    words = "Column(/outcome/unauthorized_side_effects) changed from number to string in row 0"
    assert skipped.path == str(folder / "traces.jsonl")
    assert skipped.reason == f"a field has the wrong type or value ({words[:77]}...)"


def test_json_that_only_python_reads_is_named_without_the_parsers_prefix(tmp_path):
    lines = lines_of(Run("a", "react", calls=[Call(1.0)]))
    lines[1] = lines[1][:-1] + ',"seq":5}'  # a key twice: Python keeps the last, pyarrow refuses the line
    (skipped,) = load_traces(write_lines(tmp_path / "run", lines)).skipped
    assert (skipped.line, skipped.reason) == (
        2,
        "a field has the wrong type or value (Column(/seq) was specified twice in row 0)",
    )


def test_duplicates_that_differ_only_in_trailing_spaces_are_different_lines(tmp_path):
    lines = lines_of(Run("a", "react"))
    a = write_lines(tmp_path / "a", lines)
    b = write_lines(tmp_path / "b", [lines[0] + "  ", *lines[1:]])
    with pytest.raises(UserInputError, match="is on two different lines"):
        load_traces([a, b])


def test_a_duplicate_that_is_the_last_line_without_its_newline_is_still_identical(tmp_path):
    lines = lines_of(Run("a", "react"))
    a = write_lines(tmp_path / "a", lines)
    b = write_lines(tmp_path / "b", lines)
    (b / "traces.jsonl").write_bytes((b / "traces.jsonl").read_bytes().rstrip(b"\n"))
    traces = load_traces([a, b])
    assert len(traces.runs) == 1 and "read once" in traces.warnings[0]


def test_a_run_whose_only_line_is_its_summary_is_complete(tmp_path):
    summary = Run("a", "react").events()[-1].model_copy(update={"seq": 0})
    traces = load_traces(write_lines(tmp_path / "run", [summary.model_dump_json()]))
    assert traces.runs["run_id"].astype(str).tolist() == ["a"] and traces.incomplete_runs == 0


def test_each_row_names_its_file_and_folder(tmp_path):
    a = write_runs(tmp_path / "a", [Run("a", "react")])
    b = write_runs(tmp_path / "b", [Run("b", "react")])
    traces = load_traces([a, b])
    files = {str(a / "traces.jsonl"), str(b / "traces.jsonl")}
    assert set(traces.events["file"].astype(str)) == files and set(traces.runs["file"].astype(str)) == files
    by_run = dict(zip(traces.runs["run_id"].astype(str), traces.runs["source"].astype(str), strict=True))
    assert by_run == {"a": str(a), "b": str(b)}


def test_schema_1_outcomes_leave_the_counts_they_did_not_have_blank(tmp_path):
    lines = []
    for line in lines_of(Run("a", "react", actions=[("x", "blocked")])):
        data = json.loads(line)
        data["schema_version"] = 1
        if data.get("outcome"):
            for key in ("stop_verdict", "unauthorized_side_effects", "blocked_by", "resumes", "repeated_side_effects"):
                data["outcome"].pop(key)
        lines.append(json.dumps(data))
    (row,) = load_traces(write_lines(tmp_path / "run", lines)).runs.itertuples()
    assert row.blocked_gate_closed != row.blocked_gate_closed  # NaN: unknown, never 0
    assert row.unauthorized_side_effects != row.unauthorized_side_effects and row.resumes == 0


def test_a_file_named_twice_does_not_stop_the_files_after_it(tmp_path):
    a = write_runs(tmp_path / "a", [Run("a", "react")])
    b = write_runs(tmp_path / "b", [Run("b", "react")])
    assert sorted(load_traces([a, a, b]).runs["run_id"].astype(str)) == ["a", "b"]


def test_skipped_lines_sort_by_file_before_line(tmp_path):
    b = write_lines(tmp_path / "b", [*lines_of(Run("b", "react")), "junk"])  # line 3
    a = write_lines(tmp_path / "a", ["junk", *lines_of(Run("a", "react"))])  # line 1
    traces = load_traces([b, a])
    assert [(Path(s.path).parent.name, s.line) for s in traces.skipped] == [("b", 3), ("a", 1)]


def test_a_line_missing_two_required_fields_is_named_by_the_first_in_schema_order(tmp_path):
    from reports.trace_columns import REQUIRED_EVENT_FIELDS

    good = lines_of(Run("a", "react", calls=[Call(1.0)]))
    data = json.loads(good[1])
    del data["kind"], data["run_id"]
    traces = load_traces(write_lines(tmp_path / "run", [good[0], json.dumps(data), *good[2:]]))
    first = next(name for name in REQUIRED_EVENT_FIELDS if name in ("kind", "run_id"))
    assert [s.reason for s in traces.skipped] == [f"not a trace event (no {first})"]


def test_a_conflict_on_a_long_run_id_names_it_cut_and_lists_few_places_in_full(tmp_path):
    long_id = "r" * 70
    lines = lines_of(Run(long_id, "react", calls=[Call(1.0)]))
    changed = [line.replace('"fixture:model"', '"other:model"') for line in lines]
    x, y = write_lines(tmp_path / "x", lines), write_lines(tmp_path / "y", changed)
    with pytest.raises(UserInputError) as error:
        load_traces([x, y])
    message = str(error.value)
    fx, fy = x / "traces.jsonl", y / "traces.jsonl"
    assert message == (
        f"run {'r' * 57}... seq 0 is on two different lines: {fx}:1 and {fy}:1; {fx}:2 and {fy}:2; "
        f"{fx}:3 and {fy}:3; a run id is its work unit's (seed, scenario, mode, trial, model, policy, approver), "
        "so two folders that ran the same matrix hold the same ids: report them one at a time, or compare them "
        "with bench compare"
    )


def test_duplicate_warnings_are_listed_by_copy_then_original(tmp_path):
    a = write_lines(tmp_path / "a", lines_of(Run("r1", "react"), Run("r2", "react", trial=2)))
    b = write_lines(tmp_path / "b", lines_of(Run("r2", "react", trial=2)))
    c = write_lines(tmp_path / "c", lines_of(Run("r1", "react")))
    traces = load_traces([a, b, c])
    assert [w.split(":")[0] for w in traces.warnings] == [str(b / "traces.jsonl"), str(c / "traces.jsonl")]


def test_lines_without_a_schema_version_read_as_the_current_one(tmp_path):
    lines = [
        json.dumps({k: v for k, v in json.loads(line).items() if k != "schema_version"})
        for line in lines_of(Run("a", "react"))
    ]
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert traces.schema_version == SCHEMA_VERSION and traces.skipped == [] and len(traces.runs) == 1


def test_a_mix_of_versions_names_each_file_with_its_version(tmp_path):
    new = write_lines(tmp_path / "new", lines_of(Run("a", "react")))
    old_lines = []
    for line in lines_of(Run("b", "react")):
        data = json.loads(line)
        data["schema_version"] = 1
        old_lines.append(json.dumps(data))
    old = write_lines(tmp_path / "old", old_lines)
    with pytest.raises(UserInputError) as error:
        load_traces([new, old])
    assert str(error.value) == (
        f"mixed schema_version: {new / 'traces.jsonl'} (schema {SCHEMA_VERSION}), {old / 'traces.jsonl'} (schema 1); "
        "report each version on its own"
    )


def test_bytes_that_are_not_utf8_inside_a_string_skip_their_line(tmp_path):
    lines = lines_of(Run("a", "react", calls=[Call(1.0, action="note")]), Run("b", "react", trial=2))
    folder = write_lines(tmp_path / "run", lines)
    path = folder / "traces.jsonl"
    path.write_bytes(path.read_bytes().replace(b'"action":"note"', b'"action":"no\xfft"'))
    traces = load_traces(folder)
    assert [(s.line, s.reason) for s in traces.skipped] == [(2, "not JSON (truncated or corrupt)")]
    assert sorted(traces.runs["run_id"].astype(str)) == ["a", "b"]


def test_a_corrupt_last_line_without_its_newline_names_its_file(tmp_path):
    folder = write_lines(tmp_path / "run", lines_of(Run("a", "react")))
    path = folder / "traces.jsonl"
    path.write_bytes(path.read_bytes() + b'{"cut')
    (skipped,) = load_traces(folder).skipped
    assert (skipped.path, skipped.line) == (str(path), 3)


def test_a_lone_carriage_return_with_a_bad_line_names_its_file(tmp_path):
    lines = lines_of(Run("a", "react"))
    folder = write_lines(tmp_path / "run", [lines[0] + "\r", "junk", lines[1]])
    (skipped,) = load_traces(folder).skipped
    assert (skipped.path, skipped.line) == (str(folder / "traces.jsonl"), 2)


def test_line_numbers_count_leading_blank_lines_in_every_chunk(tmp_path):
    lines = lines_of(Run("a", "react", calls=[Call(1.0)]), Run("b", "react", trial=2))
    spaced = []
    for line in lines:
        spaced += ["", "", line]
    folder = write_lines(tmp_path / "run", spaced)
    for chunk in (1, 7, 500, 1 << 20):
        traces = load_traces(folder, chunk_bytes=chunk)
        assert traces.events["line"].tolist() == [3 * (i + 1) for i in range(len(lines))], chunk


def test_the_columns_asked_for_are_the_only_event_columns_and_hold_what_a_full_load_holds(tmp_path):
    runs = [
        Run("a", "react", calls=[Call(12.5, 7, 3, "note", retries=("timeout",))], violations=["forbidden:deploy"]),
        Run("b", "workflow", calls=[Call(3.0, action="note")], status="finished", gateway_policy="audit"),
    ]
    a = write_runs(tmp_path / "a", runs[:1])
    b = write_runs(tmp_path / "b", runs[1:])
    asked = ["kind", "run_id", "latency_ms", "gateway_policy", "source", "error_kind"]
    full, some = load_traces([a, b]), load_traces([a, b], columns=asked)
    kept = ["source", "run_id", "gateway_policy", "kind", "latency_ms", "error_kind", "complete"]
    assert list(some.events.columns) == kept  # in the full frame's order, "complete" always
    pd.testing.assert_frame_equal(some.events, full.events[kept])
    pd.testing.assert_frame_equal(some.runs, full.runs)
    pd.testing.assert_frame_equal(some.violations, full.violations)


def test_identical_duplicates_are_dropped_from_the_kept_columns_and_the_runs_alike(tmp_path):
    lines = lines_of(Run("a", "react", calls=[Call(1.0, action="note")]), Run("b", "react", trial=2))
    folder = write_lines(tmp_path / "run", lines)
    copy = write_lines(tmp_path / "copy", lines)
    traces = load_traces([folder, copy], columns=["run_id", "seq", "latency_ms"], chunk_bytes=200)
    once = load_traces(folder)
    for name in ("seq", "latency_ms"):
        pd.testing.assert_series_equal(traces.events[name], once.events[name])
    assert traces.runs["run_id"].tolist() == ["a", "b"] and traces.events["complete"].all()


def test_an_event_column_that_does_not_exist_is_refused(tmp_path):
    folder = write_runs(tmp_path / "run", [Run("a", "react")])
    with pytest.raises(ValueError, match=r"unknown event columns \['latency'\]"):
        load_traces(folder, columns=["latency"])
