"""The HTML page renders in headless Chromium with every table and figure, needs no network, hides no row at
1400 px, and its runs table filters and sorts from the URL fragment and its controls.

Chromium is driven by its own command line (``--dump-dom`` after a virtual time budget, ``--screenshot``), with a
test-only script appended to a copy of the page where the DOM must be measured: no extra package, no browser
download, the same Chromium the screenshots use.
"""

from __future__ import annotations

import html as html_text
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from modes import select_modes
from reports import runs_explorer
from reports.html import page as html_page
from reports.load import load_traces
from reports.metrics import classify_runs
from reports.report import build_report
from tests.helpers.bench import run_offline
from tests.helpers.report_fixtures import Call, Run, write_runs

WIDTH, HEIGHT = 1400, 3000
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


def browse(page: Path, profile: Path, *args: str, fragment: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri() + fragment],
        capture_output=True,
        timeout=180,
    )


# Test-only: for every row of every table, whether it is drawn and not cut off by the window or by an ancestor
# that clips (overflow other than visible); the answer is written into the DOM for --dump-dom to carry out.
VISIBILITY_PROBE = """
window.addEventListener("load", function () {
  function cut(el) {
    var r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) { return "not drawn"; }
    if (r.right > document.documentElement.clientWidth + 1) { return "past the window's right edge"; }
    for (var a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      var s = getComputedStyle(a);
      if (s.overflowX === "visible" && s.overflowY === "visible") { continue; }
      var b = a.getBoundingClientRect();
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1) {
        return "clipped by " + a.tagName + "." + a.className;
      }
    }
    return "";
  }
  var found = { width: window.innerWidth, tables: 0, rows: 0, hidden: [] };
  document.querySelectorAll("table").forEach(function (table) {
    found.tables++;
    table.querySelectorAll("tr").forEach(function (tr, i) {
      found.rows++;
      var why = cut(tr);
      if (why) { found.hidden.push((table.getAttribute("data-table") || table.className) + " row " + i + ": " + why); }
    });
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
"""

# Test-only: the runs table's rows as drawn, the status line and the address after the script ran.
RUNS_PROBE = """
window.addEventListener("load", function () {
  var root = document.getElementById("runs-table");
  var rows = Array.prototype.map.call(root.querySelectorAll("tbody tr"), function (tr) {
    var cells = Array.prototype.map.call(tr.children, function (td) { return td.textContent; });
    var link = tr.querySelector("a");
    return { verdict: tr.getAttribute("data-verdict"), cells: cells, href: link ? link.getAttribute("href") : null };
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({ hash: location.hash, status: root.querySelector(".runs-status").textContent,
                                     rows: rows, ready: root.getAttribute("data-ready") });
  document.body.appendChild(out);
});
"""


def probe(page: Path, tmp: Path, script: str, width: int = WIDTH, fragment: str = "", before: str = "") -> dict:
    """Runs ``before`` (an action, e.g. choosing a filter) and then ``script`` in a copy of ``page`` at ``width``
    px, and returns what the script wrote into the DOM."""
    copy = page.with_name(f"probe-{tmp.name}.html")
    copy.write_text(page.read_text().replace("</body>", f"<script>{before}{script}</script></body>"))
    try:
        flags = ["--dump-dom", "--virtual-time-budget=5000", f"--window-size={width},1000"]
        result = browse(copy, tmp / "profile", *flags, fragment=fragment)
    finally:
        copy.unlink()
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout.decode())
    assert found, "the probe did not run"
    return json.loads(html_text.unescape(found.group(1)))


def embedded_runs(page: Path) -> dict:
    text = page.read_text()
    blob = re.search(r'<script type="application/json" id="runs-data">(.*?)</script>', text, re.S)
    assert blob
    return json.loads(blob.group(1))


def column(data: dict, key: str) -> int:
    return [c["key"] for c in data["columns"]].index(key)


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


