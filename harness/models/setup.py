"""From what the user gave (URL, model, key, flags) to a checked ``LiveConfig``, and what the manifest says about it.

The CLI reads the environment and calls these; they check the URL and the key (one line each,
never echoing either), choose the provider profile (``auto`` asks ``/models``), and describe the
endpoint for the manifest without a secret in it.
"""

from __future__ import annotations

from typing import Any

from harness.errors import UserInputError
from harness.models.config import LiveOptions
from harness.models.endpoint import chat_completions_url, check_key, public_url
from harness.models.live import DEFAULT_MAX_RESPONSE_BYTES, LiveConfig
from harness.models.providers import PROVIDERS, RESPONSE_FORMATS, detect, get_profile
from harness.models.scrub import MIN_SECRET_LENGTH, Scrubber


def check_provider(name: str) -> str:
    if name != "auto" and name not in PROVIDERS:
        raise UserInputError(f"--provider must be auto or one of {', '.join(PROVIDERS)}, got '{name}'")
    return name


def endpoint_config(
    url: str,
    model: str,
    key: str,
    options: LiveOptions,
    *,
    concurrency: int = 1,
    models: Any = None,
    ask_models: bool = True,
) -> LiveConfig:
    """A checked config for a user's endpoint; ``--provider auto`` looks at the host, then at ``/models``."""
    if options.response_format is not None and options.response_format not in RESPONSE_FORMATS:
        raise UserInputError(
            f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}, got '{options.response_format}'"
        )
    check_provider(options.provider)
    chat_url = chat_completions_url(url)
    key = check_key(key)
    config = _config(chat_url, model, key, options, concurrency, "generic", "")
    if options.provider != "auto":
        return _config(chat_url, model, key, options, concurrency, options.provider, "given with --provider")
    found = detect(chat_url)
    if found.guessed and ask_models:
        from harness.models.probe import MODELS_LISTING_S, list_models

        models = list_models(config, min(options.timeout_s, MODELS_LISTING_S)) if models is None else models
        found = detect(chat_url, models)
    return _config(chat_url, model, key, options, concurrency, found.profile.name, found.how)


def local_endpoint(base_url: str, model: str, options: LiveOptions, *, concurrency: int = 1) -> LiveConfig:
    """The bundled llama.cpp server: its profile, no key."""
    check_provider(options.provider)
    provider = options.provider if options.provider != "auto" else "llamacpp"
    return _config(
        chat_completions_url(base_url), model, "", options, concurrency, provider, "the bundled llama.cpp server"
    )


def _config(
    url: str, model: str, key: str, options: LiveOptions, concurrency: int, provider: str, note: str
) -> LiveConfig:
    get_profile(provider)
    return LiveConfig(
        url=url,
        model=model,
        api_key=key,
        response_format=options.response_format,
        provider=provider,
        provider_note=note,
        strict=options.strict_schema,
        disable_thinking=options.disable_thinking,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        timeout_s=options.timeout_s,
        retries=options.retries,
        backoff_s=options.backoff_s,
        concurrency=concurrency,
        max_response_bytes=options.max_response_bytes or DEFAULT_MAX_RESPONSE_BYTES,
    )


def endpoint_manifest(config: LiveConfig) -> dict[str, Any]:
    """The endpoint, its provider profile and how the key was handled; no secret (query values redacted)."""
    scrubber = Scrubber(config.api_key)
    profile = config.profile
    key: dict[str, Any]
    if not config.api_key:
        key = {"given": False}
    elif scrubber.placeholder:
        key = {
            "given": True,
            "placeholder": True,
            "scrubbed": False,
            "why": f"shorter than {MIN_SECRET_LENGTH} characters or a common placeholder: sent, not scrubbed",
        }
    else:
        key = {"given": True, "placeholder": False, "scrubbed": True}
    return {
        "endpoint": scrubber.text(public_url(config.url)),
        "provider": {
            "name": profile.name,
            "chosen": config.provider_note,
            "docs": profile.docs,
            "auth_header": "api-key" if profile.auth == "api-key" else "Authorization: Bearer",
            "wire_settings": config.initial_settings().describe(),
        },
        "api_key": key,
    }


def live_manifest(config: LiveConfig, *, local: bool) -> dict[str, Any]:
    """Everything a live run's manifest says about its endpoint, sampling and client; never the key."""
    found: dict[str, Any] = {}
    if local:
        # The model file and the inference engine decide what a recording holds.
        from harness.models.server import MODEL_FILE, engine_versions

        found = {"local_model_file": MODEL_FILE, "local_model_versions": engine_versions()}
    return {
        **found,
        "local_model": local,
        **endpoint_manifest(config),
        "sampling": {
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "response_format": config.initial_settings().response_format,
            "strict_schema": config.strict,
            "disable_thinking": config.disable_thinking,
            "seed": "each run's seed",
        },
        "client": {
            "timeout_s": config.timeout_s,
            "retries": config.retries,
            "backoff_s": config.backoff_s,
            "max_wait_s": config.max_wait_s,
            "concurrency": config.concurrency,
            "max_response_bytes": config.max_response_bytes,
        },
    }
