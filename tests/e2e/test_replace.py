"""--replace never deletes what bench did not write: a symlinked --out is refused in one line with nothing touched,
a run folder holding a user's file is refused naming it, and a folder of everything a run and its report wrote
(trace, manifest, recording, checkpoint database, report) is replaced whole, leaving nothing beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.bench import bench_in_process, bench_process
from tests.helpers.fault_server import FaultServer

SMALL = ("--mode", "workflow", "--scenario", "blog_brief_approval")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, but the lock's: it names whoever last held the folder, a refused run included."""
    return {
        str(p.relative_to(folder)): b"" if p.name == ".bench.lock" else p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def first_run(out: Path) -> dict[str, bytes]:
    made = bench_process("run", "--model", "scripted:eager", *SMALL, "--out", str(out))
    assert made.returncode == 0, made.stderr
    return snapshot(out)


@pytest.mark.slow
def test_replace_through_a_symlinked_out_is_refused_in_one_line_and_touches_nothing(tmp_path):
    real = tmp_path / "real"
    before = first_run(real)
    link = tmp_path / "latest"
    link.symlink_to(real)
    result = bench_process("run", "--model", "scripted:random", *SMALL, "--out", str(link), "--replace")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"error: --replace: --out {link} is a symbolic link (to {real}); "
        f"give the folder itself (--out {real}) or a new folder"
    )
    assert link.is_symlink() and link.resolve() == real
    assert snapshot(real) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "real"]  # no .latest.partial, no .latest.old


@pytest.mark.slow
def test_replace_refuses_a_run_folder_holding_a_users_file_naming_it_and_touches_nothing(tmp_path):
    out = tmp_path / "run"
    first_run(out)
    (out / "my-notes.txt").write_text("what I saw in this run")
    (out / "analysis").mkdir()
    (out / "analysis" / "plot.py").write_text("import matplotlib")
    before = snapshot(out)
    result = bench_process("run", "--model", "scripted:random", *SMALL, "--out", str(out), "--replace")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == (
        f"error: --replace: {out} holds files bench did not write: analysis/, my-notes.txt; "
        "move them away first, nothing was replaced"
    )
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.slow
def test_replace_takes_a_folder_of_everything_a_live_run_and_its_report_wrote(tmp_path):
    out = tmp_path / "run"  # every command in-process: what is proven is the folder, not a process boundary
    with FaultServer(["ok"]) as server:  # a live run: recording.jsonl, and a suspension's checkpoints.db
        env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "fault-model", "LLM_API_KEY": "sk-replace-test-0000"}
        live = bench_in_process("run", "--live", *SMALL, "--out", str(out), env=env)
    assert live.returncode == 0, live.stderr
    report = bench_in_process("report", str(out))
    assert report.returncode == 0, report.stderr
    names = set(snapshot(out))
    assert {"recording.jsonl", "checkpoints.db", "report/report.html"} <= names
    assert any(n.startswith("report/figures/") for n in names) and any(n.startswith("report/tables/") for n in names)

    result = bench_in_process("run", "--model", "scripted:eager", *SMALL, "--out", str(out), "--replace")
    assert result.returncode == 0, result.stderr
    assert "scripted:eager" in (out / "manifest.json").read_text()
    assert not (out / "recording.jsonl").exists() and not (out / "report").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.slow
def test_replace_killed_in_its_swap_is_finished_by_the_same_command_run_again(tmp_path):
    import json

    out = tmp_path / "run"
    first_run(out)
    args = ("run", "--model", "scripted:random", *SMALL, "--out", str(out), "--replace")
    killed = bench_process(*args, env={"BENCH_KILL_AT": "swap-exchanged"})
    assert killed.returncode == -9, killed.stderr
    assert json.loads((out / "manifest.json").read_text())["model"] == "scripted:random"  # --out is never missing
    again = bench_process(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no .run.partial, no .run.old
