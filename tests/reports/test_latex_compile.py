"""Every LaTeX table of a report set in a 10 pt two-column article, as a paper would: nothing overfull, no float too
large for its page, no type below 6 pt, the tables a paper's body cites never longtables, no narrow table without
the numbers its full one has, no rate parted from its interval. The narrow variants go in one column, the
full-width ones across both, the long ones (longtable) on one-column pages at the end. Run on the committed
recording and on a scripted folder of two models."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from reports.latex import LONG_ROWS, PACKAGES, WIDE, latex_files, to_latex
from reports.report import build_report
from reports.tables import Column, Table
from tests.helpers.bench import bench_in_process

MIN_FONT_PT = 6.0
OVERFULL_PT = 1.0
REFERENCE = "ZZSIXPOINTREF"  # a word set at exactly 6 pt: what the smallest allowed type measures in the PDF
# The tables a paper's body cites (a float in the two-column text, never a longtable): headline, verdicts,
# correctness and pass^k per mode or per model, both variants.
BODY = re.compile(r"(main|verdicts|correctness|pass_k)_by_(mode|model)(_narrow)?")
TWO_MODEL_STORIES = "blog_brief_approval,bank_transfer_compliance,data_migration,gdpr_erasure"


@pytest.fixture
def latex_report(recorded_pair_report: Path) -> Path:
    """The LaTeX tables of both recordings by story (the report the paper tests read too)."""
    return recorded_pair_report / "tables"


@pytest.fixture(scope="module")
def two_model_report(tmp_path_factory) -> Path:
    """A scripted folder of two models (every mode, four stories, two trials) and its report's tables."""
    folder = tmp_path_factory.mktemp("two-models") / "run"
    args = ["--model", "scripted:reference", "--model", "scripted:eager", "--trials", "2", "-s", TWO_MODEL_STORIES]
    done = bench_in_process("run", *args, "--out", str(folder))
    assert done.returncode == 0, done.stderr
    build_report([folder], folder / "report", formats=("latex",))
    return folder / "report" / "tables"


def two_column_article(tables: list[Path]) -> str:
    """The tables in a 10 pt two-column article: floats and the body's tables first (each pair on its pages), then
    the long ones; a body table written as a longtable stops pdflatex there (longtable needs one column)."""
    floats = [t for t in tables if "\\begin{longtable}" not in t.read_text() or BODY.fullmatch(t.stem)]
    longs = [t for t in tables if t not in floats]
    body = [f"{{\\fontsize{{6}}{{7}}\\selectfont {REFERENCE}}}\\par"]
    for index, table in enumerate(floats, start=1):
        body.append(f"\\input{{{table}}}")
        if index % 2 == 0:
            body.append("\\clearpage")
    body.append("\\onecolumn")
    body += [f"\\input{{{table}}}\n\\clearpage" for table in longs]
    packages = "".join(f"\\usepackage{{{p}}}\n" for p in PACKAGES)
    return (
        "\\documentclass[10pt,twocolumn]{article}\n"
        + packages
        + "\\begin{document}\n"
        + "\n".join(body)
        + ("\n\\end{document}\n")
    )


@dataclass(frozen=True)
class Typeset:
    log: str
    pdf: Path


