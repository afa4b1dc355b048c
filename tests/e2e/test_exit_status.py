"""A matrix that measured nothing says so: every run ended in an infrastructure error exits 3 with one line; more
than half of them, a one-line warning and exit 0. Signals and user errors keep their codes (130, 143, 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.matrix.pipeline.exit_status import INFRASTRUCTURE, WARN_SHARE, RunEnds
from modes import select_modes
from tests.helpers.bench import bench_main
from tests.helpers.fault_server import FaultServer

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

KEY = "sk-exit-status-test-0000"


def live_env(url: str) -> dict[str, str]:
    return {"LLM_API_URL": url, "LLM_MODEL": "m", "LLM_API_KEY": KEY}


def errors_only(err: str) -> list[str]:
    return [line for line in err.strip().splitlines() if not line.startswith("note: ")]


def test_every_run_failing_in_the_plumbing_exits_3_with_one_line(tmp_path, monkeypatch, capsys):
    # An endpoint that is there (it answers the preflight) but fails every run; a dead URL stops before any run
    # (tests/e2e/test_dead_endpoint.py), and --stop-after-failures 0 lets every run end.
    with FaultServer(["500"]) as server:
        for name, value in live_env(server.base_url).items():
            monkeypatch.setenv(name, value)
        out = tmp_path / "run"
        code, stdout, err = bench_main(
            monkeypatch,
            capsys,
            "run",
            "--live",
            "--mode",
            "all",
            "--scenario",
            "blog_brief_approval",
            "--retries",
            "0",
            "--stop-after-failures",
            "0",
            "--out",
            str(out),
        )
    assert code == INFRASTRUCTURE == 3, err
    (line,) = errors_only(err)
    n = len(BUILT_IN)
    assert line.startswith(f"error: all {n} runs ended in an infrastructure error (http_5xx {n})"), line
    assert "traces in" in stdout  # the table and the folder are still shown, and kept
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"


def test_an_empty_url_host_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    for name, value in live_env("http://").items():
        monkeypatch.setenv(name, value)
    code, _, err = bench_main(monkeypatch, capsys, "run", "--live", "--out", str(tmp_path / "run"))
    assert code == 2 and "LLM_API_URL has no host" in err and not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """A live recording of react on blog_brief_approval, 4 trials, against a local endpoint that always answers."""
    folder = tmp_path_factory.mktemp("rec") / "rec"
    with FaultServer(["ok"]) as server:
        result = run(
            RunSpec.build(
                model="live",
                modes=["react"],
                scenarios=["blog_brief_approval"],
                trials=4,
                out=folder,
                env=live_env(server.base_url),
            )
        )
    assert result.ends.runs == 4 and result.ends.not_judged == 0
    return folder


def keep_trials(recording: Path, target: Path, trials: set[int]) -> Path:
    """A copy of the recording that answers only the given trials: the others end in a replay miss."""
    target.mkdir()
    for name in ("manifest.json", "traces.jsonl"):
        (target / name).write_bytes((recording / name).read_bytes())
    lines = (recording / "recording.jsonl").read_text().splitlines(keepends=True)
    (target / "recording.jsonl").write_text("".join(line for line in lines if json.loads(line)["trial"] in trials))
    return target


@pytest.mark.slow
@pytest.mark.parametrize(
    ("answered", "code", "line"),
    [
        ({1, 2, 3, 4}, 0, None),
        ({1, 2}, 0, None),  # half: not past the threshold
        ({1}, 0, "warning: 3 of 4 runs (75%) ended in an infrastructure error (replay_miss 3); they are not judged"),
        (set(), 3, "error: all 4 runs ended in an infrastructure error (replay_miss 4); nothing was judged"),
    ],
    ids=["all_answered", "half", "three_quarters_missed", "none_answered"],
)
def test_the_share_of_infrastructure_errors_decides_warning_and_exit(
    tmp_path, monkeypatch, capsys, recording, answered, code, line
):
    folder = keep_trials(recording, tmp_path / "partial", answered)
    got, _, err = bench_main(monkeypatch, capsys, "run", "--model", f"replay:{folder}", "--out", str(tmp_path / "o"))
    assert got == code, err
    lines = errors_only(err)
    if line is None:
        assert lines == [], err
    else:
        assert len(lines) == 1 and lines[0].startswith(line), err


def test_a_replay_that_drifts_keeps_exit_1_and_notes_the_infrastructure_share(tmp_path, monkeypatch, capsys, recording):
    folder = keep_trials(recording, tmp_path / "partial", set())
    code, _, err = bench_main(monkeypatch, capsys, "replay", str(folder), "--out", str(tmp_path / "o"))
    assert code == 1, err
    assert "note: all 4 runs ended in an infrastructure error (replay_miss 4)" in err


def test_a_recording_with_no_readable_line_is_refused(tmp_path, monkeypatch, capsys, recording):
    folder = keep_trials(recording, tmp_path / "broken", {1, 2, 3, 4})
    (folder / "recording.jsonl").write_bytes(b"\x00\xff not json\n{]\n")
    code, _, err = bench_main(monkeypatch, capsys, "run", "--model", f"replay:{folder}", "--out", str(tmp_path / "o"))
    assert code == 2 and len(errors_only(err)) == 1, err
    assert "recording.jsonl: none of its 2 lines is a recorded exchange" in err
    assert not (tmp_path / "o").exists()


def outcome(status: str, verdict: str, **errors: int) -> dict[str, object]:
    return {"status": status, "stop_verdict": verdict, "errors": errors}


def test_the_tally_counts_finished_runs_and_their_first_infrastructure_kind():
    tally = RunEnds()
    tally.add_outcome(outcome("error", "infrastructure", timeout=2, network=1))
    tally.add_outcome(outcome("error", "failed_closed", parse=1))  # the model's error: judged
    tally.add_outcome(outcome("interrupted", "infrastructure"))  # not finished: the signal decides
    tally.add_outcome(outcome("suspended", "correct"))
    assert (tally.runs, dict(tally.infrastructure)) == (3, {"network": 1})
    assert tally.verdict() is None  # 1 of 3


def test_the_warning_starts_past_the_threshold_and_the_error_at_all():
    def verdict(lost: int, runs: int):
        tally = RunEnds()
        for index in range(runs):
            tally.add_outcome(
                outcome("error", "infrastructure", http_5xx=1) if index < lost else outcome("finished", "correct")
            )
        return tally.verdict()

    assert WARN_SHARE == 0.5
    assert verdict(0, 10) is None and verdict(5, 10) is None and RunEnds().verdict() is None
    assert verdict(6, 10) == (
        0,
        "warning: 6 of 10 runs (60%) ended in an infrastructure error (http_5xx 6); they are not judged",
    )
    code, line = verdict(10, 10)
    assert code == 3 and line.startswith("error: all 10 runs ended in an infrastructure error (http_5xx 10)")
