"""A run's manifest says where its numbers come from: bench's commit, each scenario file's hash, the prompt hash and
the key library versions; an old manifest without them still reads."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from harness.matrix.cell.provenance import KEY_LIBRARIES, MODES_PACKAGE, prompt_hash
from harness.matrix.pipeline.driver import run
from harness.matrix.pipeline.spec import RunSpec
from harness.records.manifest import MANIFEST_FILE, read_manifest
from harness.version import bench_commit
from tests.helpers.bench import ROOT, SCENARIOS, bench_main

STORIES = ["refund_amount", "blog_brief_approval"]


def scripted_run(scenarios_dir: Path, out: Path) -> Path:
    spec = RunSpec(modes=["react"], scenarios=STORIES, scenarios_dir=scenarios_dir, model="scripted:compliant", out=out)
    return run(spec).folder


def sha256_short(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def git_head() -> str | None:
    """HEAD of bench's checkout asked of git directly, or None where there is no checkout or no git."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return None
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def test_a_scripted_runs_manifest_records_each_scenario_files_hash_the_prompts_and_versions(tmp_path):
    manifest = read_manifest(scripted_run(SCENARIOS, tmp_path / "run"))
    assert manifest.scenario_hashes == {name: sha256_short(SCENARIOS / f"{name}.yaml") for name in STORIES}
    assert manifest.prompt_hash == prompt_hash()
    assert manifest.prompt_hash is not None and len(manifest.prompt_hash) == 12
    assert set(KEY_LIBRARIES) <= set(manifest.versions)
    head = git_head()
    assert (manifest.bench_commit or "").removesuffix("-dirty") == (head or "")


def test_editing_a_scenario_file_changes_its_hash_and_bench_compare_names_it(tmp_path, monkeypatch, capsys):
    stories = tmp_path / "scenarios"
    shutil.copytree(SCENARIOS, stories)
    before = scripted_run(stories, tmp_path / "before")
    edited = stories / "refund_amount.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited after the first run\n", encoding="utf-8")
    after = scripted_run(stories, tmp_path / "after")

    old, new = read_manifest(before).scenario_hashes, read_manifest(after).scenario_hashes
    assert old["refund_amount"] != new["refund_amount"]
    assert old["blog_brief_approval"] == new["blog_brief_approval"]

    code, _out, err = bench_main(monkeypatch, capsys, "compare", str(before), str(after))
    assert code == 0, err
    warned = [line for line in err.splitlines() if "scenario file" in line]
    assert warned == [
        f"warning: scenario file refund_amount differs: A {old['refund_amount']}; B {new['refund_amount']} "
        "(the story changed: its numbers are not comparable)"
    ]


def test_a_manifest_written_before_provenance_reads_with_unknown_provenance(tmp_path):
    folder = scripted_run(SCENARIOS, tmp_path / "run")
    raw = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    for key in ("bench_commit", "scenario_hashes", "prompt_hash"):
        del raw[key]
    (folder / MANIFEST_FILE).write_text(json.dumps(raw), encoding="utf-8")
    manifest = read_manifest(folder)
    assert (manifest.bench_commit, manifest.scenario_hashes, manifest.prompt_hash) == (None, {}, None)
    assert manifest.scenarios == STORIES


def test_the_prompt_hash_follows_the_bytes_of_the_modes_package_not_its_place(tmp_path):
    copy = tmp_path / "modes"
    shutil.copytree(MODES_PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert prompt_hash(copy) == prompt_hash()
    prompting = copy / "prompting.py"
    prompting.write_text(prompting.read_text(encoding="utf-8").replace("Rules:", "Policies:"), encoding="utf-8")
    assert prompt_hash(copy) != prompt_hash()


def test_no_commit_outside_a_git_checkout_or_without_git(tmp_path, monkeypatch):
    assert bench_commit(tmp_path) is None
    (tmp_path / ".git").mkdir()  # looks like a checkout, but git cannot read it
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # nor look further up for one
    assert bench_commit(tmp_path) is None
    monkeypatch.setenv("PATH", str(tmp_path))  # no git on PATH at all
    assert bench_commit(ROOT) is None