def typeset(folder: Path, document: str) -> Typeset:
    """pdflatex twice (longtable settles its column widths on the second run); the second run's log."""
    pdflatex = shutil.which("pdflatex")
    if pdflatex is None:
        pytest.fail("pdflatex is needed: apt-get install -y texlive-latex-base texlive-latex-recommended")
    (folder / "paper.tex").write_text(document)
    for _ in range(2):
        result = subprocess.run(
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stdout[-3000:]
    return Typeset((folder / "paper.log").read_text(errors="replace"), folder / "paper.pdf")


def overfull_boxes(log: str) -> list[str]:
    """Overfull boxes wider than the tolerance, each named by the table file being read and its line."""
    found = re.finditer(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)([^\n]*)", log)
    return [f"{_file_at(log, m.start())}: {m.group(0)}" for m in found if float(m.group(1)) > OVERFULL_PT]


def _file_at(log: str, position: int) -> str:
    opened = re.findall(r"\(([^()\s]+\.tex)", log[:position])
    return Path(opened[-1]).name if opened else "?"


def word_heights(pdf: Path) -> list[tuple[float, str]]:
    """Each word's box height in the PDF (proportional to its font size) and the word, from pdftotext -bbox."""
    pdftotext = shutil.which("pdftotext")
    if pdftotext is None:
        pytest.fail("pdftotext is needed: apt-get install -y poppler-utils")
    xml = subprocess.run([pdftotext, "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    words = re.finditer(r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', xml)
    return [(float(m.group(2)) - float(m.group(1)), m.group(3)) for m in words]


def smaller_than_6pt(pdf: Path) -> list[str]:
    heights = word_heights(pdf)
    reference = next(h for h, word in heights if word == REFERENCE)
    return sorted({word for h, word in heights if h < reference - 0.01})


def problems(typeset_paper: Typeset, tables: list[Path]) -> list[str]:
    """What keeps the tables out of a paper as they are: overfull lines, floats too large, type under 6 pt."""
    found = overfull_boxes(typeset_paper.log)
    too_large = re.finditer(r"Float too large for page by [\d.]+pt", typeset_paper.log)
    found += [f"{_file_at(typeset_paper.log, m.start())}: {m.group(0)}" for m in too_large]
    small = re.compile(r"\\(tiny|scriptsize|resizebox|scalebox)\b")
    found += [f"{t.name}: \\{m.group(1)}" for t in tables for m in small.finditer(t.read_text())]
    tiny = smaller_than_6pt(typeset_paper.pdf)
    found += [f"type under {MIN_FONT_PT:g} pt: {', '.join(tiny[:10])}"] if tiny else []
    return found


_SPEC = re.compile(r"\\begin\{(?:tabular|tabularx|longtable)\}(?:\{\\linewidth\})?\{@\{\}(.*)@\{\}\}")
_ROW = re.compile(r"^(?!\\multicolumn)(.+ & .+) \\\\$", re.MULTILINE)


def _numeric(text: str) -> bool:
    """Whether any tabular of a table's file has a numeric (right-aligned) column."""
    return any("r" in re.sub(r"\{[^{}]*\}|>", "", spec) for spec in _SPEC.findall(text))


def layout_problems(tables: list[Path]) -> list[str]:
    """What a paper cannot use as written: a body table that is a longtable, a narrow table without the numbers its
    full one has, an interval in a cell of its own (parted from its rate by a split) or a bound in its own column."""
    found = []
    for table in tables:
        text = table.read_text()
        if BODY.fullmatch(table.stem) and "\\begin{longtable}" in text:
            found.append(f"{table.name}: a longtable in the body")
        wide = table.with_name(table.name.replace("_narrow.tex", ".tex"))
        if table.stem.endswith("_narrow") and wide.exists() and _numeric(wide.read_text()) and not _numeric(text):
            found.append(f"{table.name}: a narrow table without a numeric column")
        for row in _ROW.findall(text):
            cells = [cell.strip() for cell in row.split(" & ")]
            if any(cell.startswith("[") for cell in cells):
                found.append(f"{table.name}: an interval apart from its rate: {row[:80]}")
            if any(re.search(r"95\\% (low|high)", cell) for cell in cells):
                found.append(f"{table.name}: an interval's bound in a column of its own: {row[:80]}")
    return sorted(set(found))


@pytest.mark.slow
def test_every_table_fits_a_two_column_article_unscaled(latex_report, tmp_path):
    tables = sorted(latex_report.glob("*.tex"))
    narrow = [t for t in tables if t.stem.endswith("_narrow")]
    assert len(tables) > 40 and len(narrow) * 2 == len(tables)  # every table in both variants
    assert layout_problems(tables) == []
    paper = typeset(tmp_path, two_column_article(tables))
    assert problems(paper, tables) == []
    assert "\\begin{table*}" in (latex_report / "verdicts_by_mode.tex").read_text()
    assert "\\begin{table}" in (latex_report / "main_by_mode_narrow.tex").read_text()
    assert "\\begin{longtable}" in (latex_report / "main_by_scenario.tex").read_text()


def test_the_checks_catch_a_table_scaled_down_or_too_wide(tmp_path):
    wide = Table(
        "too_wide",
        "Far too wide",
        tuple(Column(f"a long header {i}", "text", lambda r: "x" * 40) for i in range(8)),
        (object(),),
    )
    text = to_latex(wide).replace("\\begin{tabularx}{\\linewidth}", "\\begin{tabularx}{3\\linewidth}")
    (tmp_path / "too_wide.tex").write_text(text + "{\\tiny tiny}\n")
    paper = typeset(tmp_path, two_column_article([tmp_path / "too_wide.tex"]))
    found = problems(paper, [tmp_path / "too_wide.tex"])
    assert any("Overfull" in p for p in found) and any(p.startswith("type under 6 pt") for p in found)
    assert "too_wide.tex: \\tiny" in found


def test_a_long_table_is_a_longtable_with_its_head_repeated_and_one_number(tmp_path):
    rows = tuple((f"story_{i}", i) for i in range(LONG_ROWS + 1))
    table = Table("many", "Many rows", (Column("story", "text", lambda r: r[0], key=True), _count()), rows, "a note")
    text = latex_files(table)["many.tex"]
    assert text.count("\\begin{longtable}") == 1 and "\\endhead" in text and "\\label{tab:many}" in text
    assert "\\begin{table" not in text and "a note" in text.split("\\end{longtable}")[1]  # the note under it
    short = latex_files(Table("few", "Few", table.columns, rows[:LONG_ROWS], "a note"))
    assert "\\begin{table*}" in short["few.tex"] and "\\begin{table}" in short["few_narrow.tex"]


def _count() -> Column[tuple[str, int]]:
    return Column("count", "int", lambda r: r[1])


def test_columns_that_do_not_fit_go_on_in_a_part_that_repeats_the_keys():
    columns = (
        Column("mode", "text", lambda r: "workflow_fallback_react", key=True),
        *(Column(f"measure {i} ms", "ms", lambda r: 12345.6) for i in range(20)),
    )
    text = to_latex(Table("parts", "Parts", columns, (object(),)), layout=WIDE)
    tabulars = text.count("\\begin{tabular}{")
    assert tabulars >= 2 and text.count("\\begin{table*}") == 1
    assert text.count("workflow\\_fallback\\_react") == tabulars  # each part names its row


def test_the_narrow_variant_keeps_the_key_and_narrow_columns():
    columns = (
        Column("mode", "text", lambda r: "react", key=True),
        Column("essential", "int", lambda r: 1, narrow=True),
        Column("detail", "int", lambda r: 2),
    )
    files = latex_files(Table("t", "T", columns, (object(),)))
    assert "detail" in files["t.tex"] and "detail" not in files["t_narrow.tex"]
    assert "essential" in files["t_narrow.tex"] and "mode" in files["t_narrow.tex"]


def test_a_table_declaring_no_narrow_column_keeps_all_its_columns_one_column_wide():
    columns = (
        Column("mode", "text", lambda r: "react", key=True),
        Column("stop-correct", "pct", lambda r: 0.5),
        Column("runs", "int", lambda r: 24),
    )
    narrow = latex_files(Table("t", "T", columns, (object(),)))["t_narrow.tex"]
    assert "50.0" in narrow and "24" in narrow  # numbers, not the key column alone


@pytest.mark.slow
def test_every_narrow_table_of_the_recording_has_numbers(latex_report):
    for path in sorted(latex_report.glob("*_narrow.tex")):
        body = path.read_text().split("\\midrule", 1)[-1]
        assert re.search(r"\d", body), path.name


def test_captions_and_notes_set_math_and_drop_pointers_into_the_docs():
    table = Table(
        "t",
        "Summary per mode x policy",
        (Column("n", "int", lambda r: 1, "judged runs (docs/metrics.md: intervals)."),),
        (object(),),
        "Counted (README: stop verdicts) as runs (early, late; docs/metrics.md: stop verdicts); run with --approver "
        "scripted:plan_reader to judge them.",
    )
    text = to_latex(table, context="n = 1,434 judged runs")
    assert "mode $\\times$ policy" in text and "$n = 1{,}434$" in text
    assert "README" not in text and "docs/" not in text and "as runs (early, late)." in text
    assert "approver" not in text  # no instructions to the CLI's user in a paper


@pytest.mark.slow
def test_a_two_model_folder_fits_a_two_column_article_with_its_models_as_group_rows(two_model_report, tmp_path):
    tables = sorted(two_model_report.glob("*.tex"))
    assert layout_problems(tables) == []
    paper = typeset(tmp_path, two_column_article(tables))
    assert problems(paper, tables) == []
    headline = (two_model_report / "main_by_model.tex").read_text()
    assert "\\begin{table*}" in headline and "\\begin{longtable}" not in headline
    groups = re.findall(r"\\multicolumn\{\d+\}\{@\{\}l\}\{\\itshape model: (scripted:\w+)\}", headline)
    assert set(groups) == {"scripted:eager", "scripted:reference"}
    assert "& model &" not in headline and "model & mode" not in headline  # the models are rows, not a column
    pooled = (two_model_report / "verdicts_by_mode.tex").read_text()
    assert "pooled over 2 models" in pooled.split("\\caption{", 1)[1].split("\n", 1)[0]


def test_the_layout_checks_catch_a_longtable_in_the_body_an_empty_narrow_table_and_a_parted_interval(tmp_path):
    (tmp_path / "main_by_model.tex").write_text("\\begin{longtable}{@{}lr@{}}\nworkflow & 4 \\\\\n\\end{longtable}\n")
    (tmp_path / "cost_by_mode.tex").write_text("\\begin{tabular}{@{}lr@{}}\nworkflow & 4.0 \\\\\n\\end{tabular}\n")
    (tmp_path / "cost_by_mode_narrow.tex").write_text(
        "\\begin{tabular}{@{}ll@{}}\nworkflow & enforce \\\\\n\\end{tabular}\n"
    )
    parted = "\\begin{tabular}{@{}lr@{}}\nworkflow & [74.2, 100.0] \\\\\nmode & 95\\% low \\\\\n\\end{tabular}\n"
    (tmp_path / "parted.tex").write_text(parted)
    found = layout_problems(sorted(tmp_path.glob("*.tex")))
    assert any(p.startswith("main_by_model.tex: a longtable in the body") for p in found)
    assert any(p.startswith("cost_by_mode_narrow.tex: a narrow table without a numeric column") for p in found)
    assert any(p.startswith("parted.tex: an interval apart from its rate") for p in found)
    assert any(p.startswith("parted.tex: an interval's bound in a column of its own") for p in found)
