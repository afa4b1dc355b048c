"""One signal stops one long run, not only a matrix between runs: while the model is asked (a request that never
comes back) and while the run is stepping (a slow endpoint, a scenario with a thousand steps). bench exits 130
after SIGINT and 143 after SIGTERM, the run's summary says ``interrupted``, and no process is left behind."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.models.dead_endpoint import is_preflight
from harness.records.trace import TraceEvent
from harness.scenario.model import MAX_STEPS
from tests.helpers.bench import SCENARIOS, bench_child, wait_for
from tests.helpers.fault_server import FaultServer
from tests.helpers.sweeps import sample

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
IDS = ["SIGINT", "SIGTERM"]


class SilentServer:
    """Takes every request and answers none until the test releases it: a model call that never returns."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # /models: nothing to tell
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                if is_preflight(body):  # the live matrix's first request is answered: runs start after it
                    data = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                server.asked.set()
                server.release.wait()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def env(url: str) -> dict[str, str]:
    return {"LLM_API_URL": url, "LLM_MODEL": "slow-model", "LLM_API_KEY": "sk-interrupt-test-0000"}


def events(out: Path) -> list[TraceEvent]:
    return [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]


@contextmanager
def stopped_by(signum: int, *args: str, url: str, ready) -> Iterator[tuple[int, str]]:
    """Starts bench, waits for ``ready``, sends ``signum`` once; yields the exit code and stderr."""
    with bench_child(*args, env=env(url)) as process:
        ready(process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)  # a bound so a hang fails the test instead of blocking it
        group_gone = _group_gone(process.pid)
        yield process.returncode, stderr
        assert group_gone, "a process of bench's group outlived it"


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def check_interrupted(out: Path, code: int, expected: int, stderr: str) -> TraceEvent:
    assert code == expected, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr, stderr
    trace = events(out)
    assert {e.run_id for e in trace} == {trace[0].run_id}  # one run
    assert [e.seq for e in trace] == list(range(len(trace)))
    summary = trace[-1]
    assert summary.kind == "summary" and sum(e.kind == "summary" for e in trace) == 1
    assert summary.outcome is not None and summary.outcome.status == "interrupted"
    assert summary.outcome.stop_verdict == "infrastructure"  # never judged
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["runs"] == 0 and manifest["end_time"]
    return summary


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "expected"), SIGNALS, ids=IDS)
def test_a_signal_during_a_model_call_that_never_returns_ends_the_run(tmp_path, signum, expected):
    out = tmp_path / "run"
    args = (
        "run",
        "--live",
        "--mode",
        "react",
        "--scenario",
        "blog_brief_approval",
        "--timeout",
        "600",
        "--retries",
        "0",
        "--out",
        str(out),
    )
    with SilentServer() as server:

        def ready(process) -> None:
            assert server.asked.wait(timeout=60), "bench never asked the model"

        with stopped_by(signum, *args, url=server.base_url, ready=ready) as (code, stderr):
            summary = check_interrupted(out, code, expected, stderr)
    assert summary.outcome is not None and summary.outcome.llm_calls == 0  # the pending call was cancelled


def long_scenario(folder: Path) -> None:
    """blog_brief_approval allowed the most steps there are: react repeats its first action until the limit."""
    text = (SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8")
    assert "max_steps: 4 " in text
    folder.mkdir()
    (folder / "blog_brief_approval.yaml").write_text(text.replace("max_steps: 4 ", f"max_steps: {MAX_STEPS} ", 1))


@pytest.mark.parametrize(("signum", "expected"), sample(SIGNALS, 1, seed=0), ids=sample(IDS, 1, seed=0))  # both in CI
def test_a_signal_while_one_long_run_steps_ends_it_at_its_next_event(tmp_path, signum, expected):
    out, scenarios = tmp_path / "run", tmp_path / "scenarios"
    long_scenario(scenarios)
    args = (
        "run",
        "--live",
        "--mode",
        "react",
        "--scenario",
        "blog_brief_approval",
        "--scenarios-dir",
        str(scenarios),
        "--timeout",
        "30",
        "--retries",
        "0",
        "--out",
        str(out),
    )
    exchanges = out / "recording.jsonl"  # written call by call; a run's trace lines go out whole when it ends

    def stepping(process) -> None:
        def calls() -> int:
            return exchanges.read_bytes().count(b"\n") if exchanges.exists() else 0

        wait_for(lambda: calls() >= 5 or process.poll() is not None, what="the run's first steps")
        assert process.poll() is None, process.stderr.read()

    # Every answer is the first offered action, a little slowly: the run would take MAX_STEPS of them.
    with (
        FaultServer(["ok"], delay_s=0.02) as server,
        stopped_by(signum, *args, url=server.base_url, ready=stepping) as (code, stderr),
    ):
        summary = check_interrupted(out, code, expected, stderr)
    assert summary.outcome is not None and 5 <= summary.outcome.llm_calls < MAX_STEPS
    assert sum(server.served.values()) < MAX_STEPS
