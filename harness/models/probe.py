"""``bench probe``: one tiny request per capability against the configured endpoint, and what it answered.

Nothing here prints: ``probe`` returns rows for the CLI's table. Every string in them is scrubbed
of the key. ``list_models`` is also what ``--provider auto`` asks before a live run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from harness.models.capabilities import error_message
from harness.models.endpoint import models_url
from harness.models.exchange import finish_reason
from harness.models.live import LiveConfig, auth_headers
from harness.models.parsing import check_schema, excerpt, extract_json, message_text, usage_of
from harness.models.providers import Profile
from harness.models.scrub import Scrubber
from harness.models.strict import make_strict

Verdict = Literal["yes", "refused", "ignored", "accepted, reply did not fit", "accepted, not checked", "error"]
# "yes" only when the reply shows the capability at work; accepting a parameter is not honouring it:
# "ignored" (the reply shows it had no effect), "accepted, reply did not fit" (a structured-output form whose
# reply does not parse or fit), "accepted, not checked" (one reply cannot show it, e.g. a temperature).
TOKEN_LIMIT = 16
# An honoured limit reads as at most the limit plus this: servers differ in whether the token they stop on
# (or a grammar's forced closing token) is counted. An ignored limit goes many times past it (llama.cpp's
# server: 113 tokens asked for 16).
TOKEN_SLACK = 2
TINY_SCHEMA = {
    "type": "object",
    "properties": {"probe_flag": {"type": "boolean"}, "word": {"type": "string"}},
    "required": ["probe_flag"],
    "additionalProperties": False,
}
PROMPT = [
    {"role": "system", "content": "You answer in JSON."},
    {"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'},
]
# The structured-output question names JSON (OpenAI's json_object needs the word) but not the schema's fields:
# a reply fits TINY_SCHEMA only when the endpoint enforced the schema.
FORMAT_PROMPT = [
    {"role": "system", "content": "You answer in JSON."},
    {"role": "user", "content": "Is water wet? Answer in JSON."},
]
LONG_PROMPT = [{"role": "user", "content": "Count from 1 to 100, one number per line, and say nothing else."}]
SEED_PROMPT = [{"role": "user", "content": "Make up a new word and reply with that word only."}]


@dataclass(frozen=True)
class ProbeRow:
    """One capability and what the endpoint did with it."""

    capability: str
    verdict: Verdict
    detail: str


MODELS_LISTING_S = 5.0  # a listing is small: an endpoint that sends none within this lists nothing (a silent one's
# first wait, before the preflight's tries: its one line still comes within a minute at the defaults)


def list_models(config: LiveConfig, timeout_s: float = 5.0, transport: httpx.BaseTransport | None = None) -> Any | None:
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
    key = facts["api_key"]
    said = "placeholder, not scrubbed" if key.get("placeholder") else "given" if key.get("given") else "none"
    return (
        f"probing {facts['endpoint']} model {config.model}: provider {config.profile.name} "
        f"({config.provider_note or 'given'}); key {said}"
    )


Judge = Callable[[Any, str], tuple[Verdict, str]]  # (the reply's JSON, its message text) -> verdict, detail


@dataclass(frozen=True)
class Case:
    """One capability: what is sent, in which conversation, and how the reply shows it was honoured."""

    capability: str
    fields: dict[str, Any]
    judge: Judge
    messages: list[dict[str, str]] = field(default_factory=lambda: PROMPT)
    twice: bool = False  # asked twice and the two replies compared (a seed)


def _cases(config: LiveConfig, profile: Profile) -> list[Case]:
    strict_schema, _ = make_strict(TINY_SCHEMA)
    limit = config.initial_settings().token_param  # every other case asks with the profile's token parameter

    def ask(tokens: int, **fields: Any) -> dict[str, Any]:
        return {limit: tokens, **fields}

    def structured(capability: str, response_format: dict[str, Any], judge: Judge = _fits) -> Case:
        return Case(capability, ask(64, response_format=response_format), judge, FORMAT_PROMPT)

    def schema(value: dict[str, Any], strict: bool = False) -> dict[str, Any]:
        spec = {"name": "probe", "schema": value, **({"strict": True} if strict else {})}
        return {"type": "json_schema", "json_schema": spec}

    cases = [
        Case("chat completions (plain)", ask(TOKEN_LIMIT), _answered),
        Case("max_tokens", {"max_tokens": TOKEN_LIMIT}, judge_token_limit("max_tokens"), LONG_PROMPT),
        Case(
            "max_completion_tokens",
            {"max_completion_tokens": TOKEN_LIMIT},
            judge_token_limit("max_completion_tokens"),
            LONG_PROMPT,
        ),
        Case("temperature 0.7 (not the default)", ask(TOKEN_LIMIT, temperature=0.7), _not_observable("temperature")),
        Case("seed", ask(TOKEN_LIMIT, temperature=1.0, seed=7), _answered, SEED_PROMPT, twice=True),
        structured("response_format json_schema", schema(TINY_SCHEMA)),
        structured("response_format json_schema, strict", schema(strict_schema, strict=True)),
        structured("json_schema with a root anyOf (not portable)", schema({"anyOf": [TINY_SCHEMA]})),
        structured("response_format json_object", {"type": "json_object"}, _an_object),
        structured("json_object with a schema (llama.cpp grammar)", {"type": "json_object", "schema": TINY_SCHEMA}),
    ]
    if profile.thinking_off:
        fields = ", ".join(f"{k}={json.dumps(v)}" for k, v in profile.thinking_off.items())
        cases.append(Case(f"thinking off ({fields})", ask(TOKEN_LIMIT, **profile.thinking_off), _no_thinking))
    return cases


def probe(
    config: LiveConfig,
    *,
    transport: httpx.BaseTransport | None = None,
    on_row: Callable[[ProbeRow], None] | None = None,
) -> list[ProbeRow]:
    """Asks each capability once (a seed twice), in order; a network failure or timeout is an ``error`` row.

    A URL that is no OpenAI-compatible endpoint (nothing listening, a web page, a 404) is found by one
    request first and raised as ``EndpointUnusable``: one line, said once, not once per capability.
    """
    from harness.models.dead_endpoint import preflight

    scrubber = Scrubber(config.api_key)
    profile = config.profile
    rows: list[ProbeRow] = []

    def add(row: ProbeRow) -> None:
        row = ProbeRow(row.capability, row.verdict, scrubber.truncated(row.detail, 160))
        rows.append(row)
        if on_row is not None:
            on_row(row)

    preflight(config, transport=transport)
    models = list_models(config, min(config.timeout_s, MODELS_LISTING_S), transport)
    names = (
        [str(m.get("id")) for m in models.get("data", [])[:5] if isinstance(m, dict)]
        if isinstance(models, dict) and isinstance(models.get("data"), list)
        else []
    )
    add(
        ProbeRow(
            "GET /models",
            "yes" if models is not None else "refused",
            ", ".join(names) if names else "no model list (auto-detection then uses the host only)",
        )
    )
    with httpx.Client(headers=auth_headers(config), timeout=config.timeout_s, transport=transport) as client:
        for case in _cases(config, profile):
            body = {"model": config.model, "messages": case.messages, **case.fields}
            first = _ask(client, config.url, case, body)
            if case.twice and isinstance(first, tuple):
                again = _ask(client, config.url, case, body)
                add(_same_twice(case, first, again) if isinstance(again, tuple) else again)
            else:
                add(first if isinstance(first, ProbeRow) else _judge(case, *first))
    return rows


def _ask(client: httpx.Client, url: str, case: Case, body: dict[str, Any]) -> ProbeRow | tuple[Any, str]:
    """The reply's JSON and message text, or the row that says why there is none."""
    try:
        response = client.post(url, json=body)
    except httpx.HTTPError as exc:
        return ProbeRow(case.capability, "error", f"{type(exc).__name__}: {exc}")
    if response.status_code >= 400:
        refused = response.status_code in (400, 404, 422) or "validation error" in response.text[:2000].lower()
        verdict: Verdict = "refused" if refused else "error"
        detail = f"HTTP {response.status_code}: {excerpt(error_message(response.text))}"
        return ProbeRow(case.capability, verdict, detail)
    try:
        reply = response.json()
        return reply, message_text(reply)
    except Exception as exc:  # whatever the endpoint sent, the probe reports it
        return ProbeRow(case.capability, "accepted, reply did not fit", f"unreadable reply: {str(exc)[:100]}")


