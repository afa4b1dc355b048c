"""Where a live model's endpoint comes from: ./.env fills in what the environment leaves unset (the environment
wins), live:NAME asks the endpoint for NAME, and bench.toml may give a named model its own endpoint."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.matrix.pipeline.driver import plan
from harness.matrix.pipeline.spec import RunSpec
from harness.models.dotenv import read_dotenv, working_environment
from tests.helpers.bench import SCENARIOS

DOTENV = """\
# a comment, then a blank line

LLM_API_URL=http://127.0.0.1:8001/v1
export LLM_MODEL = "from-dotenv"   # an exported, quoted value with a comment
LLM_API_KEY='sk-dotenv # not a comment'
OTHER_KEY=plain value  # trailing comment
EMPTY=
"""


def test_a_dotenv_file_reads_values_comments_quotes_and_export(tmp_path):
    (tmp_path / ".env").write_text(DOTENV)
    assert read_dotenv(tmp_path / ".env") == {
        "LLM_API_URL": "http://127.0.0.1:8001/v1",
        "LLM_MODEL": "from-dotenv",
        "LLM_API_KEY": "sk-dotenv # not a comment",
        "OTHER_KEY": "plain value",
        "EMPTY": "",
    }


def test_no_dotenv_file_is_no_settings(tmp_path):
    assert read_dotenv(tmp_path / ".env") == {}


@pytest.mark.parametrize("bad", ["just words", "LLM_MODEL='unclosed", "1KEY=x", "KEY='a' trailing"])
def test_a_bad_line_is_one_error_naming_the_file_and_the_line(tmp_path, bad):
    (tmp_path / ".env").write_text(f"# fine\nLLM_MODEL=x\n{bad}\n")
    with pytest.raises(UserInputError) as caught:
        read_dotenv(tmp_path / ".env")
    assert str(caught.value) == f"{tmp_path / '.env'}: line 3: expected KEY=VALUE (a quoted value closes its quote)"


def test_the_real_environment_wins_over_the_dotenv_file(tmp_path):
    (tmp_path / ".env").write_text(DOTENV)
    env = working_environment(tmp_path, {"LLM_MODEL": "from-shell"})
    assert env["LLM_MODEL"] == "from-shell" and env["LLM_API_URL"] == "http://127.0.0.1:8001/v1"


def test_a_live_model_reads_its_endpoint_from_dotenv(tmp_path):
    (tmp_path / ".env").write_text(DOTENV)
    spec = RunSpec.build(model="live", env=working_environment(tmp_path, {}))
    assert spec.endpoint is not None
    assert (spec.endpoint.url, spec.endpoint.model, spec.endpoint.api_key) == (
        "http://127.0.0.1:8001/v1",
        "from-dotenv",
        "sk-dotenv # not a comment",
    )


def test_live_name_asks_the_endpoint_for_that_model_and_needs_no_llm_model(tmp_path):
    env = {"LLM_API_URL": "http://127.0.0.1:8001/v1", "LLM_API_KEY": "sk-x"}
    spec = RunSpec.build(model="live:qwen2.5-7b", env=env)
    endpoint = spec.endpoint_for(spec.model)
    assert endpoint is not None and (endpoint.url, endpoint.model) == ("http://127.0.0.1:8001/v1", "qwen2.5-7b")
    assert spec.model.describe() == "live:qwen2.5-7b"
    assert plan(spec.model_copy(update={"scenarios": ("blog_brief_approval",)}), SCENARIOS).labels == ("qwen2.5-7b",)


def test_two_named_live_models_share_the_endpoint_each_with_its_own_name():
    env = {"LLM_API_URL": "http://127.0.0.1:8001/v1", "LLM_API_KEY": "sk-x", "LLM_MODEL": "unused"}
    spec = RunSpec.build(model=["live:a", "live:b", "live"], env=env)
    assert [spec.endpoint_for(c).model for c in spec.models] == ["a", "b", "unused"]  # type: ignore[union-attr]


def test_live_name_without_an_endpoint_names_what_is_missing():
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(model="live:qwen", env={"LLM_API_KEY": "sk-x"})
    assert str(caught.value).startswith("--model live:qwen needs LLM_API_URL and LLM_API_KEY")
    assert "missing: LLM_API_URL" in str(caught.value)


def test_bench_toml_gives_a_named_model_its_own_endpoint_and_key_variable(tmp_path, monkeypatch):
    (tmp_path / "bench.toml").write_text(
        '[models."gpt-4o-mini"]\nurl = "https://api.example.com/v1"\napi_key_env = "EXAMPLE_KEY"\n'
    )
    monkeypatch.chdir(tmp_path)
    spec = RunSpec.build(model=["live:gpt-4o-mini"], env={"EXAMPLE_KEY": "sk-example"})
    endpoint = spec.endpoint_for(spec.model)
    assert endpoint is not None
    assert (endpoint.url, endpoint.model, endpoint.api_key) == (
        "https://api.example.com/v1",
        "gpt-4o-mini",
        "sk-example",
    )


def test_bench_toml_naming_an_unset_key_variable_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "bench.toml").write_text('[models.m]\nurl = "https://api.example.com/v1"\napi_key_env = "NOPE"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserInputError, match=r"bench.toml: models.m: NOPE \(api_key_env\) is not set"):
        RunSpec.build(model="live:m", env={})


PASTED = "sk-proj-Q7w9E2r4T6y8U1i3O5p7A9s2D4f6"


@pytest.mark.parametrize(
    "toml",
    [
        f'[models.m]\nurl = "https://api.example.com/v1"\napi_key_env = "{PASTED}"\n',  # the key where its name goes
        f'[models.m]\nurl = "https://api.example.com/v1"\n"{PASTED}" = "x"\n',  # the key as a key name
        f'[models.m]\nurl = "https://api.example.com/v1"\n{PASTED} = true\n',  # the same, bare
    ],
)
def test_a_key_pasted_where_bench_toml_expects_a_name_is_refused_without_being_shown(tmp_path, monkeypatch, toml):
    (tmp_path / "bench.toml").write_text(toml)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(model="live:m", env={})
    line = str(caught.value)
    assert "bench.toml: models.m: " in line and "not shown" in line, line
    assert PASTED[:8] not in line and PASTED[-8:] not in line and "\n" not in line


def test_api_key_env_holding_a_key_says_it_must_name_a_variable(tmp_path, monkeypatch):
    (tmp_path / "bench.toml").write_text(f'[models.m]\nurl = "https://api.example.com/v1"\napi_key_env = "{PASTED}"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserInputError) as caught:
        RunSpec.build(model="live:m", env={})
    assert str(caught.value).endswith(
        "api_key_env must name an environment variable; the value given looks like a key and is not shown"
    )


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "LLM_API_KEY", "my_key", "GROQ_KEY_2"])
def test_a_variable_name_does_not_look_like_a_key(name):
    from harness.models.scrub import looks_like_key

    assert not looks_like_key(name)
    assert looks_like_key(PASTED) and looks_like_key("a1b2c3d4e5f6a7b8c9d0e1f2")
