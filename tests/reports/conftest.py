"""The report of both committed recordings, made once for the tests that read it (the paper's and LaTeX's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.models import RECORDED_MODEL
from reports.report import build_report

AUDIT_RECORDING = RECORDED_MODEL.with_name("smollm2-135m-audit")
# The modules that read the shared report run on one xdist worker (--dist loadgroup), which makes it once.
SHARED_REPORT = pytest.mark.xdist_group("recorded_pair_report")


@pytest.fixture(scope="session")
def recorded_pair_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The enforcing and the auditing recording reported together by story, every format: a paper's input."""
    out = tmp_path_factory.mktemp("paper") / "report"
    build_report([RECORDED_MODEL, AUDIT_RECORDING], out, by="scenario")
    return out
