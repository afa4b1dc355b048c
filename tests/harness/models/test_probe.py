"""``bench probe`` prints what an endpoint supports: "yes" only where the reply shows the capability at work.

Against the OpenAI emulation (fast), a llama.cpp emulation that ignores ``max_completion_tokens``, an
endpoint that accepts every parameter and honours none, and the bundled llama.cpp server.
"""

from __future__ import annotations

import pytest

from harness.models.probe import TOKEN_SLACK, judge_token_limit
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


@pytest.mark.slow
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


def probe_table(rules: str, provider: str, model: str = "m") -> tuple[dict[str, str], str]:
    with ProviderServer(rules) as server:
        result = bench(
            "probe",
            "--provider",
            provider,
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": model, "LLM_API_KEY": KEY},
        )
    assert result.returncode == 0, result.stderr
    return rows(result.stdout), result.stdout


@pytest.mark.slow
def test_a_token_parameter_llama_cpp_accepts_and_ignores_is_reported_ignored_not_yes():
    table, stdout = probe_table("llamacpp", "llamacpp")
    assert table["max_tokens"] == "yes" and table["max_completion_tokens"] == "ignored"
    assert "asked for at most 16 tokens with max_completion_tokens, got 113" in stdout
    assert table["json_object with a schema (llama.cpp grammar)"] == "yes"


@pytest.mark.slow
def test_an_endpoint_that_accepts_everything_and_honours_nothing_gets_no_yes_but_for_answering():
    table, stdout = probe_table("ignoring", "generic")
    assert table["chat completions (plain)"] == "yes"  # it does answer
    assert table["max_tokens"] == table["max_completion_tokens"] == "ignored"
    assert table["seed"] == "ignored" and "two different replies to one seed" in stdout
    assert table["temperature 0.7 (not the default)"] == "accepted, not checked"  # one reply cannot show it
    for form in (
        "response_format json_schema",
        "response_format json_schema, strict",
        "json_schema with a root anyOf (not portable)",
        "response_format json_object",
        "json_object with a schema (llama.cpp grammar)",
    ):
        assert table[form] == "accepted, reply did not fit", form
    assert table['thinking off (thinking={"type": "disabled"})'] == "ignored"


@pytest.mark.parametrize(
    ("usage", "finish", "verdict"),
    [
        ({"completion_tokens": 16}, "length", "yes"),
        ({"completion_tokens": 16 + TOKEN_SLACK}, "length", "yes"),  # the stop token counted: within the slack
        ({"completion_tokens": 17 + TOKEN_SLACK}, "length", "ignored"),
        ({"completion_tokens": 113}, "stop", "ignored"),
        ({"completion_tokens": 40, "completion_tokens_details": {"reasoning_tokens": 30}}, "length", "yes"),
        ({"completion_tokens": 5}, "stop", "accepted, not checked"),  # ended on its own: nothing shown
        (None, "length", "yes"),
        (None, "stop", "accepted, not checked"),
    ],
)
def test_a_token_limit_is_honoured_only_when_the_reply_stopped_at_it(usage, finish, verdict):
    body = {"choices": [{"message": {"content": "1 2 3"}, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": 9, **usage}
    got, _ = judge_token_limit("max_tokens")(body, "1 2 3")
    assert got == verdict


def test_a_long_reply_with_no_usage_shows_an_ignored_limit():
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}
    got, detail = judge_token_limit("max_tokens")(body, "1\n" * 200)
    assert got == "ignored" and "400 characters" in detail
