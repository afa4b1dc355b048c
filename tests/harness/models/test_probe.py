"""``bench probe`` prints what an endpoint supports.

Against the OpenAI emulation (fast) and the bundled llama.cpp server.
"""

from __future__ import annotations

import pytest

from tests.helpers.bench import bench_process as bench
from tests.helpers.provider_servers import ProviderServer

KEY = "sk-proj-PROBETEST-77aa88bb99"


def rows(stdout: str) -> dict[str, str]:
    table = {}
    for line in stdout.splitlines():
        parts = line.split("  ")
        parts = [p.strip() for p in parts if p.strip()]
        if len(parts) >= 2:
            table[parts[0]] = parts[1]
    return table


def test_probe_reports_what_a_reasoning_model_refuses():
    with ProviderServer("openai") as server:
        result = bench(
            "probe",
            "--provider",
            "openai",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "o3-mini", "LLM_API_KEY": KEY},
        )
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert table["max_tokens"] == "refused" and table["max_completion_tokens"] == "yes"
    assert table["temperature 0.7 (not the default)"] == "refused"
    assert table["response_format json_schema"] == "yes" and table["response_format json_schema, strict"] == "yes"
    assert table["json_schema with a root anyOf (not portable)"] == "refused"
    assert "reasoning 12, cached 64" in result.stdout and KEY not in result.stdout + result.stderr


def test_probe_without_the_environment_is_one_line():
    result = bench("probe")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.local_model
def test_probe_against_the_bundled_llama_cpp_server():
    result = bench("probe", "--local-model")
    assert result.returncode == 0, result.stderr
    table = rows(result.stdout)
    assert "provider llamacpp" in result.stdout
    assert table["chat completions (plain)"] == "yes"
    assert table["json_object with a schema (llama.cpp grammar)"] == "yes"
