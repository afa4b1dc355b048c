"""The test-only fault hook: with BENCH_KILL_AFTER_WRITES=N a process SIGKILLs itself right after its Nth write,
leaving exactly the N lines it wrote, each whole; unset or not a positive number, it does nothing."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from harness.records.write_faults import KILL_AFTER_WRITES
from tests.helpers.bench import ROOT

WRITE_FIVE = """
import sys
from pathlib import Path
from harness.records.trace import TraceWriter, Usage
with TraceWriter(Path(sys.argv[1])) as writer:
    for n in range(5):
        writer.write(Usage(prompt_tokens=n))
print("all written")
"""


def write_five(tmp_path, value: str | None) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    env = {"PATH": "/usr/bin:/bin", **({KILL_AFTER_WRITES: value} if value is not None else {})}
    path = tmp_path / "lines.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", WRITE_FIVE, str(path)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return done, path.read_text().splitlines()


def test_the_process_is_killed_right_after_its_nth_write(tmp_path):
    done, lines = write_five(tmp_path, "3")
    assert done.returncode == -signal.SIGKILL and done.stdout == ""
    assert lines == [f'{{"prompt_tokens":{n},"completion_tokens":0,"total_tokens":0,"reasoning_tokens":0,'
                     f'"cached_tokens":0}}' for n in range(3)]  # fmt: skip


@pytest.mark.parametrize("value", [None, "", "0", "-1", "three", "6"])
def test_without_a_positive_count_below_the_writes_nothing_happens(tmp_path, value):
    done, lines = write_five(tmp_path, value)
    assert done.returncode == 0 and done.stdout == "all written\n", done.stderr
    assert len(lines) == 5
