"""The report of both committed recordings, made once a test run for the tests that read it (the paper's and
LaTeX's), whichever xdist worker asks first."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from harness.models import RECORDED_MODEL
from reports.report import build_report

AUDIT_RECORDING = RECORDED_MODEL.with_name("smollm2-135m-audit")


def run_wide_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test run shares (the run's base folder, whose popen-gwN folders are the
    workers' own); without xdist, the run's own base folder. (xdist's --dist loadgroup would put the readers on one
    worker instead, but pytest 9.2 ignores the group it sets: pytest-xdist issue 1386.)"""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


@pytest.fixture(scope="session")
def recorded_pair_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The enforcing and the auditing recording reported together by story, every format: a paper's input. The
    first worker to ask builds it under a lock; the others wait for it and read the same files."""
    shared = run_wide_folder(tmp_path_factory)
    out = shared / "recorded-pair-report"
    done = shared / "recorded-pair-report.done"
    with (shared / "recorded-pair-report.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            # the folders as a user in the repository names them: the "run" tables hold the paths as given, and an
            # absolute path would make the LaTeX layout depend on where the repository is cloned
            folders = [Path(os.path.relpath(f)) for f in (RECORDED_MODEL, AUDIT_RECORDING)]
            build_report(folders, out, by="scenario")
            done.touch()
    return out
