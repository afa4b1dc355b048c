"""Every path the README promises "one line and exit 2" for gives exactly that, never a traceback: --out paths that
cannot hold a run, a bad --scenarios-dir, malformed URLs, replay folders with a corrupt manifest or recording, a
damaged checkpoint database, special files where bench expects its own (scenario files: test_scenario_files_hostile)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.helpers.bench import ROOT, SCENARIOS, bench_main
from tests.helpers.sweeps import sample

KEY = "sk-one-line-ABCDEFGHIJKL"


def one_line(monkeypatch, capsys, *args: str) -> str:
    code, _, err = bench_main(monkeypatch, capsys, *args)
    lines = [line for line in err.strip().splitlines() if not line.startswith("note: ")]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---------------------------------------------------------------- --out


def out_paths(tmp: Path) -> dict[str, tuple[Path, str]]:
    (tmp / "file").write_text("x")
    (tmp / "loop").symlink_to(tmp / "loop")
    return {
        "sys": (Path("/sys"), "--out /sys"),
        "under_sys": (Path("/sys/kernel/bench-run"), "cannot write there"),
        "proc": (Path("/proc"), "--out /proc"),
        "under_proc": (Path("/proc/bench-run"), "cannot write there"),
        "proc_file": (Path("/proc/self/status"), "not a folder"),
        "dev_null": (Path("/dev/null"), "not a folder"),
        "a_file": (tmp / "file", "not a folder"),
        "under_a_file": (tmp / "file" / "run", "cannot write there"),
        "name_too_long": (tmp / ("x" * 300), "File name too long"),
        "symlink_loop": (tmp / "loop" / "run", "symbolic links"),
    }


@pytest.mark.parametrize(
    "case",
    ["sys", "under_sys", "proc", "under_proc", "proc_file", "dev_null", "a_file", "under_a_file", "name_too_long",
     "symlink_loop"],
)  # fmt: skip
def test_an_out_path_that_cannot_hold_a_run_is_one_line(tmp_path, monkeypatch, capsys, case):
    out, words = out_paths(tmp_path)[case]
    line = one_line(monkeypatch, capsys, "run", "--model", "scripted:eager", "--out", str(out))
    assert words in line, line


@pytest.mark.parametrize("given", [".", ""])
def test_the_current_folder_as_out_is_refused_when_it_holds_anything(tmp_path, monkeypatch, capsys, given):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    line = one_line(monkeypatch, capsys, "run", "--model", "scripted:eager", "--scenarios-dir", str(SCENARIOS),
                    "--out", given)  # fmt: skip
    assert "not empty" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no lock file, no folder left


# ---------------------------------------------------------------- selections that name nothing

RECORDED = ROOT / "results" / "recorded" / "smollm2-135m"


@pytest.mark.parametrize(
    ("given", "flag"),
    [("--mode=", "--mode"), ("--mode=,,,", "--mode"), ("-m= , ", "--mode"), ("--scenario=", "--scenario"),
     ("-s=,", "--scenario")],
)  # fmt: skip
def test_an_empty_selection_is_one_line_naming_its_flag_and_runs_nothing(tmp_path, monkeypatch, capsys, given, flag):
    out = tmp_path / "run"
    option, value = given.split("=", 1)
    line = one_line(monkeypatch, capsys, "run", "--model", "scripted:eager", option, value, "--out", str(out))
    assert line == f"error: {flag}: names nothing (an empty value, or only commas); give 'all' or names"
    assert not out.exists()


def test_an_empty_selection_among_names_is_no_selection_of_its_own(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    code, _, err = bench_main(monkeypatch, capsys, "run", "--model", "scripted:eager", "--mode", "", "--mode",
                              "react,", "--scenario", "blog_brief_approval", "--out", str(out))  # fmt: skip
    assert code == 0, err
    modes = {json.loads(line)["mode"] for line in (out / "traces.jsonl").read_text().splitlines()}
    assert modes == {"react"}


@pytest.mark.parametrize("value", ["", ",,,", " "])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_an_empty_format_list_is_one_line(tmp_path, monkeypatch, capsys, command, value):
    folders = [str(RECORDED)] * (2 if command == "compare" else 1)
    line = one_line(monkeypatch, capsys, command, *folders, "--format", value, "--out", str(tmp_path / "out"))
    assert line.startswith("error: --format: "), line
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- --scenarios-dir


@pytest.mark.parametrize("case", ["missing", "a_file", "empty", "only_sanity", "symlink_loop", "fifo"])
@pytest.mark.parametrize("command", ["list", "check-scenarios", "run"])
def test_a_bad_scenarios_dir_is_one_line(tmp_path, monkeypatch, capsys, case, command):
    folder = tmp_path / "scenarios"
    if case == "a_file":
        folder.write_text("x")
    elif case == "empty":
        folder.mkdir()
    elif case == "only_sanity":
        folder.mkdir()
        shutil.copy(SCENARIOS / "sanity.yaml", folder / "sanity.yaml")
    elif case == "symlink_loop":
        folder.symlink_to(folder)
    elif case == "fifo":
        os.mkfifo(folder)
    extra = ["--model", "scripted:eager", "--out", str(tmp_path / "out")] if command == "run" else []
    line = one_line(monkeypatch, capsys, command, "--scenarios-dir", str(folder), *extra)
    assert f"--scenarios-dir {folder}" in line, line
    assert not (tmp_path / "out").exists()


def test_a_scenario_file_that_is_a_symlink_loop_is_named(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "loop.yaml").symlink_to(folder / "loop.yaml")
    line = one_line(monkeypatch, capsys, "list", "--scenarios-dir", str(folder))
    assert "loop.yaml: cannot read" in line, line


# ---------------------------------------------------------------- LLM_API_URL


MALFORMED_URLS = [
    ("http://:8080/v1", "no host"),
    ("http:///v1", "no host"),
    ("http://127.0.0.1:0/v1", "invalid port"),
    ("http://127.0.0.1:65536/v1", "invalid port"),
    ("http://127.0.0.1:-1/v1", "invalid port"),
    ("http://127.0.0.1:８０/v1", "invalid port"),
    ("http://[::1/v1", "IPv6"),
    ("http://xn--/v1", "host name"),
    ("http://bad\u3000host/v1", "host name"),
    ("http://user@127.0.0.1/v1", "credentials"),
    (f"http://user:{KEY}@127.0.0.1/v1", "credentials"),
    ("http://127.0.0.1/v1#frag", "fragment"),
    ("http://127.0.0.1/v1 extra", "whitespace"),
    ("file:///etc/passwd", "http://"),
]


@pytest.mark.parametrize(
    ("url", "words"),
    sample(MALFORMED_URLS, 5, seed=0),  # all of them in CI
)
def test_a_malformed_url_is_one_line_without_the_key(tmp_path, monkeypatch, capsys, url, words):
    for name, value in {"LLM_API_URL": url, "LLM_MODEL": "m", "LLM_API_KEY": KEY}.items():
        monkeypatch.setenv(name, value)
    line = one_line(monkeypatch, capsys, "run", "--live", "--out", str(tmp_path / "run"))
    assert words in line and "LLM_API_URL" in line and KEY[:8] not in line, line
    assert not (tmp_path / "run").exists()
    line = one_line(monkeypatch, capsys, "probe")
    assert words in line, line


# ---------------------------------------------------------------- replay folders


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A small recording (the committed one, cut to one scenario) to corrupt a copy of."""
    source = ROOT / "results" / "recorded" / "smollm2-135m"
    folder = tmp_path_factory.mktemp("recorded") / "rec"
    folder.mkdir()
    shutil.copy(source / "manifest.json", folder / "manifest.json")
    for name in ("recording.jsonl", "traces.jsonl"):
        lines = (source / name).read_text().splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line)["scenario"] == "blog_brief_approval"]
        (folder / name).write_text("".join(kept))
    return folder


