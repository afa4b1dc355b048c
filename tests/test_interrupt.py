"""Ctrl-C in the middle of a matrix keeps every finished trace line valid and marks the manifest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT


def test_sigint_mid_run_leaves_every_line_valid(tmp_path):
    out = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--mode", "all", "--scenario", "blog_brief_approval",
         "--model", "scripted:random", "--trials", "100000", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    traces = out / "traces.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not traces.exists() or traces.stat().st_size < 200_000):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    lines = traces.read_text().splitlines()
    assert len(lines) > 100
    for line in lines:
        json.loads(line)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["end_time"] is not None
