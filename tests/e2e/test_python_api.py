"""The Python API works in a fresh interpreter, as a notebook's first cell would use it: ``from harness import RunSpec,
run`` and ``import harness; harness.run(...)`` give the functions (never a module, never a RecursionError), and the
run they start is the CLI's own run: a folder with a trace and a typed manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers.bench import ROOT


def fresh_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a new interpreter (nothing of this test process imported), the project importable."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT)},
    )


def test_from_harness_import_run_gives_the_function_in_a_fresh_interpreter(tmp_path):
    done = fresh_python(
        "import inspect\nfrom harness import RunSpec, run, replay, resume, load_traces\n"
        "print(inspect.isfunction(run), inspect.isfunction(replay), inspect.isfunction(resume), "
        "inspect.isfunction(load_traces), RunSpec.__name__)",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True", "RunSpec"]


def test_harness_run_stays_the_function_after_every_submodule_is_imported(tmp_path):
    done = fresh_python(
        "import harness, harness.matrix.pipeline.driver, harness.matrix.commands.recorded_replay\n"
        "import harness.matrix.commands.resume, harness.cli\n"
        "import inspect\n"
        "print(inspect.isfunction(harness.run), inspect.isfunction(harness.replay), harness.__version__)",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["True", "True"]


def test_an_unknown_name_is_an_attribute_error_naming_it(tmp_path):
    done = fresh_python("import harness\nharness.rnu", tmp_path)
    assert done.returncode == 1 and "AttributeError: module 'harness' has no attribute 'rnu'" in done.stderr


def test_the_documented_example_runs_a_matrix_into_a_folder(tmp_path):
    out = tmp_path / "out"
    done = fresh_python(
        "import harness\n"
        f"result = harness.run(harness.RunSpec(modes=['workflow', 'react'], scenarios=['blog_brief_approval'], "
        f"model='scripted:eager', out={str(out)!r}))\n"
        "print(result.folder, result.manifest.status)",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    folder, status = done.stdout.split()
    assert Path(folder) == out and status == "complete"
    summaries = [e for e in map(json.loads, (out / "traces.jsonl").read_text().splitlines()) if e["kind"] == "summary"]
    assert sorted(e["mode"] for e in summaries) == ["react", "workflow"]
    assert all(e["model"] == "scripted:eager" for e in summaries)