def corrupt(folder: Path, case: str) -> None:
    manifest, recording = folder / "manifest.json", folder / "recording.jsonl"
    if case == "manifest_garbage":
        manifest.write_bytes(b"\xff\xfe garbage")
    elif case == "manifest_not_json":
        manifest.write_text("{not json")
    elif case == "manifest_deep":
        manifest.write_text("[" * 100_000 + "]" * 100_000)
    elif case == "manifest_huge_number":
        manifest.write_text('{"schema_version": ' + "9" * 5000 + "}")
    elif case == "manifest_version_text":
        data = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**data, "schema_version": "two"}))
    elif case == "manifest_wrong_type":
        data = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**data, "modes": 5}))
    elif case == "manifest_a_list":
        manifest.write_text("[1, 2]")
    elif case == "manifest_a_folder":
        manifest.unlink()
        manifest.mkdir()
    elif case == "manifest_a_fifo":
        manifest.unlink()
        os.mkfifo(manifest)
    elif case == "manifest_oversized":
        with open(manifest, "ab") as handle:
            handle.truncate(17 * 1024 * 1024)  # sparse: past the bound without writing it
    elif case == "recording_all_corrupt":
        recording.write_bytes(b"\x00\xff{]\nnot json\n")
    elif case == "recording_a_folder":
        recording.unlink()
        recording.mkdir()
    elif case == "recording_missing":
        recording.unlink()
    elif case == "traces_a_fifo":
        (folder / "traces.jsonl").unlink()
        os.mkfifo(folder / "traces.jsonl")


