"""bench's version and the git commit it runs from: a leaf, so any layer may name them without importing the package
face (the manifest's provenance, each recorded exchange's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

__version__ = "0.1.0"

SOURCE_ROOT = Path(__file__).resolve().parents[1]  # the folder holding harness/ and modes/ (a checkout, or not)
GIT_TIMEOUT_S = 5.0


def bench_commit(root: Path = SOURCE_ROOT) -> str | None:
    """The git commit bench runs from, with ``-dirty`` when tracked files differ from it; None when bench is not
    a git checkout, git is missing or does not answer."""
    if not (root / ".git").exists():  # an installed copy: no checkout of bench's own, whatever folder holds it
        return None
    head = _git(root, "rev-parse", "HEAD")
    if not head:
        return None
    changes = _git(root, "status", "--porcelain", "--untracked-files=no")  # None (no answer): the commit alone
    return f"{head}-dirty" if changes else head


def _git(root: Path, *args: str) -> str | None:
    """git's stripped output, or None when it cannot run or fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