@pytest.mark.slow
def test_page_holds_every_table_and_figure_and_no_network_reference(report):
    html = (report.out / "report.html").read_text()
    tables = set(re.findall(r'data-table="([a-z0-9_]+)"', html))
    # every table of the report's sections: the CSV files less the wide metrics dumps (LaTeX adds narrow variants)
    expected = {p.stem for p in (report.out / "tables").glob("*.csv") if not p.stem.startswith("metrics_by_")}
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_every_table_header_and_row_is_visible_at_1400_px(report, tmp_path):
    page = report.out / "report.html"
    found = probe(page, tmp_path, VISIBILITY_PROBE)
    assert found["width"] == WIDTH
    tables = page.read_text().count("<table ")
    assert found["tables"] == tables and tables > 20  # every table of the page, the runs table among them
    assert found["rows"] > tables * 2
    assert found["hidden"] == []


@pytest.mark.slow
def test_the_page_keeps_nothing_in_fixed_height_boxes_and_uses_the_window_width(report):
    text = (report.out / "report.html").read_text()
    style = re.search(r"<style>(.*?)</style>", text, re.S)
    assert style and "max-height" not in style.group(1) and "78rem" not in style.group(1)
    assert ".table-wrap { overflow-x: auto;" in style.group(1)  # a table wider than the window scrolls sideways
    assert "@media print" in style.group(1)


@pytest.mark.slow
def test_the_table_of_contents_links_every_table_figure_and_the_runs_table(report):
    text = (report.out / "report.html").read_text()
    toc = re.search(r'<nav class="toc".*?</nav>', text, re.S)
    assert toc
    targets = set(re.findall(r'href="#([^"]+)"', toc.group(0)))
    tables = {f"h-{name}" for name in re.findall(r'data-table="([a-z0-9_]+)"', text)}
    figures = {f"figure-{name}" for name in re.findall(r'data-figure="([a-z_]+)"', text)}
    assert tables and figures and tables | figures | {"runs-table"} <= targets
    anchors = set(re.findall(r'\bid="([^"]+)"', text))
    assert targets <= anchors  # every entry lands somewhere


@pytest.mark.slow
def test_filtering_by_verdict_in_the_address_leaves_only_rows_of_that_verdict(report, tmp_path):
    page = report.out / "report.html"
    data = embedded_runs(page)
    verdicts = [row[column(data, "verdict")] for row in data["rows"]]
    late = verdicts.count("late")
    assert 0 < late < len(verdicts)  # the filter has something to keep and something to leave out
    found = probe(page, tmp_path, RUNS_PROBE, fragment="#runs?verdict=late")
    assert found["ready"] == "1"
    assert len(found["rows"]) == late and {row["verdict"] for row in found["rows"]} == {"late"}
    assert all(row["cells"][column(data, "verdict")] == "late" for row in found["rows"])
    assert found["status"].startswith(f"Showing {late} of {late} matching runs")


@pytest.mark.slow
def test_choosing_a_verdict_and_clicking_a_header_filters_sorts_and_writes_the_address(report, tmp_path):
    page = report.out / "report.html"
    data = embedded_runs(page)
    verdicts = [row[column(data, "verdict")] for row in data["rows"]]
    wanted = max(set(verdicts) - {None}, key=verdicts.count)
    choose = (
        'var box = document.querySelector("#runs-table select[name=verdict]");'
        f"box.value = {json.dumps(wanted)}; box.dispatchEvent(new Event('change'));"
        'document.querySelectorAll("#runs-table thead th")[%d].querySelector("button").click();'
        % column(data, "latency")
    )
    found = probe(page, tmp_path, RUNS_PROBE, before=choose)
    assert len(found["rows"]) == verdicts.count(wanted) and {r["verdict"] for r in found["rows"]} == {wanted}
    latencies = [float(r["cells"][column(data, "latency")]) for r in found["rows"]]
    assert latencies == sorted(latencies) and len(set(latencies)) > 1
    assert found["hash"] == f"#runs?verdict={wanted}&sort=latency"


