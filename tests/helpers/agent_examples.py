"""The example agents of examples/agents/ as commands, with the two that need building built once and reused: the
TypeScript agent (npm ci, then tsc, into git-ignored folders) and the LangGraph agent's own environment (a venv from
its requirements). A stamp of their inputs' hash says when a build is still good, so CI pays for it once."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.bench import ROOT

EXAMPLES = ROOT / "examples" / "agents"
TS = EXAMPLES / "ts"
LANGGRAPH = EXAMPLES / "langgraph_mcp"
STAMP = ".bench-built"


def _hash(*files: Path) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _built(folder: Path, digest: str) -> bool:
    stamp = folder / STAMP
    return stamp.is_file() and stamp.read_text() == digest


def _run(argv: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{what} failed ({' '.join(argv)}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@contextmanager
def _alone(folder: Path) -> Iterator[None]:
    """One build of ``folder`` at a time, across pytest-xdist's workers (the others wait, then find it built)."""
    with open(folder / ".bench-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def typescript_agent() -> str:
    """``node dist/agent.js``, built from package-lock.json and agent.ts when they changed (npm's cache warm after)."""
    for tool in ("node", "npm"):
        assert shutil.which(tool), f"{tool} is needed for the TypeScript example agent: install Node.js 20"
    digest = _hash(TS / "package-lock.json", TS / "agent.ts", TS / "tsconfig.json")
    with _alone(TS):
        if not _built(TS / "node_modules", digest) or not (TS / "dist" / "agent.js").is_file():
            _run(["npm", "ci", "--no-audit", "--no-fund"], TS, "npm ci for the TypeScript example")
            _run(["npm", "run", "build"], TS, "building the TypeScript example")
            (TS / "node_modules" / STAMP).write_text(digest)
    return f"node {TS / 'dist' / 'agent.js'}"


def langgraph_agent() -> str:
    """The LangGraph example in its own environment (langchain-mcp-adapters needs mcp<2), made when its requirements
    changed."""
    venv = LANGGRAPH / ".venv"
    digest = _hash(LANGGRAPH / "requirements.txt")
    with _alone(LANGGRAPH):
        if not _built(venv, digest):
            shutil.rmtree(venv, ignore_errors=True)
            _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], LANGGRAPH, "making the example's venv")
            _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "-r",
                  "requirements.txt"], LANGGRAPH, "installing the LangGraph example's requirements")  # fmt: skip
            (venv / STAMP).write_text(digest)
    return f"{venv / 'bin' / 'python'} {LANGGRAPH / 'agent.py'}"


def python_agent(name: str) -> str:
    return f"{sys.executable} {EXAMPLES / name}"