def _judge(case: Case, reply: Any, text: str) -> ProbeRow:
    verdict, detail = case.judge(reply, text)
    return ProbeRow(case.capability, verdict, f"{_counts(reply)}; {detail}")


def _same_twice(case: Case, first: tuple[Any, str], again: tuple[Any, str]) -> ProbeRow:
    """A seed is honoured when the same request, sampled at temperature 1, gives the same reply twice."""
    (reply, text), (_, other) = first, again
    if text == other:
        return ProbeRow(case.capability, "yes", f"{_counts(reply)}; the same reply twice: {excerpt(text, 60)}")
    return ProbeRow(
        case.capability, "ignored", f"two different replies to one seed: {excerpt(text, 40)} / {excerpt(other, 40)}"
    )


def _counts(body: Any) -> str:
    usage = usage_of(body)
    counts = f"tokens {usage.prompt_tokens}+{usage.completion_tokens}"
    if usage.reasoning_tokens:
        counts += f", reasoning {usage.reasoning_tokens}"
    if usage.cached_tokens:
        counts += f", cached {usage.cached_tokens}"
    return counts


def _answered(body: Any, text: str) -> tuple[Verdict, str]:
    return "yes", f"reply {excerpt(text, 60)}"


def _not_observable(name: str) -> Judge:
    def judge(body: Any, text: str) -> tuple[Verdict, str]:
        return "accepted, not checked", f"one reply cannot show whether {name} was used"

    return judge


