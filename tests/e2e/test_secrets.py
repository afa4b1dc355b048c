"""The key never leaves the process, in any encoding an endpoint could echo it in, and a placeholder is never scrubbed.

A hostile endpoint echoes the key raw, ``\\uXXXX``-escaped (inside the answer's JSON and as raw body
bytes), URL-encoded, base64-encoded, as a JSON field name, in a 401, in reasoning text, and cut at
the truncation boundaries bench itself applies. Every written file, stdout and stderr are searched
for the key and for its 8-character prefix.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, unquote

import pytest

from harness.models.scrub import REDACTED, Scrubber, is_placeholder
from tests.helpers.bench import bench_process as bench
from tests.helpers.hostile_server import HostileServer, completion_bytes

KEY = "sk-SECRET-9f8e7d6c5b4a3210"
PREFIX = KEY[:8]
STEP = '{"step": {"action": "finish", "args": {}}}'


def key_of(headers: dict[str, str]) -> str:
    return headers.get("Authorization", "")[len("Bearer ") :]


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def body_with(extra: dict, content: str = STEP, reasoning: str | None = None) -> bytes:
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return json.dumps(
        {
            "choices": [{"message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
            **extra,
        }
    ).encode()


ECHOES = [
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {"note": "' + key_of(h) + '"}}}'),
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {}}, "note": "' + escaped(key_of(h)) + '"}'),
    lambda h, b: (
        b'{"choices": [{"message": {"content": "' + escaped(STEP + key_of(h)).encode() + b'"}}], '
        b'"usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}}'
    ),
    lambda h, b: body_with({"link": "https://x.test/?key=" + quote(key_of(h), safe="")}),
    lambda h, b: body_with(
        {
            "auth": base64.b64encode(f"Bearer {key_of(h)}".encode()).decode(),
            "auth_urlsafe": base64.urlsafe_b64encode(f"x:{key_of(h)}".encode()).decode(),
        }
    ),
    lambda h, b: body_with({"echo": {key_of(h): 1}}),
    lambda h, b: body_with({}, reasoning=f"the key is {key_of(h)}", content=""),
    lambda h, b: ("x" * 1990 + key_of(h) + " not json").encode(),  # cut where the raw excerpt ends (2,000 chars)
    lambda h, b: completion_bytes("y" * 490 + key_of(h)),  # cut where the trace keeps 500 characters of text
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {"' + key_of(h) + '": true}}}'),
]


def every_form_absent(text: str) -> None:
    for form in (text, unquote(text)):
        assert KEY not in form and PREFIX not in form


def test_an_endpoint_echoing_the_key_in_every_encoding_leaks_nothing(tmp_path):
    out = tmp_path / "run"
    with HostileServer(ECHOES) as server:
        result = bench(
            "run",
            "--live",
            "--mode",
            "all",
            "--scenario",
            "blog_brief_approval",
            "--trials",
            "2",
            "--out",
            str(out),
            "--retries",
            "0",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": KEY},
        )
        assert server.served >= len(ECHOES)
    assert result.returncode == 0, result.stderr
    every_form_absent(result.stdout)
    every_form_absent(result.stderr)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"traces.jsonl", "recording.jsonl", "manifest.json"}
    for path in files:
        raw = path.read_bytes()
        assert KEY.encode() not in raw and PREFIX.encode() not in raw, path.name
        text = raw.decode("utf-8")
        every_form_absent(text)
        documents = text.splitlines() if path.suffix == ".jsonl" else [text] if path.suffix == ".json" else []
        for document in documents:  # decoded, so no escaped spelling hides the key
            if document.strip():
                every_form_absent(json.dumps(json.loads(document), ensure_ascii=False))
        assert base64.b64encode(KEY.encode())[:12].decode() not in text
    assert REDACTED in (out / "recording.jsonl").read_text()
    assert json.loads((out / "manifest.json").read_text())["live"]["api_key"] == {
        "given": True,
        "placeholder": False,
        "scrubbed": True,
    }


def test_a_401_echoing_the_key_is_scrubbed_from_the_error(tmp_path):
    out = tmp_path / "run"
    with HostileServer(
        [lambda h, b: json.dumps({"error": {"message": f"bad key {key_of(h)}"}}).encode()], status=401
    ) as server:
        result = bench(
            "run",
            "--live",
            "--mode",
            "react",
            "--scenario",
            "blog_brief_approval",
            "--out",
            str(out),
            "--retries",
            "0",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": KEY},
        )
    assert result.returncode == 3, result.stderr  # the one run ended in an infrastructure error (http_4xx)
    assert PREFIX not in result.stderr + result.stdout
    trace = (out / "traces.jsonl").read_text()
    assert "http_4xx" in trace and REDACTED in trace
    for path in out.rglob("*"):
        if path.is_file():
            assert PREFIX.encode() not in path.read_bytes()


@pytest.mark.parametrize("key", ["EMPTY", "none", "ollama", "sk-no-key-required", "local", "k", "short-key"])
def test_placeholders_and_short_keys_are_not_scrubbed(key):
    assert is_placeholder(key) and Scrubber(key).text(f"none of {key} tokens") == f"none of {key} tokens"


def test_scrubbing_leaves_keys_and_numbers_alone():
    scrubber = Scrubber(KEY)
    body = {"usage": {"prompt_tokens": 5}, "text": f"a {KEY} b", "list": [KEY[:12], 3]}
    assert scrubber.value(body) == {"usage": {"prompt_tokens": 5}, "text": f"a {REDACTED} b", "list": [REDACTED, 3]}


@pytest.mark.parametrize("key", ["sk-abc\ndefghijklmnop", "sk-abcdefghijkl\u00e9mnop", "sk-abc defghijklmnop"])
def test_a_key_no_header_can_carry_is_one_line_without_the_key(tmp_path, key):
    result = bench(
        "run",
        "--live",
        "--out",
        str(tmp_path / "run"),
        env={"LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": key},
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "LLM_API_KEY" in line and "abcdefgh" not in line and "defghijk" not in line


def test_the_quick_check_sees_the_key_escaped_at_any_depth_and_passes_clean_text():
    """A clean body skips the walk; a spelling nested in escaped JSON, two or three levels deep, never does."""
    from harness.models.scrub import Scrubber

    scrubber = Scrubber(KEY)
    once = json.dumps({"content": escaped(KEY)})  # \\u0073... inside a JSON string
    twice = json.dumps({"outer": json.dumps({"content": escaped(KEY)})})
    thrice = json.dumps({"a": json.dumps({"b": json.dumps({"c": KEY})})})
    for text in (once, twice, thrice, KEY[:9] + "...", base64.b64encode(KEY.encode()).decode()):
        assert scrubber.mentions(text), text
    assert not scrubber.mentions(json.dumps({"usage": {"prompt_tokens": 30}, "content": "sk-other-key-value"}))
