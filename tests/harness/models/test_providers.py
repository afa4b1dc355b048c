"""Whole matrices against local emulations of OpenAI, DeepSeek, Ollama and DashScope: after the capability
fallback no run ends in ``http_4xx``, every request body has an object root, and the manifest names what was adapted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.records.trace import TraceEvent
from harness.scenario.load import scenario_files
from modes import select_modes
from tests.helpers.bench import SCENARIOS
from tests.helpers.bench import bench_in_process as bench
from tests.helpers.provider_servers import ProviderServer
from tests.helpers.sweeps import sample

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters
# The whole library in CI (every story's argument schemas reach each provider's rules); a fixed sample of 8 in the
# quick suite (tests/helpers/sweeps.py)
STORIES = sample(sorted(path.stem for path in scenario_files(SCENARIOS)), 8, seed=33)

KEY = "sk-proj-PROVIDERTEST-0a1b2c3d4e"
FAST = ("--timeout", "10", "--retries", "0", "--backoff", "0")


def run_all(
    server: ProviderServer,
    out: Path,
    model: str,
    *args: str,
    key: str = KEY,
    mode: str = "all",
    scenario: str = ",".join(STORIES),
):
    env = {"LLM_API_URL": server.base_url, "LLM_MODEL": model, "LLM_API_KEY": key}
    return bench("run", "--live", "--mode", mode, "--scenario", scenario, "--out", str(out), *FAST, *args, env=env)


def trace(out: Path) -> list[TraceEvent]:
    return [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]


def summaries(out: Path) -> list[TraceEvent]:
    return [e for e in trace(out) if e.kind == "summary"]


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())["live"]  # what a live run says about its endpoint


def assert_no_http_4xx(out: Path) -> None:
    runs = summaries(out)
    assert len(runs) == len(STORIES) * len(BUILT_IN)  # every story of the sweep x every mode
    # A refusal that was adapted to is a retried attempt (model_retry); no run may END in one.
    ended = Counter(e.error.kind for e in trace(out) if e.kind == "error")
    assert "http_4xx" not in ended, ended
    assert not [s for s in runs if s.outcome.stop_verdict == "infrastructure"]


def schema_roots(bodies: list[dict]) -> set:
    return {
        json.dumps(
            {k: v for k, v in b["response_format"]["json_schema"]["schema"].items() if k in ("type", "anyOf")},
            sort_keys=True,
        )
        for b in bodies
        if (b.get("response_format") or {}).get("type") == "json_schema"
    }


def test_openai_rules_accept_every_request_with_an_object_root(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("openai") as server:
        result = run_all(server, out, "gpt-4o-mini", "--provider", "openai")
    assert result.returncode == 0, result.stderr
    assert server.refusals == []
    assert_no_http_4xx(out)
    assert schema_roots(server.bodies) == {'{"type": "object"}'}
    assert all("max_completion_tokens" in b and "max_tokens" not in b for b in server.bodies)
    calls = [e for e in trace(out) if e.kind == "model_call"]
    assert calls and all(e.usage.cached_tokens == 64 and e.usage.prompt_tokens == 100 for e in calls)
    assert manifest(out)["adaptations"] == [] and manifest(out)["provider"]["name"] == "openai"


@pytest.mark.slow
def test_a_reasoning_model_behind_generic_settings_adapts_once_and_says_so(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("openai") as server:
        result = run_all(server, out, "o3-mini", "--provider", "generic", "--no-thinking", "--concurrency", "4")
    assert result.returncode == 0, result.stderr
    assert_no_http_4xx(out)
    adapted = {(a["what"], a["before"], a["after"]) for a in manifest(out)["adaptations"]}
    assert ("token_param", "max_tokens", "max_completion_tokens") in adapted
    assert ("temperature", "0.7", "the endpoint's default temperature") in adapted
    assert ("parameter", "thinking", "no thinking") in adapted
    assert len(manifest(out)["adaptations"]) == 3  # once per matrix, not once per run
    # Each refusal was answered by a retry that the trace shows; every later request went out adapted.
    retries = [e for e in trace(out) if e.kind == "model_retry"]
    assert retries and all("HTTP 400" in e.error.message for e in retries)
    # At most one refusal per adaptation for each request in flight (concurrency 4); once per run would be 120.
    assert len(server.refusals) <= 3 * 4
    assert len(server.accepted) >= 40
    for body in server.accepted:
        assert "max_tokens" not in body and "temperature" not in body and "thinking" not in body
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: the endpoint refused")]
    assert len(notes) == 3
    calls = [e for e in trace(out) if e.kind == "model_call"]
    assert all(e.usage.reasoning_tokens == 12 for e in calls)


@pytest.mark.slow
def test_strict_mode_sends_the_strict_subset_the_openai_rules_accept(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("openai") as server:
        result = run_all(server, out, "gpt-4o-mini", "--provider", "openai", "--strict-schema")
    assert result.returncode == 0, result.stderr
    assert server.refusals == []
    assert_no_http_4xx(out)
    strict = [b for b in server.bodies if b["response_format"]["json_schema"].get("strict") is True]
    assert len(strict) == len(server.bodies)
    assert manifest(out)["strict_schema_problems"] == []  # every shipped scenario argument can be strict


@pytest.mark.slow
def test_deepseek_rules_fall_back_to_json_object_and_the_runs_complete(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("deepseek") as server:
        result = run_all(server, out, "deepseek-reasoner", "--provider", "generic")
    assert result.returncode == 0, result.stderr
    assert_no_http_4xx(out)
    adaptations = manifest(out)["adaptations"]
    assert [(a["what"], a["before"], a["after"]) for a in adaptations] == [
        ("response_format", "json_schema", "json_object")
    ]
    assert "unavailable" in adaptations[0]["because"]
    assert "note: the endpoint refused response_format json_schema" in result.stderr
    assert len(server.refusals) == 1
    ended = {e.error.kind for e in trace(out) if e.kind == "error"}
    assert ended <= {"workflow", "parse", "schema"}  # what the model's answers led to, never the endpoint
    calls = [e for e in trace(out) if e.kind == "model_call"]
    assert all(e.usage.cached_tokens == 48 and e.usage.reasoning_tokens == 9 for e in calls)


@pytest.mark.slow
def test_deepseek_profile_asks_for_json_object_from_the_start(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("deepseek") as server:
        result = run_all(server, out, "deepseek-chat")  # auto: /models says owned_by deepseek
    assert result.returncode == 0, result.stderr
    assert server.refusals == [] and manifest(out)["adaptations"] == []
    assert manifest(out)["provider"]["name"] == "deepseek" and "/models" in manifest(out)["provider"]["chosen"]
    assert {b["response_format"]["type"] for b in server.bodies} == {"json_object"}
    assert_no_http_4xx(out)


@pytest.mark.slow
def test_ollama_is_recognised_from_models_and_its_format_accepts_every_request(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("ollama") as server:
        result = run_all(server, out, "qwen3:8b", "--no-thinking")
    assert result.returncode == 0, result.stderr
    assert manifest(out)["provider"]["name"] == "ollama"
    assert server.refusals == [] and schema_roots(server.bodies) == {'{"type": "object"}'}
    assert all(b.get("reasoning_effort") == "none" for b in server.bodies)
    assert_no_http_4xx(out)


@pytest.mark.slow
def test_dashscope_reasoning_content_and_thinking_switch(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("dashscope") as server:
        result = run_all(server, out, "qwen-plus", "--provider", "dashscope", "--no-thinking")
    assert result.returncode == 0, result.stderr
    assert server.refusals == [] and all(b["enable_thinking"] is False for b in server.bodies)
    assert_no_http_4xx(out)
    out2 = tmp_path / "thinking"
    with ProviderServer("dashscope") as server:
        result = run_all(server, out2, "qwen-plus", "--provider", "dashscope", mode="react")
    calls = [e for e in trace(out2) if e.kind == "model_call"]
    assert calls and all(e.usage.reasoning_tokens == 7 and e.usage.cached_tokens == 32 for e in calls)


@pytest.mark.slow
@pytest.mark.parametrize("key", ["none", "k"])
def test_a_placeholder_key_leaves_token_counts_and_model_text_unaltered(tmp_path, key):
    out = tmp_path / "run"
    text = '"none of the keys; k-tokens"'

    def content(answer: str) -> str:  # the model's text carries the placeholder as ordinary words
        value = json.loads(answer)
        step = value.get("step", value)
        if isinstance(step, dict) and isinstance(step.get("args"), dict):
            step["args"] = {k: (json.loads(text) if isinstance(v, str) else v) for k, v in step["args"].items()}
        return json.dumps(value)

    with ProviderServer("openai", content=content) as server:
        result = run_all(
            server, out, "gpt-4o-mini", "--provider", "openai", mode="react", scenario="blog_brief_approval", key=key
        )
    assert result.returncode == 0, result.stderr
    calls = [e for e in trace(out) if e.kind == "model_call"]
    assert calls and all(e.usage.total_tokens == 120 and e.usage.prompt_tokens == 100 for e in calls)
    recorded = (out / "recording.jsonl").read_text()
    assert "[redacted]" not in recorded and "[redacted]" not in (out / "traces.jsonl").read_text()
    assert "none of the keys; k-tokens" in recorded
    assert '"prompt_tokens": 100' in recorded.replace('":100', '": 100') or '"prompt_tokens":100' in recorded
    assert manifest(out)["api_key"] == {
        "given": True,
        "placeholder": True,
        "scrubbed": False,
        "why": manifest(out)["api_key"]["why"],
    }


@pytest.mark.slow
def test_an_open_qwen3_model_on_dashscope_gets_thinking_switched_off_once(tmp_path):
    out = tmp_path / "run"
    with ProviderServer("dashscope") as server:
        result = run_all(server, out, "qwen3-8b", "--provider", "dashscope", mode="react,workflow")
    assert result.returncode == 0, result.stderr
    assert [(a["what"], a["after"]) for a in manifest(out)["adaptations"]] == [("thinking", "off (enable_thinking)")]
    assert len(server.refusals) == 1 and all(b["enable_thinking"] is False for b in server.accepted)
    ended = {e.error.kind for e in trace(out) if e.kind == "error"}
    assert "http_4xx" not in ended
