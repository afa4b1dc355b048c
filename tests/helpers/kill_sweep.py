"""A driver for sweeping kill points: bench commands run, one after another, each in a fresh child forked from here.

Run as ``python -m tests.helpers.kill_sweep``: it imports bench once, then reads one job a line from stdin (JSON:
``{"commands": [[arg, ...], ...], "kill_after": N, "env": {...}}``; ``env`` goes into each command's
environment) and answers one line a job on stdout with each command's exit code (negative: the signal that
ended it), stdout and stderr. Every command is the real entry point (``harness.cli.app.main``) in its own
child process, forked from this one so that it starts in milliseconds, not in the second an interpreter takes
to import bench; the first command of a job runs with ``BENCH_KILL_AFTER_WRITES=N``
(harness/records/write_faults.py), so it SIGKILLs itself after its Nth write. This process has no threads:
forking it is safe.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

import httpx  # noqa: F401

# imported once here, so that each forked command starts warm (a live model's client too)
import harness.matrix.commands.resume
import harness.matrix.pipeline.driver
import harness.models.live
import harness.models.setup  # noqa: F401
import modes  # noqa: F401
from harness.cli.app import main
from harness.records.write_faults import KILL_AFTER_WRITES


def run_forked(args: list[str], kill_after: int | None, env: dict[str, str]) -> dict[str, Any]:
    """One bench command in a forked child: its exit code (negative: killed by that signal), stdout, stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
                sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
                os.environ.update(env)
                if kill_after is not None:
                    os.environ[KILL_AFTER_WRITES] = str(kill_after)
                sys.argv = ["bench", *args]
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            except BaseException:  # a traceback is what the sweep must never see: it goes to stderr
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"code": code, "out": out.read().decode(errors="replace"), "err": err.read().decode(errors="replace")}


def serve() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        results = []
        for index, args in enumerate(job["commands"]):
            results.append(run_forked(args, job["kill_after"] if index == 0 else None, job.get("env", {})))
        sys.stdout.write(json.dumps(results) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
