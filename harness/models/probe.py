"""``bench probe``: one tiny request per capability against the configured endpoint, and what it answered.

Nothing here prints: ``probe`` returns rows for the CLI's table. Every string in them is scrubbed
of the key. ``list_models`` is also what ``--provider auto`` asks before a live run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from harness.models.capabilities import error_message
from harness.models.endpoint import models_url
from harness.models.live import LiveConfig, auth_headers
from harness.models.parsing import excerpt, extract_json, message_text, usage_of
from harness.models.providers import Profile
from harness.models.scrub import Scrubber
from harness.models.strict import make_strict

Verdict = Literal["yes", "refused", "accepted, reply did not fit", "error"]
TINY_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}, "word": {"type": "string"}},
               "required": ["ok"], "additionalProperties": False}
PROMPT = [{"role": "system", "content": "You answer in JSON."},
          {"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'}]


@dataclass(frozen=True)
class ProbeRow:
    """One capability and what the endpoint did with it."""

    capability: str
    verdict: Verdict
    detail: str


def list_models(config: LiveConfig, timeout_s: float = 5.0,
                transport: httpx.BaseTransport | None = None) -> Any | None:
    """The endpoint's ``/models`` JSON, or None when it does not answer one (many servers do not)."""
    try:
        with httpx.Client(headers=auth_headers(config), timeout=timeout_s, transport=transport) as client:
            response = client.get(models_url(config.url))
            if response.status_code != 200 or len(response.content) > 1_000_000:
                return None
            return response.json()
    except (httpx.HTTPError, ValueError, RecursionError):
        return None


def describe(config: LiveConfig) -> str:
    """One line naming what is probed: endpoint (no secret), model, provider profile and how it was chosen."""
    from harness.models.setup import endpoint_manifest

    facts = endpoint_manifest(config)
    return (f"probing {facts['endpoint']} model {config.model}: provider {config.profile.name} "
            f"({config.provider_note or 'given'}); key {'placeholder, not scrubbed' if facts['api_key'].get('placeholder') else 'given' if facts['api_key'].get('given') else 'none'}")


def _cases(config: LiveConfig, profile: Profile) -> list[tuple[str, dict[str, Any], bool]]:
    """(capability, body fields beyond model and messages, whether the reply must fit TINY_SCHEMA)."""
    strict_schema, _ = make_strict(TINY_SCHEMA)
    limit = config.initial_settings().token_param  # every other case asks with the profile's token parameter

    def ask(tokens: int, **fields: Any) -> dict[str, Any]:
        return {limit: tokens, **fields}

    cases: list[tuple[str, dict[str, Any], bool]] = [
        ("chat completions (plain)", ask(16), False),
        ("max_tokens", {"max_tokens": 16}, False),
        ("max_completion_tokens", {"max_completion_tokens": 16}, False),
        ("temperature 0.7 (not the default)", ask(16, temperature=0.7), False),
        ("seed", ask(16, seed=7), False),
        ("response_format json_schema", ask(32, response_format={
            "type": "json_schema", "json_schema": {"name": "probe", "schema": TINY_SCHEMA}}), True),
        ("response_format json_schema, strict", ask(32, response_format={
            "type": "json_schema", "json_schema": {"name": "probe", "schema": strict_schema, "strict": True}}), True),
        ("json_schema with a root anyOf (not portable)", ask(32, response_format={
            "type": "json_schema", "json_schema": {"name": "probe", "schema": {"anyOf": [TINY_SCHEMA]}}}), True),
        ("response_format json_object", ask(32, response_format={"type": "json_object"}), True),
        ("json_object with a schema (llama.cpp grammar)", ask(32, response_format={
            "type": "json_object", "schema": TINY_SCHEMA}), True),
    ]
    if profile.thinking_off:
        fields = ", ".join(f"{k}={json.dumps(v)}" for k, v in profile.thinking_off.items())
        cases.append((f"thinking off ({fields})", ask(16, **profile.thinking_off), False))
    return cases


def probe(config: LiveConfig, *, transport: httpx.BaseTransport | None = None,
          on_row: Callable[[ProbeRow], None] | None = None) -> list[ProbeRow]:
    """Asks each capability once, in order; a network failure or timeout is an ``error`` row, never an exception."""
    scrubber = Scrubber(config.api_key)
    profile = config.profile
    rows: list[ProbeRow] = []

    def add(row: ProbeRow) -> None:
        row = ProbeRow(row.capability, row.verdict, scrubber.truncated(row.detail, 160))
        rows.append(row)
        if on_row is not None:
            on_row(row)

    models = list_models(config, min(config.timeout_s, 10.0), transport)
    names = [str(m.get("id")) for m in models.get("data", [])[:5] if isinstance(m, dict)] \
        if isinstance(models, dict) and isinstance(models.get("data"), list) else []
    add(ProbeRow("GET /models", "yes" if models is not None else "refused",
                 ", ".join(names) if names else "no model list (auto-detection then uses the host only)"))
    with httpx.Client(headers=auth_headers(config), timeout=config.timeout_s, transport=transport) as client:
        for capability, fields, structured in _cases(config, profile):
            body = {"model": config.model, "messages": PROMPT, **fields}
            try:
                response = client.post(config.url, json=body)
            except httpx.HTTPError as exc:
                add(ProbeRow(capability, "error", f"{type(exc).__name__}: {exc}"))
                continue
            if response.status_code >= 400:
                refused = response.status_code in (400, 404, 422) or "validation error" in response.text[:2000].lower()
                verdict: Verdict = "refused" if refused else "error"
                add(ProbeRow(capability, verdict, f"HTTP {response.status_code}: {excerpt(error_message(response.text))}"))
                continue
            add(_judge(capability, response, structured))
    return rows


def _judge(capability: str, response: httpx.Response, structured: bool) -> ProbeRow:
    try:
        body = response.json()
        text = message_text(body)
    except Exception as exc:  # whatever the endpoint sent, the probe reports it
        return ProbeRow(capability, "accepted, reply did not fit", f"unreadable reply: {str(exc)[:100]}")
    usage = usage_of(body)
    counts = f"tokens {usage.prompt_tokens}+{usage.completion_tokens}"
    if usage.reasoning_tokens:
        counts += f", reasoning {usage.reasoning_tokens}"
    if usage.cached_tokens:
        counts += f", cached {usage.cached_tokens}"
    if not structured:
        return ProbeRow(capability, "yes", counts)
    try:
        value = extract_json(text)
    except Exception:
        return ProbeRow(capability, "accepted, reply did not fit", f"no JSON in the reply: {excerpt(text, 80)}")
    fits = isinstance(value, dict) and isinstance(value.get("ok"), bool)
    return ProbeRow(capability, "yes" if fits else "accepted, reply did not fit", f"{counts}; reply {excerpt(value, 60)}")
