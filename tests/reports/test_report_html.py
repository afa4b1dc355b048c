"""The HTML page renders in headless Chromium with every table and figure, and needs no network."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from modes import select_modes
from reports.report import build_report
from tests.helpers.bench import run_offline
from tests.helpers.report_fixtures import Call, Run, write_runs

WIDTH, HEIGHT = 1280, 3000
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("headless Chromium is needed for this test: apt-get install -y chromium (.ci/run installs it)")


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()], capture_output=True, timeout=180
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory, blog):
    folder = tmp_path_factory.mktemp("html")
    events, _ = run_offline(blog, select_modes([]), "random", trials=8)
    (folder / "real").mkdir()
    (folder / "real" / "traces.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
    # A second model with real-looking latencies and tokens, so every figure has something to draw.
    timed = [
        Run(
            f"{mode}-t{i}",
            mode,
            model="fixture:timed",
            trial=i,
            wall_ms=200.0 + 37 * i,
            calls=[Call(150.0 + 11 * i, 300 + i, 40, "create_brief")],
            stop_correct=i % 3 != 0,
        )
        for mode in ("react", "workflow")
        for i in range(1, 10)
    ]
    write_runs(folder / "timed", timed)
    return build_report([folder / "real", folder / "timed"], folder / "out")


def test_page_holds_every_table_and_figure_and_no_network_reference(report):
    html = (report.out / "report.html").read_text()
    tables = set(re.findall(r'data-table="([a-z0-9_]+)"', html))
    expected = {p.stem for p in (report.out / "tables").glob("*.tex")}
    assert tables == expected and {"modes", "spectrum", "main_by_mode", "errors_by_model"} <= tables
    assert set(re.findall(r'data-figure="([a-z_]+)"', html)) == {
        "verdicts",
        "stop_correctness",
        "latency",
        "tokens",
        "decision_share",
    }
    assert html.count('src="data:image/png;base64,') == 5
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing to fetch


def test_page_renders_in_headless_chromium(report, tmp_path):
    page = report.out / "report.html"
    dom = browse(page, tmp_path / "profile-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout.decode()
    for name in re.findall(r'data-table="([a-z0-9_]+)"', page.read_text()):
        assert f'data-table="{name}"' in text
    assert text.count("<img") == 5 and text.count("<figure") == 5

    shot = tmp_path / "shot.png"
    result = browse(page, tmp_path / "profile-shot", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape == (HEIGHT, WIDTH, 3)
    ink = (pixels.min(axis=2) < 0.9).mean()  # anything that is not white
    colour = ((pixels.max(axis=2) - pixels.min(axis=2)) > 0.3).mean()  # saturated: bars of the figures
    assert ink > 0.05, f"page looks blank: {ink:.3%} ink"
    assert colour > 0.01, f"figures did not render: {colour:.3%} coloured pixels"
    assert len(np.unique((pixels * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 100
