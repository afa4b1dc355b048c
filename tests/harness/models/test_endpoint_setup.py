"""What the user puts in LLM_API_URL, --provider and --strict-schema.

Each is checked with one line, and chosen from the providers' documented rules.
"""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.models.capabilities import capability_change, initial_settings
from harness.models.endpoint import chat_completions_url, public_url
from harness.models.providers import PROFILES, detect
from harness.models.strict import argument_problems, drop_nulls, make_strict
from tests.helpers.bench import bench_in_process as bench


@pytest.mark.parametrize(
    "given, expected",
    [
        (
            "https://res.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
            "https://res.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
        ),
        ("http://127.0.0.1:8000/v1/?token=abc", "http://127.0.0.1:8000/v1/chat/completions?token=abc"),
        ("http://127.0.0.1:8000/v1/chat/completions?x=1", "http://127.0.0.1:8000/v1/chat/completions?x=1"),
    ],
)
def test_a_query_string_stays_after_the_inserted_path(given, expected):
    assert chat_completions_url(given) == expected


def test_the_manifest_url_keeps_settings_and_hides_other_query_values():
    assert (
        public_url("https://h/v1/chat/completions?api-version=1&token=s3cret")
        == "https://h/v1/chat/completions?api-version=1&token=[redacted]"
    )


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://user:hunter2@127.0.0.1:8000/v1", "must not carry credentials"),
        ("http://", "has no host"),
        ("http://127.0.0.1:99999/v1", "invalid port"),
        ("http://127.0.0.1:abc/v1", "invalid port"),
        ("ftp://127.0.0.1/v1", "must start with http"),
        ("http://127.0.0.1/v1#frag", "fragment"),
    ],
)
def test_a_malformed_url_is_one_line_and_exit_2(tmp_path, url, words):
    with pytest.raises(UserInputError, match=words):
        chat_completions_url(url)
    result = bench(
        "run",
        "--live",
        "--out",
        str(tmp_path / "run"),
        env={"LLM_API_URL": url, "LLM_MODEL": "m", "LLM_API_KEY": "sk-ABCDEFGHIJKLMNOP"},
    )
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert words in line and "hunter2" not in line and "ABCDEFGH" not in line
    assert not (tmp_path / "run").exists()


def test_auto_detection_reads_the_host_then_models_then_guesses():
    assert detect("https://api.openai.com/v1/chat/completions").profile.name == "openai"
    assert detect("https://x.openai.azure.com/openai/deployments/d/chat/completions").profile.name == "azure"
    assert detect("https://dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions").profile.name == "dashscope"
    assert detect("https://generativelanguage.googleapis.com/v1beta/openai/chat/completions").profile.name == "gemini"
    vllm = detect("http://10.0.0.1:8000/v1/chat/completions", {"data": [{"id": "m", "owned_by": "vllm"}]})
    assert vllm.profile.name == "vllm" and not vllm.guessed
    guess = detect("http://127.0.0.1:11434/v1/chat/completions")
    assert guess.profile.name == "ollama" and guess.guessed and "guessed" in guess.how
    assert detect("http://127.0.0.1:1234/v1/chat/completions").profile.name == "generic"


def test_a_reasoning_model_starts_with_its_token_parameter_and_default_temperature():
    settings = initial_settings(PROFILES["openai"], "o3-mini", None, False)
    assert settings.token_param == "max_completion_tokens" and settings.temperature is False
    assert initial_settings(PROFILES["openai"], "gpt-4o", None, False).temperature is True
    assert initial_settings(PROFILES["deepseek"], "deepseek-chat", None, True).strict is False  # json_object: no strict


@pytest.mark.parametrize(
    "status, text",
    [
        (400, '{"error": {"message": "This model\'s maximum context length is 4096 tokens.", "param": "messages"}}'),
        (400, '{"error": {"message": "Invalid API key"}}'),
        (404, '{"error": {"message": "The model `x` does not exist"}}'),
        (
            400,
            '{"error": {"message": "max_tokens is too large: 100000. '
            'This model supports at most 4096 completion tokens"}}',
        ),
    ],
)
def test_a_400_that_is_not_about_a_capability_is_not_adapted(status, text):
    settings = initial_settings(PROFILES["generic"], "m", None, False)
    assert capability_change(settings, {"temperature": 0.7, "max_tokens": 5, "seed": 1}, status, text) is None


def test_the_format_steps_down_one_level_at_a_time():
    settings = initial_settings(PROFILES["openai"], "gpt-4o", None, True)
    text = "Invalid schema for response_format 'x': In context=(), 'minLength' is not permitted."
    steps = []
    for _ in range(4):
        change = capability_change(settings, {}, 400, text)
        if change is None:
            break
        settings, _what, before, _after = change
        steps.append(before)
    assert steps == ["json_schema strict", "json_schema", "json_object"]


def test_strict_mode_makes_optional_properties_nullable_and_names_what_cannot_be_strict():
    schema = {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "minLength": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "meta": {"type": "object", "additionalProperties": True},
        },
        "required": ["topic"],
    }
    strict, problems = make_strict(schema)
    assert strict["required"] == ["topic", "tags", "meta"] and strict["additionalProperties"] is False
    assert strict["properties"]["tags"]["type"] == ["array", "null"]
    assert (
        "minLength" not in strict["properties"]["topic"]
        and "minLength: 1" in strict["properties"]["topic"]["description"]
    )
    assert problems == ["properties.meta: additionalProperties true (a free-form map) cannot be strict"]
    lines = argument_problems([("blog", "create_brief", schema)])
    assert lines == [
        "scenario blog, action create_brief: args.properties.meta: additionalProperties true "
        "(a free-form map) cannot be strict"
    ]
    # The strict reply's null for an optional property reads as "absent" again.
    assert drop_nulls({"topic": "x", "tags": None, "meta": None}, schema) == {"topic": "x"}


@pytest.mark.slow
def test_provider_and_strict_flags_are_live_only_and_checked(tmp_path):
    env = {"LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": "sk-ABCDEFGHIJKLMNOP"}
    for args, words in (
        (["--provider", "openai"], "--provider applies to live models only"),
        (["--strict-schema"], "--strict-schema applies to live models only"),
        (["--live", "--provider", "bedrock"], "'--provider': 'bedrock' is not one of 'auto', 'openai'"),
        (
            ["--live", "--max-response-bytes", "10"],
            "--max-response-bytes: Input should be greater than or equal to 1024",
        ),
    ):
        result = bench("run", *args, "--out", str(tmp_path / "run"), env=env)
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert words in line
