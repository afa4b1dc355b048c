"""--replace deletes only what bench wrote: the files of a run and of its report are known by name, everything else
in the old folder is the user's and named in the refusal, also when it appeared while the new run went on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.errors import UserInputError
from harness.models.recording import RECORDING_FILE
from harness.records import folder as folder_module
from harness.records.folder import RunFolder, foreign_files

NOW = datetime(2025, 1, 1, tzinfo=UTC)
MANIFEST = (
    '{"modes": ["react"], "scenarios": ["s"], "model": "m", "model_source": "scripted", "trials": 1, "seed": 0, '
    '"gateway_policy": "enforce", "concurrency": 1, "start_time": "t", "status": "complete"}'
)


def bench_run(folder: Path, *extra: str) -> Path:
    """A run folder with every file a run and a report write, plus ``extra`` paths (a trailing / makes a folder)."""
    written = [
        "manifest.json",
        "traces.jsonl",
        "recording.jsonl",
        "checkpoints.db",
        "checkpoints.db-wal",
        "checkpoints.db-shm",
        ".bench.lock",
        "report/report.md",
        "report/report.html",
        "report/figures/stops.png",
        "report/figures/stops.pdf",
        "report/tables/main.csv",
        "report/tables/main.tex",
        "report/runs/react-1.html",
    ]
    for name in [*written, *extra]:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text(MANIFEST if name == "manifest.json" else "x")
    return folder


def test_the_recording_file_name_is_the_one_the_recorder_writes():
    assert folder_module.RECORDING_FILE == RECORDING_FILE


def test_a_folder_of_what_bench_wrote_has_no_foreign_files(tmp_path):
    assert foreign_files(bench_run(tmp_path / "run")) == []


def test_every_file_bench_did_not_write_is_found_by_its_path(tmp_path):
    run = bench_run(
        tmp_path / "run",
        "notes.txt",
        "analysis/plot.py",
        "empty/",
        "traces.jsonl.bak",
        "report/mine.md",
        "report/figures/mine.svg",
        "report/tables/extra/",
    )
    (run / "link").symlink_to(tmp_path)
    assert foreign_files(run) == [
        "analysis/",
        "empty/",
        "link",
        "notes.txt",
        "report/figures/mine.svg",
        "report/mine.md",
        "report/tables/extra/",
        "traces.jsonl.bak",
    ]


def test_replace_refuses_a_folder_with_foreign_files_naming_a_few_and_counting_the_rest(tmp_path):
    run = bench_run(tmp_path / "run", *(f"mine-{n}.txt" for n in range(8)))
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    with pytest.raises(UserInputError) as refused:
        RunFolder.take(run, True, tmp_path, NOW)
    assert str(refused.value) == (
        f"--replace: {run} holds files bench did not write: mine-0.txt, mine-1.txt, mine-2.txt, mine-3.txt, "
        "mine-4.txt and 3 more; move them away first, nothing was replaced"
    )
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging folder


def test_a_file_added_while_the_new_run_went_on_stops_the_swap_and_the_new_run_stays_apart(tmp_path):
    run = bench_run(tmp_path / "run")
    taken = RunFolder.take(run, True, tmp_path, NOW)
    assert taken.staging
    (taken.path / "manifest.json").write_text(MANIFEST)
    (run / "notes.txt").write_text("written during the run")
    taken.release()
    with pytest.raises(UserInputError) as refused:
        taken.finish(True)
    assert "notes.txt" in str(refused.value) and f"the new run stays in {taken.path}" in str(refused.value)
    assert (run / "notes.txt").read_text() == "written during the run" and (taken.path / "manifest.json").exists()
    assert not (tmp_path / ".run.old").exists()


def test_replace_swaps_a_folder_of_what_bench_wrote_and_leaves_nothing_beside_it(tmp_path):
    run = bench_run(tmp_path / "run")
    taken = RunFolder.take(run, True, tmp_path, NOW)
    (taken.path / "manifest.json").write_text(MANIFEST.replace("react", "workflow"))
    taken.release()
    assert taken.finish(True) == run
    assert sorted(p.name for p in run.iterdir()) == [".bench.lock", "manifest.json"]
    assert "workflow" in (run / "manifest.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


# ---------------------------------------------------------------- a swap cut short, repaired by the next command


class Killed(BaseException):
    """Stands for SIGKILL at a point of the swap: nothing after it runs, no cleanup (the locks close, as a kill's)."""


SWAP_POINTS = ["swap-exchanged", "swap-retired", "swap-renamed", "swap-old-deleted"]


def swap_cut_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, *, exchange: bool) -> tuple[Path, str]:
    """A --replace run of ``run`` whose swap is killed at ``point``; the exchange (one rename) or two renames."""
    run = bench_run(tmp_path / "run")
    taken = RunFolder.take(run, True, tmp_path, NOW)
    new = MANIFEST.replace("react", "workflow")
    (taken.path / "manifest.json").write_text(new)
    taken.release()

    def reached(name: str) -> None:
        if name == point:
            raise Killed(name)

    monkeypatch.setattr(folder_module, "reached", reached)
    if not exchange:
        monkeypatch.setattr(folder_module, "_exchanged", lambda a, b: False)
    with pytest.raises(Killed):
        taken.finish(True)
    for handle in taken._locks:
        handle.close()
    monkeypatch.undo()
    return run, new


