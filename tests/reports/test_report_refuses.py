"""``bench report`` refuses to guess: strict outcomes, duplicates, mixed versions, unfinished runs, hostile bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness.records.trace import SCHEMA_VERSION
from reports import load_traces
from reports.metrics import compute
from reports.report import build_report
from tests.helpers.bench import bench_main
from tests.helpers.bench import bench_process as bench
from tests.helpers.report_fixtures import Call, Run, write_lines, write_runs


def runs_of(n: int, prefix: str = "r", **fields) -> list[Run]:
    return [
        Run(f"{prefix}{i}", "react", trial=i, calls=[Call(10.0, 5, 1, "create_brief")], **fields)
        for i in range(1, n + 1)
    ]


def lines_of(runs: list[Run]) -> list[str]:
    return [line for run in runs for line in run.lines()]


def without(line: str, *path: str) -> str:
    """A trace line with one (possibly nested) key removed."""
    data = json.loads(line)
    target = data
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return json.dumps(data)


def edited(line: str, path: tuple[str, ...], value) -> str:
    data = json.loads(line)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(data)


def summary_index(lines: list[str], run_id: str) -> int:
    return next(i for i, line in enumerate(lines) if f'"run_id":"{run_id}"' in line and '"kind":"summary"' in line)


# ---------------------------------------------------------------- strict outcomes


@pytest.mark.parametrize(
    "field",
    [
        "stop_correct",
        "premature_side_effects",
        "wall_ms",
        "usage",
        "stop_verdict",
        "unauthorized_side_effects",
        "blocked_by",
        "violations",
        "gateway_policy",
    ],
)
def test_a_summary_lacking_a_required_field_makes_its_run_incomplete_and_names_the_line(tmp_path, field):
    lines = lines_of(runs_of(3))
    index = summary_index(lines, "r2")
    lines[index] = without(lines[index], "outcome", field)
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert sorted(traces.runs["run_id"].astype(str)) == ["r1", "r3"]  # never read as false, 0 or absent
    assert traces.incomplete_runs == 1
    [skipped] = traces.skipped
    assert skipped.line == index + 1 and f"lacks {field}" in skipped.reason
    react = compute(traces).by_key()[("react", "enforce")]
    assert (react.runs, react.incomplete, react.judged) == (2, 1, 2)


def test_fields_added_later_with_a_default_may_be_absent(tmp_path):
    lines = lines_of(runs_of(2))
    index = summary_index(lines, "r1")
    lines[index] = without(without(lines[index], "outcome", "resumes"), "outcome", "repeated_side_effects")
    lines[index] = without(lines[index], "outcome", "usage", "cached_tokens")
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert traces.skipped_count == 0 and len(traces.runs) == 2
    assert traces.runs["resumes"].tolist() == [0, 0] and traces.runs["cached_tokens"].tolist() == [0, 0]


@pytest.mark.parametrize(
    "path,value,reason",
    [
        (("outcome", "stop_verdict"), "maybe", "unknown stop_verdict"),
        (("outcome", "status"), "paused", "unknown status"),
        (("outcome", "stop_verdict"), "early", "stop_correct contradicts stop_verdict"),
        (("outcome",), None, "summary without an outcome"),
    ],
)
def test_a_summary_with_an_impossible_outcome_is_skipped_and_named(tmp_path, path, value, reason):
    lines = lines_of(runs_of(2))
    index = summary_index(lines, "r1")
    lines[index] = edited(lines[index], path, value)
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert [s.line for s in traces.skipped] == [index + 1] and reason in traces.skipped[0].reason
    assert traces.runs["run_id"].astype(str).tolist() == ["r2"]


def schema_1(line: str) -> str:
    """A line as schema 1 wrote it: no verdict, no unauthorized count, no blocked reasons, no resumes."""
    data = json.loads(line)
    data["schema_version"] = 1
    if data.get("outcome"):
        for key in ("stop_verdict", "unauthorized_side_effects", "blocked_by", "resumes", "repeated_side_effects"):
            data["outcome"].pop(key)
    return json.dumps(data)


@pytest.mark.slow
def test_schema_1_traces_read_with_the_fields_they_had_and_blanks_for_the_rest(tmp_path):
    runs = runs_of(4, premature=1, stop_correct=False, status="finished")
    folder = write_lines(tmp_path / "old", [schema_1(line) for line in lines_of(runs)])
    traces = load_traces(folder)
    assert traces.schema_version == 1 and traces.skipped_count == 0 and len(traces.runs) == 4
    react = compute(traces).by_key()[("react", "enforce")]
    assert react.premature_side_effects == 4
    assert react.unauthorized_side_effects is None and react.blocked_by is None  # unknown, never 0
    assert react.verdicts == {} and react.unverdicted == 4
    result = build_report([folder], tmp_path / "out")
    assert any("trace schema 1" in line for line in result.header)


# ---------------------------------------------------------------- duplicates and versions


def test_a_run_appended_twice_is_read_once_with_a_warning(tmp_path):
    lines = lines_of(runs_of(3))
    folder = write_lines(tmp_path / "run", lines + lines[: len(lines) // 3])  # the first run appended again
    traces = load_traces(folder)
    assert len(traces.runs) == 3 and len(traces.events) == len(lines)
    [warning] = traces.warnings
    assert "repeat identical lines" in warning and f"line {len(lines) + 1} = line 1" in warning


@pytest.mark.slow
def test_a_folder_reported_with_its_copy_counts_once(tmp_path, monkeypatch, capsys):
    folder = write_runs(tmp_path / "a", runs_of(4))
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "traces.jsonl").write_bytes((folder / "traces.jsonl").read_bytes())
    code, out, err = bench_main(monkeypatch, capsys, "report", str(folder), str(copy), "--out", str(tmp_path / "r"))
    assert code == 0, err
    assert f"{copy / 'traces.jsonl'}:" in err and "read once" in err
    row = next(line for line in out.splitlines() if line.startswith("react"))
    assert row.split()[2] == "4"  # n: four judged runs, not eight


def test_one_event_on_two_different_lines_is_an_error_naming_both_places(tmp_path, monkeypatch, capsys):
    a = write_runs(tmp_path / "a", runs_of(2))
    changed = [line.replace('"wall_ms":10.0', '"wall_ms":11.0') for line in lines_of(runs_of(1))]
    b = write_lines(tmp_path / "b", changed)
    code, _out, err = bench_main(monkeypatch, capsys, "report", str(a), str(b))
    assert code == 2 and len(err.strip().splitlines()) == 1
    summary = summary_index(lines_of(runs_of(2)), "r1") + 1
    assert f"{a / 'traces.jsonl'}:{summary} and {b / 'traces.jsonl'}:{summary}" in err
    assert "run r1 seq" in err


def test_mixed_schema_versions_are_an_error_naming_the_files(tmp_path, monkeypatch, capsys):
    new = write_runs(tmp_path / "new", runs_of(2))
    old = write_lines(tmp_path / "old", [schema_1(line) for line in lines_of(runs_of(2, prefix="o"))])
    code, _, err = bench_main(monkeypatch, capsys, "report", str(new), str(old))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "mixed schema_version" in err and str(new / "traces.jsonl") in err and str(old / "traces.jsonl") in err
    one_file = write_lines(tmp_path / "both", lines_of(runs_of(1)) + [schema_1(x) for x in lines_of(runs_of(1, "o"))])
    with pytest.raises(UserInputError, match=rf"mixed schema_version.*schema 1\+{SCHEMA_VERSION}"):
        load_traces(one_file)


def test_a_schema_version_from_the_future_is_refused(tmp_path):
    folder = write_lines(tmp_path / "run", [edited(line, ("schema_version",), 9) for line in lines_of(runs_of(1))])
    with pytest.raises(UserInputError, match="schema_version 9 is not one this bench reads"):
        load_traces(folder)


# ---------------------------------------------------------------- unfinished runs and resumes


@pytest.mark.slow
@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_an_unfinished_run_folder_says_so_in_the_header(tmp_path, status, monkeypatch, capsys):
    folder = write_runs(tmp_path / "run", runs_of(2))
    (folder / "manifest.json").write_text(json.dumps({"status": status, "model": "fixture:model", "trials": 5}))
    code, out, err = bench_main(monkeypatch, capsys, "report", str(folder), "--out", str(tmp_path / "r"))
    assert code == 0, err
    assert f"manifest status '{status}'" in out.splitlines()[0]
    assert f"manifest status '{status}'" in (tmp_path / "r" / "report.md").read_text()
    assert f"manifest status &#x27;{status}&#x27;" in (tmp_path / "r" / "report.html").read_text()


@pytest.mark.slow
def test_a_broken_manifest_is_a_warning_not_a_crash(tmp_path):
    folder = write_runs(tmp_path / "run", runs_of(1))
    (folder / "manifest.json").write_bytes(b"[" * 20000 + b"\xff")
    result = build_report([folder], tmp_path / "r")
    assert any("unreadable manifest" in w for w in result.warnings)


def test_the_last_summary_of_a_resumed_run_is_its_outcome(tmp_path):
    first = Run("x", "react_guarded", status="suspended", stop_correct=True).lines()
    resumed = Run("x", "react_guarded", status="finished", stop_correct=False, resumes=1).lines()
    # The resumed part continues the run's seq numbers after a human decision.
    offset = len(first)
    later = [edited(line, ("seq",), json.loads(line)["seq"] + offset + 1) for line in resumed[1:]]
    human = edited(edited(resumed[0], ("seq",), offset), ("kind",), "human")
    traces = load_traces(write_lines(tmp_path / "run", [*first, human, *later]))
    [run] = traces.runs.itertuples()
    assert (run.status, run.resumes, run.summaries) == ("finished", 1, 2)
    group = compute(traces).by_key()[("react_guarded", "enforce")]
    assert (group.runs, group.resumed_runs, group.stop.successes) == (1, 1, 0)
    cut = load_traces(write_lines(tmp_path / "cut", [*first, human, *later[:-1]]))  # the resume never ended
    assert cut.runs.empty and cut.incomplete_runs == 1
    assert any("events after their last summary" in w for w in cut.warnings)


# ---------------------------------------------------------------- no byte can crash it


@pytest.mark.slow
def test_a_non_utf8_byte_in_action_is_skipped_and_named(tmp_path, monkeypatch, capsys):
    lines = lines_of(runs_of(3))
    index = next(i for i, line in enumerate(lines) if '"action":"create_brief"' in line)
    folder = tmp_path / "run"
    folder.mkdir()
    raw = [line.encode() for line in lines]
    raw[index] = raw[index].replace(b'"action":"create_brief"', b'"action":"create\xff\xfe_brief"')
    (folder / "traces.jsonl").write_bytes(b"\n".join(raw) + b"\n")
    code, _out, err = bench_main(monkeypatch, capsys, "report", str(folder), "--out", str(tmp_path / "r"))
    assert code == 0, err
    assert f"line {index + 1}: skipped" in err


@pytest.mark.slow
@pytest.mark.parametrize("where", ["action", "args", "outcome"])
def test_a_line_nested_ten_thousand_deep_is_skipped_or_read_never_a_crash(tmp_path, where):
    lines = lines_of(runs_of(2))
    deep = "[" * 10_000 + "]" * 10_000
    index = summary_index(lines, "r1") if where == "outcome" else 1
    target = lines[index]
    lines[index] = (
        target[:-1] + f',"{where}x":{deep}}}'
        if where == "args"
        else target.replace(f'"{where}":', f'"{where}":{deep},"_{where}":', 1)
    )
    traces = load_traces(write_lines(tmp_path / "run", lines))
    if where == "args":  # a field the report never reads: the parser skips it
        assert traces.skipped_count == 0
    else:
        assert [s.line for s in traces.skipped] == [index + 1]
    build_report([tmp_path / "run"], tmp_path / "out", formats=["md"])


@pytest.mark.parametrize("value", ["1e400", "99999999999999999999999999", "1" * 5000, "-1e309", "NaN"])
def test_huge_numbers_skip_their_line(tmp_path, value):
    lines = lines_of(runs_of(2))
    lines[1] = lines[1].replace('"trial":1', f'"trial":{value}')
    traces = load_traces(write_lines(tmp_path / "run", lines))
    assert [s.line for s in traces.skipped] == [2]


@pytest.mark.slow
def test_hostile_text_in_names_stays_one_safe_line(tmp_path):
    runs = runs_of(1)
    runs[0].mode = "re\x1b[2Jact\nmode|x"
    folder = write_runs(tmp_path / "run", runs)
    result = build_report([folder], tmp_path / "out")
    shown = "\n".join(" ".join(map(str, row)) for row in result.main.display_rows())
    assert "\x1b" not in shown and "\n" not in shown


def test_random_bytes_never_crash_the_report(tmp_path):
    rng = random.Random(7)
    good = lines_of(runs_of(5))
    pieces = []
    for line in good:
        data = bytearray(line.encode())
        if rng.random() < 0.5:  # flip, cut or insert bytes in half the lines
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(data))
                data[at : at + rng.randint(0, 3)] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3)))
        pieces.append(bytes(data))
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "traces.jsonl").write_bytes(b"\n".join(pieces) + b"\n" + bytes(rng.randrange(256) for _ in range(5000)))
    try:
        result = build_report([folder], tmp_path / "out")
    except UserInputError as exc:  # a one-line refusal is fine; a traceback is not
        assert "\n" not in str(exc)
    else:
        assert result.lines >= len(good)


def test_a_file_without_any_newline_is_read_in_linear_time(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "traces.jsonl").write_bytes(b"x" * (3 << 20))
    traces = load_traces(folder, chunk_bytes=1 << 16)  # 48 chunks of one line
    assert traces.lines == 1 and traces.skipped_count == 1


# ---------------------------------------------------------------- policy and run keys


@pytest.mark.slow
def test_enforce_and_audit_never_pool(tmp_path):
    enforce = write_runs(tmp_path / "enforce", runs_of(3))
    audit = write_runs(
        tmp_path / "audit",
        runs_of(3, prefix="a", gateway_policy="audit", premature=1, stop_correct=False, status="finished"),
    )
    by_mode = compute(load_traces([enforce, audit])).by_key()
    assert by_mode[("react", "enforce")].stop.successes == 3 and by_mode[("react", "audit")].stop.successes == 0
    result = bench("report", str(enforce), str(audit), "--by", "policy", "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.split()[:1] in (["enforce"], ["audit"])]
    assert [r[:2] for r in rows] == [["enforce", "react"], ["audit", "react"]]
    by_run = bench("report", str(enforce), str(audit), "--by", "run", "--out", str(tmp_path / "r2"))
    assert by_run.returncode == 0, by_run.stderr
    assert by_run.stdout.splitlines()[0].split()[:3] == ["run", "mode", "policy"]
    assert str(audit) in by_run.stdout and str(enforce) in by_run.stdout


def test_recorded_enforce_and_audit_show_in_separate_rows():
    from harness.models import RECORDED_MODEL

    traces = load_traces([RECORDED_MODEL, RECORDED_MODEL.with_name("smollm2-135m-audit")])
    recorded = {
        policy: json.loads((folder / "manifest.json").read_text())  # each recording's own matrix
        for policy, folder in (("enforce", RECORDED_MODEL), ("audit", RECORDED_MODEL.with_name("smollm2-135m-audit")))
    }
    keys = [g.key for g in compute(traces).groups]
    assert ("react", "enforce") in keys and ("react", "audit") in keys
    assert len(keys) == 2 * len(recorded["enforce"]["modes"])
    for group in compute(traces).groups:
        matrix = recorded[group.key[1]]
        assert group.runs == matrix["trials"] * len(matrix["scenarios"]), group.key


def test_a_run_without_a_declared_policy_takes_its_folders_manifest(tmp_path):
    lines = lines_of(runs_of(1))
    lines = [
        without(line, "detail", "gateway_policy") if '"kind":"run_start"' in line else line for line in lines[:-1]
    ]  # no summary either: the run is incomplete
    folder = write_lines(tmp_path / "run", lines)
    (folder / "manifest.json").write_text(json.dumps({"gateway_policy": "audit", "status": "interrupted"}))
    traces = load_traces(folder)
    assert set(traces.events["gateway_policy"].astype(str)) == {"audit"}
    assert compute(traces).by_key()[("react", "audit")].incomplete == 1


def test_trace_path_errors_are_one_line(tmp_path):
    with pytest.raises(UserInputError, match=r"no traces\.jsonl"):
        load_traces(tmp_path / "missing")
    unreadable = Path("/proc/self/mem")
    if unreadable.exists():
        with pytest.raises(UserInputError, match="cannot read"):
            load_traces(unreadable)


@pytest.mark.parametrize("separator", [b"\r", b"\x0b", b"\r\n", b"\n\n\r\r\n"])
def test_odd_line_endings_are_read_or_named_never_a_crash(tmp_path, separator):
    lines = lines_of(runs_of(2))
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "traces.jsonl").write_bytes(separator.join(line.encode() for line in lines) + b"\n")
    traces = load_traces(folder)
    if b"\n" in separator:
        assert len(traces.runs) == 2 and traces.skipped_count == 0
    else:  # one line holding every event: not one JSON object, named
        assert [s.line for s in traces.skipped] == [1] and traces.events.empty


def test_a_deep_but_readable_line_is_kept_even_next_to_a_bad_one(tmp_path):
    lines = lines_of(runs_of(2))
    lines[1] = lines[1][:-1] + ',"args":' + "[" * 10_000 + "]" * 10_000 + "}"  # a field the report never reads
    folder = write_lines(tmp_path / "run", [*lines[:2], "garbage", *lines[2:]])
    traces = load_traces(folder)  # the chunk goes line by line; the deep line must survive that path too
    assert [s.line for s in traces.skipped] == [3] and len(traces.events) == len(lines)


@pytest.mark.slow
def test_a_run_resumed_with_bench_resume_reports_its_last_summary(tmp_path):
    out = tmp_path / "run"
    first = bench(
        "run",
        "--mode",
        "react_guardrails",
        "--scenario",
        "blog_brief_approval",
        "--model",
        "scripted:reference",
        "--out",
        str(out),
    )
    assert first.returncode == 0, first.stderr
    [summary] = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines() if '"summary"' in line]
    assert summary["outcome"]["status"] == "suspended"
    resumed = bench("resume", str(out), "--run", summary["run_id"], "--approve")
    assert resumed.returncode == 0, resumed.stderr
    traces = load_traces(out)
    [run] = traces.runs.itertuples()
    assert (run.summaries, run.status, run.resumes) == (2, "finished", 1)
    group = compute(traces).by_key()[("react_guardrails", "enforce")]
    assert (group.runs, group.resumed_runs, group.incomplete) == (1, 1, 0)
