"""``bench report`` with nothing importable but what pyproject's base dependencies (and one extra) bring.

CI's proof that the declared dependencies suffice, without a second virtualenv: a child process refuses every
import outside the closure of the declared requirements (their installed distributions' own requirements,
followed with their markers), the standard library and bench's own packages, and runs ``bench report`` on the
committed recording. A library the report imports but no dependency list names (jinja2 for pandas' Styler, once,
which only llama-cpp-python brought) fails here as it fails on a machine installed with ``pip install -e .``. What it
does not prove: that a fresh resolve picks versions that work, which constraints.txt pins.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers.bench import ROOT

RECORDING = ROOT / "results" / "recorded" / "smollm2-135m"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OURS = {"harness", "modes", "reports", "tests"}

# The child: a meta-path finder that refuses top-level modules outside ALLOWED, then bench's own entry point.
CHILD = """
import sys
ALLOWED = set(sys.argv[1].split(","))
class Refuse:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in ALLOWED or top in sys.stdlib_module_names or top in sys.builtin_module_names:
            return None
        raise ModuleNotFoundError(f"No module named {top!r} (outside the declared dependencies)", name=top)
sys.meta_path.insert(0, Refuse())
sys.argv = ["bench", *sys.argv[2:]]
from harness.cli import main
main()
"""


def closure(requirements: list[str]) -> set[str]:
    """The canonical names of the installed distributions ``requirements`` bring, with everything they require."""
    found: set[str] = set()
    todo = [(Requirement(text), frozenset[str]()) for text in requirements]
    while todo:
        requirement, _ = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = frozenset(requirement.extras)
        if name in found and not extras:
            continue
        found.add(name)
        for text in metadata.requires(requirement.name) or []:
            child = Requirement(text)
            marker = child.marker
            wanted = marker is None or any(marker.evaluate({"extra": extra}) for extra in ("", *extras))
            if wanted:
                todo.append((child, extras))
    return found


def standard_library() -> set[str]:
    """The interpreter's own top-level modules, the platform's generated ones (_sysconfigdata_...) included."""
    folders = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
    folders |= {str(Path(folder) / "lib-dynload") for folder in set(folders)}
    return {module.name for module in pkgutil.iter_modules(sorted(folders))}


def importable(distributions: set[str]) -> set[str]:
    """Top-level module names that belong to ``distributions``, the standard library and bench's own packages."""
    names = OURS | standard_library()
    for module, owners in metadata.packages_distributions().items():
        if any(canonicalize_name(owner) in distributions for owner in owners):
            names.add(module)
    return names


def report_with_only(requirements: list[str], out: Path) -> subprocess.CompletedProcess[str]:
    allowed = ",".join(sorted(importable(closure(requirements))))
    command = [sys.executable, "-c", CHILD, allowed, "report", str(RECORDING), "--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_the_refusing_child_refuses_a_module_the_report_needs(tmp_path: Path) -> None:
    """With one module the report imports (tabulate) left out of the allowed set, the report fails naming it: the
    check has teeth."""
    allowed = ",".join(sorted(importable(closure(PROJECT["dependencies"])) - {"tabulate"}))
    command = [sys.executable, "-c", CHILD, allowed, "report", str(RECORDING), "--out", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode != 0
    assert "No module named 'tabulate' (outside the declared dependencies)" in done.stderr


@pytest.mark.slow
def test_bench_report_needs_nothing_but_the_base_dependencies(tmp_path: Path) -> None:
    """Every format, figures and run pages included; an extra only adds importable modules to this set."""
    done = report_with_only(PROJECT["dependencies"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "report.html").is_file()
    assert (tmp_path / "report.md").is_file()
    assert list((tmp_path / "tables").glob("*.tex"))