@pytest.mark.parametrize(
    ("point", "exchange"),
    [("swap-exchanged", True), ("swap-old-deleted", True)]
    + [(p, False) for p in ("swap-retired", "swap-renamed", "swap-old-deleted")],
)
def test_a_swap_killed_at_any_step_is_finished_by_the_next_command_and_leaves_no_hidden_folder(
    tmp_path, monkeypatch, point, exchange
):
    run, new = swap_cut_at(tmp_path, monkeypatch, point, exchange=exchange)
    RunFolder.attach(run).release()  # bench resume, bench run --resume: any command that takes the folder
    assert (run / "manifest.json").read_text() == new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert ".bench-staged" not in {p.name for p in run.iterdir()}


def test_the_exchange_leaves_out_whole_at_every_instant(tmp_path, monkeypatch):
    run, new = swap_cut_at(tmp_path, monkeypatch, "swap-exchanged", exchange=True)
    assert (run / "manifest.json").read_text() == new  # before any cleanup: --out is the new run already
    taken = RunFolder.take(run, True, tmp_path, NOW)  # the retry of the same --replace
    assert taken.staging and sorted(p.name for p in tmp_path.iterdir()) == [".run.partial", "run"]
    assert (taken.path / ".bench-staged").exists() and not (taken.path / "manifest.json").exists()


def test_a_staged_run_that_never_completed_is_rolled_back_and_the_old_run_kept(tmp_path):
    run = bench_run(tmp_path / "run")
    before = (run / "manifest.json").read_text()
    taken = RunFolder.take(run, True, tmp_path, NOW)
    (taken.path / "traces.jsonl").write_text("{}\n")  # killed mid-run: no manifest yet
    taken.release()
    again = RunFolder.take(run, True, tmp_path, NOW)  # the retry: bench's own staging folder is never refused
    assert again.staging and not (again.path / "traces.jsonl").exists()
    assert (run / "manifest.json").read_text() == before


def test_a_staged_folder_holding_a_users_file_is_named_not_deleted(tmp_path):
    run = bench_run(tmp_path / "run")
    staging = tmp_path / ".run.partial"
    staging.mkdir()
    (staging / "mine.txt").write_text("not bench's")
    with pytest.raises(UserInputError, match=r"\.run\.partial is in the way and is not bench's; move it away"):
        RunFolder.attach(run)
    assert (staging / "mine.txt").exists()