@pytest.mark.slow
def test_run_ids_in_the_runs_table_open_existing_run_pages(report, tmp_path):
    found = probe(report.out / "report.html", tmp_path, RUNS_PROBE)
    hrefs = [row["href"] for row in found["rows"]]
    assert hrefs and all(hrefs)
    assert all((report.out / href).is_file() for href in hrefs)


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 800])
def test_screenshot_at_width_shows_the_page(report, tmp_path, width):
    page = report.out / "report.html"
    shot = tmp_path / f"report-{width}.png"
    result = browse(page, tmp_path / "profile", f"--screenshot={shot}", f"--window-size={width},2000")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape == (2000, width, 3)
    assert (pixels.min(axis=2) < 0.9).mean() > 0.05  # text and tables, not a blank page


@pytest.mark.slow
def test_a_large_folder_embeds_at_most_the_cap_draws_a_step_at_a_time_and_prints_every_row(
    report, tmp_path, monkeypatch
):
    monkeypatch.setattr(runs_explorer, "MAX_EMBEDDED_RUNS", 40)
    monkeypatch.setattr(runs_explorer, "RENDER_STEP", 7)
    runs = classify_runs(load_traces([report.out.parent / "real", report.out.parent / "timed"]))
    table = runs_explorer.runs_table(runs)
    assert len(table.rows) == 40 and table.total == len(runs) > 40
    page = tmp_path / "capped.html"
    page.write_text(html_page("capped", [], [], [], table))
    drawn = probe(page, tmp_path, RUNS_PROBE)
    assert len(drawn["rows"]) == 7
    assert drawn["status"].startswith(f"Showing 7 of 40 matching runs (40 in the table, of {len(runs)} in the report")
    printed = probe(page, tmp_path, RUNS_PROBE, before='window.dispatchEvent(new Event("beforeprint"));')
    assert len(printed["rows"]) == 40  # a printout holds every matching row, not the first step


@pytest.mark.slow
def test_a_hostile_run_id_cannot_close_the_embedded_script(report):
    runs = classify_runs(load_traces([report.out.parent / "timed"]))
    runs["run_id"] = runs["run_id"].astype(str)
    runs.loc[runs.index[0], "run_id"] = "</script><img src=x onerror=alert(1)>"
    section = runs_explorer.runs_section(runs_explorer.runs_table(runs), "runs-table", "Runs")
    assert "</script><img" not in section and section.count("</script>") == 3  # the two JSON blobs, the script
    blob = re.search(r'id="runs-data">(.*?)</script>', section, re.S)
    assert blob and any(row[0].startswith("</script><img") for row in json.loads(blob.group(1))["rows"])


# Test-only: where the headline's columns sit at the window's width, and where its first column is once its box
# is scrolled sideways to the end.
HEADLINE_PROBE = """
window.addEventListener("load", function () {
  var table = document.querySelector("table[data-table^='main_by_']");
  var wrap = table.parentElement;
  var edge = document.documentElement.clientWidth;
  var shown = {};
  table.querySelectorAll("thead th").forEach(function (th) {
    shown[th.textContent.replace(/\\s+/g, " ").trim()] = th.getBoundingClientRect().right <= edge + 1;
  });
  wrap.scrollLeft = wrap.scrollWidth;
  var first = table.querySelector("tbody td").getBoundingClientRect().left;
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({ shown: shown, scrolled: wrap.scrollLeft,
                                     first: first - wrap.getBoundingClientRect().left });
  document.body.appendChild(out);
});
"""


@pytest.mark.slow
def test_at_800_px_the_headline_shows_its_keys_n_stop_correct_with_interval_and_oracle_passed(report, tmp_path):
    found = probe(report.out / "report.html", tmp_path, HEADLINE_PROBE, width=800)
    shown = found["shown"]
    assert all(shown[h] for h in ("model", "mode", "policy", "n", "stop-correct", "95% CI", "oracle passed")), shown
    assert not all(shown.values())  # the rest of the columns are past the edge: the table scrolls sideways
    assert found["scrolled"] > 0 and abs(found["first"]) <= 1  # and its first column stays in view (sticky)
