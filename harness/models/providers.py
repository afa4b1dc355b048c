"""Provider profiles: how each OpenAI-compatible service wants to be asked.

One small record each, from its documentation.

A profile says which structured-output form the service documents, what its token-limit parameter
is called, which sampling parameters its reasoning models take, how thinking is switched off and
how the key is sent. ``--provider auto`` picks one from the URL's host and, where the endpoint
answers it, the ``owned_by`` of its ``/models`` listing; what it guessed is said in the manifest.
Where reasoning and cached tokens are reported is read in one place for all (``parsing.usage_of``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from harness.choices import ProviderName, ResponseFormat
from harness.registry import Registry

PROVIDERS: tuple[str, ...] = get_args(ProviderName)
RESPONSE_FORMATS: tuple[str, ...] = get_args(ResponseFormat)
TokenParam = Literal["max_tokens", "max_completion_tokens"]


@dataclass(frozen=True)
class Profile:
    """How one provider is asked. Every field comes from the documentation named in ``docs``."""

    name: ProviderName
    docs: str  # the documentation this profile follows (docs/live-models.md: provider profiles)
    response_format: ResponseFormat  # the strongest structured output the service documents
    json_object: Literal["schema", "prompt", "both"] = (
        "prompt"  # json_object carries the schema (llama.cpp's grammar), or the prompt does
    )
    token_param: TokenParam = "max_tokens"
    reasoning_models: str = ""  # regex on the model name: models that only take the default sampling
    reasoning_token_param: TokenParam = "max_tokens"
    reasoning_sampling: tuple[str, ...] = ("temperature",)  # sampling parameters a reasoning model accepts
    thinking_off: dict[str, Any] = field(default_factory=dict)  # body fields that switch thinking off (--no-thinking)
    auth: Literal["bearer", "api-key"] = "bearer"
    reasoning_usage: str = "-"  # where the service reports reasoning tokens (docs/live-models.md)
    cached_usage: str = "-"  # where it reports cached prompt tokens
    hosts: tuple[str, ...] = ()  # host names (or their suffixes) that identify it
    owned_by: tuple[str, ...] = ()  # ``owned_by`` values of its /models listing that identify it

    def is_reasoning(self, model: str) -> bool:
        return bool(self.reasoning_models) and re.search(self.reasoning_models, model, re.IGNORECASE) is not None


OPENAI_REASONING = r"^(o\d|gpt-5)"
PROFILES: Registry[Profile] = Registry("provider", summary=lambda profile: profile.docs)
for _profile in (
    Profile(
        "openai",
        "OpenAI API reference (chat completions), Structured Outputs guide, reasoning models guide",
        "json_schema",
        token_param="max_completion_tokens",
        reasoning_models=OPENAI_REASONING,
        reasoning_token_param="max_completion_tokens",
        reasoning_sampling=(),
        thinking_off={"reasoning_effort": "minimal"},
        reasoning_usage="usage.completion_tokens_details.reasoning_tokens",
        cached_usage="usage.prompt_tokens_details.cached_tokens",
        hosts=("api.openai.com",),
    ),
    Profile(
        "azure",
        "Azure OpenAI REST reference (api-version query, api-key header), structured outputs",
        "json_schema",
        token_param="max_completion_tokens",
        reasoning_models=OPENAI_REASONING,
        reasoning_token_param="max_completion_tokens",
        reasoning_sampling=(),
        thinking_off={"reasoning_effort": "minimal"},
        auth="api-key",
        reasoning_usage="usage.completion_tokens_details.reasoning_tokens",
        cached_usage="usage.prompt_tokens_details.cached_tokens",
        hosts=(".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"),
    ),
    Profile(
        "vllm",
        "vLLM OpenAI-compatible server, structured outputs; Qwen3 docs (chat_template_kwargs)",
        "json_schema",
        thinking_off={"chat_template_kwargs": {"enable_thinking": False}},
        reasoning_usage="message.reasoning_content (text; no count)",
        cached_usage="usage.prompt_tokens_details.cached_tokens (with --enable-prompt-tokens-details)",
        owned_by=("vllm",),
    ),
    Profile(
        "ollama",
        "Ollama OpenAI compatibility (response_format becomes format), structured outputs",
        "json_schema",
        thinking_off={"reasoning_effort": "none"},
        reasoning_usage="message.reasoning (text; no count)",
        owned_by=("library", "ollama"),
    ),
    Profile(
        "llamacpp",
        "llama.cpp server README (response_format json_object + schema, chat_template_kwargs)",
        "json_object",
        json_object="schema",
        thinking_off={"chat_template_kwargs": {"enable_thinking": False}},
        reasoning_usage="message.reasoning_content (text; no count)",
        cached_usage="usage.prompt_tokens_details.cached_tokens",
        owned_by=("llamacpp", "me"),
    ),
    Profile(
        "deepseek",
        "DeepSeek API docs: JSON Output (json_object only), reasoning model, context caching",
        "json_object",
        reasoning_models=r"reasoner",
        reasoning_sampling=(),
        thinking_off={"thinking": {"type": "disabled"}},
        reasoning_usage="usage.completion_tokens_details.reasoning_tokens",
        cached_usage="usage.prompt_cache_hit_tokens",
        hosts=("api.deepseek.com",),
        owned_by=("deepseek",),
    ),
    Profile(
        "dashscope",
        "Alibaba Cloud Model Studio (DashScope) OpenAI-compatible mode: json_object, enable_thinking",
        "json_object",
        thinking_off={"enable_thinking": False},
        reasoning_usage="usage.completion_tokens_details.reasoning_tokens",
        cached_usage="usage.prompt_tokens_details.cached_tokens",
        hosts=("dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "dashscope-us.aliyuncs.com"),
    ),
    Profile(
        "gemini",
        "Gemini API OpenAI compatibility (response_format json_schema, reasoning_effort)",
        "json_schema",
        thinking_off={"reasoning_effort": "none"},
        reasoning_usage="usage.completion_tokens_details.reasoning_tokens",
        cached_usage="usage.prompt_tokens_details.cached_tokens",
        hosts=("generativelanguage.googleapis.com",),
        owned_by=("google",),
    ),
    Profile(
        "generic",
        "OpenAI chat completions as most servers implement it; the fallbacks adapt the rest",
        "json_schema",
        json_object="both",
        thinking_off={"thinking": {"type": "disabled"}},
        reasoning_usage="any of the above",
        cached_usage="any of the above",
    ),
):
    PROFILES.add(_profile.name, _profile)
OLLAMA_PORT = 11434


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise PROFILES.unknown(name, also=("auto",))
    return PROFILES[name]


@dataclass(frozen=True)
class Detection:
    """The profile chosen and how: said in the manifest, since ``auto`` may be a guess."""

    profile: Profile
    how: str
    guessed: bool


def detect(url: str, models: Any = None) -> Detection:
    """The profile for ``url`` from its host, else from a ``/models`` answer (``models``: its JSON, or None)."""
    host = (urlsplit(url).hostname or "").lower()
    for profile in PROFILES.values():
        if any(host == h or (h.startswith(".") and host.endswith(h)) for h in profile.hosts):
            return Detection(profile, f"from the host {host}", guessed=False)
    owners = _owners(models)
    for profile in PROFILES.values():
        if owners & set(profile.owned_by):
            owner = sorted(owners & set(profile.owned_by))[0]
            return Detection(profile, f"from /models (owned_by '{owner}')", guessed=False)
    if urlsplit(url).port == OLLAMA_PORT:
        return Detection(PROFILES["ollama"], f"guessed from port {OLLAMA_PORT} (Ollama's default)", guessed=True)
    return Detection(PROFILES["generic"], "no provider recognised from the host or /models; generic", guessed=True)


def _owners(models: Any) -> set[str]:
    data = models.get("data") if isinstance(models, dict) else None
    if not isinstance(data, list):
        return set()
    return {str(item.get("owned_by")).lower() for item in data[:200] if isinstance(item, dict) and item.get("owned_by")}
