"""Where a run's numbers come from, for its manifest: bench's git commit, a hash of each scenario file and of the
prompt templates, and the versions of the libraries that shape a run. ``bench compare`` and ``bench report`` warn
when two folders differ in any of them (reports/provenance.py; docs/development.md: reproducibility).

Every function here answers or says None; none of them can stop a run.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path

import modes

HASH_CHARS = 12  # 48 bits of sha256: enough to tell two versions of one file apart, short enough to read
# The libraries every run goes through: models and validation (pydantic), the live client (httpx), the argument and
# answer checks (jsonschema, jsonschema-rs), the scenario reader (PyYAML), and what the reports compute with
# (numpy draws the bootstrap resamples, pandas groups, pyarrow reads the traces). The frameworks of the runtime modes
# and the local model's engine are recorded where they are used (framework_versions, the manifest's live block).
# driver.versions() (harness/matrix/pipeline) puts them, with bench's and Python's, in the manifest's ``versions``.
KEY_LIBRARIES = ("pydantic", "httpx", "jsonschema", "jsonschema-rs", "PyYAML", "numpy", "pandas", "pyarrow")
MODES_PACKAGE = Path(modes.__path__[0]).resolve()  # where the modes are imported from


def short_hash(data: bytes) -> str:
    """The first HASH_CHARS hex digits of the sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]


def scenario_hashes(scenarios_dir: Path, ids: Iterable[str]) -> dict[str, str]:
    """Scenario id -> the short hash of its file's bytes (``ID.yaml`` in ``scenarios_dir``); unreadable: left out."""
    found = {}
    for scenario_id in ids:
        with contextlib.suppress(OSError):
            found[scenario_id] = short_hash((scenarios_dir / f"{scenario_id}.yaml").read_bytes())
    return found


def prompt_files(package: Path = MODES_PACKAGE) -> list[Path]:
    """The files the prompt templates live in: every module of the modes package (modes/**/*.py).

    The shared pieces are in modes/prompting.py, but each mode writes its own instructions and answer format in
    its module, and modes borrow them from one another (the runtime modes use react's): the whole package is the
    smallest set that is sure to hold them all. A change to a mode's code changes the hash too.
    """
    return sorted(package.rglob("*.py"))


def prompt_hash(package: Path = MODES_PACKAGE) -> str | None:
    """One short hash over prompt_files(): each file's path inside the package and its bytes; None if unreadable."""
    digest = hashlib.sha256()
    try:
        for path in prompt_files(package):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()[:HASH_CHARS]
