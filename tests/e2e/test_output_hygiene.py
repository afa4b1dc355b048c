"""Text from a model, an endpoint or a file never reaches the terminal raw: escape sequences (an OSC title change,
an 8-bit CSI), bidirectional overrides and line breaks in it are shown escaped, on stdout and stderr alike, for
``bench run``'s notes and table, ``bench replay``'s divergence lines, error messages and ``bench resume``'s line."""

from __future__ import annotations

import io
import json
import re
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.cli.app import main
from harness.matrix.commands.trace_diff import Divergence
from harness.models.dead_endpoint import is_preflight
from tests.helpers.bench import SCENARIOS, bench_main

# An OSC title change, a colour through the 8-bit CSI, a right-to-left override, a forged next line.
EVIL = "\x1b]0;owned\x07 \x9b31m red \u202e reversed\nerror: forged line\r"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> bool:
    """No control character but newline and tab, no bidi or line-separator character."""
    return RAW.search(text) is None


class EvilEndpoint:
    """Refuses the first request about response_format in words carrying escapes, then answers create_brief with
    arguments carrying them."""

    def __init__(self) -> None:
        self.requests = 0
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                if is_preflight(body):  # the live matrix's first request: the script starts after it
                    self._send(200, {"choices": [{"message": {"content": "ok"}}], "usage": {}})
                    return
                with endpoint._lock:
                    endpoint.requests += 1
                    first = endpoint.requests == 1
                if first:
                    self._send(400, {"error": {"message": f"response_format json_schema is not supported {EVIL}"}})
                    return
                step = {"step": {"action": "create_brief", "args": {"topic": EVIL, "audience": EVIL}}}
                self._send(200, {"choices": [{"message": {"content": json.dumps(step)}}], "usage": {}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> EvilEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture(scope="module")
def evil_run(tmp_path_factory) -> tuple[Path, str, str]:
    """A live run whose endpoint words, model label and model answers all carry escapes; its folder and output."""
    folder = tmp_path_factory.mktemp("evil") / "run"
    monkeypatch = pytest.MonkeyPatch()
    capsys_out: dict[str, str] = {}
    with EvilEndpoint() as endpoint:
        for name, value in {
            "LLM_API_URL": endpoint.base_url,
            "LLM_MODEL": "model\x1b]0;label\x07",
            "LLM_API_KEY": "sk-hygiene-test-0000",
        }.items():
            monkeypatch.setenv(name, value)
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(
            sys,
            "argv",
            [
                "bench",
                "run",
                "--live",
                "--mode",
                "react,workflow",
                "--scenario",
                "blog_brief_approval",
                "--retries",
                "0",
                "--out",
                str(folder),
            ],
        )
        with redirect_stdout(out), redirect_stderr(err), pytest.raises(SystemExit) as stopped:
            main()
        capsys_out["out"], capsys_out["err"] = out.getvalue(), err.getvalue()
    monkeypatch.undo()
    assert stopped.value.code == 0, capsys_out["err"]
    return folder, capsys_out["out"], capsys_out["err"]


def test_a_live_run_prints_endpoint_and_model_text_escaped(evil_run):
    folder, out, err = evil_run
    assert "note: adapted response_format" in err or "response_format" in err, err
    assert "\\x1b]0;owned\\x07" in err  # the endpoint's words are shown, escaped
    assert clean(out) and clean(err), (out, err)
    assert not any(line.startswith("error: forged line") for line in err.splitlines())
    trace = (folder / "traces.jsonl").read_text()
    assert "\\u001b]0;owned" in trace  # the trace keeps the model's text exactly (JSON-escaped)


def test_replay_divergence_lines_show_model_text_escaped(evil_run, tmp_path, monkeypatch, capsys):
    folder, _, _ = evil_run
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for name in ("manifest.json", "recording.jsonl"):
        (tampered / name).write_bytes((folder / name).read_bytes())
    lines = []
    for line in (folder / "traces.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["kind"] == "action" and event["action"] == "create_brief":
            event["result"] = f"committed {EVIL}"  # what a tampered recording could claim
        lines.append(json.dumps(event))
    (tampered / "traces.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = bench_main(monkeypatch, capsys, "replay", str(tampered), "--out", str(tmp_path / "o"))
    assert code == 1, err
    assert "differs in result" in out and "\\x1b]0;owned\\x07" in out, out
    assert clean(out) and clean(err), (out, err)
    assert not any(line.startswith("error: forged line") for line in out.splitlines())


def test_a_divergence_is_three_lines_whatever_it_quotes():
    divergence = Divergence(("s", "m", 1), 3, ("args",), f"action args={EVIL}", f"action result={EVIL}")
    text = divergence.describe()
    assert len(text.splitlines()) == 3 and clean(text)


def test_an_error_quoting_file_text_is_one_clean_line(tmp_path, monkeypatch, capsys):
    text = (SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8")
    bad = json.dumps(f"write_draft{EVIL}")  # a YAML double-quoted string is JSON-compatible
    folder = tmp_path / "scenarios"
    folder.mkdir()
    target = "    - {id: draft, type: model_step, action: write_draft, next: done}"
    assert target in text
    (folder / "blog_brief_approval.yaml").write_text(text.replace(target, target.replace("write_draft", bad)))
    code, _, err = bench_main(monkeypatch, capsys, "list", "--scenarios-dir", str(folder))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown action" in err and "\\x1b]0;owned" in err and clean(err), err


def test_bench_resume_and_usage_errors_show_user_text_escaped(evil_run, monkeypatch, capsys):
    folder, _, _ = evil_run
    code, out, err = bench_main(monkeypatch, capsys, "resume", str(folder), "--run", f"x{EVIL}", "--approve")
    assert code == 2 and len(err.strip().splitlines()) == 1 and clean(err), err
    code, out, err = bench_main(monkeypatch, capsys, "run", f"--no-such-flag{EVIL}")
    assert code == 2 and clean(err) and clean(out), err