def judge_token_limit(name: str) -> Judge:
    """Honoured: the reply to a long question stopped at the limit (its completion tokens, or with its reasoning
    tokens left out where the provider counts them apart, within TOKEN_SLACK of it)."""

    def judge(body: Any, text: str) -> tuple[Verdict, str]:
        usage = usage_of(body)
        reported = isinstance(body.get("usage"), dict) and usage.completion_tokens > 0
        stopped = finish_reason(body)
        most = TOKEN_LIMIT + TOKEN_SLACK
        if reported:
            got = usage.completion_tokens
            visible = got - (usage.reasoning_tokens or 0)
            if got > most and visible > most:
                return "ignored", f"asked for at most {TOKEN_LIMIT} tokens with {name}, got {got}"
            if stopped == "length" or min(got, visible) >= TOKEN_LIMIT:
                return "yes", f"stopped at the limit ({got} tokens, finish_reason {stopped})"
            return "accepted, not checked", f"the reply ended on its own after {got} tokens, under the limit"
        if stopped == "length":
            return "yes", "stopped at the limit (finish_reason length; no usage reported)"
        if len(text) > 8 * most:  # far more text than the limit allows at any tokenizer's 8 characters a token
            return "ignored", f"asked for at most {TOKEN_LIMIT} tokens with {name}, got {len(text)} characters"
        return "accepted, not checked", f"no usage reported and finish_reason {stopped}"

    return judge


def _fits(body: Any, text: str) -> tuple[Verdict, str]:
    """Honoured: the reply is JSON that fits TINY_SCHEMA, whose field names the question never mentions."""
    try:
        value = extract_json(text)
        check_schema(value, TINY_SCHEMA)
    except Exception as exc:
        return "accepted, reply did not fit", excerpt(str(exc), 100)
    return "yes", f"reply {excerpt(value, 60)}"


def _an_object(body: Any, text: str) -> tuple[Verdict, str]:
    """Honoured (JSON mode promises no more): the reply is a JSON object."""
    try:
        value = extract_json(text)
    except Exception:
        return "accepted, reply did not fit", f"no JSON in the reply: {excerpt(text, 60)}"
    if not isinstance(value, dict):
        return "accepted, reply did not fit", f"JSON that is not an object: {excerpt(value, 60)}"
    return "yes", f"reply {excerpt(value, 60)}"


def _no_thinking(body: Any, text: str) -> tuple[Verdict, str]:
    """Honoured: no reasoning came back, neither as text nor as counted reasoning tokens."""
    message = body["choices"][0].get("message") or {}
    thought = next((message.get(f) for f in ("reasoning_content", "reasoning") if message.get(f)), None)
    tokens = usage_of(body).reasoning_tokens
    if thought or tokens:
        shown = f"{tokens} reasoning tokens" if tokens else f"reasoning text {excerpt(thought, 40)}"
        return "ignored", f"thinking still came back: {shown}"
    return "yes", "no reasoning in the reply"
