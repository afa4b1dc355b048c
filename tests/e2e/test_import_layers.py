"""The folder is the layer, checked rather than agreed: the import-layers contract in pyproject.toml passes on the
project, and fails, naming the import, when a lower layer imports a higher one or a mode reaches past harness.core."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.bench import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def copy_of_the_project(tmp_path: Path) -> Path:
    for package in ("harness", "modes", "reports"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"},
    )


def plant(folder: Path, module: str, line: str) -> None:
    path = folder / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # planted\n", encoding="utf-8")


def test_the_project_keeps_its_layers(tmp_path):
    done = lint_imports(copy_of_the_project(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "line", "named"),
    [
        (
            "harness.core.clock",
            "from harness.matrix.pipeline import spec",
            "harness.core is not allowed to import harness.matrix",
        ),
        (
            "harness.records.trace",
            "import harness.core.gateway",
            "harness.records is not allowed to import harness.core",
        ),
        ("harness.matrix.commands.listing", "import reports.stats", "harness.matrix is not allowed to import reports"),
        ("modes.react", "from harness.records import trace", "modes is not allowed to import harness.records"),
    ],
)
def test_an_import_against_the_layers_fails_the_check_and_is_named(tmp_path, module, line, named):
    folder = copy_of_the_project(tmp_path)
    plant(folder, module, line)
    done = lint_imports(folder)
    assert done.returncode == 1
    assert named in done.stdout and f"{module} ->" in done.stdout
