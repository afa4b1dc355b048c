"""Several models in one matrix: a repeated --model runs the matrix once per model into one folder, the manifest
lists each, reports key by model, and --resume continues each model's missing cells only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness import RunSpec, run
from harness.errors import UserInputError
from harness.matrix.pipeline.driver import plan
from harness.models.choice import RECORDED_MODEL, ModelChoice
from harness.records.manifest import read_manifest
from reports.report import build_report
from tests.helpers.bench import SCENARIOS, bench_main

MODELS = ["scripted:eager", "scripted:compliant"]
MATRIX = {"modes": ["workflow", "react"], "scenarios": ["blog_brief_approval"], "trials": 2}


def summaries(folder: Path) -> list[dict]:
    lines = [json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines()]
    return [line for line in lines if line["kind"] == "summary"]


def cells(folder: Path) -> Counter[tuple[str, str, str, int]]:
    return Counter((s["model"], s["scenario"], s["mode"], s["trial"]) for s in summaries(folder))


def test_a_repeated_model_runs_the_whole_matrix_for_each_model_into_one_folder(tmp_path):
    result = run(RunSpec(model=MODELS, out=tmp_path / "m", **MATRIX))  # type: ignore[arg-type]
    assert result.manifest.status == "complete" and result.manifest.runs == 8
    assert cells(result.folder) == Counter(
        {(m, "blog_brief_approval", mode, t): 1 for m in MODELS for mode in MATRIX["modes"] for t in (1, 2)}
    )
    assert len({s["run_id"] for s in summaries(result.folder)}) == 8  # the same cell of two models: two runs


def test_the_manifest_lists_each_model_and_keeps_the_first_where_old_readers_look(tmp_path):
    run(RunSpec(model=MODELS, out=tmp_path / "m", **MATRIX))  # type: ignore[arg-type]
    manifest = read_manifest(tmp_path / "m")
    assert [(m.choice, m.label, m.source) for m in manifest.models] == [(m, m, "scripted") for m in MODELS]
    assert (manifest.model, manifest.model_choice, manifest.model_source) == (MODELS[0], MODELS[0], "scripted")


def test_the_model_field_still_takes_one_value_and_models_is_its_list():
    one = RunSpec(model="scripted:eager")
    assert one.models == (ModelChoice("scripted", name="eager"),) and one.model is one.models[0]
    several = RunSpec(model=MODELS)
    assert [c.describe() for c in several.models] == MODELS and several.model.describe() == MODELS[0]


def test_a_model_given_twice_is_refused_in_one_line():
    with pytest.raises(UserInputError, match=r"^--model: scripted:eager is given twice"):
        RunSpec.build(model=["scripted:eager", "scripted:eager"])


@pytest.mark.slow
def test_the_report_headline_has_a_row_per_model_and_mode(tmp_path):
    run(RunSpec(model=MODELS, out=tmp_path / "m", **MATRIX))  # type: ignore[arg-type]
    build_report([tmp_path / "m"], out=tmp_path / "report")
    headline = (tmp_path / "report" / "tables" / "main_by_model.csv").read_text().splitlines()
    assert headline[0].startswith("model,mode,policy,n,")
    rows = {tuple(line.split(",")[:4]) for line in headline[1:]}
    assert rows == {(m, mode, "enforce", "2") for m in MODELS for mode in MATRIX["modes"]}
    assert (tmp_path / "report" / "figures" / "verdicts.png").is_file()


@pytest.mark.slow
def test_the_report_header_and_bench_runs_name_every_model_of_the_folder(tmp_path, monkeypatch, capsys):
    run(RunSpec(model=MODELS, out=tmp_path / "m", **MATRIX))  # type: ignore[arg-type]
    build_report([tmp_path / "m"], out=tmp_path / "report", formats=["md", "html"])
    named = f"{len(MODELS)} models: {', '.join(MODELS)}"
    assert named in (tmp_path / "report" / "report.md").read_text()
    assert named in (tmp_path / "report" / "report.html").read_text()
    code, out, _ = bench_main(monkeypatch, capsys, "runs", str(tmp_path))
    assert code == 0 and all(model in out for model in MODELS), out


def test_bench_run_prints_a_row_per_model_and_mode(tmp_path, monkeypatch, capsys):
    code, out, _ = bench_main(
        monkeypatch,
        capsys,
        "run",
        *("--model", MODELS[0], "--model", MODELS[1]),
        *("--mode", "workflow,react", "--scenario", "blog_brief_approval", "--out", str(tmp_path / "m")),
    )
    assert code in (0, None)
    table = [line.split() for line in out.splitlines() if line.startswith("scripted:")]
    assert sorted((row[0], row[1]) for row in table) == sorted(
        (m, mode) for m in MODELS for mode in ("workflow", "react")
    )


def interrupt(folder: Path, cut: dict[str, int]) -> set[tuple[str, str, str, int]]:
    """What a kill leaves: each model's last ``cut[model]`` runs lose their summary (partial runs), a torn last line,
    and a manifest that says interrupted. Returns the cells cut."""
    lines = [json.loads(line) for line in (folder / "traces.jsonl").read_text().splitlines()]
    by_model: dict[str, list[str]] = {}
    for line in lines:
        if line["kind"] == "summary":
            by_model.setdefault(line["model"], []).append(line["run_id"])
    partial = {run_id for model, ids in by_model.items() for run_id in ids[len(ids) - cut.get(model, 0) :]}
    kept = [line for line in lines if not (line["kind"] == "summary" and line["run_id"] in partial)]
    text = "".join(json.dumps(line) + "\n" for line in kept) + '{"run_id": "torn'
    (folder / "traces.jsonl").write_text(text)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps(manifest | {"status": "interrupted"}))
    return {
        (s["model"], s["scenario"], s["mode"], s["trial"])
        for s in (line for line in lines if line["kind"] == "summary")
        if s["run_id"] in partial
    }


def test_resume_runs_only_each_models_missing_cells(tmp_path):
    folder = tmp_path / "m"
    first = run(RunSpec(model=MODELS, out=folder, **MATRIX))  # type: ignore[arg-type]
    ids = {(s["model"], s["mode"], s["trial"]): s["run_id"] for s in summaries(first.folder)}
    missing = interrupt(folder, {MODELS[0]: 1, MODELS[1]: 2})
    ran: list[tuple[str, int]] = []
    result = run(RunSpec(resume=folder), on_done=lambda cell, outcome: ran.append((cell.mode, cell.trial)))
    assert result.manifest.status == "complete" and result.manifest.runs == 8
    assert sorted(ran) == sorted((mode, trial) for _, _, mode, trial in missing)  # nothing finished ran again
    assert set(cells(folder).values()) == {1} and len(cells(folder)) == 8  # every cell of each model once
    again = {(s["model"], s["mode"], s["trial"]): s["run_id"] for s in summaries(folder)}
    assert again == ids  # each model's re-run cell kept the run id its dropped attempt had


def test_a_replay_beside_the_model_it_recorded_is_labelled_apart():
    """The bundled model and its recording both run as smollm2-135m; the replay's runs say (replay)."""
    spec = RunSpec(model=["local", f"replay:{RECORDED_MODEL}"], scenarios=["blog_brief_approval"])
    recorded = read_manifest(RECORDED_MODEL)
    matrix = plan(spec, SCENARIOS)
    assert matrix.labels == (recorded.model, f"{recorded.model} (replay)")
    assert matrix.seed == recorded.seed  # a replay among several models keeps its recording's seed
    assert matrix.trials == 1 and matrix.size == 2 * matrix.cells


def test_two_models_under_one_label_are_refused(monkeypatch):
    spec = RunSpec(model=["live:same", "live"], endpoint={"url": "http://127.0.0.1:9/v1", "model": "same"})
    with pytest.raises(UserInputError, match="both run as 'same'"):
        plan(spec, SCENARIOS)
