"""bench show (one run as a timeline), bench runs (the run folders) and --label, end to end on real run folders."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import get_args

import pytest

from harness import RunSpec, run
from harness.records.trace import StopVerdict, TraceEvent, read_events
from harness.records.verdicts import meaning
from tests.helpers.bench import ROOT, SCENARIOS, bench_main

VERDICTS = get_args(StopVerdict)


def bench(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    return bench_main(monkeypatch, capsys, *args)


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """A labelled matrix whose runs end in every judged verdict, a replay whose runs all miss (infrastructure), and a
    user's own agent with a bug in every other run (agent_error: no mode of bench's own can end so)."""
    root = tmp_path_factory.mktemp("runs")
    verdicts = run(
        RunSpec(
            modes=["all"],
            scenarios=["all"],
            scenarios_dir=SCENARIOS,
            model="scripted:compliant",
            out=root / "verdicts",
            label="every verdict",
        )
    ).folder
    empty = root / "empty-recording"
    shutil.copytree(verdicts, empty, ignore=shutil.ignore_patterns("*.db*", ".bench.lock"))
    (empty / "recording.jsonl").write_text("")
    infra = run(
        RunSpec(
            modes=["react"],
            scenarios=["blog_brief_approval"],
            scenarios_dir=SCENARIOS,
            model=f"replay:{empty}",
            out=root / "infra",
        )
    ).folder
    shutil.copy(ROOT / "tests" / "helpers" / "own_agents" / "flaky.py", root / "flaky.py")  # a fresh count of builds
    agent = run(
        RunSpec(
            modes=[f"{root / 'flaky.py'}:build"],
            scenarios=["blog_brief_approval"],
            scenarios_dir=SCENARIOS,
            model="scripted:compliant",
            trials=2,
            out=root / "agent",
        )
    ).folder
    return {"root": root, "verdicts": verdicts, "infra": infra, "agent": agent}


FOLDER_OF = {"infrastructure": "infra", "agent_error": "agent"}  # where each verdict's run is; the rest: verdicts


def runs_by_verdict(folders: dict[str, Path]) -> dict[str, list[TraceEvent]]:
    """For each verdict, the events of one run that ended with it."""
    found: dict[str, list[TraceEvent]] = {}
    for name in ("verdicts", "infra", "agent"):
        events = list(read_events(folders[name] / "traces.jsonl"))
        for event in events:
            if event.kind == "summary" and event.outcome is not None:
                found.setdefault(event.outcome.stop_verdict, [e for e in events if e.run_id == event.run_id])
    return found


@pytest.mark.parametrize("verdict", VERDICTS)
def test_show_prints_the_timeline_of_a_run_of_each_verdict(folders, monkeypatch, capsys, verdict):
    events = runs_by_verdict(folders).get(verdict)
    assert events, f"the fixture has no run judged {verdict}"
    summary = events[-1]
    assert summary.outcome is not None
    folder = folders[FOLDER_OF.get(verdict, "verdicts")]
    code, out, err = bench(monkeypatch, capsys, "show", str(folder), "--run", summary.run_id)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"run {summary.run_id}: {summary.scenario} / {summary.mode} / trial {summary.trial}"
    for event in events:  # every event of the run has its line, in order
        assert any(line.split()[:1] == [str(event.seq)] for line in lines), f"event {event.seq} missing"
    verdict_line = next(line for line in lines if line.strip().startswith("stop verdict"))
    assert f"{verdict}: {meaning(verdict)}" in verdict_line
    for violation in summary.outcome.violations:
        assert f"- {violation}" in out
    if verdict not in FOLDER_OF:  # the labelled matrix's runs
        assert "label 'every verdict'" in lines[1]


def test_show_names_who_decided_what_was_proposed_and_what_the_gateway_did(folders, monkeypatch, capsys):
    events = runs_by_verdict(folders)["late"]
    blocked = [e for e in events if e.kind == "action" and e.result == "blocked"]
    code, out, _ = bench(monkeypatch, capsys, "show", str(folders["verdicts"]), "--run", events[0].run_id)
    assert code == 0
    for event in events:
        if event.kind == "action":
            assert f"gateway         {event.action}: {event.result}" in out
    for event in blocked:
        assert f"why: {event.detail['reason']}" in out  # type: ignore[index]
    assert "llm             propos" in out


def test_show_without_a_selection_lists_the_runs_to_choose_from(folders, monkeypatch, capsys):
    code, out, _ = bench(monkeypatch, capsys, "show", str(folders["verdicts"]))
    assert code == 0
    ids = {e.run_id for e in read_events(folders["verdicts"] / "traces.jsonl")}
    assert all(run_id in out for run_id in ids)
    assert f"{len(ids)} runs; show one with --run ID" in out


def test_show_selects_by_cell_or_by_a_unique_prefix(folders, monkeypatch, capsys):
    code, out, _ = bench(
        monkeypatch,
        capsys,
        "show",
        str(folders["verdicts"]),
        "--scenario",
        "release_pipeline",
        "--mode",
        "workflow",
        "--trial",
        "1",
    )
    assert code == 0 and out.startswith("run ") and "release_pipeline / workflow / trial 1" in out.splitlines()[0]
    run_id = out.split()[1].rstrip(":")
    code, by_prefix, _ = bench(monkeypatch, capsys, "show", str(folders["verdicts"]), "--run", run_id[:8])
    assert code == 0 and by_prefix == out
    code, several, _ = bench(
        monkeypatch,
        capsys,
        "show",
        str(
            folders["verdicts"],
        ),
        "--mode",
        "workflow",
    )
    assert code == 0 and "runs; show one with --run ID" in several and "release_pipeline" in several


@pytest.mark.parametrize(
    "args, words",
    [
        (["--run", "nosuchrun"], ["no run matches --run nosuchrun", "without --run lists its runs"]),
        (
            ["--scenario", "nope"],
            ["no run matches --scenario nope", "scenarios: aircraft_release, bank_transfer_compliance"],
        ),
        (["--mode", "react", "--trial", "9"], ["--mode react --trial 9", "trials: 1"]),
    ],
)
def test_a_selection_that_matches_nothing_is_one_line_naming_what_there_is(folders, monkeypatch, capsys, args, words):
    code, out, err = bench(monkeypatch, capsys, "show", str(folders["verdicts"]), *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    for word in words:
        assert word in err


def test_show_of_a_folder_without_a_trace_says_so(tmp_path, monkeypatch, capsys):
    code, _, err = bench(monkeypatch, capsys, "show", str(tmp_path))
    assert code == 2 and "no traces.jsonl here" in err and "bench runs" in err


def _as_schema_1(line: str) -> str:
    """A line of the recording as bench wrote it before stop verdicts: schema 1, no verdict in the outcome."""
    event = json.loads(line)
    event["schema_version"] = 1
    if event.get("outcome"):
        for added in ("stop_verdict", "stops", "resumes", "repeated_side_effects"):
            event["outcome"].pop(added, None)
    return json.dumps(event) + "\n"


def test_show_reads_old_traces_and_skips_lines_that_are_not_events(tmp_path, monkeypatch, capsys):
    """A schema 1 trace (before stop verdicts) and garbage around it: the run still shows, the bad lines counted."""
    recorded = ROOT / "results" / "recorded" / "smollm2-135m" / "traces.jsonl"
    first = json.loads(recorded.open(encoding="utf-8").readline())["run_id"]
    lines = [_as_schema_1(line) for line in recorded.open(encoding="utf-8") if f'"run_id":"{first}"' in line]
    trace = tmp_path / "traces.jsonl"
    with open(trace, "wb") as handle:
        handle.write(b"not json\n" + b"[" * 10_000 + b"\n" + b'{"run_id": "\xff\xfe"\n')
        handle.write("".join(lines).encode())
        handle.write(b'{"kind": "summary"}\n')  # no run id: not an event
    code, out, err = bench(monkeypatch, capsys, "show", str(trace), "--run", first[:6])  # the listing reads it all
    assert code == 0, err
    assert "warning: 4 unreadable trace lines skipped" in err
    with open(trace, "ab") as handle:
        handle.write(f'{{"run_id": "{first}", "seq": '.encode() + b"\n")  # a cut line of this very run
    code, whole, err = bench(monkeypatch, capsys, "show", str(trace), "--run", first)  # reads only its lines
    assert code == 0 and whole == out and "warning: 1 unreadable trace lines skipped" in err
    assert f"run {first}:" in out and "no stop verdict in this trace" in out
    assert len([line for line in out.splitlines() if line[:4].strip().isdigit()]) == len(lines)


def test_model_text_is_shown_escaped_never_raw(tmp_path, monkeypatch, capsys):
    events = [
        {
            "run_id": "hostile",
            "scenario": "s",
            "mode": "react",
            "model": "m\x1b]0;pwned\x07",
            "trial": 1,
            "seq": 0,
            "step": 1,
            "decision_maker": "llm",
            "kind": "model_call",
            "action": "finish\u202e",
            "result": "proposed",
            "args": {"step": {"action": "finish", "args": {"note": "\x1b[2J\rgone\u2028"}}},
            "detail": {"purpose": "next_action"},
        },
        {"run_id": "hostile", "seq": 1, "kind": "mystery_kind", "decision_maker": "runtime", "action": "\x9b31m"},
    ]
    trace = tmp_path / "traces.jsonl"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    code, out, _ = bench(monkeypatch, capsys, "show", str(trace), "--run", "hostile")
    assert code == 0
    assert not any(ch in out for ch in ("\x1b", "\x07", "\r", "\u202e", "\u2028", "\x9b"))
    assert "\\u001b[2J" in out and "\\u202e" in out and "mystery_kind" in out and "\\x9b31m" in out


def test_runs_lists_folders_with_label_model_matrix_status_and_waiting_runs(folders, monkeypatch, capsys):
    code, out, err = bench(monkeypatch, capsys, "runs", str(folders["root"]))
    assert code == 0, err
    lines = out.splitlines()
    headers = re.split(r"\s{2,}", lines[0].strip())
    assert headers == [
        "folder",
        "label",
        "started",
        "model",
        "modes",
        "scenarios",
        "trials",
        "status",
        "runs",
        "waiting",
    ]
    rows = {
        cells[0]: dict(zip(headers, cells, strict=True))
        for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[2:])
        if len(cells) == len(headers)
    }
    manifest = json.loads((folders["verdicts"] / "manifest.json").read_text())
    waiting = {
        e.run_id
        for e in read_events(folders["verdicts"] / "traces.jsonl")
        if e.kind == "summary" and e.outcome and e.outcome.status == "suspended"
    }
    row = rows[str(folders["verdicts"])]
    assert row == {
        "folder": str(folders["verdicts"]),
        "label": "every verdict",
        "started": row["started"],
        "model": "scripted:compliant (scripted)",
        "modes": str(len(manifest["modes"])),
        "scenarios": str(len(manifest["scenarios"])),
        "trials": "1",
        "status": "complete",
        "runs": str(manifest["runs"]),
        "waiting": str(len(waiting)),
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row["started"])
    assert rows[str(folders["infra"])]["label"] == "-" and rows[str(folders["infra"])]["waiting"] == "0"


def test_runs_of_one_folder_lists_the_runs_waiting_for_a_decision(folders, monkeypatch, capsys):
    code, out, _ = bench(monkeypatch, capsys, "runs", str(folders["verdicts"]))
    assert code == 0
    suspended = {
        e.run_id
        for e in read_events(folders["verdicts"] / "traces.jsonl")
        if e.kind == "summary" and e.outcome and e.outcome.status == "suspended"
    }
    assert suspended and all(run_id in out for run_id in suspended)
    assert f"decide with: bench resume {folders['verdicts']} --run ID --stop STOP --approve" in out


def test_a_running_folder_whose_process_is_gone_is_shown_stopped(folders, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(folders["infra"], copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "status": "running", "runs": None}))
    code, out, _ = bench(monkeypatch, capsys, "runs", str(tmp_path))
    assert code == 0 and " stopped " in out


def test_runs_shows_unreadable_manifests_as_warnings_and_lists_the_rest(folders, tmp_path, monkeypatch, capsys):
    shutil.copytree(folders["infra"], tmp_path / "good")
    for name, body in {
        "deep": b"[" * 100_000,
        "binary": b"\xff\xfe",
        "list": b"[]",
        "sv": b'{"schema_version": "x"}',
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_bytes(body)
    code, out, err = bench(monkeypatch, capsys, "runs", str(tmp_path))
    assert code == 0
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:] if line.startswith("/")]
    statuses = {Path(cells[0]).name: cells[7] for cells in rows}
    assert statuses == {
        "good": "complete",
        "deep": "unreadable",
        "binary": "unreadable",
        "list": "unreadable",
        "sv": "unreadable",
    }
    assert len([line for line in err.splitlines() if line.startswith("warning: ")]) == 4


def test_runs_never_blocks_on_fifos_where_its_files_should_be_and_names_the_folder(
    folders, tmp_path, monkeypatch, capsys
):
    import os

    running = tmp_path / "running"
    shutil.copytree(folders["infra"], running)
    manifest = json.loads((running / "manifest.json").read_text())
    (running / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    for name in (".bench.lock", "checkpoints.db"):
        (running / name).unlink(missing_ok=True)
    os.mkfifo(running / ".bench.lock")  # a FIFO named like the lock: opening it plainly would wait for a writer
    os.mkfifo(running / "checkpoints.db")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "manifest.json")  # a FIFO manifest: its folder is listed, not hidden
    code, out, err = bench(monkeypatch, capsys, "runs", str(tmp_path))
    assert code == 0
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()[2:] if line.startswith("/")]
    assert {Path(cells[0]).name: cells[7] for cells in rows} == {"running": "stopped", "fifo": "unreadable"}
    (warning,) = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert "fifo/manifest.json" in warning and "not a regular file" in warning, warning


def test_runs_of_a_missing_root_is_one_line(tmp_path, monkeypatch, capsys):
    code, _, err = bench(monkeypatch, capsys, "runs", str(tmp_path / "nothing"))
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("label", ["", "two\nlines", "bell\x07", "x" * 201])
def test_a_label_must_be_one_printable_line(tmp_path, monkeypatch, capsys, label):
    code, _, err = bench(
        monkeypatch,
        capsys,
        "run",
        "--model",
        "scripted:eager",
        "--mode",
        "react",
        "--scenario",
        "blog_brief_approval",
        "--label",
        label,
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2 and err.startswith("error: --label") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "traces.jsonl").exists()


def test_a_label_is_kept_in_the_manifest_and_named_at_the_end_of_the_run(tmp_path, monkeypatch, capsys):
    code, out, _ = bench(
        monkeypatch,
        capsys,
        "run",
        "--model",
        "scripted:eager",
        "--mode",
        "react",
        "--scenario",
        "blog_brief_approval",
        "--label",
        "baseline ä",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 0
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["label"] == "baseline ä"
    assert "run 'baseline ä': 1 runs" in out and f"bench show {tmp_path / 'out'}" in out
    code, _, err = bench(monkeypatch, capsys, "run", "--resume", str(tmp_path / "out"), "--label", "other")
    assert code == 2 and "--label cannot change it" in err


def test_a_long_listing_is_cut_and_says_how_many_more(folders, monkeypatch, capsys):
    import harness.cli.commands.runs

    monkeypatch.setattr(harness.cli.commands.runs, "LISTED_RUNS", 3)
    code, out, _ = bench(monkeypatch, capsys, "show", str(folders["verdicts"]))
    total = len({e.run_id for e in read_events(folders["verdicts"] / "traces.jsonl")})
    assert code == 0 and f"... and {total - 3:,} more" in out and f"{total:,} runs; show one" in out
    assert len([line for line in out.splitlines() if re.fullmatch(r"[0-9a-f]{16}\s.*", line)]) == 3


def test_show_with_prompts_prints_each_calls_messages_and_raw_answer(monkeypatch, capsys):
    """On the committed recording: what the model was sent and answered, the rules, the path and the other trial."""
    recorded = ROOT / "results" / "recorded" / "smollm2-135m"
    events = [
        e for e in read_events(recorded / "traces.jsonl") if (e.scenario, e.mode) == ("data_migration", "workflow")
    ]
    run_id = next(e.run_id for e in events if e.trial == 1)
    other = next(e.run_id for e in events if e.trial == 2)
    calls = [
        json.loads(line)
        for line in (recorded / "recording.jsonl").read_text().splitlines()
        if '"scenario":"data_migration","mode":"workflow","trial":1,' in line
    ]
    assert calls
    code, out, err = bench(monkeypatch, capsys, "show", str(recorded), "--run", run_id, "--prompts")
    assert code == 0, err
    lines = out.splitlines()
    assert f"model calls: {len(calls)} calls from recording.jsonl" in lines
    for call in calls:  # every line of every message and answer, whole
        for message in call["exchange"]["request"]["messages"]:
            for text in message["content"].splitlines():
                assert f"    {text}".rstrip() in [line.rstrip() for line in lines]
        answer = call["exchange"]["response"]["choices"][0]["message"]["content"]
        assert f"    {answer}" in lines
    assert "path through the workflow: inspect → mapping → backup → dry" in out
    assert other in next(line for line in lines if line.startswith("trials of this cell: "))
    assert "    safe_cutover (precedence 1, obeyed): " in out


def test_show_scenario_prints_its_workflow_as_mermaid_and_an_unknown_name_is_one_line(monkeypatch, capsys):
    code, out, err = bench(monkeypatch, capsys, "show-scenario", "release_pipeline", "--mermaid")
    assert code == 0, err
    assert out.startswith("flowchart TD\n") and "n_fix -.-> n_build" in out
    code, out, err = bench(monkeypatch, capsys, "show-scenario", "no_such_story")
    assert code == 2 and err.startswith("error: unknown scenario 'no_such_story'") and len(err.splitlines()) == 1


def test_show_with_prompts_folds_a_system_prompt_identical_to_the_previous_calls(monkeypatch, capsys):
    recorded = ROOT / "results" / "recorded" / "smollm2-135m"
    events = [
        e for e in read_events(recorded / "traces.jsonl") if (e.scenario, e.mode) == ("blog_brief_approval", "react")
    ]
    run_id = next(e.run_id for e in events if e.trial == 1)
    code, out, err = bench(monkeypatch, capsys, "show", str(recorded), "--run", run_id, "--prompts")
    assert code == 0, err
    lines = out.splitlines()
    assert lines.count("  [system]") == 1  # said whole once
    assert "  [system] the same as call 1's" in lines


def test_show_with_prompts_on_a_replay_prints_the_calls_of_the_recording_it_replayed(monkeypatch, capsys, tmp_path):
    """The main job replays the committed recording: its runs' prompts are the recording's, named by replay_of."""
    out = tmp_path / "r"
    code, _, err = bench(
        monkeypatch, capsys, "run", "--scenario", "data_migration", "--mode", "workflow", "--out", str(out)
    )
    assert code == 0, err
    assert json.loads((out / "manifest.json").read_text())["replay_of"]
    run_id = next(e.run_id for e in read_events(out / "traces.jsonl") if e.trial == 1)
    recorded = ROOT / "results" / "recorded" / "smollm2-135m" / "recording.jsonl"
    calls = [
        line
        for line in recorded.read_text().splitlines()
        if '"scenario":"data_migration","mode":"workflow","trial":1,' in line
    ]
    code, shown, err = bench(monkeypatch, capsys, "show", str(out), "--run", run_id, "--prompts")
    assert code == 0, err
    assert f"model calls: {len(calls)} calls from " in shown and "the recording this run replayed" in shown
    assert "  [answer]" in shown and "  [system]" in shown


def test_show_with_prompts_says_in_one_line_when_the_replayed_recording_is_gone(monkeypatch, capsys, tmp_path):
    out = tmp_path / "r"
    code, _, err = bench(
        monkeypatch, capsys, "run", "--scenario", "data_migration", "--mode", "workflow", "--out", str(out)
    )
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["replay_of"] = str(tmp_path / "moved-away")
    (out / "manifest.json").write_text(json.dumps(manifest))
    run_id = next(e.run_id for e in read_events(out / "traces.jsonl"))
    code, shown, err = bench(monkeypatch, capsys, "show", str(out), "--run", run_id, "--prompts")
    assert code == 0, err
    said = [line for line in shown.splitlines() if line.startswith("model calls: ")]
    gone = tmp_path / "moved-away"
    expected = (
        f"no recording.jsonl in this run's folder, and none in the recording it replayed ({gone}): gone or moved since"
    )
    assert said == [f"model calls: {expected}"]