REPLAY_CASES = [
    "manifest_garbage",
    "manifest_not_json",
    "manifest_deep",
    "manifest_huge_number",
    "manifest_version_text",
    "manifest_wrong_type",
    "manifest_a_list",
    "manifest_a_folder",
    "manifest_a_fifo",
    "manifest_oversized",
    "recording_all_corrupt",
    "recording_a_folder",
    "recording_missing",
    "traces_a_fifo",
]


@pytest.mark.parametrize("case", REPLAY_CASES)
@pytest.mark.parametrize("command", ["replay", "run"])
def test_a_corrupt_replay_folder_is_one_line(tmp_path, monkeypatch, capsys, recorded, case, command):
    if command == "run" and case == "traces_a_fifo":
        pytest.skip("bench run --model replay: reads no recorded trace")
    folder = tmp_path / "rec"
    shutil.copytree(recorded, folder)
    corrupt(folder, case)
    if command == "replay":
        args = ["replay", str(folder)]
    else:
        args = ["run", "--model", f"replay:{folder}", "--scenario", "blog_brief_approval"]
    line = one_line(monkeypatch, capsys, *args, "--out", str(tmp_path / "out"))
    assert str(folder) in line, line
    assert not (tmp_path / "out").exists() or not (tmp_path / "out" / "traces.jsonl").exists()


# ---------------------------------------------------------------- run folders bench goes on with


@pytest.fixture
def suspended(tmp_path, monkeypatch, capsys) -> tuple[Path, str]:
    out = tmp_path / "run"
    code, _, err = bench_main(monkeypatch, capsys, "run", "--mode", "workflow", "--scenario", "blog_brief_approval",
                              "--model", "scripted:reference", "--out", str(out))  # fmt: skip
    assert code == 0, err
    summary = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()][-1]
    assert summary["outcome"]["status"] == "suspended"
    return out, summary["run_id"]


def test_a_damaged_checkpoint_database_is_one_line(suspended, monkeypatch, capsys):
    out, run_id = suspended
    for name in ("checkpoints.db-wal", "checkpoints.db-shm"):
        (out / name).unlink(missing_ok=True)
    (out / "checkpoints.db").write_bytes(b"this is not a database" * 100)
    line = one_line(monkeypatch, capsys, "resume", str(out), "--run", run_id, "--approve")
    assert "checkpoints.db: not a readable checkpoint database" in line, line


def test_a_checkpoint_body_of_the_wrong_type_is_one_line(suspended, monkeypatch, capsys):
    out, run_id = suspended
    with sqlite3.connect(out / "checkpoints.db") as db:
        db.execute("UPDATE checkpoints SET body = ? WHERE run_id = ?", (12345, run_id))
    line = one_line(monkeypatch, capsys, "resume", str(out), "--run", run_id, "--approve")
    assert "does not read" in line, line


def test_resume_with_a_trace_that_is_a_fifo_is_one_line(suspended, monkeypatch, capsys):
    out, run_id = suspended
    (out / "traces.jsonl").unlink()
    os.mkfifo(out / "traces.jsonl")
    line = one_line(monkeypatch, capsys, "resume", str(out), "--run", run_id, "--approve")
    assert "not a regular file" in line, line


def test_continuing_a_matrix_past_hand_edited_trace_lines(tmp_path, monkeypatch, capsys):
    """Lines that name no run, or name one with values of the wrong type, are dropped, not a traceback."""
    out = tmp_path / "run"
    args = ("--mode", "react,workflow", "--scenario", "blog_brief_approval", "--model", "scripted:eager")
    code, _, err = bench_main(monkeypatch, capsys, "run", *args, "--trials", "2", "--out", str(out))
    assert code == 0, err
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    with open(out / "traces.jsonl", "a") as handle:
        for junk in (
            {"kind": "summary"},
            {"run_id": ["x"], "kind": "summary", "outcome": []},
            {"run_id": "x", "kind": "run_start", "trial": [1], "scenario": {}, "mode": None},
            [1, 2],
            "text",
        ):
            handle.write(json.dumps(junk) + "\n")  # fmt: skip
    code, _, err = bench_main(monkeypatch, capsys, "run", "--resume", str(out))
    assert code == 0 and "Traceback" not in err, err
    summaries = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert sum(e.get("kind") == "summary" for e in summaries) == 4


@pytest.mark.parametrize(
    "args",
    [("replay", "{long}"), ("resume", "{long}", "--run", "x", "--approve", "--as", "me"), ("run", "--resume", "{long}"),
     ("run", "--model", "replay:{long}")],
    ids=["replay", "resume", "run_resume", "run_replay"],
)  # fmt: skip
def test_a_folder_name_too_long_for_the_file_system_is_one_line(tmp_path, monkeypatch, capsys, args):
    long = str(tmp_path / ("r" * 300))
    line = one_line(monkeypatch, capsys, *(arg.format(long=long) for arg in args))
    assert "r" * 50 in line, line
